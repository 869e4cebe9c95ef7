// The methods a run configuration can name. Adding a method = one entry in methods.cpp plus its
// own run/<method>_run.cpp; the shared keys (output, device, threads, seed) are read for it.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "run/device_check.hpp"
#include "run/map_page.hpp"
#include "run/run_config.hpp"
#include "orrery/config.hpp"
#include "orrery/run_control.hpp"

namespace orrery::pipeline {

struct ParamTable {
  std::string name;  // as given to `orrery defaults NAME`
  std::function<std::vector<FieldInfo>()> describe;
};

struct MethodEntry {
  const char* name;
  const char* summary;
  std::vector<ParamTable> tables;  // the method's own table first, then sub-models
  // Reads the method's keys and its input files; returns a one-line description for `validate`.
  std::function<std::string(const RunConfig&)> validate;
  // Fits and writes the outputs; returns the report. The control (null: none) lets a long fit
  // stop and resume (cli/checkpoint.hpp).
  std::function<json(const RunConfig&, bool quiet, RunControl* control)> run;
  // The files a run may write in output.dir (run_common.hpp: run_outputs), checked against the
  // inputs before anything is read or fitted.
  std::vector<std::string> outputs;
  // `orrery check`: the method's primitives and a few iterations on `dev` against `ref`.
  std::function<Checks(const RunConfig&, Backend& ref, Backend& dev, int iterations)> check;
  // The map page's method-specific part (run/map_page.hpp).
  void (*page)(report::MapPage&, const RunConfig&, const json& report, const OutputPath&, std::vector<std::string>*);
  // What makes a fit of the method run off to Inf or NaN, as far as the user can change it.
  const char* divergence_causes;
  // Whether a run may span several ranks (RunConfig::comm): the method shards its rows over them.
  // Such a run checkpoints and resumes as one process does: the state at a safe point is gathered
  // whole on every rank, rank 0 writes it, and any number of ranks resumes from it.
  bool shards = false;
  // Whether a sharded run may put its ranks on CUDA devices (make_backend over the run's Comm): the engine's sums leave
  // the device by chunk, so the ranks' collectives run on host buffers over MPI.
  bool shards_on_gpus = false;
};

const std::vector<MethodEntry>& methods();
const MethodEntry* find_method(const std::string& name);

// What a run over several ranks cannot do yet, refused before any input is read or any collective
// is issued: every rank reads the same configuration and so refuses alike, and none is left waiting.
// Input errors naming `comm`: a method that does not shard, a CUDA device ("cuda", "cuda:N", or
// "auto" where there is one) for a method whose engines cannot shard on one (those need NCCL, not
// built yet). With one rank, nothing is refused.
void check_run_ranks(const RunConfig& run, const MethodEntry& method);

}  // namespace orrery::pipeline
