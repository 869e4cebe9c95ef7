// `orrery_bench hssne-place`: out-of-sample placement (place_points) against fitting the new points
// with the old. The first --ref of all 70,000 Fashion-MNIST images (pixels / 255; PCA 50 fitted on
// them) make a map with the defaults (approximate neighbors, perplexity 30, auto repulsion and
// optimiser, --iters iterations); the next --new images are placed into it (their neighbors among
// the reference, exact or approximate by the CLI's rule, repulsion from the frozen grid;
// --perplexity for their affinities, 5 by default as in the CLI). The
// baseline refits all --ref + --new images together with the same settings. Reported: seconds of
// each, and the 5-NN accuracy of the new images among the reference images, in the input (PCA-50)
// space, in the placed map and in the joint refit map.
#include <omp.h>

#include <cstdio>

#include "bench_common.hpp"
#include "orrery/affinity.hpp"
#include "orrery/backend.hpp"
#include "orrery/error.hpp"
#include "orrery/hssne.hpp"
#include "orrery/knn.hpp"
#include "orrery/pca.hpp"

namespace orrery {
namespace {

// The fraction of query rows whose 5 nearest reference rows' majority label (ties to the nearest)
// is their own.
double knn5_accuracy(const MatrixD& R, const std::vector<int>& ref_labels, const MatrixD& Q,
                     const std::vector<int>& q_labels, int threads) {
  const KnnGraph g = exact_knn_to(R, Q, 5, threads);
  int right = 0;
  for (index_t i = 0; i < Q.rows; ++i) {
    int votes[64] = {};
    int best = ref_labels[static_cast<size_t>(g.neighbors(i)[0])];
    for (int l = 0; l < 5; ++l) {
      const int c = ref_labels[static_cast<size_t>(g.neighbors(i)[l])];
      if (++votes[c] > votes[best]) best = c;
    }
    right += best == q_labels[static_cast<size_t>(i)];
  }
  return static_cast<double>(right) / static_cast<double>(Q.rows);
}

// A map of X as the CLI makes one with the defaults (approximate neighbors, auto repulsion).
MatrixD fit_map(const MatrixD& X, int iters, int threads, Backend& backend) {
  const KnnGraph g = approximate_knn(X, sparse_neighbors(30), 1, threads);
  HssneParams prm;
  prm.max_iter = iters;
  return fit_hssne(affinities_from_knn(g, 30, threads).sparse, prm, 1, backend).coords;
}

}  // namespace

int run_place_bench(int argc, char** argv) {
  const auto o = bench::options(
      argc, argv, {"--ref", "--new", "--iters", "--threads", "--refit", "--perplexity", "--data", "--out"}, "hssne-place");
  const index_t n_ref = std::stol(bench::opt(o, "--ref", "60000")), n_new = std::stol(bench::opt(o, "--new", "10000"));
  const int iters = std::stoi(bench::opt(o, "--iters", "1000")), threads = std::stoi(bench::opt(o, "--threads", "0"));
  // the new points' perplexity (the map's is 30): the CLI's default
  const double perplexity = std::stod(bench::opt(o, "--perplexity", "5"));
  const bool refit = bench::opt(o, "--refit", "on") != "off";
  const std::string dir = bench::opt(o, "--data", "/usr/share/datasets/fashion-mnist"), out = bench::opt(o, "--out", "");
  const int T = threads > 0 ? threads : omp_get_max_threads();
  auto backend = make_backend("cpu", T);
  std::vector<int> labels;
  const MatrixD all = bench::fashion_mnist_all(dir, labels);
  if (n_ref + n_new > all.rows) input_error("hssne-place: --ref + --new exceeds the 70,000 images");
  const MatrixD pixels = bench::first_rows(all, n_ref + n_new, 1.0);
  MatrixD ref_pixels(n_ref, pixels.cols), new_pixels(n_new, pixels.cols);
  std::copy(pixels.data.begin(), pixels.data.begin() + n_ref * pixels.cols, ref_pixels.data.begin());
  std::copy(pixels.data.begin() + n_ref * pixels.cols, pixels.data.end(), new_pixels.data.begin());
  const PcaBasis basis = pca_fit(ref_pixels, 50, T);
  const MatrixD R = pca_apply(basis, ref_pixels, T), Q = pca_apply(basis, new_pixels, T);
  const std::vector<int> ref_labels(labels.begin(), labels.begin() + n_ref),
      new_labels(labels.begin() + n_ref, labels.begin() + n_ref + n_new);

  std::fprintf(stderr, "[hssne-place] map of %lld reference images\n", static_cast<long long>(n_ref));
  double t0 = omp_get_wtime();
  const MatrixD Y = fit_map(R, iters, T, *backend);
  const double fit_s = omp_get_wtime() - t0;

  std::fprintf(stderr, "[hssne-place] placing %lld images\n", static_cast<long long>(n_new));
  t0 = omp_get_wtime();
  const bool approximate = static_cast<double>(n_ref) * static_cast<double>(n_new) > 1e9;
  const KnnGraph g = approximate ? approximate_knn_to(R, Q, sparse_neighbors(perplexity), 1, T)
                                 : exact_knn_to(R, Q, sparse_neighbors(perplexity), T);
  const double knn_s = omp_get_wtime() - t0;
  HssneParams prm;
  const HssneRepulsion rep = resolve_repulsion(prm, n_ref, *backend);
  t0 = omp_get_wtime();
  const PlacementResult placed = place_points(g, perplexity, Y, 1.0, rep, PlacementParams{}, *make_cpu_backend(T));
  const double place_s = omp_get_wtime() - t0;
  int most = 0;
  for (int s : placed.steps) most = std::max(most, s);

  const double acc_input = knn5_accuracy(R, ref_labels, Q, new_labels, T);
  const double acc_placed = knn5_accuracy(Y, ref_labels, placed.coords, new_labels, T);
  json rec = {{"bench", "hssne-place"}, {"data", "fashion-mnist / 255, PCA 50 fitted on the reference"},
              {"reference", n_ref}, {"new", n_new}, {"place_perplexity", perplexity}, {"iterations", iters}, {"threads", T},
              {"map_seconds", fit_s}, {"neighbors", approximate ? "approximate" : "exact"},
              {"place_knn_seconds", knn_s}, {"place_seconds", place_s},
              {"repulsion", placed.interpolated ? "interpolated" : "exact"}, {"most_steps", most},
              {"knn5_input", acc_input}, {"knn5_placed", acc_placed}};
  std::printf("%8s %6s %9s %8s %9s %6s %9s %9s %9s %9s\n", "ref", "new", "map_s", "knn_s", "place_s", "steps",
              "5nn_in", "5nn_plc", "refit_s", "5nn_ref");
  double refit_s = 0, acc_refit = 0;
  if (refit) {
    std::fprintf(stderr, "[hssne-place] refit of all %lld images\n", static_cast<long long>(n_ref + n_new));
    MatrixD both(n_ref + n_new, R.cols);
    std::copy(R.data.begin(), R.data.end(), both.data.begin());
    std::copy(Q.data.begin(), Q.data.end(), both.data.begin() + R.data.size());
    t0 = omp_get_wtime();
    const MatrixD Z = fit_map(both, iters, T, *backend);
    refit_s = omp_get_wtime() - t0;
    MatrixD Zr(n_ref, Z.cols), Zq(n_new, Z.cols);
    std::copy(Z.data.begin(), Z.data.begin() + Zr.data.size(), Zr.data.begin());
    std::copy(Z.data.begin() + Zr.data.size(), Z.data.end(), Zq.data.begin());
    acc_refit = knn5_accuracy(Zr, ref_labels, Zq, new_labels, T);
    rec["refit_seconds"] = refit_s;
    rec["knn5_refit"] = acc_refit;
    rec["refit_over_place"] = refit_s / (knn_s + place_s);
  }
  std::printf("%8lld %6lld %9.1f %8.2f %9.2f %6d %9.4f %9.4f %9.1f %9.4f\n", static_cast<long long>(n_ref),
              static_cast<long long>(n_new), fit_s, knn_s, place_s, most, acc_input, acc_placed, refit_s, acc_refit);
  json records = json::array();
  records.push_back(rec);
  bench::write_records(out, records);
  return 0;
}

}  // namespace orrery
