// The CUDA HSSNE engine and neighbour search against the CPU, through the parity harness. The GPU
// sums tiles of pairs in float (then tiles in double), so its sums agree with the CPU's double sums
// to float rounding (hssne.* tolerances), and its steps (double, on the device) follow them; the
// neighbour search uses the same double distances, so on integer-valued points the graphs are
// identical.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "common/require_cuda.hpp"
#include "orrery/affinity.hpp"
#include "orrery/backend.hpp"
#include "orrery/hssne.hpp"
#include "orrery/interp.hpp"
#include "orrery/knn.hpp"
#include "orrery/parity.hpp"
#include "parity.hpp"

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

std::string tail(double alpha) { return "_alpha" + std::to_string(static_cast<int>(std::lround(alpha * 10))); }

}  // namespace

std::vector<test::ParityCase> test::hssne_parity_cases() {
  std::vector<test::ParityCase> out;
  for (int dim : {2, 3})
    for (double alpha : {0.0, 0.5, 1.0, 2.5})  // 1337 points: not a multiple of the tile
      out.push_back({"hssne", "sparse_N1337_D" + std::to_string(dim) + tail(alpha),
                     [dim, alpha](Backend& cpu, Backend& gpu, test::ParityCheck& check) {
                       const AffinityResult aff = affinities_sparse(clustered(1337, 6, 1), 12.0);
                       const MatrixD Y = gaussian_points(1337, dim, 2, 3.0);
                       check.add(compare_hssne_engines(*cpu.make_hssne(aff.sparse, alpha, dim),
                                                       *gpu.make_hssne(aff.sparse, alpha, dim), Y));
                     }});
  for (int dim : {2, 3})
    for (double alpha : {0.0, 1.0, 3.0})
      out.push_back({"hssne", "dense_N611_D" + std::to_string(dim) + tail(alpha),
                     [dim, alpha](Backend& cpu, Backend& gpu, test::ParityCheck& check) {
                       const AffinityResult aff = affinities_dense(clustered(611, 5, 3), 20.0);
                       const MatrixD Y = gaussian_points(611, dim, 4, 2.0);
                       check.add(compare_hssne_engines(*cpu.make_hssne(aff.dense, alpha, dim),
                                                       *gpu.make_hssne(aff.dense, alpha, dim), Y));
                     }});
  // Extreme rows: a point far from all others (its Gaussian terms underflow in float), and two
  // points on top of each other (tau = 0 off the diagonal).
  out.push_back({"hssne", "sparse_N500_far_and_coincident_points", [](Backend& cpu, Backend& gpu, test::ParityCheck& check) {
                   const AffinityResult aff = affinities_sparse(clustered(500, 4, 9), 10.0);
                   MatrixD Y = gaussian_points(500, 2, 10, 2.0);
                   Y(0, 0) = 1e3;
                   Y(2, 0) = Y(1, 0), Y(2, 1) = Y(1, 1);
                   for (double alpha : {0.0, 1.0})
                     check.add(compare_hssne_engines(*cpu.make_hssne(aff.sparse, alpha, 2),
                                                     *gpu.make_hssne(aff.sparse, alpha, 2), Y));
                 }});
  // Interpolated repulsion: the same plan (boxes, far points) on both, the sums in double. A few
  // points thrown far from the bulk make the grid leave them out (checked on the CPU's grid).
  for (int dim : {2, 3})
    for (double alpha : {0.0, 0.5, 1.0, 2.0})
      out.push_back({"hssne", "grid_N3001_D" + std::to_string(dim) + tail(alpha) + "_far_points",
                     [dim, alpha](Backend& cpu, Backend& gpu, test::ParityCheck& check) {
                       const index_t n = 3001;
                       const AffinityResult aff = affinities_sparse(clustered(n, 6, 11), 15.0);
                       MatrixD Y = gaussian_points(n, dim, 12, 4.0);
                       for (index_t i = 0; i < 6; ++i) Y(100 * i, i % dim) = (i % 2 ? -1.0 : 1.0) * (150.0 + 40 * i);
                       HssneRepulsion rep;
                       rep.interpolated = true;
                       RepulsionGrid probe(dim, alpha, rep.grid, 1);
                       RepulsionSums probe_sums;
                       probe.sums(Y, probe_sums);
                       EXPECT_GT(probe.timings().far_points, 0) << "the case must leave far points off the grid";
                       auto c = cpu.make_hssne(aff.sparse, alpha, dim, rep), g = gpu.make_hssne(aff.sparse, alpha, dim, rep),
                            g2 = gpu.make_hssne(aff.sparse, alpha, dim, rep);
                       const HssneTotals tc = c->start(Y), tg = g->start(Y);
                       g2->start(Y);
                       HssneSums sc, sg, sg2;
                       c->current_sums(sc);
                       g->current_sums(sg);
                       g2->current_sums(sg2);
                       check.agree("grid h", "hssne.grid", sc.h, sg.h);
                       check.agree("grid hs", "hssne.grid", sc.hs, sg.hs);
                       check.agree("grid hsy", "hssne.grid", sc.hsy.data, sg.hsy.data);
                       check.agree("grid attraction a", "hssne.grid", sc.a, sg.a);
                       check.agree("grid Z", "hssne.grid", tc.z, tg.z);
                       EXPECT_EQ(sg.h, sg2.h) << "the same map twice: the same bits";
                       EXPECT_EQ(sg.hsy.data, sg2.hsy.data) << "the same map twice: the same bits";
                       check.add(compare_hssne_engines(*cpu.make_hssne(aff.sparse, alpha, dim, rep),
                                                       *gpu.make_hssne(aff.sparse, alpha, dim, rep), Y));
                     }});
  // `auto` repulsion: where the grid costs more than the pairs (a small map of few points) both
  // take the exact sums, by the same cost model.
  out.push_back({"hssne", "grid_auto_N700_falls_back_to_pairs", [](Backend& cpu, Backend& gpu, test::ParityCheck& check) {
                   const AffinityResult aff = affinities_sparse(clustered(700, 4, 13), 10.0);
                   const MatrixD Y = gaussian_points(700, 3, 14, 30.0);
                   HssneRepulsion rep;
                   rep.interpolated = true;
                   rep.exact_when_cheaper = true;
                   check.add(compare_hssne_engines(*cpu.make_hssne(aff.sparse, 1.0, 3, rep),
                                                   *gpu.make_hssne(aff.sparse, 1.0, 3, rep), Y));
                 }});
  return out;
}

std::vector<test::ParityCase> test::knn_parity_cases() {
  return {
      {"knn", "integer_N2100_d17_k40",
       [](Backend& cpu, Backend& gpu, test::ParityCheck& check) {
         std::mt19937_64 rng(11);
         MatrixD X(2100, 17);
         for (double& v : X.data) v = static_cast<double>(rng() % 5);  // many ties and duplicates
         const KnnGraph c = cpu.knn(X, 40), g = gpu.knn(X, 40);
         check.same("neighbours", c.index, g.index);
         check.same("squared distances", c.dist2, g.dist2);
       }},
      {"knn", "real_N1500_d30_k25",
       [](Backend& cpu, Backend& gpu, test::ParityCheck& check) {
         const MatrixD X = gaussian_points(1500, 30, 12, 1.0);
         const KnnGraph c = cpu.knn(X, 25), g = gpu.knn(X, 25);
         // Distances agree to rounding; neighbour order could only differ between near-equal distances.
         check.agree("squared distances", "knn.distances", c.dist2, g.dist2);
         check.same("neighbours", c.index, g.index);
       }},
      {"knn", "affinities_from_the_graph_N800",
       [](Backend& cpu, Backend& gpu, test::ParityCheck& check) {
         const MatrixD X = clustered(800, 10, 13);
         const AffinityResult c = affinities_from_knn(cpu.knn(X, 30), 10.0), g = affinities_from_knn(gpu.knn(X, 30), 10.0);
         check.same("columns", c.sparse.col, g.sparse.col);
         check.agree("values", "knn.affinities", c.sparse.val, g.sparse.val);
       }},
  };
}

INSTANTIATE_PARITY(Hssne, test::hssne_parity_cases());
INSTANTIATE_PARITY(Knn, test::knn_parity_cases());

// A few iterations of each optimiser over both exaggeration phases follow the CPU step for step,
// and repeat bit for bit.
TEST(HssneParityFit, FitsFollowTheCpuAndRepeatBitForBit) {
  ORRERY_REQUIRE_CUDA();
  auto cpu = make_backend("cpu", 0), gpu = make_backend("cuda", 0);
  const index_t n = 900;
  const AffinityResult aff = affinities_sparse(clustered(n, 8, 5), 15.0);
  HssneParams prm;
  prm.max_iter = 8;
  prm.exaggeration_iter = 4;  // both phases, and the momentum restarted between them
  prm.tol = 0.0;
  for (const HssneOptimizer opt : {HssneOptimizer::fixed_point, HssneOptimizer::gradient}) {
    test::ParityCheck check("hssne/fit " + enum_name(opt));
    prm.optimizer = opt;
    const HssneResult c = fit_hssne(aff.sparse, prm, 7, *cpu);
    const HssneResult g1 = fit_hssne(aff.sparse, prm, 7, *gpu);
    const HssneResult g2 = fit_hssne(aff.sparse, prm, 7, *gpu);
    EXPECT_EQ(g1.coords.data, g2.coords.data) << check.where();
    EXPECT_EQ(g1.objective_trace, g2.objective_trace) << check.where();
    check.same("evaluations (the same steps: restarts, damping)", std::vector<int>{c.evaluations},
               std::vector<int>{g1.evaluations});
    check.same("restarts", std::vector<int>{c.restarts}, std::vector<int>{g1.restarts});
    check.agree("objective trace", "hssne.trace", c.objective_trace, g1.objective_trace);
    check.agree("map", "hssne.map", c.coords.data, g1.coords.data);
  }
  EXPECT_EQ(device_guard_violations(), "");
}

// The gradient optimiser on interpolated repulsion over both phases: the same steps as the CPU's
// grid to its rounding, and the same bits twice.
TEST(HssneParityFit, GridFitsFollowTheCpuAndRepeatBitForBit) {
  ORRERY_REQUIRE_CUDA();
  auto cpu = make_backend("cpu", 0), gpu = make_backend("cuda", 0);
  const AffinityResult aff = affinities_sparse(clustered(2500, 8, 15), 20.0);
  HssneParams prm;
  prm.max_iter = 12;
  prm.exaggeration_iter = 6;
  prm.tol = 0.0;
  prm.repulsion = HssneRepulsionMode::interpolated;
  prm.optimizer = HssneOptimizer::gradient;
  for (int dim : {2, 3}) {
    prm.dim = dim;
    test::ParityCheck check("hssne/grid fit D" + std::to_string(dim));
    const HssneResult c = fit_hssne(aff.sparse, prm, 7, *cpu);
    const HssneResult g1 = fit_hssne(aff.sparse, prm, 7, *gpu);
    const HssneResult g2 = fit_hssne(aff.sparse, prm, 7, *gpu);
    EXPECT_EQ(g1.coords.data, g2.coords.data) << check.where();
    EXPECT_EQ(g1.objective_trace, g2.objective_trace) << check.where();
    check.agree("objective trace", "hssne.trace", c.objective_trace, g1.objective_trace);
    check.agree("map", "hssne.map", c.coords.data, g1.coords.data);
  }
  EXPECT_EQ(device_guard_violations(), "");
}
