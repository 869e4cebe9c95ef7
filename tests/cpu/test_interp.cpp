// Interpolated repulsion (orrery/interp.hpp) against the exact sums and closed forms.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "cpu/fft.hpp"
#include "orrery/affinity.hpp"
#include "orrery/backend.hpp"
#include "orrery/error.hpp"
#include "orrery/hssne.hpp"
#include "orrery/quality.hpp"
#include "orrery/interp.hpp"
#include "orrery/math/neighbor.hpp"

namespace orrery {
namespace {

// Clustered map like a t-SNE map: clusters spread over `span`, each of unit width.
MatrixD clustered_map(index_t N, int D, double span, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0.0, 1.0);
  std::uniform_real_distribution<double> u(-span / 2, span / 2);
  const int clusters = 10;
  std::vector<double> centres(static_cast<size_t>(clusters * D));
  for (double& c : centres) c = u(rng);
  MatrixD Y(N, D);
  for (index_t i = 0; i < N; ++i)
    for (int d = 0; d < D; ++d) Y(i, d) = centres[static_cast<size_t>((i % clusters) * D + d)] + 1.5 * g(rng);
  return Y;
}

// The pruned padded-FFT convolution against the direct sum over all node pairs, 2-D and 3-D, odd
// and even axes (rows and columns that do not fill a chunk), a random charge and two even kernels
// in one call; and the same bits with 1 and 3 threads.
TEST(GridConvolution, EqualsTheDirectSum) {
  for (const std::vector<int>& nodes : {std::vector<int>{7, 20}, {36, 5}, {5, 18, 3}, {6, 4, 17}}) {
    const int D = static_cast<int>(nodes.size());
    const int G0 = nodes[0], G1 = nodes[1], G2 = D > 2 ? nodes[2] : 1;
    std::mt19937_64 rng(static_cast<unsigned>(G0 * 100 + G1));
    std::uniform_real_distribution<double> u(-1, 1);
    std::vector<double> q(static_cast<size_t>(G0 * G1 * G2));
    for (double& v : q) v = u(rng);
    auto K = [](int o0, int o1, int o2) { return 1.0 / (1.0 + 0.3 * (o0 * o0 + 2.0 * o1 * o1 + 0.5 * o2 * o2)); };
    auto K2 = [&K](int o0, int o1, int o2) { return K(o0, o1, o2) * K(o0, o1, o2); };
    std::vector<double> pot1(q.size()), pot3(q.size()), sq1(q.size()), sq3(q.size()), kernel, kernel2;
    for (int threads : {1, 3}) {
      cpu::GridConvolution conv(nodes, threads);
      conv.kernel_spectrum(K, kernel);
      conv.kernel_spectrum(K2, kernel2);
      conv.convolve(q.data(), {&kernel, &kernel2}, {threads == 1 ? pot1.data() : pot3.data(), threads == 1 ? sq1.data() : sq3.data()});
    }
    EXPECT_EQ(pot1, pot3) << "D " << D;
    EXPECT_EQ(sq1, sq3) << "D " << D;
    double worst = 0;
    for (int m2 = 0; m2 < G2; ++m2)
      for (int m1 = 0; m1 < G1; ++m1)
        for (int m0 = 0; m0 < G0; ++m0) {
          double direct = 0, direct2 = 0;
          for (int n2 = 0; n2 < G2; ++n2)
            for (int n1 = 0; n1 < G1; ++n1)
              for (int n0 = 0; n0 < G0; ++n0) {
                const double qn = q[static_cast<size_t>((n2 * G1 + n1) * G0 + n0)];
                direct += K(m0 - n0, m1 - n1, m2 - n2) * qn;
                direct2 += K2(m0 - n0, m1 - n1, m2 - n2) * qn;
              }
          const auto at = static_cast<size_t>((m2 * G1 + m1) * G0 + m0);
          worst = std::max({worst, std::abs(pot1[at] - direct), std::abs(sq1[at] - direct2)});
        }
    EXPECT_LT(worst, std::string(cpu::RealRows::library()) == "fftw3" ? 1e-12 : 1e-4) << "D " << D;
  }
}

// Two points: each one's sums are the single other pair's kernel values (closed form).
TEST(InterpolatedRepulsion, TwoPointsMatchTheClosedForm) {
  for (double alpha : {0.0, 0.5, 1.0, 2.0})
    for (int D : {2, 3}) {
      MatrixD Y(2, D, 0.0);
      Y(1, 0) = 0.8;
      Y(1, D - 1) += 0.3;
      const double tau = 0.8 * 0.8 + (D > 1 ? 0.3 * 0.3 : 0.0);
      double h, s;
      math::heavy_tail_pair(tau, alpha, h, s);
      // A fine grid (4 nodes, boxes of 1/4 or less): interpolation error and the FFT's rounding
      // (which grows with the number of nodes within the kernel's reach) stay below 1e-3 here.
      InterpSettings set;
      set.box_width = 0.25;
      RepulsionGrid grid(D, alpha, set, 1);
      RepulsionSums out;
      grid.sums(Y, out);
      for (int i = 0; i < 2; ++i) {
        EXPECT_NEAR(out.h[static_cast<size_t>(i)], h, 1e-3) << alpha << " " << D;
        EXPECT_NEAR(out.hs[static_cast<size_t>(i)], h * s, 1e-3) << alpha << " " << D;
        for (int d = 0; d < D; ++d) EXPECT_NEAR(out.hsy(i, d), h * s * Y(1 - i, d), 1e-3) << alpha << " " << D;
      }
    }
}

// The relative L2 error of the repulsive force and of Z against the exact sums, every tail, both
// dimensions, on a clustered map 60 (2-D) / 8 (3-D) units wide. Bounds: the default grid (4 nodes,
// box 1.25) is promised <= 1e-2 (measured 1.3e-4 to 3.3e-3 on these maps; the 3-D map is narrow, so
// its boxes are halved to keep 12 across it), the tight one (4 nodes, box 0.5) <= 1e-3 (measured
// 5.6e-5 to 1.2e-4); Z's error is 1-2 orders smaller.
TEST(InterpolatedRepulsion, MatchesTheExactSumsWithinTheDocumentedError) {
  for (int D : {2, 3}) {
    const MatrixD Y = clustered_map(D == 2 ? 1200 : 400, D, D == 2 ? 60.0 : 8.0, 3);
    for (double alpha : {0.0, 0.5, 1.0, 2.0}) {
      RepulsionSums ex;
      exact_repulsion(Y, alpha, ex, 2);
      for (auto [box, bound] : {std::pair{InterpSettings{}.box_width, 1e-2}, {0.5, 1e-3}}) {
        InterpSettings set;
        set.nodes = 4;
        set.box_width = box;
        RepulsionGrid grid(D, alpha, set, 2);
        RepulsionSums ap;
        grid.sums(Y, ap);
        const RepulsionErrors e = repulsion_errors(Y, ap, ex);
        EXPECT_LT(e.force, bound) << "D " << D << " alpha " << alpha << " box " << box;
        EXPECT_LT(e.z, bound / 5) << "D " << D << " alpha " << alpha << " box " << box;
      }
    }
  }
}

// A point far from a cluster: its sums are small (h ~ 300 / 30^2), so a self term taken out as
// H(0) = 1 rather than as the grid computes it left an error of the grid's error at distance 0
// (30% of h here in 2-D); the grid's own self term leaves the far field's error alone.
TEST(InterpolatedRepulsion, AnIsolatedPointKeepsItsRelativeAccuracy) {
  if (std::string(cpu::RealRows::library()) != "fftw3")
    GTEST_SKIP() << "a float FFT's rounding is relative to the largest potential (cpu/fft.hpp)";
  for (int D : {2, 3}) {
    std::mt19937_64 rng(9);
    std::normal_distribution<double> g(0.0, 1.0);
    MatrixD Y(301, D);
    for (index_t i = 0; i < 300; ++i)
      for (int d = 0; d < D; ++d) Y(i, d) = 1.5 * g(rng);
    for (int d = 0; d < D; ++d) Y(300, d) = d == 0 ? 30.3 : 0.41;
    for (double alpha : {0.5, 1.0, 2.0}) {
      RepulsionSums ex, ap;
      exact_repulsion(Y, alpha, ex, 2);
      RepulsionGrid grid(D, alpha, InterpSettings{}, 2);
      grid.sums(Y, ap);
      EXPECT_NEAR(ap.h[300], ex.h[300], 1e-3 * ex.h[300]) << "D " << D << " alpha " << alpha;
      EXPECT_NEAR(ap.hs[300], ex.hs[300], 1e-3 * ex.hs[300]) << "D " << D << " alpha " << alpha;
    }
  }
}

// A bulk of a few units and a handful of points thrown hundreds of units out (as early
// exaggeration with a large learning rate does): the grid covers the bulk alone (about the bulk's
// own grid; leaving out a few of the bulk's outermost points too can halve the boxes), the far
// points' sums are exact, everyone's error stays within the grid's
// bound, and the bits do not depend on the thread count. One point a million units out, once a
// grid the memory guard refused, is simply far.
TEST(InterpolatedRepulsion, FarPointsLeaveTheGridToTheBulk) {
  for (int D : {2, 3}) {
    const index_t bulk = D == 2 ? 4000 : 2000, far = 6;
    std::mt19937_64 rng(21);
    std::normal_distribution<double> g(0.0, 2.0);
    MatrixD Y(bulk + far, D), alone(bulk, D);
    for (index_t i = 0; i < bulk; ++i)
      for (int d = 0; d < D; ++d) alone(i, d) = Y(i, d) = g(rng);
    for (index_t k = 0; k < far; ++k)
      for (int d = 0; d < D; ++d) Y(bulk + k, d) = d == k % D ? (k < 3 ? 400.0 : -300.0) + k : 0.5 * k;
    Y(bulk + far - 1, 0) = 1e6;
    for (double alpha : {0.5, 1.0}) {
      RepulsionSums ex, ap, ap1, bulk_only;
      exact_repulsion(Y, alpha, ex, 2);
      RepulsionGrid grid(D, alpha, InterpSettings{}, 2), one(D, alpha, InterpSettings{}, 1), ref(D, alpha, InterpSettings{}, 2);
      grid.sums(Y, ap);
      one.sums(Y, ap1);
      ref.sums(alone, bulk_only);  // the bulk's own grid, for its shape
      double cells = 1, bulk_cells = 1;
      for (int d = 0; d < D; ++d) cells *= grid.boxes()[static_cast<size_t>(d)], bulk_cells *= ref.boxes()[static_cast<size_t>(d)];
      EXPECT_LE(cells, (D == 2 ? 4 : 8) * bulk_cells) << "D " << D;
      EXPECT_GE(grid.timings().far_points, far) << "D " << D;
      EXPECT_LE(grid.timings().far_points, bulk / 32) << "D " << D;
      for (index_t k = bulk; k < bulk + far; ++k) {
        const auto i = static_cast<size_t>(k);
        EXPECT_NEAR(ap.h[i], ex.h[i], 1e-12 * ex.h[i]) << "D " << D << " far point " << k;
        EXPECT_NEAR(ap.hs[i], ex.hs[i], 1e-12 * ex.hs[i]) << "D " << D << " far point " << k;
      }
      const RepulsionErrors err = repulsion_errors(Y, ap, ex);
      EXPECT_LT(err.force, 1e-2) << "D " << D << " alpha " << alpha;
      EXPECT_LT(err.z, 1e-3) << "D " << D << " alpha " << alpha;
      EXPECT_EQ(ap.h, ap1.h);
      EXPECT_EQ(ap.hsy.data, ap1.hsy.data);
    }
  }
}

// A fit's sums (whole_h false) give the grid's part of Z as one total from the charges'
// spectrum (Parseval) instead of every h_i: Z = z_grid + sum_i h_i equals the gathered total to
// rounding, the far points' own h and every hs and hsy are the same bits, and so is z_grid for 1
// and 2 threads.
TEST(InterpolatedRepulsion, ZFromTheSpectrumEqualsTheGatheredTotal) {
  for (int D : {2, 3}) {
    MatrixD Y = clustered_map(D == 2 ? 3000 : 1500, D, D == 2 ? 40.0 : 10.0, 13);
    for (index_t k = 0; k < 4; ++k) Y(7 * k, k % D) = (k % 2 ? -1.0 : 1.0) * (300.0 + 50 * k);  // far points
    for (double alpha : {0.0, 1.0, 2.0}) {
      RepulsionGrid g2(D, alpha, InterpSettings{}, 2), g1(D, alpha, InterpSettings{}, 1);
      RepulsionSums whole, part, part1;
      g2.sums(Y, whole);
      g2.sums(Y, part, false);
      g1.sums(Y, part1, false);
      ASSERT_GT(g2.timings().far_points, 0) << "the case must leave far points off the grid";
      EXPECT_EQ(whole.z_grid, 0.0);
      double z_whole = 0, z_part = part.z_grid;
      for (double v : whole.h) z_whole += v;
      for (double v : part.h) z_part += v;
      EXPECT_NEAR(z_part, z_whole, 1e-12 * z_whole) << "D " << D << " alpha " << alpha;
      EXPECT_GT(part.z_grid, 0.5 * z_whole) << "the grid's pairs are most of Z";
      for (index_t k = 0; k < 4; ++k) EXPECT_EQ(part.h[static_cast<size_t>(7 * k)], whole.h[static_cast<size_t>(7 * k)]);
      EXPECT_EQ(part.hs, whole.hs);
      EXPECT_EQ(part.hsy.data, whole.hsy.data);
      EXPECT_EQ(part.z_grid, part1.z_grid);
      EXPECT_EQ(part.h, part1.h);
    }
  }
}

// Same map, 1 and 2 threads, twice: the same bits (fixed-order sums, no races in the scatter).
TEST(InterpolatedRepulsion, SameBitsForAnyThreadCount) {
  for (int D : {2, 3}) {
    const MatrixD Y = clustered_map(1000, D, D == 2 ? 30.0 : 10.0, 5);
    RepulsionSums a, b, c;
    RepulsionGrid g1(D, 0.7, InterpSettings{}, 1), g2(D, 0.7, InterpSettings{}, 2);
    g1.sums(Y, a);
    g2.sums(Y, b);
    g2.sums(Y, c);
    EXPECT_EQ(a.h, b.h);
    EXPECT_EQ(a.hs, b.hs);
    EXPECT_EQ(a.hsy.data, b.hsy.data);
    EXPECT_EQ(b.h, c.h);
    EXPECT_EQ(b.hsy.data, c.hsy.data);
  }
}

// The grid depends on the map alone: the sums at a map do not depend on the maps summed before it
// (a resumed fit continues with the same bits).
TEST(InterpolatedRepulsion, GridDependsOnTheCurrentMapOnly) {
  const MatrixD Y = clustered_map(800, 2, 20.0, 7), wide = clustered_map(800, 2, 80.0, 8);
  RepulsionGrid fresh(2, 1.0, InterpSettings{}, 2), used(2, 1.0, InterpSettings{}, 2);
  RepulsionSums a, b;
  used.sums(wide, b);
  used.sums(Y, b);
  fresh.sums(Y, a);
  EXPECT_EQ(a.h, b.h);
  EXPECT_EQ(a.hsy.data, b.hsy.data);
}

// The message of the error grid.sums(Y) raises, or "no error".
std::string grid_refusal(const MatrixD& Y) {
  RepulsionGrid grid(static_cast<int>(Y.cols), 1.0, InterpSettings{}, 1);
  RepulsionSums out;
  try {
    grid.sums(Y, out);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// A map wider than the grid may be is an input error naming the remedies, not an allocation.
TEST(InterpolatedRepulsion, RefusesAGridBeyondItsCap) {
  MatrixD Y(2, 2, 0.0);
  Y(1, 0) = 1e6;
  const std::string what = grid_refusal(Y);
  EXPECT_NE(what.find("interp_box"), std::string::npos) << what;
}

// A grid that would not fit in the memory available is refused before it is allocated, naming the
// key to change (a 3-D map 3,000 wide: 24,000^3 cells at box width 1, under the node cap).
TEST(InterpolatedRepulsion, RefusesAGridThatWouldNotFitInMemory) {
  MatrixD Y(2, 3, 0.0);
  for (int d = 0; d < 3; ++d) Y(1, d) = 3000.0;
  const std::string what = grid_refusal(Y);
  EXPECT_NE(what.find("params.interp_box"), std::string::npos) << what;
  EXPECT_NE(what.find("available"), std::string::npos) << what;
}

// Sparse affinities of 600 points in four 5-D Gaussian classes.
SparseAffinity class_affinities(std::vector<int>& labels, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0, 1);
  MatrixD X(600, 5);
  labels.assign(600, 0);
  for (index_t i = 0; i < 600; ++i) {
    labels[static_cast<size_t>(i)] = static_cast<int>(i % 4);
    for (int d = 0; d < 5; ++d) X(i, d) = (d == labels[static_cast<size_t>(i)] ? 6.0 : 0.0) + z(rng);
  }
  return affinities_sparse(X, 20.0).sparse;
}

// One fixed-point step from the same map, exact and interpolated repulsion: the new maps agree to
// the interpolation's accuracy (the moves' relative L2 difference < 1e-2, the default grid's bound).
TEST(InterpolatedRepulsion, FixedPointStepMatchesTheExactStep) {
  std::vector<int> labels;
  const SparseAffinity P = class_affinities(labels, 2);
  auto cpu = make_backend("cpu", 2);
  for (int D : {2, 3})
    for (double alpha : {0.0, 1.0, 2.0}) {
      const MatrixD Y = clustered_map(600, D, 15.0, 11);
      HssneRepulsion interp;
      interp.interpolated = true;
      auto exact = cpu->make_hssne(P, alpha, D), approx = cpu->make_hssne(P, alpha, D, interp);
      const HssneTotals te = exact->start(Y), ta = approx->start(Y);
      EXPECT_NEAR(ta.z, te.z, 1e-3 * te.z);
      // the attraction is exact either way; the grid's engine sums the points in P's breadth-first order
      // over its copy of P with float values (each term within 2^-24 of itself, all of one sign)
      EXPECT_NEAR(ta.p_log_h, te.p_log_h, 1e-7 * std::abs(te.p_log_h));
      exact->propose(1.0, 1.0, 0.0);
      approx->propose(1.0, 1.0, 0.0);
      exact->accept();
      approx->accept();
      const MatrixD ye = exact->coords(), ya = approx->coords();
      double num = 0, den = 0;
      for (size_t q = 0; q < Y.data.size(); ++q) {
        num += (ya.data[q] - ye.data[q]) * (ya.data[q] - ye.data[q]);
        den += (ye.data[q] - Y.data[q]) * (ye.data[q] - Y.data[q]);
      }
      EXPECT_LT(std::sqrt(num / den), 1e-2) << "D " << D << " alpha " << alpha;
    }
}

// The grid's engine numbers the points in P's breadth-first order inside; what crosses its
// interface is in the caller's numbering: the map it was given back bit for bit, its per-point sums
// where the exact engine has them (the attraction exactly, up to the order of each row's sum and its
// copy of P's values in float, 2^-24 of each; the repulsion's hs to the grid's error), a saved state
// that restores to the same totals.
TEST(InterpolatedRepulsion, GridEngineSpeaksInTheCallersNumbering) {
  std::vector<int> labels;
  const SparseAffinity P = class_affinities(labels, 3);
  auto cpu = make_backend("cpu", 2);
  const MatrixD Y = clustered_map(600, 2, 15.0, 12);
  HssneRepulsion interp;
  interp.interpolated = true;
  auto exact = cpu->make_hssne(P, 1.0, 2), approx = cpu->make_hssne(P, 1.0, 2, interp);
  exact->start(Y);
  const HssneTotals t0 = approx->start(Y);
  EXPECT_EQ(approx->coords().data, Y.data);
  HssneSums se, sa;
  exact->current_sums(se);
  approx->current_sums(sa);
  for (size_t i = 0; i < se.a.size(); ++i) {
    EXPECT_NEAR(sa.a[i], se.a[i], 1e-7 * se.a[i]) << "point " << i;
    EXPECT_NEAR(sa.ay.data[2 * i], se.ay.data[2 * i], 1e-7 * std::abs(se.a[i]) * 20) << "point " << i;
    EXPECT_NEAR(sa.hs[i], se.hs[i], 1e-2 * se.hs[i]) << "point " << i;  // (h: its grid part is a total)
  }
  approx->propose(1.0, 1.0, 0.0);
  approx->accept();
  const HssneState saved = approx->state();
  EXPECT_EQ(saved.prev.data, Y.data);
  auto again = cpu->make_hssne(P, 1.0, 2, interp);
  again->start(Y);
  const HssneTotals a = approx->restore(saved), b = again->restore(saved);
  EXPECT_EQ(a.z, b.z);
  EXPECT_EQ(approx->coords().data, saved.y.data);
  EXPECT_NE(a.z, t0.z);
}

// The engines time their stages: the grid's engine its grid stages and the attraction apart, the
// exact engine all pairs; every evaluation (start, propose, damp) is counted.
TEST(InterpolatedRepulsion, EnginesTimeTheirStages) {
  std::vector<int> labels;
  const SparseAffinity P = class_affinities(labels, 4);
  auto cpu = make_backend("cpu", 2);
  const MatrixD Y = clustered_map(600, 2, 15.0, 13);
  HssneRepulsion interp;
  interp.interpolated = true;
  auto exact = cpu->make_hssne(P, 1.0, 2), approx = cpu->make_hssne(P, 1.0, 2, interp);
  for (HssneEngine* e : {exact.get(), approx.get()}) {
    EXPECT_EQ(e->stage_times().evaluations, 0);
    e->start(Y);
    e->propose(1.0, 1.0, 0.0);
    e->damp();
  }
  const HssneStageTimes te = exact->stage_times(), ta = approx->stage_times();
  EXPECT_EQ(te.evaluations, 3);
  EXPECT_EQ(ta.evaluations, 3);
  EXPECT_GT(te.pairs, 0.0);
  EXPECT_EQ(te.fft + te.scatter + te.gather + te.attraction, 0.0) << "no grid, and the attraction is in the pairs' pass";
  EXPECT_EQ(ta.pairs, 0.0);
  for (double t : {ta.fft, ta.scatter, ta.gather, ta.attraction}) EXPECT_GT(t, 0.0);
}

// A whole fit on the grid: J (the interpolated one the guard sees) never rises after the
// exaggeration, the classes separate, and 1 and 2 threads give the same bits.
TEST(InterpolatedRepulsion, FitDescendsSeparatesAndIsDeterministic) {
  std::vector<int> labels;
  const SparseAffinity P = class_affinities(labels, 3);
  for (int D : {2}) {  // 3-D: the step test above (this map's 3-D grid would be large)
    HssneParams prm;
    prm.dim = D;
    prm.max_iter = 300;
    prm.exaggeration_iter = 100;
    prm.tol = 0;
    prm.repulsion = HssneRepulsionMode::interpolated;
    prm.optimizer = HssneOptimizer::fixed_point;  // auto would take the gradient method with the grid
    const HssneResult fit = fit_hssne(P, prm, 1, *make_cpu_backend(2));
    for (size_t i = static_cast<size_t>(prm.exaggeration_iter) + 1; i < fit.objective_trace.size(); ++i)
      EXPECT_LE(fit.objective_trace[i], fit.objective_trace[i - 1]) << "D " << D << " iteration " << i;
    QualityRequest req;
    req.ks = {5};
    req.curve = false;
    EXPECT_GE(evaluate_quality(fit.coords, fit.coords, labels, req, *make_cpu_backend(0)).at_k[0].knn_accuracy, 0.95) << "D " << D;
    prm.repulsion = HssneRepulsionMode::exact;
    const double exact_kl = fit_hssne(P, prm, 1, *make_cpu_backend(2)).objective_trace.back();
    EXPECT_NEAR(fit.objective_trace.back(), exact_kl, 0.02 * exact_kl) << "D " << D;
    prm.repulsion = HssneRepulsionMode::interpolated;
    EXPECT_EQ(fit_hssne(P, prm, 1, *make_cpu_backend(1)).coords.data, fit.coords.data) << "D " << D;
  }
}

// What auto means: the grid from kTreeRepulsionMaxPoints points on the CPU (exact where the grid
// would cost more), the gradient method with it and a learning rate of N / exaggeration.
TEST(InterpolatedRepulsion, AutoChoosesByPointsAndBackend) {
  auto cpu = make_backend("cpu", 1);
  HssneParams prm;
  const HssneRepulsion small = resolve_repulsion(prm, kTreeRepulsionMinPoints - 1, *cpu);
  const HssneRepulsion large = resolve_repulsion(prm, kTreeRepulsionMaxPoints, *cpu);
  EXPECT_FALSE(small.interpolated);
  EXPECT_TRUE(large.interpolated);
  EXPECT_TRUE(large.exact_when_cheaper);
  EXPECT_EQ(resolve_optimizer(prm, 5000, small).optimizer, HssneOptimizer::fixed_point);
  const HssneParams big = resolve_optimizer(prm, 70000, large);
  EXPECT_EQ(big.optimizer, HssneOptimizer::gradient);
  EXPECT_DOUBLE_EQ(big.learning_rate, 70000.0 / 12.0);
  EXPECT_DOUBLE_EQ(resolve_optimizer(prm, 600, large).learning_rate, 200.0);
  prm.repulsion = HssneRepulsionMode::interpolated;
  prm.optimizer = HssneOptimizer::fixed_point;
  prm.learning_rate = 50;
  const HssneRepulsion asked = resolve_repulsion(prm, 100, *cpu);
  EXPECT_TRUE(asked.interpolated);
  EXPECT_FALSE(asked.exact_when_cheaper) << "an explicit interpolated keeps the grid";
  EXPECT_EQ(resolve_optimizer(prm, 70000, asked).optimizer, HssneOptimizer::fixed_point);
  EXPECT_DOUBLE_EQ(resolve_optimizer(prm, 70000, asked).learning_rate, 50.0);
  prm.repulsion = HssneRepulsionMode::exact;
  EXPECT_FALSE(resolve_repulsion(prm, 1000000, *cpu).interpolated);
}

}  // namespace
}  // namespace orrery
