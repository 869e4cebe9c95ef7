// Pieces every method's run shares: timing, the report header, coordinate outputs.
#pragma once
#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "run/run_config.hpp"
#include "io/writers.hpp"
#include "orrery/backend.hpp"
#include "orrery/clock.hpp"
#include "orrery/comm.hpp"
#include "orrery/memory_plan.hpp"

namespace orrery::pipeline {

// A run's progress lines (stages, iterations, what `auto` chose), printf-style, each ending in a
// newline: to stderr, or to the sink a front end installs for the time of its runs (Python sends them
// to sys.stderr, which a notebook shows in the cell; the process's stderr goes to the server's log).
void progress_line(const char* format, ...) __attribute__((format(printf, 1, 2)));
using ProgressSink = std::function<void(const std::string& line)>;
// Installs `sink` (empty: stderr) until the guard ends, then restores the one before.
class ScopedProgressSink {
 public:
  explicit ScopedProgressSink(ProgressSink sink);
  ~ScopedProgressSink();
  ScopedProgressSink(const ScopedProgressSink&) = delete;
  ScopedProgressSink& operator=(const ScopedProgressSink&) = delete;

 private:
  ProgressSink previous_;
};

std::string format_seconds(double s);  // "12.3s" or "4m05s"
std::string thousands(index_t n);       // "1,234,567"

// Progress of a long stage (a neighbor search, affinity rows) as a callback (done, total): prints
// "[tag] what: 45%, 12.3s, about 15.0s left" to stderr, at most every 5 s and only after the stage
// has run 2 s, so short stages stay silent. quiet: prints nothing.
struct StageProgress {
  std::string tag, what;
  bool quiet = false;
  Clock::time_point start = Clock::now();
  double last = 0.0;  // seconds since start of the last line
  void operator()(index_t done, index_t total);
};

// The n names of a names file (io::read_names; its first `limit` lines when limit > 0), or none when
// path is empty; a count other than n is an input error naming `key`, the file and `source`.
std::vector<std::string> read_point_names(const std::string& path, index_t n, index_t limit, const std::string& key,
                                          const std::string& source);

// The run's communicator: run.comm, or one process when it has none.
Comm& run_comm(const RunConfig& run);

// check_memory_plan for one rank of the run: the ranks on one machine (Comm::node_size) each plan
// within an equal share of the memory it has free, and the ranks on one GPU (ranks_sharing_device)
// within an equal share of the GPU's, so that together they fit; a refusal names the rank. No
// collective: each rank checks its own share (on_every_rank then stops the others). One process:
// check_memory_plan.
void check_rank_memory(const MemoryPlan& plan, const MemoryInfo& mem, bool device, const RunConfig& run);

// Runs `step` (reading inputs, preparing) on every rank of the run, then agrees on how it went:
// when it failed on any rank, every rank throws (a failing rank its own error, the others an error
// of the same kind naming the first rank that failed), so that no rank goes on to a collective the
// others will not issue. Every rank must call it at the same point. One rank: just the step.
void on_every_rank(const RunConfig& run, const std::function<void()>& step);

// Runs `fit`, which issues collectives: a failure on one rank (memory, say) must end the others
// rather than leave them waiting in a collective, so with several ranks an error ends every rank
// with its message and exit code; failures every rank meets alike end them all the same way. An
// Interrupted (a safe point every rank agrees on) and anything in one process are rethrown.
void fit_on_every_rank(Comm& comm, const std::function<void()>& fit);

// Report fields common to every run: orrery build, creation time, method, config file and echo,
// device, threads and seed.
json report_header(const RunConfig& run, const Backend& backend);

// Adds DIR/NAME.npy and/or DIR/NAME.csv (per output.format) holding M, and records the paths in
// outputs[NAME_npy] / outputs[NAME_csv]. CSV columns are x, y[, z] (or c0.. beyond 3 columns).
// A run in process (run.result set) hands M over as result->arrays[NAME] instead.
void add_coordinates(io::OutputSet& out, json& outputs, const RunConfig& run, const std::string& name,
                     const MatrixD& M);

std::vector<int> argmax_rows(const MatrixD& M);

// Every string under the run's "input" that names an existing file or directory (the readers'
// paths), with its key path ("input.vectors", "input.files[2]"), in the config's order.
std::vector<std::pair<std::string, std::string>> input_paths(const RunConfig& run);

// The run's input files and directories: the config file and input_paths. Outputs never replace them.
std::vector<std::string> run_inputs(const RunConfig& run);

// The files a run of a method may write in output.dir: `names` as the method lists them, a name
// ending in ".*" standing for the coordinate files of output.format (NAME.npy and/or NAME.csv).
std::vector<std::string> run_outputs(const RunConfig& run, const std::vector<std::string>& names);

// The output checks a run makes before it fits (io::check_output_paths of run_outputs against
// run_inputs): `orrery validate` makes the same.
void check_run_outputs(const RunConfig& run, const std::vector<std::string>& names);

// Refuses a non-finite result before anything is written: an input error naming `what`, the
// method and the likely causes (input of extreme magnitude, parameters far from their defaults).
void check_finite_result(const RunConfig& run, const std::string& what, const MatrixD& M);

// Finishes a run's outputs: checks every number of the report's result and trace is finite (as
// above), adds OUTPUT_DIR/report.json, protects the run's inputs and commits the set (or, when the
// run is in process (run.result set), hands the files to it by name and writes nothing).
void commit_run(io::OutputSet& out, const json& report, const RunConfig& run);

}  // namespace orrery::pipeline
