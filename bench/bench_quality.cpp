// `orrery_bench quality`: trustworthiness and continuity (with every other rank measure, which
// the same pass computes) against scikit-learn's trustworthiness on identical arrays, in one run.
// Data: the first N Fashion-MNIST test images, 4 x 4 average-pooled to 7 x 7 = 49 dimensions
// (deterministic, no fitted model), and a fixed seeded random 2-D projection of them as the map.
//
// `orrery_bench quality --scale`: the measures an NE run's report adds (K = 1, 5, 10, 20 with
// labels) on all 70,000 Fashion-MNIST images (PCA-50 input, their first two principal components
// as the map), computed on all points and on seeded subsamples of query points (--queries, default
// the size rule), in one run: the times, their ratio, and each measure's difference against its
// standard error (--queries none: all points only). --device lists the devices of the neighbor searches and rank counting (cpu by
// default; `cpu,cuda` runs both in one invocation and prints each later device's largest difference
// from the first on all points); --ks the neighborhood sizes; --source mixture a seeded 50-D Gaussian
// mixture (its PCA-2 as the map) for sizes beyond the images.
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <random>
#include <sstream>
#include <tuple>

#include "bench_common.hpp"
#include "io/readers.hpp"
#include "io/writers.hpp"
#include "orrery/clock.hpp"
#include "orrery/config.hpp"
#include "orrery/error.hpp"
#include "orrery/pca.hpp"
#include "orrery/quality.hpp"

namespace orrery {
namespace {

// The largest absolute difference between two reports' measures at every K.
double largest_difference(const QualityReport& a, const QualityReport& b) {
  double d = 0;
  for (size_t i = 0; i < a.at_k.size() && i < b.at_k.size(); ++i) {
    const QualityAtK &x = a.at_k[i], &y = b.at_k[i];
    for (double v : {x.trustworthiness - y.trustworthiness, x.continuity - y.continuity,
                     x.mrre_neighborhood - y.mrre_neighborhood, x.mrre_visual - y.mrre_visual, x.lcmc - y.lcmc,
                     x.knn_accuracy - y.knn_accuracy})
      d = std::max(d, std::abs(v));
  }
  return d;
}

// The subsampled estimates at each --queries size against the measures on all points, on one device.
void print_subsamples(const MatrixD& X, const MatrixD& Y, const std::vector<int>& labels, QualityRequest req,
                      const std::vector<index_t>& queries, const Backend& backend, const QualityReport& full,
                      double full_s, const json& base, json& records) {
  for (index_t q : queries) {
    req.queries = q;
    const auto t0 = std::chrono::steady_clock::now();
    const QualityReport sub = evaluate_quality(X, Y, labels, req, backend);
    const double sub_s = seconds_since(t0);
    std::printf("\n%lld queries: %.2f s, %.1fx faster than all points\n", static_cast<long long>(sub.queries), sub_s,
                full_s / sub_s);
    std::printf("%-20s %4s %12s %12s %11s %10s %8s\n", "measure", "K", "all", "subsample", "difference", "std_err",
                "|d|/se");
    json rows = json::array();
    for (size_t a = 0; a < full.at_k.size(); ++a) {
      const QualityAtK &f = full.at_k[a], &s = sub.at_k[a];
      const QualityAtK e = sub.at_k_se.empty() ? QualityAtK{} : sub.at_k_se[a];
      const std::vector<std::tuple<const char*, double, double, double>> m = {
          {"trustworthiness", f.trustworthiness, s.trustworthiness, e.trustworthiness},
          {"continuity", f.continuity, s.continuity, e.continuity},
          {"mrre_neighborhood", f.mrre_neighborhood, s.mrre_neighborhood, e.mrre_neighborhood},
          {"mrre_visual", f.mrre_visual, s.mrre_visual, e.mrre_visual},
          {"lcmc", f.lcmc, s.lcmc, e.lcmc},
          {"knn_accuracy", f.knn_accuracy, s.knn_accuracy, e.knn_accuracy}};
      for (const auto& [name, fv, sv, se] : m) {
        std::printf("%-20s %4d %12.6f %12.6f %11.2e %10.2e %8.2f\n", name, f.k, fv, sv, sv - fv, se,
                    se > 0 ? std::abs(sv - fv) / se : 0.0);
        rows.push_back({{"measure", name}, {"k", f.k}, {"all", fv}, {"subsample", sv}, {"standard_error", se}});
      }
    }
    std::fflush(stdout);
    json r = base;
    r["queries"] = sub.queries;
    r["subsample_seconds"] = sub_s;
    r["measures"] = rows;
    records.push_back(r);
  }
}

int run_quality_scale_bench(int argc, char** argv) {
  index_t n = 70000;
  std::vector<index_t> queries = {-1};  // -1: the default rule
  std::vector<int> ks = {1, 5, 10, 20};
  int pca = 50, threads = 0;
  unsigned long long seed = 0;
  std::string dir = "/usr/share/datasets/fashion-mnist", out, device_list = "cpu", source = "fashion";
  for (int a = 3; a < argc; ++a) {
    const std::string opt = argv[a];
    if (a + 1 >= argc) input_error("quality --scale: option " + opt + " needs a value");
    const std::string v = argv[++a];
    if (opt == "--n") n = static_cast<index_t>(std::stod(v));
    else if (opt == "--pca") pca = std::stoi(v);
    else if (opt == "--queries") queries = v == "none" ? std::vector<index_t>() : bench::count_list(v);
    else if (opt == "--ks") {
      ks.clear();
      for (index_t k : bench::count_list(v)) ks.push_back(static_cast<int>(k));
    } else if (opt == "--seed") seed = std::stoull(v);
    else if (opt == "--threads") threads = std::stoi(v);
    else if (opt == "--device") device_list = v;
    else if (opt == "--source") source = v;
    else if (opt == "--data") dir = v;
    else if (opt == "--out") out = v;
    else input_error("quality --scale: unknown option '" + opt + "'");
  }
  if (source != "fashion" && source != "mixture")
    input_error("quality --scale: --source takes fashion or mixture, not '" + source + "'");
  const std::vector<bench::Device> devices = bench::make_devices(device_list, threads, "quality --scale");
  std::vector<int> labels;
  MatrixD all;
  if (source == "fashion") {
    all = bench::fashion_mnist_all(dir, labels);
    if (n > all.rows) input_error("quality --scale: --n " + std::to_string(n) + " exceeds the 70000 images");
  } else {
    bench::LabelledImages m = bench::gaussian_mixture(n, 50, 1);
    all = std::move(m.pixels);
    labels = std::move(m.labels);
  }
  all.data.resize(static_cast<size_t>(n * all.cols));
  all.rows = n;
  labels.resize(static_cast<size_t>(n));
  // The input: PCA to --pca dimensions (none for the 50-D mixture at the default); the map: the
  // input's first two principal components.
  const bool project = pca > 0 && pca < all.cols;
  const MatrixD X = project ? pca_project(all, pca, threads) : all;
  const MatrixD Y = project ? [&] {
    MatrixD first_two(n, 2);
    for (index_t i = 0; i < n; ++i)
      for (int d = 0; d < 2; ++d) first_two(i, d) = X(i, d);
    return first_two;
  }() : pca_project(X, 2, threads);
  QualityRequest req;  // as an NE run's report asks
  req.ks = ks;
  req.curve = false;
  req.threads = threads;
  req.seed = seed;
  json records = json::array();
  QualityReport first;  // the first device's measures on all points
  for (const bench::Device& device : devices) {
    req.queries = 0;
    const auto t0 = std::chrono::steady_clock::now();
    const QualityReport full = evaluate_quality(X, Y, labels, req, *device.backend);
    const double full_s = seconds_since(t0);
    std::printf("%s: N %lld, input %s (%d dimensions), map PCA-2, seed %llu: all points %.3f s\n",
                device.backend->name().c_str(), static_cast<long long>(n), source.c_str(), static_cast<int>(X.cols),
                seed, full_s);
    for (const QualityAtK& m : full.at_k)
      std::printf("  K %d: trustworthiness %.6f, continuity %.6f, k-NN accuracy %.6f\n", m.k, m.trustworthiness,
                  m.continuity, m.knn_accuracy);
    const bool is_first = &device == &devices.front();
    if (is_first) first = full;
    const double diff = largest_difference(first, full);
    if (!is_first) std::printf("  largest difference from %s on all points: %.3g\n", devices.front().label.c_str(), diff);
    std::fflush(stdout);
    const json base = {{"bench", "quality-scale"}, {"device", device.backend->name()}, {"source", source}, {"n", n},
                       {"pca", pca}, {"ks", ks}, {"seed", seed}, {"threads", threads}, {"all_seconds", full_s},
                       {"largest_difference_from_first_device", diff}};
    if (queries.empty()) records.push_back(base);
    print_subsamples(X, Y, labels, req, queries, *device.backend, full, full_s, base, records);
  }
  bench::write_records(out, records);
  return 0;
}

}  // namespace

int run_quality_bench(int argc, char** argv) {
  if (argc > 2 && std::string(argv[2]) == "--scale") return run_quality_scale_bench(argc, argv);
  std::vector<index_t> sizes = {2000, 5000, 10000};
  int k = 10;
  std::string images = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz", out, python = "/usr/bin/python3";
  int threads = 0;
  for (int a = 2; a < argc; ++a) {
    const std::string opt = argv[a];
    if (a + 1 >= argc) input_error("quality: option " + opt + " needs a value");
    const std::string v = argv[++a];
    if (opt == "--n") sizes = bench::count_list(v);
    else if (opt == "--k") k = std::stoi(v);
    else if (opt == "--images") images = v;
    else if (opt == "--threads") threads = std::stoi(v);
    else if (opt == "--python") python = v;
    else if (opt == "--out") out = v;
    else input_error("quality: unknown option '" + opt + "'");
  }
  const MatrixD raw = io::read_matrix(images);
  json records = json::array();
  std::printf("%8s %4s %10s %10s %12s %12s %9s %14s %14s\n", "N", "K", "orrery_s", "sklearn_s", "speedup", "|dT|",
              "|dC|", "rss_MiB", "sklearn");
  for (index_t N : sizes) {
    if (N > raw.rows) input_error("quality: --n " + std::to_string(N) + " exceeds the " + std::to_string(raw.rows) +
                                  " images in " + images);
    const MatrixD X = bench::pooled_images(raw, N);
    MatrixD Y(N, 2, 0.0);
    std::mt19937_64 rng(7);
    std::normal_distribution<double> z(0.0, 1.0);
    std::vector<double> proj(49 * 2);
    for (double& v : proj) v = z(rng);
    for (index_t n = 0; n < N; ++n)
      for (int d = 0; d < 2; ++d)
        for (int j = 0; j < 49; ++j) Y(n, d) += X(n, j) * proj[j * 2 + d];
    QualityRequest req;
    req.ks = {k};
    req.curve = false;
    req.threads = threads;
    const auto t0 = std::chrono::steady_clock::now();
    const QualityReport rep = evaluate_quality(X, Y, {}, req, *make_cpu_backend(0));
    const double secs = seconds_since(t0);
    rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    const double rss = ru.ru_maxrss / 1024.0;

    // scikit-learn on the same arrays, in the same run
    const std::string xp = "/tmp/orrery_bench_quality_X.npy", yp = "/tmp/orrery_bench_quality_Y.npy";
    io::OutputSet files;
    files.add(xp, io::npy_bytes(X));
    files.add(yp, io::npy_bytes(Y));
    files.commit();
    const std::string cmd = python + " bench/sklearn_trustworthiness.py " + xp + " " + yp + " " + std::to_string(k);
    const json sk = bench::run_json_command(cmd);
    const double sk_s = sk.contains("seconds_trustworthiness")
                            ? sk["seconds_trustworthiness"].get<double>() + sk["seconds_continuity"].get<double>()
                            : std::nan("");
    const double dT = sk.contains("trustworthiness") ? std::abs(sk["trustworthiness"].get<double>() - rep.at_k[0].trustworthiness) : std::nan("");
    const double dC = sk.contains("continuity") ? std::abs(sk["continuity"].get<double>() - rep.at_k[0].continuity) : std::nan("");
    std::printf("%8lld %4d %10.3f %10.3f %11.1fx %12.2e %9.2e %14.0f %14s\n", static_cast<long long>(N), k, secs,
                sk_s, sk_s / secs, dT, dC, rss, sk.value("sklearn", std::string("n/a")).c_str());
    std::fflush(stdout);
    records.push_back({{"bench", "quality"}, {"n", N}, {"k", k}, {"dims", 49}, {"orrery_seconds", secs},
                       {"orrery_trustworthiness", rep.at_k[0].trustworthiness},
                       {"orrery_continuity", rep.at_k[0].continuity}, {"peak_rss_mib", rss}, {"sklearn", sk}});
  }
  bench::write_records(out, records);
  return 0;
}

}  // namespace orrery
