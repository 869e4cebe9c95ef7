// `orrery_bench knn`: the exact neighbor search against the approximate one (HNSW) on the first N
// of all 70,000 Fashion-MNIST images (/255, PCA to --pca dimensions), k neighbors (HNSW on the CPU).
// For each N: the exact search's time, then for each HNSW setting M:ef_construction:ef_search the time of
// approximate_knn (its serial build apart), its recall against the exact graph of the same run
// (every point: a listed neighbor counts when its distance is at most the exact k-th), the time
// and value of the run's recall estimate (estimate_knn_recall on --sample points), and the ratio of
// the exact time to the approximate one (search plus estimate: what a run pays).
// --source mixture: N points of a seeded 50-D Gaussian mixture instead (sizes beyond the images);
// --exact 0 skips the exact search (hours at 10^6 points on the CPU): then only the estimate gives the
// recall. --device lists the devices of the exact search (Backend::knn; cpu by default, `cpu,cuda`
// times both in one run: each later device's graph is scored against the first's, and its speed-up
// over the first is the exact/x column); --settings none skips the approximate search.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <random>
#include <sstream>

#include "bench_common.hpp"
#include "orrery/clock.hpp"
#include "orrery/error.hpp"
#include "orrery/knn.hpp"
#include "orrery/pca.hpp"

namespace orrery {
namespace {


// The fraction of the exact lists' k-th-distance balls that the approximate lists cover.
double recall_against(const KnnGraph& exact, const KnnGraph& approx) {
  double found = 0;
  for (index_t i = 0; i < exact.num_points; ++i) {
    const double kth = exact.distances2(i)[exact.k - 1];
    const double* listed = approx.distances2(i);
    for (int l = 0; l < approx.k; ++l) found += listed[l] <= kth;
  }
  return found / (static_cast<double>(exact.num_points) * exact.k);
}

std::vector<ApproxKnnParams> parse_settings(const std::string& v, bool parallel) {
  std::vector<ApproxKnnParams> out;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, ',')) {
    ApproxKnnParams p;
    p.parallel_build = parallel;
    if (std::sscanf(item.c_str(), "%d:%d:%d", &p.M, &p.ef_construction, &p.ef_search) != 3)
      input_error("knn: --settings: expected M:ef_construction:ef_search items, found '" + item + "'");
    out.push_back(p);
  }
  return out;
}

}  // namespace

int run_knn_bench(int argc, char** argv) {
  const auto o = bench::options(
      argc, argv, {"--n", "--k", "--pca", "--threads", "--settings", "--parallel-build", "--sample", "--seed", "--data", "--out",
                   "--source", "--exact", "--device"},
      "knn");
  const std::vector<index_t> sizes = bench::count_list(bench::opt(o, "--n", "10000,70000"));
  const int k = std::stoi(bench::opt(o, "--k", "90"));
  const int pca = std::stoi(bench::opt(o, "--pca", "50"));
  const int threads = std::stoi(bench::opt(o, "--threads", "0"));
  const index_t sample = std::stoll(bench::opt(o, "--sample", "1000"));
  const unsigned long long seed = std::stoull(bench::opt(o, "--seed", "1"));
  const ApproxKnnParams def;
  const std::string spec = bench::opt(
      o, "--settings", std::to_string(def.M) + ":" + std::to_string(def.ef_construction) + ":" + std::to_string(def.ef_search));
  std::vector<ApproxKnnParams> settings = spec == "none" ? std::vector<ApproxKnnParams>() : parse_settings(spec, false);
  if (spec != "none" && bench::opt(o, "--parallel-build", "0") == "1")
    for (const ApproxKnnParams& p : parse_settings(spec, true)) settings.push_back(p);
  const std::string source = bench::opt(o, "--source", "fashion");
  if (source != "fashion" && source != "mixture") input_error("knn: --source must be fashion or mixture");
  const bool run_exact = bench::opt(o, "--exact", "1") == "1";
  const std::vector<bench::Device> devices = bench::make_devices(bench::opt(o, "--device", "cpu"), threads, "knn");
  for (const bench::Device& d : devices) std::cerr << "[knn] " << d.label << ": " << d.backend->name() << "\n";
  std::vector<int> fashion_labels;  // unused: the search needs the images only
  const MatrixD all = source == "fashion"
                          ? bench::fashion_mnist_all(bench::opt(o, "--data", "/usr/share/datasets/fashion-mnist"), fashion_labels)
                          : MatrixD();
  json records = json::array();
  std::printf("%6s %4s %-16s %9s %9s %9s %8s %8s %9s %7s\n", "N", "k", "search", "build_s", "search_s", "recall",
              "est", "est_s", "+est_s", "exact/x");
  for (index_t N : sizes) {
    if (source == "fashion" && N > all.rows) input_error("knn: --n " + std::to_string(N) + " exceeds the 70000 images");
    MatrixD X(N, source == "fashion" ? all.cols : 50);
    if (source == "fashion") std::copy(all.data.begin(), all.data.begin() + N * all.cols, X.data.begin());
    else X = bench::gaussian_mixture(N, 50, seed).pixels;
    const MatrixD Xp = pca > 0 && pca < X.cols ? pca_project(X, pca, threads) : X;
    // The exact search on each device; the first device's graph and time are the reference.
    KnnGraph exact;
    double exact_s = std::nan("");
    auto t = Clock::now();
    for (size_t d = 0; run_exact && d < devices.size(); ++d) {
      t = Clock::now();
      KnnGraph g = devices[d].backend->knn(Xp, k);
      const double s = seconds_since(t);
      if (d == 0) exact = std::move(g), exact_s = s;
      const double agreement = d == 0 ? 1.0 : recall_against(exact, g);
      const std::string name = "exact " + devices[d].label;
      std::printf("%6lld %4d %-16s %9s %9.2f %9.4f %8s %8s %9.2f %7.2f\n", static_cast<long long>(N), k, name.c_str(),
                  "-", s, agreement, "-", "-", s, exact_s / s);
      std::fflush(stdout);
      records.push_back({{"bench", "knn"}, {"source", source}, {"n", N}, {"k", k}, {"pca", pca}, {"search", "exact"},
                         {"device", devices[d].backend->name()}, {"seconds", s},
                         {"recall_against_first_device", agreement}});
    }
    for (const ApproxKnnParams& p : settings) {
      double build_s = 0;
      t = Clock::now();
      // the serial build's end: the first progress report past the N insertions
      const KnnGraph g = approximate_knn(Xp, k, seed, threads, p, [&](index_t done, index_t) {
        if (build_s == 0 && done > N) build_s = seconds_since(t);
      });
      const double search_s = seconds_since(t);
      const double recall = run_exact ? recall_against(exact, g) : std::nan("");
      t = Clock::now();
      const KnnRecall est = estimate_knn_recall(Xp, g, sample, seed, threads);
      const double est_s = seconds_since(t);
      const std::string name = "hnsw " + std::to_string(p.M) + ":" + std::to_string(p.ef_construction) + ":" +
                               std::to_string(p.ef_search) + (p.parallel_build ? "p" : "");
      std::printf("%6lld %4d %-16s %9.2f %9.2f %9.4f %8.4f %8.2f %9.2f %7.2f\n", static_cast<long long>(N), k,
                  name.c_str(), build_s, search_s, recall, est.recall, est_s, search_s + est_s,
                  exact_s / (search_s + est_s));
      std::fflush(stdout);
      records.push_back({{"bench", "knn"}, {"source", source}, {"n", N}, {"k", k}, {"pca", pca}, {"search", "hnsw"}, {"M", p.M},
                         {"ef_construction", p.ef_construction}, {"ef_search", p.ef_search},
                         {"parallel_build", p.parallel_build}, {"build_seconds", build_s}, {"seconds", search_s},
                         {"recall", recall}, {"recall_estimate", est.recall}, {"estimate_seconds", est_s},
                         {"exact_seconds", exact_s}, {"speedup_with_estimate", exact_s / (search_s + est_s)}});
    }
  }
  bench::write_records(bench::opt(o, "--out", ""), records);
  return 0;
}

}  // namespace orrery
