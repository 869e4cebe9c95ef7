// Files of the CLI tests that run neighbor embeddings: labelled points as CSV and a run
// configuration on the CPU, written into the test's temporary directory.
#pragma once
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "common/temp_dir.hpp"

namespace orrery::test {

// n points of `dims` coordinates as name.csv, point i of class i % classes, and their classes as
// name_labels.txt; value(i, d) gives coordinate d of point i, called row by row.
template <class Value>
void write_labelled_points(const TempDir& tmp, const std::string& name, int n, int dims, int classes,
                           Value&& value) {
  std::ostringstream x, y;
  for (int i = 0; i < n; ++i) {
    for (int d = 0; d < dims; ++d) x << (d ? "," : "") << value(i, d);
    x << "\n";
    y << i % classes << "\n";
  }
  tmp.write(name + ".csv", x.str());
  tmp.write(name + "_labels.txt", y.str());
}

// A run of `method` on the CPU (seed 3, no map.svg) into tmp/out, written as tmp/name; threads 0:
// the default.
inline std::string write_run_config(const TempDir& tmp, const std::string& name, const std::string& method,
                                    const nlohmann::json& input, const std::string& out,
                                    const nlohmann::json& params = nlohmann::json::object(), int threads = 0) {
  nlohmann::json c = {{"method", method},
                      {"input", input},
                      {"params", params},
                      {"output", {{"dir", tmp.path(out)}, {"svg", false}}},
                      {"device", "cpu"},
                      {"seed", 3}};
  if (threads > 0) c["threads"] = threads;
  return tmp.write(name, c.dump());
}

}  // namespace orrery::test
