// A run: one JSON file {"method", "input", "params", "output", "device", "threads", "seed", "comm"}.
// This layer reads the keys every method shares; each method (run/methods.cpp) then reads its
// own "input", "params" and extra "output" keys. Unknown keys and bad values are errors naming
// the key, raised before any work starts.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "orrery/comm.hpp"
#include "orrery/config.hpp"
#include "orrery/error.hpp"
#include "orrery/types.hpp"

namespace orrery::pipeline {

struct OutputSpec {
  std::string dir;             // required
  std::string format = "npy";  // npy | csv | both
  bool svg = true;
  bool html = false;  // map.html: the interactive map (run/map_page.hpp)
  double checkpoint_seconds = 60.0;  // between checkpoints of a long run (cli/checkpoint.hpp); 0: on stop only
};

// What a run hands back in process (RunConfig::result) in place of writing output.dir: the
// coordinate outputs as matrices, by name ("embedding", "objects", "classes", "documents",
// "topics"), and every other output file (report.json, a fitted model's files) by file name.
struct RunResult {
  std::map<std::string, MatrixD> arrays;
  std::map<std::string, std::string> files;
};

struct RunConfig {
  std::string path;  // the config file
  json raw;          // the file as read, echoed into the report
  std::string method;
  json input = json::object();   // method-specific, read by the method
  json params = json::object();  // method-specific, read through the method's field table
  OutputSpec output;
  json output_extra = json::object();  // output keys beyond dir/format/svg, read by the method
  std::string device = "auto";
  int threads = 0;
  unsigned long long seed = 0;
  // "auto" | "single" | "mpi": the communicator a front end makes for the run (make_comm in
  // orrery/comm.hpp) and hands over as `comm`.
  std::string comm_mode = "auto";
  // Seconds a rank waits in a collective for the others before the run is stopped naming the ranks
  // that never came (0: no limit).
  double comm_timeout = kDefaultCommTimeout;
  // The processes of the run (not owned; null: one process). With several ranks every rank runs the
  // same configuration; rank 0 alone shows progress and writes the outputs.
  Comm* comm = nullptr;
  // When set, a run hands its outputs here instead of writing them: a program calling the run
  // layer in process (the Python module) takes its results from memory, the coordinates as
  // matrices. The checks before a fit are the same either way.
  RunResult* result = nullptr;
};

// Thread counts, wherever they are given (a config's "threads", `evaluate --threads`): 0 = all
// cores, at most this many; more is refused rather than handed to OpenMP.
inline constexpr int kMaxThreads = 4096;
// A config nests a few levels; deeper JSON is refused while it is parsed.
inline constexpr int kMaxJsonDepth = 64;

// Runs `read`, which reads the file that the config key (or command-line option) `key` names, so
// that its input errors name the key as well as the file: "input.class_names: cannot open
// 'names.txt': ...". A message that starts with the key already is passed on as it is.
template <class F>
auto read_keyed(const std::string& key, F&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const Error& e) {
    const std::string m = e.what();
    if (e.kind() != ErrorKind::input || m.compare(0, key.size(), key) == 0) throw;
    input_error(key + ": " + m);
  }
}

// Parses the JSON and the shared keys; checks that the method exists (names the known ones).
RunConfig read_run_config(const std::string& path);
// The same from the JSON text of a config (`path` names it in messages); a config file's text is
// read and parsed by read_config_json, which refuses a directory, an unreadable file, invalid JSON,
// a number out of double's range and nesting deeper than kMaxJsonDepth, naming `path`.
RunConfig parse_run_config(const std::string& text, const std::string& path);
// The same from a config already held as JSON (the Python module builds it from an estimator's
// keyword arguments); `path` names it in messages.
RunConfig run_config_from_json(json raw, const std::string& path);
json read_config_json(const std::string& path);
json parse_config_json(const std::string& text, const std::string& path);

// Command-line numbers, range-checked as the type they arrive in before any narrowing; errors
// name the option and the range. `parse_int_option` takes a plain decimal integer in [lo, hi].
long long parse_int_option(const std::string& text, const std::string& option, long long lo, long long hi);
// A finite decimal number in [lo, hi] (or (lo, hi] when lo_exclusive).
double parse_real_option(const std::string& text, const std::string& option, double lo, double hi,
                         bool lo_exclusive = false);
int parse_threads_option(const std::string& text, const std::string& option);

// Small readers for method-specific keys; every error names `where.key`.
void check_keys(const json& j, const std::string& where, const std::vector<std::string>& known);
std::string get_path(const json& j, const std::string& key, const std::string& where);  // "" when absent
bool get_bool(const json& j, const std::string& key, const std::string& where, bool fallback);
// An integer in [lo, hi], checked before it is narrowed; errors name `name`.
index_t count_value(const json& v, const std::string& name, index_t lo, index_t hi);
index_t get_count(const json& j, const std::string& key, const std::string& where, index_t fallback, index_t lo = 0,
                  index_t hi = 1000000000000);

}  // namespace orrery::pipeline
