// Pieces shared by the benchmark drivers that compare with scikit-learn.
#pragma once
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <algorithm>
#include <map>
#include <memory>
#include <sstream>
#include <random>
#include <string>
#include <vector>

#include "io/readers.hpp"
#include "io/writers.hpp"
#include "orrery/backend.hpp"
#include "orrery/error.hpp"
#include "orrery/config.hpp"
#include "orrery/quality.hpp"
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

// A comma list of numbers ("0,0.5,1") as an option's value.
inline std::vector<double> number_list(const std::string& text) {
  std::vector<double> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(std::stod(item));
  return out;
}

// A comma list of counts ("2000,1e4") as an option's value.
inline std::vector<index_t> count_list(const std::string& text) {
  std::vector<index_t> out;
  for (double v : number_list(text)) out.push_back(static_cast<index_t>(v));
  return out;
}

// A device of a --device list: the list's word (for tables) and its backend.
struct Device {
  std::string label;
  std::unique_ptr<Backend> backend;
};

// The devices of a --device list ("cpu,cuda"), every backend made before any work is done, so that a
// device this machine lacks fails at once with the backend's own message (CUDA requested, no usable
// device) rather than after the CPU's share of the run.
inline std::vector<Device> make_devices(const std::string& list, int threads, const std::string& what) {
  std::vector<Device> out;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back({item, make_backend(item, threads)});
  if (out.empty()) input_error(what + ": --device expects a comma list of devices (cpu, cuda, cuda:N, auto), found '" + list + "'");
  return out;
}

// Leave-one-out 5-NN accuracy of a map over all its points, on the CPU: the same code scores every
// map of a comparison, whichever device or peer made it.
inline double knn5_all_points(const MatrixD& Y, const std::vector<int>& labels, int threads = 0) {
  QualityRequest req;
  req.ks = {5};
  req.curve = false;
  req.queries = 0;
  req.threads = threads;
  return evaluate_quality(Y, Y, labels, req, *make_cpu_backend(0)).at_k[0].knn_accuracy;
}

// Images (rows of pixels) with their class labels.
struct LabelledImages {
  MatrixD pixels;
  std::vector<int> labels;
};

// All 70,000 Fashion-MNIST images in `dir`: the training set, then the test set.
inline LabelledImages fashion_all(const std::string& dir) {
  LabelledImages all{io::read_matrix(dir + "/train-images-idx3-ubyte.gz"), io::read_labels(dir + "/train-labels-idx1-ubyte.gz")};
  const MatrixD test = io::read_matrix(dir + "/t10k-images-idx3-ubyte.gz");
  const std::vector<int> labels = io::read_labels(dir + "/t10k-labels-idx1-ubyte.gz");
  all.pixels.data.insert(all.pixels.data.end(), test.data.begin(), test.data.end());
  all.pixels.rows += test.rows;
  all.labels.insert(all.labels.end(), labels.begin(), labels.end());
  return all;
}

// N points in d dimensions from 20 Gaussian components of unit spread, centres drawn N(0, 3^2) per
// coordinate: overlapping clusters of high intrinsic dimension, harder for a graph search than
// images. Labels: each point's component.
inline LabelledImages gaussian_mixture(index_t N, int d, unsigned long long seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0, 1);
  const int components = 20;
  MatrixD centres(components, d);
  for (double& v : centres.data) v = 3.0 * z(rng);
  LabelledImages out{MatrixD(N, d), std::vector<int>(static_cast<size_t>(N))};
  for (index_t i = 0; i < N; ++i) {
    const index_t c = static_cast<index_t>(rng() % components);
    out.labels[static_cast<size_t>(i)] = static_cast<int>(c);
    for (int j = 0; j < d; ++j) out.pixels(i, j) = centres(c, j) + z(rng);
  }
  return out;
}

// The first N rows of M, each entry divided by `divisor`.
inline MatrixD first_rows(const MatrixD& M, index_t N, double divisor) {
  MatrixD X(N, M.cols);
  for (index_t i = 0; i < N * M.cols; ++i) X.data[i] = M.data[i] / divisor;
  return X;
}

// All 70,000 Fashion-MNIST images as pixels in [0, 1], and their labels.
inline MatrixD fashion_mnist_all(const std::string& dir, std::vector<int>& labels) {
  LabelledImages all = fashion_all(dir);
  labels = std::move(all.labels);
  for (double& v : all.pixels.data) v /= 255.0;
  return std::move(all.pixels);
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

// Writes the records atomically when a path was given.
inline void write_records(const std::string& path, const json& records) {
  if (path.empty()) return;
  io::OutputSet files;
  files.add(path, records.dump(2) + "\n");
  files.commit();
}

}  // namespace orrery::bench
