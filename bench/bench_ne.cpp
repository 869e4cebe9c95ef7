// `orrery_bench hssne`: exact HSSNE (alpha = 1, the t-SNE kernel, fixed-point optimiser) against
// scikit-learn's TSNE, exact and Barnes-Hut, on identical arrays in the same run: Fashion-MNIST test
// images 4 x 4 average-pooled to 49 dimensions. Reports seconds (affinities included), the exact
// gradient's pairs per second, and the leave-one-out 5-NN accuracy of each map.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "bench_common.hpp"
#include "io/readers.hpp"
#include "io/writers.hpp"
#include "orrery/affinity.hpp"
#include "orrery/backend.hpp"
#include "orrery/knn.hpp"
#include "orrery/pca.hpp"
#include "orrery/config.hpp"
#include "orrery/error.hpp"
#include "orrery/hssne.hpp"
#include "orrery/quality.hpp"

namespace orrery {

int run_ne_bench(int argc, char** argv) {
  std::vector<index_t> sizes = {2000};
  int iters = 1000, threads = 0;
  double perplexity = 30;
  bool sklearn_exact = true, sparse = false;
  std::string out, python = "/usr/bin/python3";
  for (int a = 2; a < argc; ++a) {
    const std::string opt = argv[a];
    if (opt == "--no-sklearn-exact") {
      sklearn_exact = false;
      continue;
    }
    if (opt == "--sparse") {
      sparse = true;
      continue;
    }
    if (a + 1 >= argc) input_error("hssne: option " + opt + " needs a value");
    const std::string v = argv[++a];
    if (opt == "--n") {
      sizes.clear();
      std::stringstream ss(v);
      std::string item;
      while (std::getline(ss, item, ',')) sizes.push_back(static_cast<index_t>(std::stod(item)));
    } else if (opt == "--iters") iters = std::stoi(v);
    else if (opt == "--perplexity") perplexity = std::stod(v);
    else if (opt == "--threads") threads = std::stoi(v);
    else if (opt == "--python") python = v;
    else if (opt == "--out") out = v;
    else input_error("hssne: unknown option '" + opt + "'");
  }
  const MatrixD raw = io::read_matrix("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz");
  const std::vector<int> all_labels = io::read_labels("/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz");
  json records = json::array();
  std::printf("%6s %6s %10s %12s %8s | %10s %8s %8s | %10s %8s %8s\n", "N", "iters", "orrery_s", "pairs/s", "5nn",
              "exact_s", "5nn", "ratio", "bh_s", "5nn", "ratio");
  for (index_t N : sizes) {
    const MatrixD X = bench::pooled_images(raw, N);
    const std::vector<int> labels(all_labels.begin(), all_labels.begin() + N);
    const auto t0 = std::chrono::steady_clock::now();
    HssneParams prm;
    prm.max_iter = iters;
    prm.tol = 0;  // run every iteration, as scikit-learn does
    const HssneResult fit = sparse ? fit_hssne(affinities_sparse(X, perplexity, threads).sparse, prm, 1, threads)
                                   : fit_hssne(affinities_dense(X, perplexity, threads).dense, {}, prm, 1, threads);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    QualityRequest req;
    req.ks = {5};
    req.curve = false;
    const double acc = evaluate_quality(fit.coords, fit.coords, labels, req).at_k[0].knn_accuracy;
    // one evaluation = one pass over all N (N - 1) ordered pairs
    const double pairs = static_cast<double>(N) * (N - 1) * fit.evaluations;
    const std::string xp = "/tmp/orrery_bench_ne_X.npy", yp = "/tmp/orrery_bench_ne_y.npy";
    io::OutputSet files;
    files.add(xp, io::npy_bytes(X));
    files.add(yp, io::npy_bytes(labels));
    files.commit();
    const std::string base = python + " bench/sklearn_tsne.py " + xp + " " + yp + " ";
    const json ex = sklearn_exact ? bench::run_json_command(base + "exact " + std::to_string(perplexity) + " " + std::to_string(iters))
                                  : json::object();
    const json bh = bench::run_json_command(base + "barnes_hut " + std::to_string(perplexity) + " " + std::to_string(iters));
    const double ex_s = ex.value("seconds", std::nan("")), bh_s = bh.value("seconds", std::nan(""));
    std::printf("%6lld %6d %10.2f %12.3g %8.3f | %10.2f %8.3f %7.1fx | %10.2f %8.3f %7.2fx\n",
                static_cast<long long>(N), iters, secs, pairs / secs, acc, ex_s, ex.value("knn5_accuracy", std::nan("")),
                ex_s / secs, bh_s, bh.value("knn5_accuracy", std::nan("")), bh_s / secs);
    std::fflush(stdout);
    records.push_back({{"bench", "hssne"}, {"n", N}, {"affinities", sparse ? "sparse" : "dense"}, {"dims", 49}, {"perplexity", perplexity}, {"iterations", iters},
                       {"orrery_seconds", secs}, {"orrery_pairs_per_second", pairs / secs},
                       {"orrery_knn5_accuracy", acc}, {"sklearn_exact", ex}, {"sklearn_barnes_hut", bh}});
  }
  bench::write_records(out, records);
  return 0;
}

// `orrery_bench hssne-scale`: exact HSSNE alpha = 1 (sparse P, fixed-point) on the first N of all
// 70,000 Fashion-MNIST images (training then test set), PCA to --pca dimensions, on one device.
// Times each stage apart (PCA on the host; the neighbour search on the device, then the affinity
// rows on the host, aff_s including knn_s; the fit)
// and the pairs per second of one plain fixed-point step at the final map (the mean of 20).
int run_ne_scale_bench(int argc, char** argv) {
  std::vector<index_t> sizes = {2000, 10000, 70000};
  int iters = 1000, pca = 50, threads = 0;
  double perplexity = 30;
  std::string device = "auto", dir = "/usr/share/datasets/fashion-mnist", out;
  for (int a = 2; a < argc; ++a) {
    const std::string opt = argv[a];
    if (a + 1 >= argc) input_error("hssne-scale: option " + opt + " needs a value");
    const std::string v = argv[++a];
    if (opt == "--n") {
      sizes.clear();
      std::stringstream ss(v);
      std::string item;
      while (std::getline(ss, item, ',')) sizes.push_back(static_cast<index_t>(std::stod(item)));
    } else if (opt == "--iters") iters = std::stoi(v);
    else if (opt == "--pca") pca = std::stoi(v);
    else if (opt == "--perplexity") perplexity = std::stod(v);
    else if (opt == "--device") device = v;
    else if (opt == "--threads") threads = std::stoi(v);
    else if (opt == "--data") dir = v;
    else if (opt == "--out") out = v;
    else input_error("hssne-scale: unknown option '" + opt + "'");
  }
  auto backend = make_backend(device, threads);
  std::cerr << "[hssne-scale] " << backend->name() << "\n";
  const auto clock = [] { return std::chrono::steady_clock::now(); };
  const auto since = [](auto t) { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count(); };
  MatrixD all = io::read_matrix(dir + "/train-images-idx3-ubyte.gz");
  std::vector<int> all_labels = io::read_labels(dir + "/train-labels-idx1-ubyte.gz");
  {
    const MatrixD test = io::read_matrix(dir + "/t10k-images-idx3-ubyte.gz");
    const std::vector<int> tl = io::read_labels(dir + "/t10k-labels-idx1-ubyte.gz");
    all.data.insert(all.data.end(), test.data.begin(), test.data.end());
    all.rows += test.rows;
    all_labels.insert(all_labels.end(), tl.begin(), tl.end());
  }
  json records = json::array();
  std::printf("%6s %6s %8s %8s %8s %8s %8s %10s %12s %12s %6s\n", "N", "iters", "pca_s", "knn_s", "aff_s", "fit_s", "total_s",
              "s/iter", "pairs/s fit", "pairs/s step", "5nn");
  for (index_t N : sizes) {
    if (N > all.rows) input_error("hssne-scale: --n " + std::to_string(N) + " exceeds the 70000 images");
    MatrixD X(N, all.cols);
    std::copy(all.data.begin(), all.data.begin() + N * all.cols, X.data.begin());
    for (double& v : X.data) v /= 255.0;
    const std::vector<int> labels(all_labels.begin(), all_labels.begin() + N);
    const auto t0 = clock();
    const MatrixD Xp = pca > 0 ? pca_project(X, pca, threads) : X;
    const double pca_s = since(t0);
    const auto t1 = clock();
    const int k = static_cast<int>(std::ceil(3.0 * perplexity));
    const KnnGraph graph =
        backend->is_cuda() ? exact_knn_cuda(Xp, k, backend->device_index()) : exact_knn(Xp, k, threads);
    const double knn_s = since(t1);
    const AffinityResult aff = affinities_from_knn(graph, perplexity, threads);
    const double aff_s = since(t1);
    HssneParams prm;
    prm.max_iter = iters;
    prm.tol = 0;
    const auto t2 = clock();
    const HssneResult fit = fit_hssne(aff.sparse, prm, 1, *backend);
    const double fit_s = since(t2);
    const double evals = fit.evaluations;
    const double pairs = static_cast<double>(N) * (N - 1);
    // One plain fixed-point step at the final map (the step, one pass over all pairs, the totals
    // back to the host), repeated: the unit of work of an iteration without the optimiser's logic.
    auto engine = make_hssne_engine(*backend, aff.sparse, prm.alpha, prm.dim);
    engine->start(fit.coords);
    engine->propose(1.0, 1.0, 0.0);
    const auto t3 = clock();
    const int reps = 20;
    for (int r = 0; r < reps; ++r) engine->propose(1.0, 1.0, 0.0);
    const double step_s = since(t3) / reps;
    QualityRequest req;
    req.ks = {5};
    req.curve = false;
    const double acc = evaluate_quality(fit.coords, fit.coords, labels, req, backend.get()).at_k[0].knn_accuracy;
    const double total = pca_s + aff_s + fit_s;
    std::printf("%6lld %6d %8.2f %8.2f %8.2f %8.2f %8.2f %10.4f %12.3g %12.3g %6.3f\n", static_cast<long long>(N),
                fit.iterations, pca_s, knn_s, aff_s, fit_s, total, fit_s / fit.iterations, pairs * evals / fit_s,
                pairs / step_s, acc);
    std::fflush(stdout);
    records.push_back({{"bench", "hssne-scale"}, {"device", backend->name()}, {"n", N}, {"pca", pca},
                       {"perplexity", perplexity}, {"iterations", fit.iterations}, {"evaluations", fit.evaluations},
                       {"restarts", fit.restarts}, {"damped_steps", fit.damped_steps}, {"pca_seconds", pca_s},
                       {"knn_seconds", knn_s}, {"affinity_seconds", aff_s}, {"fit_seconds", fit_s},
                       {"total_seconds", total}, {"pairs_per_second_fit", pairs * evals / fit_s},
                       {"step_seconds", step_s}, {"pairs_per_second_step", pairs / step_s},
                       {"knn5_accuracy", acc}, {"objective", fit.objective_trace.back()}});
  }
  bench::write_records(out, records);
  return 0;
}

}  // namespace orrery
