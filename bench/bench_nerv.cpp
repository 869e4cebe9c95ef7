// NeRV and supervised NeRV benchmarks.
//   orrery_bench nerv: an exact NeRV fit (dense P, lambda 0.3) on the first N Fashion-MNIST training
//     images after PCA, stage by stage, on one device.
//   orrery_bench snerv-distances: learning-metric distances (T pieces) for N points of d dimensions
//     (Fashion-MNIST after PCA to d), the class model fitted once with K = 4 C components.
//   orrery_bench snerv-cv: the paper's protocol (k folds, test labels hidden, 5-NN test error in
//     the map) for snerv and for unsupervised nerv on the same points, through the CLI's runs
//     (--cv-only 1: snerv's folds alone, without the run's own map from every label).
//   orrery_bench snerv-paths: supervised NeRV's two ways to its metric neighbors (the N x N
//     distances, or Euclidean candidates re-ranked by the metric), timed on the same model, and how
//     many of the exact metric neighbors the candidates find.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "bench_common.hpp"
#include "run/methods.hpp"
#include "run/ne_run.hpp"
#include "run/run_config.hpp"
#include "io/readers.hpp"
#include "orrery/affinity.hpp"
#include "orrery/backend.hpp"
#include "orrery/clock.hpp"
#include "orrery/error.hpp"
#include "orrery/nerv.hpp"
#include "orrery/pca.hpp"
#include "orrery/quality.hpp"
#include "orrery/snerv.hpp"

namespace orrery {
namespace {


using bench::count_list;
using bench::opt;
using bench::options;

MatrixD fashion(const std::string& dir, index_t n, std::vector<int>* labels) {
  MatrixD X = io::read_matrix(dir + "/train-images-idx3-ubyte.gz", n);
  if (labels) *labels = io::read_labels(dir + "/train-labels-idx1-ubyte.gz", n);
  for (double& v : X.data) v /= 255.0;
  return X;
}

// The first N Fashion-MNIST training images after PCA to d, divided by `scale` (0: their
// input_scale, as fit_snerv does), and their class model with K = 40 components (3 folds for s).
struct FashionModel {
  MatrixD X;
  ClassMixture model;
  double seconds = 0.0;  // the model's fit
};
FashionModel fashion_model(const std::string& dir, index_t N, int d, bool unit_scale, int threads) {
  std::vector<int> labels;
  FashionModel f;
  f.X = pca_project(fashion(dir, N, &labels), d, threads);
  if (unit_scale) {
    const double scale = input_scale(f.X);
    for (double& v : f.X.data) v /= scale;
  }
  ClassMixtureParams prm;
  prm.components = 40;
  prm.folds = 3;
  const auto t0 = Clock::now();
  f.model = fit_class_mixture(f.X, labels, prm, 1, threads);
  f.seconds = seconds_since(t0);
  return f;
}

}  // namespace

int run_nerv_bench(int argc, char** argv) {
  const auto o =
      options(argc, argv,
              {"--n", "--device", "--iters", "--pca", "--data", "--out", "--threads", "--precision", "--affinities"},
              "nerv");
  const std::string mode = opt(o, "--affinities", "dense");
  if (mode != "dense" && mode != "sparse") input_error("nerv: --affinities must be dense or sparse");
  auto backend = make_backend(opt(o, "--device", "auto"), std::stoi(opt(o, "--threads", "0")));
  const int pca = std::stoi(opt(o, "--pca", "50"));
  std::cerr << "[nerv] " << backend->name() << "\n";
  json records = json::array();
  std::printf("%6s %6s %6s %5s %8s %8s %8s %6s %6s %10s %8s %6s\n", "N", "P", "prec", "pca", "pca_s", "aff_s",
              "fit_s", "iters", "evals", "s/eval", "stop", "5nn");
  for (index_t N : count_list(opt(o, "--n", "8000"))) {
    std::vector<int> labels;
    const MatrixD X = fashion(opt(o, "--data", "/usr/share/datasets/fashion-mnist"), N, &labels);
    const auto t0 = Clock::now();
    const MatrixD Xp = pca > 0 ? pca_project(X, pca, backend->threads()) : X;
    const double pca_s = seconds_since(t0);
    const auto t1 = Clock::now();
    const AffinityResult aff = mode == "dense" ? affinities_dense(Xp, 30.0, backend->threads())
                                               : affinities_sparse(Xp, 30.0, backend->threads());
    const double aff_s = seconds_since(t1);
    std::stringstream precisions(opt(o, "--precision", enum_name(NervParams().precision)));
    for (std::string precision; std::getline(precisions, precision, ',');) {
      NervParams prm;
      prm.max_iter = std::stoi(opt(o, "--iters", "500"));
      prm.precision = parse_enum<NervPrecision>(precision, "--precision");
      const auto t2 = Clock::now();
      const NervResult fit = mode == "dense" ? fit_nerv(aff.conditional, aff.beta, prm, 1, *backend)
                                             : fit_nerv(aff.sparse_conditional, aff.beta, prm, 1, *backend);
      const double fit_s = seconds_since(t2);
      QualityRequest req;
      req.ks = {5};
      req.curve = false;
      req.queries = 0;  // all points: exact, comparable with the peers
      const double acc = evaluate_quality(fit.coords, fit.coords, labels, req, *make_cpu_backend(0)).at_k[0].knn_accuracy;
      const std::string prec = fit.arithmetic;
      std::printf("%6lld %6s %6s %5d %8.2f %8.2f %8.2f %6d %6d %10.4f %8s %6.3f\n", static_cast<long long>(N),
                  mode.c_str(), prec.c_str(), pca, pca_s, aff_s, fit_s, fit.iterations, fit.evaluations,
                  fit_s / std::max(fit.evaluations, 1), fit.stop_reason.c_str(), acc);
      std::fflush(stdout);
      records.push_back({{"bench", "nerv"}, {"device", backend->name()}, {"n", N}, {"affinities", mode},
                         {"precision", prec}, {"evaluations", fit.evaluations}, {"pca", pca}, {"lambda", prm.lambda},
                         {"pca_seconds", pca_s}, {"affinity_seconds", aff_s}, {"fit_seconds", fit_s},
                         {"iterations", fit.iterations}, {"stop_reason", fit.stop_reason},
                         {"objective", fit.objective_trace.empty() ? 0.0 : fit.objective_trace.back()},
                         {"knn5_accuracy", acc}});
    }
  }
  bench::write_records(opt(o, "--out", ""), records);
  return 0;
}

int run_snerv_distance_bench(int argc, char** argv) {
  const auto o = options(argc, argv, {"--n", "--dims", "--device", "--pieces", "--data", "--out", "--threads"},
                         "snerv-distances");
  auto backend = make_backend(opt(o, "--device", "auto"), std::stoi(opt(o, "--threads", "0")));
  const int pieces = std::stoi(opt(o, "--pieces", "10"));
  std::cerr << "[snerv-distances] " << backend->name() << "\n";
  json records = json::array();
  std::printf("%7s %5s %4s %8s %10s %14s\n", "N", "dims", "K", "model_s", "dist_s", "pairs/s");
  for (index_t N : count_list(opt(o, "--n", "1500")))
    for (index_t d : count_list(opt(o, "--dims", "16,36"))) {
      const FashionModel f = fashion_model(opt(o, "--data", "/usr/share/datasets/fashion-mnist"), N,
                                           static_cast<int>(d), false, backend->threads());
      const MatrixD& X = f.X;
      const ClassMixture& m = f.model;
      const double model_s = f.seconds;
      const auto t1 = Clock::now();
      const MatrixD D = backend->learning_metric_distances(m, X, pieces);
      const double dist_s = seconds_since(t1);
      const double pairs = 0.5 * static_cast<double>(N) * static_cast<double>(N - 1);
      std::printf("%7lld %5lld %4lld %8.2f %10.3f %14.4g\n", static_cast<long long>(N), static_cast<long long>(d),
                  static_cast<long long>(m.centres.rows), model_s, dist_s, pairs / dist_s);
      std::fflush(stdout);
      records.push_back({{"bench", "snerv-distances"}, {"device", backend->name()}, {"n", N}, {"dims", d},
                         {"components", m.centres.rows}, {"pieces", pieces}, {"model_seconds", model_s},
                         {"distance_seconds", dist_s}, {"pairs_per_second", pairs / dist_s}, {"check", D(0, 1)}});
    }
  bench::write_records(opt(o, "--out", ""), records);
  return 0;
}

int run_snerv_paths_bench(int argc, char** argv) {
  const auto o = options(argc, argv, {"--n", "--device", "--pca", "--data", "--out", "--threads", "--perplexity"},
                         "snerv-paths");
  auto backend = make_backend(opt(o, "--device", "auto"), std::stoi(opt(o, "--threads", "0")));
  const int pca = std::stoi(opt(o, "--pca", "50"));
  std::cerr << "[snerv-paths] " << backend->name() << "\n";
  json records = json::array();
  std::printf("%7s %4s %6s %4s %5s %8s %10s %10s %8s\n", "N", "K", "perp", "k", "cand", "model_s", "exact_s",
              "cand_s", "recall");
  for (index_t N : count_list(opt(o, "--n", "1000,2000,5000"))) {
    // as fit_snerv: the metric on X / input_scale(X)
    const FashionModel f =
        fashion_model(opt(o, "--data", "/usr/share/datasets/fashion-mnist"), N, pca, true, backend->threads());
    const MatrixD& X = f.X;
    const ClassMixture& m = f.model;
    const double model_s = f.seconds;
    const int pieces = ClassMixtureParams().pieces;
    const double perplexity = opt(o, "--perplexity", "0") == "0"
                                  ? snerv_perplexity(0.0, N, m.centres.rows)
                                  : std::stod(opt(o, "--perplexity", "0"));
    const int k = sparse_neighbors(perplexity), c = snerv_candidates(0, k, N);
    // the exact path: every pair's distance, then each row's k nearest and the affinities
    const auto t1 = Clock::now();
    const MatrixD D = backend->learning_metric_distances(m, X, pieces);
    const KnnGraph ge = knn_from_distance_matrix(D, k, backend->threads());
    const AffinityResult ae = affinities_from_knn(ge, perplexity, backend->threads());
    const double exact_s = seconds_since(t1);
    // the candidate path: Euclidean candidates, their metric distances, the re-rank, the affinities
    const auto t2 = Clock::now();
    const KnnGraph gc = metric_knn(m, X, k, c, pieces, false, {}, 1, *backend);
    const AffinityResult ac = affinities_from_knn(gc, perplexity, backend->threads());
    const double cand_s = seconds_since(t2);
    index_t found = 0;
    for (index_t i = 0; i < N; ++i) {
      const std::set<index_t> s(ge.neighbors(i), ge.neighbors(i) + k);
      for (int q = 0; q < k; ++q) found += s.count(gc.neighbors(i)[q]);
    }
    const double recall = static_cast<double>(found) / (static_cast<double>(N) * k);
    std::printf("%7lld %4lld %6.1f %4d %5d %8.2f %10.2f %10.2f %8.4f\n", static_cast<long long>(N),
                static_cast<long long>(m.centres.rows), perplexity, k, c, model_s, exact_s, cand_s, recall);
    std::fflush(stdout);
    records.push_back({{"bench", "snerv-paths"}, {"device", backend->name()}, {"n", N}, {"pca", pca},
                       {"components", m.centres.rows}, {"perplexity", perplexity}, {"k", k}, {"candidates", c},
                       {"model_seconds", model_s}, {"exact_seconds", exact_s}, {"candidate_seconds", cand_s},
                       {"metric_neighbor_recall", recall}, {"check", ae.beta[0] + ac.beta[0]}});
  }
  bench::write_records(opt(o, "--out", ""), records);
  return 0;
}

int run_snerv_cv_bench(int argc, char** argv) {
  const auto o = options(argc, argv, {"--data", "--n", "--folds", "--device", "--iters", "--out", "--pca", "--neighbors",
                                      "--methods", "--dir", "--threads", "--progress", "--cv-only"},
                         "snerv-cv");
  // --progress 1: the runs' own progress (stages, fits, each fold's error) on stderr.
  // --cv-only 1: snerv makes only the folds' maps (each without its fold's labels), not the run's
  //   own map from every label, which the protocol does not score (a sixth fit saved at large N).
  const bool progress = opt(o, "--progress", "0") != "0", cv_only = opt(o, "--cv-only", "0") != "0";
  const std::string data = opt(o, "--data", "digits");
  const std::string n = opt(o, "--n", "1000"), folds = opt(o, "--folds", "5"), iters = opt(o, "--iters", "2000");
  json records = json::array();
  std::printf("%-8s %6s %-6s %12s %s\n", "data", "N", "method", "mean_error", "per fold");
  std::stringstream methods(opt(o, "--methods", "snerv,nerv"));
  for (std::string method; std::getline(methods, method, ',');) {
    json input = {{"limit", std::stoll(n)}, {"cv_folds", std::stoi(folds)}};
    if (method == "snerv") input["neighbors"] = opt(o, "--neighbors", "auto");
    if (data == "digits") {
      // scikit-learn's digits: 64 pixel columns then the label, one CSV; split into two files
      const MatrixD all = io::read_matrix("/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz");
      std::ofstream xs("/tmp/orrery_bench_digits_X.csv"), ys("/tmp/orrery_bench_digits_y.csv");
      for (index_t r = 0; r < all.rows; ++r) {
        for (index_t c = 0; c < 64; ++c) xs << (c ? "," : "") << all(r, c);
        xs << "\n";
        ys << static_cast<int>(all(r, 64)) << "\n";
      }
      input["vectors"] = "/tmp/orrery_bench_digits_X.csv";
      input["labels"] = "/tmp/orrery_bench_digits_y.csv";
      input["pca"] = std::stoi(opt(o, "--pca", "20"));
    } else if (data == "fashion70k") {
      // all 70,000 images (training set, then test set) as bench/nerv_fashion_70k.sh gathers them
      const std::string dir = opt(o, "--dir", "data/fashion70k");
      if (!std::filesystem::exists(dir + "/images.npy"))
        throw std::runtime_error(dir + "/images.npy is missing: bash bench/nerv_fashion_70k.sh makes it");
      input["vectors"] = dir + "/images.npy";
      input["labels"] = dir + "/labels.txt";
      input["pca"] = std::stoi(opt(o, "--pca", "30"));
    } else {
      input["vectors"] = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";
      input["labels"] = "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz";
      input["pca"] = std::stoi(opt(o, "--pca", "30"));
    }
    if (method == "nerv") input["perplexity"] = 30;
    const json cfg = {{"method", method}, {"input", input}, {"params", {{"max_iter", std::stoi(iters)}}},
                      {"output", {{"dir", "/tmp/orrery_bench_snerv_cv"}, {"svg", false}}},
                      {"device", opt(o, "--device", "auto")}, {"threads", std::stoi(opt(o, "--threads", "0"))},
                      {"seed", 1}};
    const auto t0 = Clock::now();
    const pipeline::RunConfig run = pipeline::run_config_from_json(cfg, "snerv-cv (" + method + ")");
    // --cv-only: SNeRV's folds alone, not a method's whole run
    const json r = cv_only && run.method == "snerv" ? pipeline::cross_validate_snerv(run, !progress)
                                                    : pipeline::find_method(run.method)->run(run, !progress, nullptr);
    const double secs = seconds_since(t0);
    const json& cv = r["cross_validation"];
    std::printf("%-8s %6s %-6s %12.4f %s  (%.1f s)\n", data.c_str(), n.c_str(), method.c_str(),
                cv["mean_knn5_test_error"].get<double>(), cv["knn5_test_error"].dump().c_str(), secs);
    std::fflush(stdout);
    records.push_back({{"bench", "snerv-cv"}, {"data", data}, {"n", std::stoll(n)}, {"method", method},
                       {"seconds", secs}, {"cross_validation", cv},
                       {"metric", r.value("result", json::object()).value("metric", json())},
                       {"device", r.value("device", json())}});
  }
  bench::write_records(opt(o, "--out", ""), records);
  return 0;
}

}  // namespace orrery
