// A run: one JSON file {"method", "input", "params", "output", "device", "threads", "seed"}.
// This layer reads the keys every method shares; each method (cli/methods.cpp) then reads its
// own "input", "params" and extra "output" keys. Unknown keys and bad values are errors naming
// the key, raised before any work starts.
#pragma once
#include <string>
#include <vector>

#include "orrery/config.hpp"
#include "orrery/types.hpp"

namespace orrery::cli {

struct OutputSpec {
  std::string dir;             // required
  std::string format = "npy";  // npy | csv | both
  bool svg = true;
  double checkpoint_seconds = 60.0;  // between checkpoints of a long run (cli/checkpoint.hpp); 0: on stop only
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
};

// Parses the JSON and the shared keys; checks that the method exists (names the known ones).
RunConfig read_run_config(const std::string& path);

// Small readers for method-specific keys; every error names `where.key`.
void check_keys(const json& j, const std::string& where, const std::vector<std::string>& known);
std::string get_path(const json& j, const std::string& key, const std::string& where);  // "" when absent
bool get_bool(const json& j, const std::string& key, const std::string& where, bool fallback);
index_t get_count(const json& j, const std::string& key, const std::string& where, index_t fallback);

}  // namespace orrery::cli
