// Long runs that can be interrupted and resumed: the command line's RunControl. It writes the
// method's state to OUTPUT_DIR/checkpoint.orrery every output.checkpoint_seconds and when the run
// is asked to stop (SIGINT, SIGTERM, or ORRERY_STOP_AT_ITERATION=k after iteration k, which
// behaves exactly like a signal arriving there), and with --resume reads it back after checking
// that the configuration and the input files are the ones it was made from.
#pragma once
#include <string>

#include "run/run_config.hpp"
#include "run/run_common.hpp"
#include "orrery/run_control.hpp"

namespace orrery::cli {

// OUTPUT_DIR/checkpoint.orrery.
std::string checkpoint_path(const pipeline::RunConfig& run);

// From now on SIGINT and SIGTERM ask the run to stop at its next safe point; a second one ends the
// process at once (the signal's default action).
void install_stop_signals();

class CheckpointControl final : public RunControl {
 public:
  // resume: read the checkpoint, refusing (an input error, nothing written) when there is none,
  // when it is damaged, or when the configuration (output.checkpoint_seconds aside), an input
  // file or the orrery build differs from those that made it; the message names what changed.
  CheckpointControl(const pipeline::RunConfig& run, bool resume, bool quiet);

  const RunState* resume() const override { return resumed_ ? &state_ : nullptr; }
  void safe_point(int iteration, const std::function<RunState()>& capture) override;

  // The run's outputs are written: the checkpoint is no longer needed and is removed.
  void finish();

 private:
  void save(int iteration, const RunState& state);
  // Method, configuration and input files this run is made from; computed at the first save or
  // resume (hashing the inputs costs a pass over them, which a short run need not pay).
  const json& fingerprint();

  std::string path_, config_file_;
  pipeline::RunConfig run_;
  json fingerprint_;
  double interval_;   // seconds between checkpoints; 0: only when stopped
  long long stop_at_ = -1;
  bool resumed_ = false;
  RunState state_;
  Clock::time_point last_save_;
};

}  // namespace orrery::cli
