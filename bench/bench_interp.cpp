// `orrery_bench hssne-interp`: the interpolated repulsion (orrery/interp.hpp) against the exact
// sums on real maps. For each N and D it fits a map of the first N Fashion-MNIST images (PCA-50,
// perplexity 30, sparse P, t-SNE's tail, interpolated repulsion at the default grid, --iters
// iterations), then at that map, for every tail alpha and grid setting: the relative L2 error of
// the repulsive force F_i = sum_j H_ij S_ij (y_i - y_j) / Z and of Z against the exact O(N^2) sums
// (double), and the time of one interpolated evaluation as a fit makes it (Z as a total,
// RepulsionSums::z_grid) split into grid set-up, scatter, FFT and gather, with the exact evaluation's time in the same run (the ratio is the speed-up). The grids are
// the default, a tight one (box 0.5) and FIt-SNE's node spacing (3 nodes, box 1, labelled 3:1; the
// stencils are orrery's centred ones, not FIt-SNE's per box), or those of --settings p:w,...
#include <omp.h>

#include <cmath>
#include <cstdio>

#include "bench_common.hpp"
#include "orrery/affinity.hpp"
#include "orrery/backend.hpp"
#include "orrery/error.hpp"
#include "orrery/hssne.hpp"
#include "orrery/interp.hpp"
#include "orrery/knn.hpp"
#include "orrery/pca.hpp"

namespace orrery {

int run_interp_bench(int argc, char** argv) {
  const auto o = bench::options(
      argc, argv, {"--n", "--alpha", "--dim", "--iters", "--threads", "--data", "--out", "--settings", "--fit"},
      "hssne-interp");
  // --fit exact: the map fitted with the exact sums (the gradient method all the same), for sizes
  // where the pairs cost less than the grid (3-D maps of 10,000 points on a few cores)
  const std::string fit = bench::opt(o, "--fit", "interpolated");
  if (fit != "interpolated" && fit != "exact") input_error("hssne-interp: --fit expects interpolated or exact");
  const std::vector<double> sizes = bench::number_list(bench::opt(o, "--n", "10000,70000"));
  const std::vector<double> alphas = bench::number_list(bench::opt(o, "--alpha", "0,0.5,1,2"));
  const std::vector<double> dims = bench::number_list(bench::opt(o, "--dim", "2,3"));
  const int iters = std::stoi(bench::opt(o, "--iters", "1000")), threads = std::stoi(bench::opt(o, "--threads", "0"));
  const std::string dir = bench::opt(o, "--data", "/usr/share/datasets/fashion-mnist"), out = bench::opt(o, "--out", "");
  const int T = threads > 0 ? threads : omp_get_max_threads();
  auto backend = make_backend("cpu", T);
  std::vector<int> all_labels;
  const MatrixD all = bench::fashion_mnist_all(dir, all_labels);
  struct Setting {
    const char* name;
    InterpSettings s;
  };
  InterpSettings tight;
  tight.box_width = 0.5;
  std::vector<Setting> settings = {{"default", InterpSettings{}}, {"tight", tight}, {"3:1", InterpSettings{3, 1.0}}};
  // --settings p:w,...: grids of p nodes per box and box width w instead (named "p:w")
  std::vector<std::string> names;
  if (o.count("--settings")) {
    settings.clear();
    std::string list = o.at("--settings") + ",";
    for (size_t at = 0, comma; (comma = list.find(',', at)) != std::string::npos; at = comma + 1) {
      const std::string item = list.substr(at, comma - at);
      const size_t colon = item.find(':');
      if (colon == std::string::npos) input_error("hssne-interp: --settings expects p:w,..., found '" + item + "'");
      names.push_back(item);
      settings.push_back({nullptr, InterpSettings{std::stoi(item.substr(0, colon)), std::stod(item.substr(colon + 1))}});
    }
    for (size_t q = 0; q < settings.size(); ++q) settings[q].name = names[q].c_str();
  }
  json records = json::array();
  std::printf("%6s %2s %5s %8s %6s %9s %9s %8s %8s %8s %8s %8s %9s %8s\n", "N", "D", "alpha", "setting", "span",
              "force_err", "Z_err", "grid_ms", "scat_ms", "fft_ms", "gath_ms", "int_ms", "exact_ms", "speedup");
  for (double n : sizes)
    for (double dd : dims) {
      const auto N = static_cast<index_t>(n);
      const int D = static_cast<int>(dd);
      const MatrixD X = pca_project(bench::first_rows(all, N, 1.0), 50, T);
      const AffinityResult aff = affinities_from_knn(backend->knn(X, sparse_neighbors(30)), 30, T);
      HssneParams prm;
      prm.dim = D;
      prm.max_iter = iters;
      prm.tol = 0;
      prm.repulsion = fit == "exact" ? HssneRepulsionMode::exact : HssneRepulsionMode::interpolated;
      prm.optimizer = HssneOptimizer::gradient;
      std::fprintf(stderr, "[hssne-interp] fitting N %lld D %d\n", static_cast<long long>(N), D);
      const MatrixD Y = fit_hssne(aff.sparse, prm, 1, *backend).coords;
      double span = 0;
      for (int d = 0; d < D; ++d) {
        double lo = Y(0, d), hi = Y(0, d);
        for (index_t i = 0; i < N; ++i) lo = std::min(lo, Y(i, d)), hi = std::max(hi, Y(i, d));
        span = std::max(span, hi - lo);
      }
      for (double alpha : alphas) {
        RepulsionSums ex;
        double t0 = omp_get_wtime();
        exact_repulsion(Y, alpha, ex, T);
        const double exact_s = omp_get_wtime() - t0;
        for (const Setting& st : settings) {
          RepulsionGrid grid(D, alpha, st.s, T);
          RepulsionSums ap;
          grid.sums(Y, ap, false);  // the grid's plans and kernels, made once; as a fit sums (Z a total)
          const RepulsionGrid::Timings t_first = grid.timings();
          const int reps = 3;
          for (int r = 0; r < reps; ++r) grid.sums(Y, ap, false);
          RepulsionGrid::Timings t = grid.timings();
          t.grid -= t_first.grid, t.scatter -= t_first.scatter, t.fft -= t_first.fft, t.gather -= t_first.gather;
          const double total = (t.grid + t.scatter + t.fft + t.gather) / reps;
          const RepulsionErrors err = repulsion_errors(Y, ap, ex);
          const double fe = err.force, ze = err.z;
          std::printf("%6lld %2d %5.2f %8s %6.1f %9.2e %9.2e %8.2f %8.2f %8.2f %8.2f %8.2f %9.1f %8.0f\n",
                      static_cast<long long>(N), D, alpha, st.name, span, fe, ze, 1e3 * t.grid / reps,
                      1e3 * t.scatter / reps, 1e3 * t.fft / reps, 1e3 * t.gather / reps, 1e3 * total, 1e3 * exact_s,
                      exact_s / total);
          std::fflush(stdout);
          records.push_back({{"bench", "hssne-interp"}, {"n", N}, {"dim", D}, {"alpha", alpha}, {"setting", st.name},
                             {"nodes", st.s.nodes}, {"box_width", st.s.box_width}, {"map_span", span}, {"fit", fit},
                             {"boxes", grid.boxes()}, {"force_error", fe}, {"z_error", ze},
                             {"grid_seconds", t.grid / reps}, {"scatter_seconds", t.scatter / reps},
                             {"fft_seconds", t.fft / reps}, {"gather_seconds", t.gather / reps},
                             {"interpolated_seconds", total}, {"exact_seconds", exact_s}, {"threads", T}});
        }
      }
    }
  bench::write_records(out, records);
  return 0;
}

}  // namespace orrery
