// NeRV at scale (params.pairs = approximate: the truncated output Gaussian over a cell grid).
//   orrery_bench nerv-pairs: one evaluation of cost and gradient, approximate against exact (the
//     sparse all-pairs evaluation: double as the reference, float as the exact engine runs it; each
//     engine's evaluation timed alone, as in a fit), on
//     Fashion-MNIST images (PCA-50, sparse affinities at perplexity 30) at two maps: the seeded start
//     and the map after --fit-iters approximate iterations from the principal components (lambda 0.3,
//     the default start on this path). Relative errors of the cost
//     and of the gradient (2-norm), seconds per evaluation of each path: the crossover for auto.
//   orrery_bench nerv-fit: whole fits from the same start with the same iteration cap, approximate
//     and (unless --exact 0) exact, each stage timed end to end from the pixels; the exact cost of
//     each final map (the sparse all-pairs evaluation in double, once, up to 100,000 points) and its
//     5-NN accuracy. --device cuda fits on the GPU (`cpu,cuda`: the same fits on each, in one run);
//     --neighbors auto searches exactly on a GPU and up to 5,000 points, approximately above on the
//     CPU (as a run's input.neighbors); --source mixture takes N points of a seeded 50-D Gaussian
//     mixture (bench_common.hpp) instead of the images, for sizes beyond 70,000.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <random>
#include <sstream>

#include "bench_common.hpp"
#include "orrery/affinity.hpp"
#include "orrery/backend.hpp"
#include "orrery/clock.hpp"
#include "orrery/error.hpp"
#include "orrery/knn.hpp"
#include "orrery/nerv.hpp"
#include "orrery/pca.hpp"
#include "orrery/quality.hpp"

namespace orrery {
namespace {

// nerv-fit's exact cost of a final map sums every pair on the host, O(N^2): up to this many points.
constexpr index_t kExactCostMaxPoints = 100000;

struct Prepared {
  MatrixD X;  // after PCA
  std::vector<int> labels;
  AffinityResult aff;
  double pca_s = 0, knn_s = 0, aff_s = 0;
  bool approximate_neighbors = false;
};

// The first N of the 70,000 images (training set first; pixels / scale), PCA (pca > 0), neighbors
// (`neighbors` auto: exact up to 5,000 points and on a GPU, approximate above on the CPU, as
// input.neighbors = auto; or exact, or approximate), sparse affinities at perplexity 30.
Prepared prepare(const bench::LabelledImages& all, index_t N, int pca, Backend& backend, double scale = 255.0,
                 const std::string& neighbors = "auto") {
  Prepared p;
  if (N > all.pixels.rows)
    input_error("--n " + std::to_string(N) + " exceeds the " + std::to_string(all.pixels.rows) + " points");
  MatrixD X = bench::first_rows(all.pixels, N, scale);
  p.labels.assign(all.labels.begin(), all.labels.begin() + N);
  auto t = Clock::now();
  p.X = pca > 0 ? pca_project(X, pca, backend.threads()) : std::move(X);
  p.pca_s = seconds_since(t);
  const int k = static_cast<int>(std::ceil(3 * 30.0));
  t = Clock::now();
  p.approximate_neighbors = neighbors == "approximate" ||
                             (neighbors == "auto" && N > 5000 && backend.name().rfind("cpu", 0) == 0);
  const KnnGraph g = p.approximate_neighbors ? approximate_knn(p.X, k, 1, backend.threads())
                                              : backend.knn(p.X, k);
  p.knn_s = seconds_since(t);
  t = Clock::now();
  p.aff = affinities_from_knn(g, 30.0, backend.threads());
  p.aff_s = seconds_since(t);
  return p;
}

double rel_norm(const MatrixD& a, const MatrixD& b) {
  double num = 0.0, den = 0.0;
  for (size_t q = 0; q < a.data.size(); ++q) num += (a.data[q] - b.data[q]) * (a.data[q] - b.data[q]), den += b.data[q] * b.data[q];
  return std::sqrt(num / den);
}

// The map a fit would start from (unit bandwidths, the approximate path's auto spread), seeded.
MatrixD start_map(const Prepared& p, int dim, unsigned long long seed, double* scale) {
  NervParams prm;
  prm.dim = dim;
  prm.pairs = NervPairs::approximate;
  *scale = nerv_start_scale(prm, p.X.rows, 30.0, true);
  std::vector<double> b = p.aff.beta;
  std::nth_element(b.begin(), b.begin() + b.size() / 2, b.end());
  const double sigma = 1.0 / std::sqrt(b[b.size() / 2]);
  MatrixD Y(p.X.rows, dim);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0, *scale * sigma);
  for (double& v : Y.data) v = z(rng);
  return Y;
}

}  // namespace

int run_nerv_pairs_bench(int argc, char** argv) {
  const auto o = bench::options(argc, argv,
                                {"--n", "--lambda", "--cutoff", "--threads", "--data", "--out", "--fit-iters", "--dim",
                                 "--exact-double"},
                                "nerv-pairs");
  auto backend = make_cpu_backend(std::stoi(bench::opt(o, "--threads", "0")));
  const std::vector<index_t> sizes = bench::count_list(bench::opt(o, "--n", "5000,20000"));
  const std::vector<double> lambdas = bench::number_list(bench::opt(o, "--lambda", "0.1,0.3,0.7,1"));
  const std::vector<double> cutoffs = bench::number_list(bench::opt(o, "--cutoff", "20"));
  const int dim = std::stoi(bench::opt(o, "--dim", "2"));
  const int fit_iters = std::stoi(bench::opt(o, "--fit-iters", "100"));
  const bool with_double = bench::opt(o, "--exact-double", "1") != "0";
  std::cerr << "[nerv-pairs] " << backend->name() << "\n";
  const bench::LabelledImages all = bench::fashion_all(bench::opt(o, "--data", "/usr/share/datasets/fashion-mnist"));
  json records = json::array();
  std::printf("%6s %3s %6s %6s %6s %10s %10s %9s %9s %9s %8s\n", "N", "D", "map", "lambda", "cutoff", "cost_rel",
              "grad_rel", "exact_s", "float_s", "approx_s", "pairs");
  for (index_t N : sizes) {
    const Prepared p = prepare(all, N, 50, *backend);
    const SparseAffinity& P = p.aff.sparse_conditional;
    // unit bandwidths, as fit_nerv runs them
    std::vector<double> beta = p.aff.beta, b = beta;
    std::nth_element(b.begin(), b.begin() + b.size() / 2, b.end());
    const double med = b[b.size() / 2];
    for (double& v : beta) v /= med;
    double scale = 0.0;
    MatrixD start = start_map(p, dim, 1, &scale);
    for (double& v : start.data) v *= std::sqrt(med);  // in units of sigma
    MatrixD fitted;
    {
      NervParams prm;
      prm.dim = dim;
      prm.pairs = NervPairs::approximate;
      prm.max_iter = fit_iters;
      prm.init_scale = scale;
      const MatrixD pcs = pca_project(p.X, dim, backend->threads());  // the default start (init auto)
      fitted = fit_nerv(P, p.aff.beta, prm, 1, *backend, {}, &pcs).coords;
      for (double& v : fitted.data) v *= std::sqrt(med);
    }
    for (const char* which : {"start", "fitted"}) {
      const MatrixD& Y = std::string(which) == "start" ? start : fitted;
      for (double lambda : lambdas) {
        MatrixD ge, gf;
        auto t = Clock::now();
        double Ee = 0.0, exact_s = 0.0;
        if (with_double) {
          Ee = nerv_objective(P, beta, Y, lambda, &ge, backend->threads());
          exact_s = seconds_since(t);
        }
        // each path as a fit runs it: one evaluation of the backend's engine (made, and its input
        // converted, once per fit: not timed)
        auto time_engine = [&](double cutoff, MatrixD& g, double& seconds) {
          auto e = backend->make_nerv(P, beta, NervOptions{lambda, dim, NervPrecision::float32, cutoff});
          e->set_coords(Y);
          const auto t0 = Clock::now();
          const double E = e->evaluate(true);
          seconds = seconds_since(t0);
          g = e->vector(NervVector::gradient);
          return E;
        };
        double float_s = 0.0;
        const double Ef = time_engine(0.0, gf, float_s);
        if (!with_double) Ee = Ef, ge = gf;
        for (double cutoff : cutoffs) {
          MatrixD ga;
          double approx_s = 0.0;
          const double Ea = time_engine(cutoff, ga, approx_s);
          const NervTruncationCheck c = nerv_truncation_check(P, beta, Y, lambda, cutoff, 0, 1, backend->threads());
          const double cost_rel = std::abs(Ea - Ee) / std::abs(Ee), grad_rel = rel_norm(ga, ge);
          std::printf("%6lld %3d %6s %6.2f %6.1f %10.3e %10.3e %9.3f %9.3f %9.3f %8.1f\n", static_cast<long long>(N), dim,
                      which, lambda, cutoff, cost_rel, grad_rel, exact_s, float_s, approx_s, c.mean_row_pairs);
          std::fflush(stdout);
          records.push_back({{"bench", "nerv-pairs"}, {"device", backend->name()}, {"n", N}, {"dim", dim},
                             {"map", which}, {"lambda", lambda}, {"cutoff", cutoff}, {"cost_exact", Ee},
                             {"cost_approx", Ea}, {"cost_rel_error", cost_rel}, {"grad_rel_error", grad_rel},
                             {"exact_double_seconds", exact_s}, {"exact_float_seconds", float_s},
                             {"approx_seconds", approx_s}, {"pairs_per_row", c.mean_row_pairs},
                             {"start_scale", scale}, {"reference", with_double ? "double" : "float"}});
        }
      }
    }
  }
  bench::write_records(bench::opt(o, "--out", ""), records);
  return 0;
}

int run_nerv_fit_bench(int argc, char** argv) {
  const auto o = bench::options(
      argc, argv, {"--n", "--lambda", "--iters", "--threads", "--data", "--out", "--exact", "--dim", "--cutoff", "--map",
                       "--init", "--device", "--source", "--neighbors"},
      "nerv-fit");
  const std::vector<bench::Device> devices =
      bench::make_devices(bench::opt(o, "--device", "cpu"), std::stoi(bench::opt(o, "--threads", "0")), "nerv-fit");
  const std::string neighbors = bench::opt(o, "--neighbors", "auto");
  if (neighbors != "auto" && neighbors != "exact" && neighbors != "approximate")
    input_error("nerv-fit: --neighbors takes auto, exact or approximate, not '" + neighbors + "'");
  const std::string source = bench::opt(o, "--source", "fashion");
  if (source != "fashion" && source != "mixture") input_error("nerv-fit: --source takes fashion or mixture, not '" + source + "'");
  const double lambda = std::stod(bench::opt(o, "--lambda", "0.3"));
  const bool exact = bench::opt(o, "--exact", "1") != "0";
  const int dim = std::stoi(bench::opt(o, "--dim", "2"));
  for (const bench::Device& d : devices) std::cerr << "[nerv-fit] " << d.label << ": " << d.backend->name() << "\n";
  const auto t_read = Clock::now();
  const std::vector<index_t> sizes = bench::count_list(bench::opt(o, "--n", "20000"));
  const bench::LabelledImages all =
      source == "fashion" ? bench::fashion_all(bench::opt(o, "--data", "/usr/share/datasets/fashion-mnist"))
                          : bench::gaussian_mixture(*std::max_element(sizes.begin(), sizes.end()), 50, 1);
  const double read_s = seconds_since(t_read);
  json records = json::array();
  std::printf("%-8s %6s %7s %6s %7s %7s %7s %8s %6s %6s %12s %7s %8s\n", "device", "N", "pairs", "iters", "pca_s", "knn_s", "aff_s",
              "fit_s", "its", "evals", "exact_cost", "5nn", "total_s");
  for (index_t N : sizes) {
    for (const bench::Device& device : devices) {
      Backend& backend = *device.backend;
      const auto t0 = Clock::now();
      // the mixture is 50-D already
      const Prepared p = source == "fashion" ? prepare(all, N, 50, backend, 255.0, neighbors)
                                             : prepare(all, N, 0, backend, 1.0, neighbors);
      const double prep_s = seconds_since(t0);
      NervParams prm;
      prm.dim = dim;
      prm.lambda = lambda;
      prm.max_iter = std::stoi(bench::opt(o, "--iters", "500"));
      prm.cutoff = std::stod(bench::opt(o, "--cutoff", "20"));
      prm.init_scale = nerv_start_scale([&] { NervParams q = prm; q.init_scale = 0; return q; }(), N, 30.0, true);
      const bool pca_start = bench::opt(o, "--init", "random") == "pca";
      const MatrixD start = pca_start ? pca_project(p.X, dim, backend.threads()) : MatrixD();
      std::vector<NervPairs> paths = {NervPairs::approximate};
      if (exact) paths.push_back(NervPairs::exact);
      for (NervPairs path : paths) {
        prm.pairs = path;
        const auto t = Clock::now();
        const NervResult r = fit_nerv(p.aff.sparse_conditional, p.aff.beta, prm, 1, backend,
                                      [&](int it, double J) {
                                        if (it % 50 == 0)
                                          std::cerr << "[nerv-fit] " << enum_name(path) << " iter " << it << " cost " << J
                                                    << " " << seconds_since(t) << " s\n";
                                      },
                                      pca_start ? &start : nullptr);
        const double fit_s = seconds_since(t);
        const auto te = Clock::now();
        // the exact cost sums all N^2 pairs on the host: skipped above kExactCostMaxPoints (null)
        const double exact_cost =
            N <= kExactCostMaxPoints
                ? nerv_objective(p.aff.sparse_conditional, p.aff.beta, r.coords, lambda, nullptr, backend.threads())
                : std::nan("");
        const double check_s = seconds_since(te);
        std::vector<double> ub = p.aff.beta;  // unit bandwidths, as the fit ran
        std::vector<double> sb = ub;
        std::nth_element(sb.begin(), sb.begin() + sb.size() / 2, sb.end());
        for (double& v : ub) v /= sb[sb.size() / 2];
        MatrixD Yu = r.coords;
        for (double& v : Yu.data) v *= std::sqrt(sb[sb.size() / 2]);
        const NervTruncationCheck tc =
            nerv_truncation_check(p.aff.sparse_conditional, ub, Yu, lambda, prm.cutoff, 200, 1, backend.threads());
        std::cerr << "[nerv-fit] final map: " << tc.mean_row_pairs << " pairs per row at cutoff " << prm.cutoff
                  << ", estimated relative error of the truncated cost " << tc.relative_error << "\n";
        QualityRequest req;
        req.ks = {5};
        req.curve = false;
        req.seed = 1;  // all points up to kQualitySampleAbove, a seeded sample above
        const double acc = evaluate_quality(r.coords, r.coords, p.labels, req, backend).at_k[0].knn_accuracy;
        const double total = prep_s + fit_s;
        std::printf("%-8s %6lld %7s %6d %7.2f %7.2f %7.2f %8.2f %6d %6d %12.6g %7.4f %8.2f\n", device.label.c_str(),
                    static_cast<long long>(N), enum_name(path).c_str(), prm.max_iter, p.pca_s, p.knn_s, p.aff_s, fit_s, r.iterations, r.evaluations,
                    exact_cost, acc, total);
        std::fflush(stdout);
        records.push_back({{"bench", "nerv-fit"}, {"device", backend.name()}, {"n", N}, {"dim", dim}, {"lambda", lambda},
                           {"pairs", enum_name(path)}, {"cutoff", prm.cutoff}, {"init_scale", prm.init_scale},
                           {"max_iter", prm.max_iter}, {"iterations", r.iterations}, {"evaluations", r.evaluations},
                           {"stop_reason", r.stop_reason}, {"read_seconds", read_s}, {"pca_seconds", p.pca_s},
                           {"knn_seconds", p.knn_s}, {"approximate_neighbors", p.approximate_neighbors},
                           {"affinity_seconds", p.aff_s}, {"fit_seconds", fit_s}, {"end_to_end_seconds", total},
                           {"exact_cost_of_final_map", std::isfinite(exact_cost) ? json(exact_cost) : json(nullptr)}, {"exact_cost_seconds", check_s},
                           {"final_cost_seen", r.objective_trace.empty() ? 0.0 : r.objective_trace.back()},
                           {"knn5_accuracy", acc}, {"final_pairs_per_row", tc.mean_row_pairs},
                           {"final_truncation_rel_error", tc.relative_error}});
        const std::string map = bench::opt(o, "--map", "");
        if (!map.empty() && path == NervPairs::approximate) {
          json m = json::object();
          m["coords"] = r.coords.data;
          m["labels"] = p.labels;
          io::OutputSet f;
          f.add(map, m.dump() + "\n");
          f.commit();
        }
      }
    }
  }
  bench::write_records(bench::opt(o, "--out", ""), records);
  return 0;
}

}  // namespace orrery
