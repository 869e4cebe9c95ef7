// The CUDA HSSNE engine and neighbour search against the CPU. The GPU sums tiles of pairs in
// float (then tiles in double), so its sums agree with the CPU's double sums to float rounding,
// and its steps (double, on the device) follow them;
// the neighbour search uses the same double distances, so on integer-valued points the graphs
// are identical.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "common/require_cuda.hpp"
#include "orrery/affinity.hpp"
#include "orrery/backend.hpp"
#include "orrery/hssne.hpp"
#include "orrery/knn.hpp"

using namespace orrery;

namespace {

MatrixD gaussian_points(index_t n, index_t d, unsigned seed, double scale) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0.0, scale);
  MatrixD M(n, d);
  for (double& v : M.data) v = z(rng);
  return M;
}

// Clustered input so that the affinities have structure.
MatrixD clustered(index_t n, index_t d, unsigned seed) {
  MatrixD X = gaussian_points(n, d, seed, 1.0);
  for (index_t i = 0; i < n; ++i) X(i, 0) += 6.0 * static_cast<double>(i % 4);
  return X;
}

double rel(double a, double b) { return std::abs(a - b) / std::max({std::abs(a), std::abs(b), 1e-300}); }

void expect_close(const std::vector<double>& c, const std::vector<double>& g, double tol, double floor_abs,
                  const char* what) {
  ASSERT_EQ(c.size(), g.size()) << what;
  double worst = 0.0;
  size_t at = 0;
  for (size_t q = 0; q < c.size(); ++q) {
    const double e = std::abs(c[q] - g[q]) / std::max(std::abs(c[q]), floor_abs);
    if (e > worst) worst = e, at = q;
  }
  EXPECT_LE(worst, tol) << what << " at " << at << ": cpu " << c[at] << " cuda " << g[at];
}

double largest(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

void compare_sums(const HssneSums& c, const HssneSums& g, double tol) {
  // Each row agrees to tol relative to itself or to a billionth of the largest row: float
  // Gaussian terms (alpha = 0) underflow below 1e-38, so a row whose every pair is that far
  // sums to 0 on the GPU and to ~1e-40 on the CPU; both are nothing next to Z.
  // Components that cancel (the y-weighted sums) are compared against the largest row.
  expect_close(c.h, g.h, tol, 1e-9 * largest(c.h), "h");
  expect_close(c.hs, g.hs, tol, 1e-9 * largest(c.hs), "hs");
  expect_close(c.a, g.a, tol, 1e-12, "a");
  expect_close(c.p_log_h, g.p_log_h, tol, 1e-12, "p_log_h");
  const double hs_scale = largest(c.hs), a_scale = largest(c.a);
  expect_close(c.hsy.data, g.hsy.data, tol, hs_scale, "hsy");
  expect_close(c.ay.data, g.ay.data, tol, a_scale, "ay");
}

void expect_close_totals(const HssneTotals& c, const HssneTotals& g, const char* what) {
  EXPECT_LE(rel(c.z, g.z), 2e-5) << what << " Z: cpu " << c.z << " cuda " << g.z;
  EXPECT_LE(std::abs(c.p_log_h - g.p_log_h), 2e-5 * std::max(1.0, std::abs(c.p_log_h)))
      << what << " sum P log H: cpu " << c.p_log_h << " cuda " << g.p_log_h;
}

void expect_close_maps(const MatrixD& c, const MatrixD& g, double tol, const char* what) {
  ASSERT_EQ(c.data.size(), g.data.size()) << what;
  double scale = 0, worst = 0;
  size_t at = 0;
  for (size_t q = 0; q < c.data.size(); ++q) {
    scale = std::max(scale, std::abs(c.data[q]));
    if (std::abs(c.data[q] - g.data[q]) > worst) worst = std::abs(c.data[q] - g.data[q]), at = q;
  }
  EXPECT_LE(worst, tol * scale) << what << " at " << at << ": cpu " << c.data[at] << " cuda " << g.data[at];
}

// Every engine primitive from the same map: the sums and totals at Y, then the map and totals
// after each step (a fixed-point proposal with exaggeration and momentum, a damping, the accepted
// trial, a gradient step). The steps are double arithmetic on the sums; the fixed-point map
// divides sums that partly cancel, so the maps get the fit test's 1e-4 of the map's extent.
void compare_engines(HssneEngine& cpu, HssneEngine& gpu, const MatrixD& Y) {
  expect_close_totals(cpu.start(Y), gpu.start(Y), "start");
  HssneSums c, g;
  cpu.current_sums(c);
  gpu.current_sums(g);
  compare_sums(c, g, 2e-5);
  expect_close_maps(cpu.coords(), gpu.coords(), 0.0, "start: the map as given");
  expect_close_totals(cpu.propose(4.0, 1.0, 0.0), gpu.propose(4.0, 1.0, 0.0), "propose, c = 4");
  expect_close_totals(cpu.damp(), gpu.damp(), "damp");
  cpu.accept();
  gpu.accept();
  expect_close_maps(cpu.coords(), gpu.coords(), 1e-4, "accepted trial");
  expect_close_totals(cpu.propose(1.0, 0.8, 0.5), gpu.propose(1.0, 0.8, 0.5), "propose with momentum");
  cpu.accept();
  gpu.accept();
  expect_close_maps(cpu.coords(), gpu.coords(), 1e-4, "second accepted trial");
  expect_close_totals(cpu.gradient_step(2.0, 0.5, 50.0), gpu.gradient_step(2.0, 0.5, 50.0), "gradient step");
  expect_close_maps(cpu.coords(), gpu.coords(), 1e-4, "after the gradient step");
}

}  // namespace

TEST(HssneParity, SparseEnginesAgreeForTheTailFamily) {
  ORRERY_REQUIRE_CUDA();
  auto cpu = make_backend("cpu", 0), gpu = make_backend("cuda", 0);
  for (int dim : {2, 3}) {
    const index_t n = 1337;  // not a multiple of the tile
    const AffinityResult aff = affinities_sparse(clustered(n, 6, 1), 12.0);
    const MatrixD Y = gaussian_points(n, dim, 2, 3.0);
    for (double alpha : {0.0, 0.5, 1.0, 2.5}) {
      SCOPED_TRACE("dim " + std::to_string(dim) + " alpha " + std::to_string(alpha));
      compare_engines(*cpu->make_hssne(aff.sparse, alpha, dim), *gpu->make_hssne(aff.sparse, alpha, dim), Y);
    }
  }
}

TEST(HssneParity, DenseEnginesAgree) {
  ORRERY_REQUIRE_CUDA();
  auto cpu = make_backend("cpu", 0), gpu = make_backend("cuda", 0);
  const index_t n = 611;
  const AffinityResult aff = affinities_dense(clustered(n, 5, 3), 20.0);
  for (int dim : {2, 3}) {
    const MatrixD Y = gaussian_points(n, dim, 4, 2.0);
    for (double alpha : {0.0, 1.0, 3.0}) {
      SCOPED_TRACE("dim " + std::to_string(dim) + " alpha " + std::to_string(alpha));
      compare_engines(*cpu->make_hssne(aff.dense, alpha, dim), *gpu->make_hssne(aff.dense, alpha, dim), Y);
    }
  }
}

TEST(HssneParity, FitsFollowTheCpuAndRepeatBitForBit) {
  ORRERY_REQUIRE_CUDA();
  auto cpu = make_backend("cpu", 0), gpu = make_backend("cuda", 0);
  const index_t n = 900;
  const AffinityResult aff = affinities_sparse(clustered(n, 8, 5), 15.0);
  HssneParams prm;
  prm.max_iter = 8;
  prm.exaggeration_iter = 4;  // both phases, and the momentum restarted between them
  prm.tol = 0.0;
  for (const HssneOptimizer opt : {HssneOptimizer::fixed_point, HssneOptimizer::gradient}) {
    SCOPED_TRACE(enum_name(opt));
    prm.optimizer = opt;
    const HssneResult c = fit_hssne(aff.sparse, prm, 7, *cpu);
    const HssneResult g1 = fit_hssne(aff.sparse, prm, 7, *gpu);
    const HssneResult g2 = fit_hssne(aff.sparse, prm, 7, *gpu);
    EXPECT_EQ(g1.coords.data, g2.coords.data);
    EXPECT_EQ(g1.objective_trace, g2.objective_trace);
    EXPECT_EQ(c.evaluations, g1.evaluations) << "the same steps taken (restarts, damping)";
    EXPECT_EQ(c.restarts, g1.restarts);
    ASSERT_EQ(c.objective_trace.size(), g1.objective_trace.size());
    for (size_t t = 0; t < c.objective_trace.size(); ++t)
      EXPECT_LE(rel(c.objective_trace[t], g1.objective_trace[t]), 1e-5) << "iteration " << t;
    double scale = 0, worst = 0;
    for (size_t q = 0; q < c.coords.data.size(); ++q) {
      scale = std::max(scale, std::abs(c.coords.data[q]));
      worst = std::max(worst, std::abs(c.coords.data[q] - g1.coords.data[q]));
    }
    EXPECT_LE(worst, 1e-4 * scale);
  }
}

TEST(KnnParity, IntegerPointsGiveTheSameGraph) {
  ORRERY_REQUIRE_CUDA();
  std::mt19937_64 rng(11);
  MatrixD X(2100, 17);
  for (double& v : X.data) v = static_cast<double>(rng() % 5);  // many ties and duplicates
  const KnnGraph c = exact_knn(X, 40), g = make_cuda_backend(0)->knn(X, 40);
  EXPECT_EQ(c.index, g.index);
  EXPECT_EQ(c.dist2, g.dist2);
}

TEST(KnnParity, RealPointsGiveTheSameNeighbours) {
  ORRERY_REQUIRE_CUDA();
  const MatrixD X = gaussian_points(1500, 30, 12, 1.0);
  const KnnGraph c = exact_knn(X, 25), g = make_cuda_backend(0)->knn(X, 25);
  // Distances agree to rounding; neighbour order could only differ between near-equal distances.
  size_t mismatched = 0;
  for (size_t q = 0; q < c.index.size(); ++q) {
    EXPECT_LE(rel(c.dist2[q], g.dist2[q]), 1e-13);
    mismatched += c.index[q] != g.index[q];
  }
  EXPECT_EQ(mismatched, 0u);
}

TEST(KnnParity, SparseAffinitiesFromTheGpuGraphMatch) {
  ORRERY_REQUIRE_CUDA();
  const MatrixD X = clustered(800, 10, 13);
  const AffinityResult c = affinities_sparse(X, 10.0), g = affinities_from_knn(make_cuda_backend(0)->knn(X, 30), 10.0);
  EXPECT_EQ(c.sparse.col, g.sparse.col);
  ASSERT_EQ(c.sparse.val.size(), g.sparse.val.size());
  for (size_t q = 0; q < c.sparse.val.size(); ++q) EXPECT_LE(rel(c.sparse.val[q], g.sparse.val[q]), 1e-9);
}
