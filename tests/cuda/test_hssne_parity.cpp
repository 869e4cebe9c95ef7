// The CUDA HSSNE engine and neighbor search against the CPU, through the parity harness. The GPU
// sums tiles of pairs in float (then tiles in double), so its sums agree with the CPU's double sums
// to float rounding (hssne.* tolerances), and its steps (double, on the device) follow them; the
// neighbor search uses the same double distances, so on integer-valued points the graphs are
// identical.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "common/require_cuda.hpp"
#include "orrery/affinity.hpp"
#include "orrery/backend.hpp"
#include "orrery/hssne.hpp"
#include "orrery/interp.hpp"
#include "orrery/knn.hpp"
#include "orrery/math/neighbor.hpp"
#include "orrery/parity.hpp"
#include "inputs.hpp"
#include "large.hpp"
#include "parity.hpp"

using namespace orrery;

namespace {

using test::clustered;
using test::gaussian_points;

std::string tail(double alpha) { return "_alpha" + std::to_string(static_cast<int>(std::lround(alpha * 10))); }

// Sparse affinities of n points on a line (tests/cuda/large.hpp): 15 neighbors each, found in O(n k).
AffinityResult line_affinities(index_t n) { return affinities_from_knn(test::line_knn(test::line_points(n), 15), 5.0); }

// Row i's sums at Y with the engines' per-pair function (math/neighbor.hpp) in double: the repulsion
// over every other point, the attraction over the row's list.
template <int D>
math::HssneRow<double, D> row_sums(const SparseAffinity& P, const MatrixD& Y, double alpha, index_t i) {
  math::HssneRow<double, D> acc;
  const double* yi = &Y.data[static_cast<size_t>(i * D)];
  for (index_t j = 0; j < Y.rows; ++j)
    if (j != i) math::hssne_accumulate<double, D>(yi, &Y.data[static_cast<size_t>(j * D)], 0.0, alpha, true, acc);
  for (index_t q = P.row_ptr[static_cast<size_t>(i)]; q < P.row_ptr[static_cast<size_t>(i) + 1]; ++q)
    math::hssne_accumulate<double, D>(yi, &Y.data[static_cast<size_t>(P.col[static_cast<size_t>(q)] * D)],
                                      P.val[static_cast<size_t>(q)], alpha, false, acc);
  return acc;
}

// The exact pairs' sums of a sample of rows: the device's engine over all n^2 pairs (at n >= 2^17
// its pair indices pass 2^32 and the pairs run in one chunk), the same rows on the host.
template <int D>
void exact_rows(index_t n, double alpha, Backend& device, test::ParityCheck& check) {
  const AffinityResult aff = line_affinities(n);
  const MatrixD Y = gaussian_points(n, D, 21, 3.0 * std::sqrt(static_cast<double>(n) / 3000.0));
  auto engine = device.make_hssne(aff.sparse, alpha, D);
  engine->start(Y);
  HssneSums s;
  engine->current_sums(s);
  const std::vector<index_t> rows = test::sample_rows(n, 40, 22);
  std::vector<double> h, hs, a, plh, hsy, ay;
  for (index_t i : rows) {
    const math::HssneRow<double, D> r = row_sums<D>(aff.sparse, Y, alpha, i);
    h.push_back(r.h_sum), hs.push_back(r.hs_sum), a.push_back(r.a_sum), plh.push_back(r.p_log_h);
    for (int d = 0; d < D; ++d) hsy.push_back(r.hsy[d]), ay.push_back(r.ay[d]);
  }
  check.agree("sampled rows: h", "hssne.row_sums", h, test::rows_of(s.h, rows));
  check.agree("sampled rows: hs", "hssne.row_sums", hs, test::rows_of(s.hs, rows));
  check.agree("sampled rows: a", "hssne.attraction", a, test::rows_of(s.a, rows));
  check.agree("sampled rows: p log h", "hssne.attraction", plh, test::rows_of(s.p_log_h, rows));
  // The y-weighted sums partly cancel: against their weights' row sums times the map's extent.
  double hs_max = 0, a_max = 0, y_max = 0;
  for (double v : hs) hs_max = std::max(hs_max, std::abs(v));
  for (double v : a) a_max = std::max(a_max, std::abs(v));
  for (double v : Y.data) y_max = std::max(y_max, std::abs(v));
  check.agree("sampled rows: hsy", "hssne.weighted_sums", hsy, test::rows_of(s.hsy.data, rows, D), hs_max * y_max);
  check.agree("sampled rows: ay", "hssne.weighted_sums", ay, test::rows_of(s.ay.data, rows, D), a_max * y_max);
}

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
  // A checkpoint's state taken from the CPU engine after a few steps (previous iterate, velocity and
  // gains all away from their starts) and restored into the device's engine: it follows the CPU.
  for (int dim : {2, 3})
    out.push_back({"hssne", "state_from_the_cpu_N1337_D" + std::to_string(dim) + "_alpha10",
                   [dim](Backend& cpu, Backend& gpu, test::ParityCheck& check) {
                     const AffinityResult aff = affinities_sparse(clustered(1337, 6, 31), 12.0);
                     auto source = cpu.make_hssne(aff.sparse, 1.0, dim);
                     source->start(gaussian_points(1337, dim, 32, 3.0));
                     source->propose(4.0, 1.0, 0.0);
                     source->accept();
                     source->gradient_step(4.0, 0.5, 50.0, true);
                     source->gradient_step(4.0, 0.5, 50.0, true);
                     const HssneState s = source->state();
                     check.add(compare_hssne_restore(*cpu.make_hssne(aff.sparse, 1.0, dim),
                                                     *gpu.make_hssne(aff.sparse, 1.0, dim), s));
                   }});
  // Large: 2^17 + 3 points on the grid (every point's sums from the interpolation, the grid ~190
  // nodes across), and a sample of rows of the exact pairs (the device's O(N^2) pass; marked large,
  // with a small twin that the CPU-only run checks the same code with).
  out.push_back({"hssne", "grid_N131075_D2_alpha10", [](Backend& cpu, Backend& gpu, test::ParityCheck& check) {
                   const AffinityResult aff = line_affinities(test::kLargeN);
                   const MatrixD Y = gaussian_points(test::kLargeN, 2, 23, 6.0);
                   HssneRepulsion rep;
                   rep.interpolated = true;
                   check.add(compare_hssne_engines(*cpu.make_hssne(aff.sparse, 1.0, 2, rep),
                                                   *gpu.make_hssne(aff.sparse, 1.0, 2, rep), Y));
                 }});
  out.push_back({"hssne", "pair_rows_N3001_D3_alpha5", [](Backend&, Backend& gpu, test::ParityCheck& check) {
                   exact_rows<3>(3001, 0.5, gpu, check);
                 }});
  out.push_back({"hssne", "pair_rows_N131075_D2_alpha10",
                 [](Backend&, Backend& gpu, test::ParityCheck& check) { exact_rows<2>(test::kLargeN, 1.0, gpu, check); },
                 true});
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
         check.same("neighbors", c.index, g.index);
         check.same("squared distances", c.dist2, g.dist2);
       }},
      {"knn", "real_N1500_d30_k25",
       [](Backend& cpu, Backend& gpu, test::ParityCheck& check) {
         const MatrixD X = gaussian_points(1500, 30, 12, 1.0);
         const KnnGraph c = cpu.knn(X, 25), g = gpu.knn(X, 25);
         // Distances agree to rounding; neighbor order could only differ between near-equal distances.
         check.agree("squared distances", "knn.distances", c.dist2, g.dist2);
         check.same("neighbors", c.index, g.index);
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
