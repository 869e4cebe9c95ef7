// HSSNE at scale and across devices.
//   orrery_bench hssne-scale: whole fits (sparse P, the run's defaults) timed stage by stage, on one
//     device or on each of a --device list in the same invocation, for each tail of an --alpha list
//     on the same P (the cost of a tail against t-SNE's, alpha 1, on the same device and data).
//   orrery_bench gpu-vs-cpu: the same data, the same P and the same seed fitted on each device of a
//     --device list (cpu,cuda by default); every map scored by the same host code (leave-one-out 5-NN
//     accuracy over all points, KL(P || Q) in double over all pairs), and each device's figures against
//     the first device's: do the GPU and the CPU make maps of the same quality?
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "bench_common.hpp"
#include "run/ne_config.hpp"
#include "orrery/affinity.hpp"
#include "orrery/backend.hpp"
#include "orrery/clock.hpp"
#include "orrery/config.hpp"
#include "orrery/error.hpp"
#include "orrery/hssne.hpp"
#include "orrery/knn.hpp"
#include "orrery/pca.hpp"
#include "orrery/quality.hpp"

namespace orrery {
namespace {


// gpu-vs-cpu's KL sums every pair on the host in double, O(N^2): up to this many points.
constexpr index_t kExactKlMaxPoints = 200000;

// The points of --source: the first N of all 70,000 Fashion-MNIST images (pixels / 255), or N points
// of the seeded 50-D mixture (bench_common.hpp), with their labels.
bench::LabelledImages source_points(const std::string& source, const std::string& dir, index_t largest,
                                    const std::string& what) {
  if (source == "fashion") return bench::fashion_all(dir);
  if (source == "mixture") return bench::gaussian_mixture(largest, 50, 1);
  input_error(what + ": --source takes fashion or mixture, not '" + source + "'");
}

// The tails of --alpha with t-SNE's (1) first when it is listed, so every other tail's time can be
// read against it as soon as it is printed.
std::vector<double> tails_alpha_one_first(const std::string& list) {
  std::vector<double> alphas = bench::number_list(list);
  for (double a : alphas)
    if (!(a >= 0) || !std::isfinite(a)) input_error("hssne-scale: --alpha takes tails >= 0, found " + std::to_string(a));
  std::stable_partition(alphas.begin(), alphas.end(), [](double a) { return a == 1.0; });
  return alphas;
}

}  // namespace

// `orrery_bench hssne-scale`: HSSNE (sparse P, the run's defaults: repulsion and optimizer auto unless
// --repulsion says) on the first N of all 70,000 Fashion-MNIST images (training then test set), PCA to
// --pca dimensions, or (--source mixture) on N points of a seeded 50-D Gaussian mixture of 20
// components (bench_common.hpp), on each device of --device. Times each stage apart: PCA on the host
// (once per N); per device the neighbor search (approximate above kExactNeighborsMaxPoints points on
// the CPU, as a run's input.neighbors auto, with the run's graph, recall target and estimate), then the affinity rows on
// the host (aff_s includes knn_s); per tail (--alpha, on that P) the fit; and, outside the total, the
// report's quality estimate (5-NN accuracy from 4,000 seeded query points above 10,000 points, all
// points below) and --steps plain steps at the final map (pairs per second of one fixed-point step,
// and an evaluation split into its stages: all pairs, or the grid's plan, scatter, FFT, gather and far
// points, then the attraction; 0 skips them). --dim 3 for 3-D maps. Ratios: fit_s over alpha 1's on
// the same device and N, and total_s over the first device's for the same N and alpha.
int run_ne_scale_bench(int argc, char** argv) {
  const auto o = bench::options(argc, argv,
                                {"--n", "--iters", "--pca", "--perplexity", "--device", "--threads", "--data", "--source",
                                 "--neighbors", "--steps", "--dim", "--alpha", "--repulsion", "--out"},
                                "hssne-scale");
  const std::vector<index_t> sizes = bench::count_list(bench::opt(o, "--n", "2000,10000,70000"));
  const int iters = std::stoi(bench::opt(o, "--iters", "1000")), threads = std::stoi(bench::opt(o, "--threads", "0")),
            steps = std::stoi(bench::opt(o, "--steps", "20")), dim = std::stoi(bench::opt(o, "--dim", "2"));
  if (dim != 2 && dim != 3) input_error("hssne-scale: --dim takes 2 or 3, not " + std::to_string(dim));
  int pca = std::stoi(bench::opt(o, "--pca", "-1"));
  const double perplexity = std::stod(bench::opt(o, "--perplexity", "30"));
  const std::string dir = bench::opt(o, "--data", "/usr/share/datasets/fashion-mnist"), out = bench::opt(o, "--out", ""),
                    source = bench::opt(o, "--source", "fashion"), neighbors = bench::opt(o, "--neighbors", "auto");
  if (neighbors != "auto" && neighbors != "exact" && neighbors != "approximate")
    input_error("hssne-scale: --neighbors takes auto, exact or approximate, not '" + neighbors + "'");
  const std::vector<double> alphas = tails_alpha_one_first(bench::opt(o, "--alpha", "1"));
  const auto repulsion = parse_enum<HssneRepulsionMode>(bench::opt(o, "--repulsion", "auto"), "hssne-scale: --repulsion");
  if (pca < 0) pca = source == "fashion" ? 50 : 0;  // the mixture is 50-D already
  const std::vector<bench::Device> devices = bench::make_devices(bench::opt(o, "--device", "auto"), threads, "hssne-scale");
  for (const bench::Device& d : devices) std::cerr << "[hssne-scale] " << d.label << ": " << d.backend->name() << "\n";
  index_t largest = 0;
  for (index_t N : sizes) largest = std::max(largest, N);
  const bench::LabelledImages data = source_points(source, dir, largest, "hssne-scale");
  json records = json::array();
  std::printf("%-8s %8s %5s %6s %8s %8s %7s %5s %8s %8s %8s %8s %10s %12s %6s %7s %8s\n", "device", "N", "alpha", "iters",
              "pca_s", "knn_s", "recall", "ef", "aff_s", "fit_s", "total_s", "qual_s", "s/iter", "pairs/s step", "5nn",
              "fit/a1", "tot/dev1");
  for (index_t N : sizes) {
    if (N > data.pixels.rows)
      input_error("hssne-scale: --n " + std::to_string(N) + " exceeds the " + std::to_string(data.pixels.rows) + " points");
    const MatrixD X = bench::first_rows(data.pixels, N, source == "fashion" ? 255.0 : 1.0);
    const std::vector<int> labels(data.labels.begin(), data.labels.begin() + N);
    const auto t0 = Clock::now();
    const MatrixD Xp = pca > 0 ? pca_project(X, pca, threads) : X;
    const double pca_s = seconds_since(t0);
    std::vector<double> first_totals;  // the first device's total_s per tail, the tot/dev1 column's base
    for (const bench::Device& device : devices) {
      Backend& backend = *device.backend;
      const auto t1 = Clock::now();
      const int k = sparse_neighbors(perplexity);
      const bool approx = neighbors == "approximate" || (neighbors == "auto" && backend.name().rfind("cpu", 0) == 0 &&
                                                         N > kExactNeighborsMaxPoints);
      double recall = 1;
      int ef = 0;  // the approximate search's query list (0: exact)
      KnnGraph graph;
      if (approx) {
        ApproxKnnTuning tuning;  // the run's search: its graph, its first query list and its recall target
        graph = approximate_knn_paired(Xp, Xp, k, 1, backend.threads(), affinity_search_params(NeInputSpec()), {},
                                       &tuning);
        recall = tuning.recall;
        ef = tuning.ef;
      } else {
        graph = backend.knn(Xp, k);
      }
      const double knn_s = seconds_since(t1);
      const AffinityResult aff = affinities_from_knn(graph, perplexity, threads);
      graph = KnnGraph();
      const double aff_s = seconds_since(t1);
      double alpha_one_fit = std::nan("");
      for (size_t a = 0; a < alphas.size(); ++a) {
        HssneParams prm;
        prm.dim = dim;
        prm.alpha = alphas[a];
        prm.max_iter = iters;
        prm.tol = 0;
        prm.repulsion = repulsion;
        const HssneRepulsion rep = resolve_repulsion(prm, N, backend);
        const HssneParams resolved = resolve_optimizer(prm, N, rep);
        const auto t2 = Clock::now();
        const HssneResult fit = fit_hssne(aff.sparse, prm, 1, backend);
        const double fit_s = seconds_since(t2);
        if (alphas[a] == 1.0) alpha_one_fit = fit_s;
        const double pairs = static_cast<double>(N) * (N - 1);
        // One plain fixed-point step at the final map (the step, the sums of every point, the totals
        // back to the host), repeated: the unit of work of an iteration without the optimiser's logic.
        double step_s = std::nan("");
        json stage_ms = json::object();
        if (steps > 0) {
          auto engine = backend.make_hssne(aff.sparse, prm.alpha, prm.dim, rep);
          engine->start(fit.coords);
          engine->propose(1.0, 1.0, 0.0);
          const HssneStageTimes before = engine->stage_times();
          const auto t3 = Clock::now();
          for (int r = 0; r < steps; ++r) engine->propose(1.0, 1.0, 0.0);
          step_s = seconds_since(t3) / steps;
          // One evaluation at the final map split into its stages (the grid's, the tree's or all pairs, then
          // the attraction).
          const HssneStageTimes after = engine->stage_times();
          const double per = 1e3 / (after.evaluations - before.evaluations);
          stage_ms = {{"pairs", (after.pairs - before.pairs) * per},
                      {"grid_plan", (after.grid_plan - before.grid_plan) * per},
                      {"scatter", (after.scatter - before.scatter) * per},
                      {"fft", (after.fft - before.fft) * per},
                      {"gather", (after.gather - before.gather) * per},
                      {"far", (after.far - before.far) * per},
                      {"tree", (after.tree - before.tree) * per},
                      {"attraction", (after.attraction - before.attraction) * per}};
        }
        QualityRequest req;
        req.ks = {5};
        req.curve = false;
        req.seed = 1;  // the default rule: all points up to kQualitySampleAbove, a seeded sample above
        const auto t4 = Clock::now();
        const double acc = evaluate_quality(fit.coords, fit.coords, labels, req, backend).at_k[0].knn_accuracy;
        const double qual_s = seconds_since(t4);
        const double total = pca_s + aff_s + fit_s;
        if (&device == &devices.front()) first_totals.push_back(total);
        const double vs_alpha_one = fit_s / alpha_one_fit, vs_first = total / first_totals[a];
        std::printf("%-8s %8lld %5g %6d %8.2f %8.2f %7.4f %5d %8.2f %8.2f %8.2f %8.2f %10.4f %12.3g %6.3f %7.3f %8.3f\n",
                    device.label.c_str(), static_cast<long long>(N), alphas[a], fit.iterations, pca_s, knn_s, recall, ef,
                    aff_s, fit_s, total, qual_s, fit_s / fit.iterations, pairs / step_s, acc, vs_alpha_one, vs_first);
        if (steps > 0)
          std::printf("%8s ms an evaluation at the final map: pairs %.2f, grid plan %.2f, scatter %.2f, FFT %.2f, gather "
                      "%.2f, far points %.2f, tree %.2f, attraction %.2f\n",
                      "", stage_ms["pairs"].get<double>(), stage_ms["grid_plan"].get<double>(),
                      stage_ms["scatter"].get<double>(), stage_ms["fft"].get<double>(), stage_ms["gather"].get<double>(),
                      stage_ms["far"].get<double>(), stage_ms["tree"].get<double>(),
                      stage_ms["attraction"].get<double>());
        std::fflush(stdout);
        const auto finite_or_null = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
        records.push_back({{"bench", "hssne-scale"}, {"device", backend.name()}, {"source", source}, {"n", N},
                           {"dim", dim}, {"alpha", alphas[a]}, {"pca", pca}, {"perplexity", perplexity},
                           {"neighbors", approx ? "approximate" : "exact"}, {"knn_recall_estimate", recall}, {"knn_ef", ef},
                           {"repulsion", repulsion_name(rep)},
                           {"optimizer", EnumNames<HssneOptimizer>::names[static_cast<size_t>(resolved.optimizer)]},
                           {"iterations", fit.iterations}, {"evaluations", fit.evaluations}, {"restarts", fit.restarts},
                           {"damped_steps", fit.damped_steps}, {"pca_seconds", pca_s}, {"knn_seconds", knn_s},
                           {"affinity_seconds", aff_s}, {"fit_seconds", fit_s}, {"total_seconds", total},
                           {"quality_seconds", qual_s}, {"step_seconds", finite_or_null(step_s)},
                           {"pairs_per_second_step", finite_or_null(pairs / step_s)}, {"stage_ms", stage_ms},
                           {"knn5_accuracy", acc}, {"objective", fit.objective_trace.back()},
                           {"fit_over_alpha_one", finite_or_null(vs_alpha_one)},
                           {"total_over_first_device", finite_or_null(vs_first)}});
      }
    }
  }
  bench::write_records(out, records);
  return 0;
}

// `orrery_bench gpu-vs-cpu`: one P (sparse, perplexity 30; exact neighbors searched on the first
// listed device that is not the CPU, else on the CPU: the graph is the same up to ties), one seed, one
// set of parameters (the run's defaults, --alpha, --iters with tol 0), fitted on every device of
// --device. Each map is scored on the host by the same code: 5-NN accuracy over all points, and
// KL(P || Q) in double over all pairs (up to kExactKlMaxPoints). Each later device is compared with
// the first: |difference of 5-NN| against --tol-knn (0.005) and |relative difference of KL| against
// --tol-kl (1%), the GPU-against-CPU targets at 70,000 points. Exit 3 when a difference is
// beyond its tolerance (as `orrery check` on a disagreement), so a device check can fail on it.
int run_gpu_vs_cpu_bench(int argc, char** argv) {
  const auto o = bench::options(argc, argv,
                                {"--n", "--iters", "--pca", "--perplexity", "--device", "--threads", "--data", "--source",
                                 "--dim", "--alpha", "--seed", "--tol-knn", "--tol-kl", "--out"},
                                "gpu-vs-cpu");
  const index_t N = static_cast<index_t>(std::stod(bench::opt(o, "--n", "70000")));
  const int iters = std::stoi(bench::opt(o, "--iters", "1000")), threads = std::stoi(bench::opt(o, "--threads", "0")),
            dim = std::stoi(bench::opt(o, "--dim", "2"));
  if (dim != 2 && dim != 3) input_error("gpu-vs-cpu: --dim takes 2 or 3, not " + std::to_string(dim));
  const double perplexity = std::stod(bench::opt(o, "--perplexity", "30")), alpha = std::stod(bench::opt(o, "--alpha", "1")),
               tol_knn = std::stod(bench::opt(o, "--tol-knn", "0.005")), tol_kl = std::stod(bench::opt(o, "--tol-kl", "0.01"));
  if (!(alpha >= 0) || !std::isfinite(alpha)) input_error("gpu-vs-cpu: --alpha takes a tail >= 0");
  const unsigned long long seed = std::stoull(bench::opt(o, "--seed", "1"));
  const std::string source = bench::opt(o, "--source", "fashion");
  int pca = std::stoi(bench::opt(o, "--pca", "-1"));
  if (pca < 0) pca = source == "fashion" ? 50 : 0;
  const std::vector<bench::Device> devices = bench::make_devices(bench::opt(o, "--device", "cpu,cuda"), threads, "gpu-vs-cpu");
  for (const bench::Device& d : devices) std::cerr << "[gpu-vs-cpu] " << d.label << ": " << d.backend->name() << "\n";
  const bench::LabelledImages data =
      source_points(source, bench::opt(o, "--data", "/usr/share/datasets/fashion-mnist"), N, "gpu-vs-cpu");
  if (N < 2 || N > data.pixels.rows)
    input_error("gpu-vs-cpu: --n " + std::to_string(N) + " must be in [2, " + std::to_string(data.pixels.rows) + "]");
  const MatrixD X = bench::first_rows(data.pixels, N, source == "fashion" ? 255.0 : 1.0);
  const std::vector<int> labels(data.labels.begin(), data.labels.begin() + N);
  const MatrixD Xp = pca > 0 ? pca_project(X, pca, threads) : X;
  // The common P, searched once.
  const Backend* searcher = devices.front().backend.get();
  for (const bench::Device& d : devices)
    if (d.backend->name().rfind("cpu", 0) != 0) {
      searcher = d.backend.get();
      break;
    }
  auto t = Clock::now();
  const AffinityResult aff = affinities_from_knn(searcher->knn(Xp, sparse_neighbors(perplexity)), perplexity, threads);
  std::printf("gpu-vs-cpu: %s, N %lld, PCA %d, perplexity %g, alpha %g, %d-D, %d iterations, seed %llu; P from exact "
              "neighbors on %s in %.2f s\n",
              source.c_str(), static_cast<long long>(N), pca, perplexity, alpha, dim, iters, seed,
              searcher->name().c_str(), seconds_since(t));
  std::printf("%-8s %9s %6s %8s %9s %10s %9s %10s %s\n", "device", "fit_s", "iters", "5nn", "KL", "|d 5nn|", "d KL rel",
              "fit ratio", "within targets");
  json records = json::array();
  bool all_within = true;
  double knn_first = 0, kl_first = 0, fit_first = 0;
  for (const bench::Device& device : devices) {
    HssneParams prm;
    prm.dim = dim;
    prm.alpha = alpha;
    prm.max_iter = iters;
    prm.tol = 0;
    const HssneRepulsion rep = resolve_repulsion(prm, N, *device.backend);
    t = Clock::now();
    const HssneResult fit = fit_hssne(aff.sparse, prm, seed, *device.backend);
    const double fit_s = seconds_since(t);
    const double knn5 = bench::knn5_all_points(fit.coords, labels, threads);
    const double kl = N <= kExactKlMaxPoints ? hssne_objective(aff.sparse, fit.coords, alpha, nullptr, *make_cpu_backend(threads)) : std::nan("");
    const bool first = &device == &devices.front();
    if (first) knn_first = knn5, kl_first = kl, fit_first = fit_s;
    const double d_knn = std::abs(knn5 - knn_first), d_kl = std::abs(kl - kl_first) / std::abs(kl_first);
    // NaN KL (not computed) counts as within: only the 5-NN is then compared.
    const bool within = d_knn <= tol_knn && !(d_kl > tol_kl);
    all_within = all_within && within;
    std::printf("%-8s %9.3f %6d %8.4f %9.5f %10.4f %9.3g%% %9.3fx %s\n", device.label.c_str(), fit_s, fit.iterations,
                knn5, kl, d_knn, 100 * d_kl, fit_s / fit_first, first ? "(reference)" : within ? "yes" : "NO");
    std::fflush(stdout);
    records.push_back({{"bench", "gpu-vs-cpu"}, {"device", device.backend->name()}, {"source", source}, {"n", N},
                       {"dim", dim}, {"alpha", alpha}, {"iterations", fit.iterations}, {"seed", seed},
                       {"repulsion", repulsion_name(rep)}, {"fit_seconds", fit_s},
                       {"knn5_accuracy", knn5}, {"kl", std::isfinite(kl) ? json(kl) : json(nullptr)},
                       {"knn5_difference", d_knn}, {"kl_relative_difference", std::isfinite(d_kl) ? json(d_kl) : json(nullptr)},
                       {"within_targets", within}, {"tol_knn", tol_knn}, {"tol_kl", tol_kl}});
  }
  bench::write_records(bench::opt(o, "--out", ""), records);
  if (!all_within) {
    std::printf("gpu-vs-cpu: a device's map differs from %s's beyond the targets (5-NN %g, KL %g%%)\n",
                devices.front().label.c_str(), tol_knn, 100 * tol_kl);
    return 3;
  }
  return 0;
}

}  // namespace orrery
