// Pieces shared by the benchmark drivers that compare with scikit-learn.
#pragma once
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "io/readers.hpp"
#include "io/writers.hpp"
#include "orrery/error.hpp"
#include "orrery/config.hpp"
#include "orrery/types.hpp"

namespace orrery::bench {

// The first N Fashion-MNIST images (rows of 784 pixels) average-pooled 4 x 4 to 7 x 7 = 49 values:
// deterministic, no fitted model, small enough for exact peers.
inline MatrixD pooled_images(const MatrixD& raw, index_t N) {
  MatrixD X(N, 49, 0.0);
  for (index_t n = 0; n < N; ++n)
    for (int r = 0; r < 28; ++r)
      for (int c = 0; c < 28; ++c) X(n, (r / 4) * 7 + c / 4) += raw(n, r * 28 + c) / 16.0;
  return X;
}

// Runs a command that prints one JSON line (a peer's timing); an empty object when it fails.
inline json run_json_command(const std::string& cmd) {
  std::string line;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    while (fgets(buf, sizeof buf, p)) line += buf;
    pclose(p);
  }
  try {
    return json::parse(line);
  } catch (const std::exception&) {
    std::cerr << "[bench] peer run failed: " << cmd << "\n";
    return json::object();
  }
}

inline std::vector<index_t> count_list(const std::string& v) {
  std::vector<index_t> out;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(static_cast<index_t>(std::stod(item)));
  return out;
}

// Options as --key value pairs.
inline std::map<std::string, std::string> options(int argc, char** argv, const std::vector<std::string>& known,
                                                  const std::string& what) {
  std::map<std::string, std::string> o;
  for (int a = 2; a < argc; a += 2) {
    const std::string k = argv[a];
    if (std::find(known.begin(), known.end(), k) == known.end()) input_error(what + ": unknown option '" + k + "'");
    if (a + 1 >= argc) input_error(what + ": option " + k + " needs a value");
    o[k] = argv[a + 1];
  }
  return o;
}

inline std::string opt(const std::map<std::string, std::string>& o, const std::string& k, const std::string& fallback) {
  const auto it = o.find(k);
  return it == o.end() ? fallback : it->second;
}

// All 70,000 Fashion-MNIST images (the training set, then the test set), scaled to [0, 1].
inline MatrixD all_fashion_images(const std::string& dir) {
  MatrixD X = io::read_matrix(dir + "/train-images-idx3-ubyte.gz");
  const MatrixD test = io::read_matrix(dir + "/t10k-images-idx3-ubyte.gz");
  X.data.insert(X.data.end(), test.data.begin(), test.data.end());
  X.rows += test.rows;
  for (double& v : X.data) v /= 255.0;
  return X;
}

// Writes the records atomically when a path was given.
inline void write_records(const std::string& path, const json& records) {
  if (path.empty()) return;
  io::OutputSet files;
  files.add(path, records.dump(2) + "\n");
  files.commit();
}

}  // namespace orrery::bench
