// NeRV's truncated cost (params.pairs = approximate; math/nerv_cells.hpp): the cell-grid sweeps equal a
// brute-force evaluation of the same truncated definition (wide rows, an enlarged grid and points on
// the cut-off included), its gradient is the gradient of that cost (finite differences), a cutoff
// beyond every pair gives the exact sparse cost, the thread count changes no bits, the float engine
// agrees with the double arithmetic, and approximate fits lower the cost and keep neighborhoods.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "common/gradient_check.hpp"
#include "cpu/nerv_cells.hpp"
#include "orrery/affinity.hpp"
#include "orrery/backend.hpp"
#include "orrery/math/nerv.hpp"
#include "orrery/nerv.hpp"
#include "orrery/quality.hpp"

using namespace orrery;

namespace {

MatrixD clusters(index_t n, int d, unsigned seed, std::vector<int>* labels = nullptr) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0, 1);
  MatrixD X(n, d);
  if (labels) labels->assign(static_cast<size_t>(n), 0);
  for (index_t i = 0; i < n; ++i) {
    const int c = static_cast<int>(i % 3);
    if (labels) (*labels)[static_cast<size_t>(i)] = c;
    for (int k = 0; k < d; ++k) X(i, k) = (k == c ? 6.0 : 0.0) + z(rng);
  }
  return X;
}

MatrixD gaussian(index_t n, int d, double scale, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0, scale);
  MatrixD Y(n, d);
  for (double& v : Y.data) v = z(rng);
  return Y;
}

// The truncated cost straight from its definition (math/nerv_cells.hpp), in double.
double brute_force(const SparseAffinity& P, const std::vector<double>& beta, const MatrixD& Y, double lambda,
                   double cutoff) {
  const index_t n = Y.rows;
  const std::vector<double> lpf = nerv_row_log_floors(P);
  auto dist = [&](index_t i, index_t j) {
    double s = 0.0;
    for (index_t a = 0; a < Y.cols; ++a) s += (Y(i, a) - Y(j, a)) * (Y(i, a) - Y(j, a));
    return s;
  };
  double E = 0.0;
  for (index_t i = 0; i < n; ++i) {
    const double b = beta[static_cast<size_t>(i)];
    double dmin = INFINITY;
    for (index_t j = 0; j < n; ++j)
      if (j != i) dmin = std::min(dmin, dist(i, j));
    const double r2 = dmin + cutoff / b;
    double z = 0.0, t = 0.0, u = 0.0, ps = 0.0;
    for (index_t j = 0; j < n; ++j) {
      const double d = dist(i, j);
      if (j == i || d > r2) continue;
      const double sh = -b * (d - dmin), w = std::exp(sh);
      z += w;
      t += w * (sh - lpf[static_cast<size_t>(i)]);
    }
    for (index_t e = P.row_ptr[static_cast<size_t>(i)]; e < P.row_ptr[static_cast<size_t>(i) + 1]; ++e) {
      const index_t j = P.col[static_cast<size_t>(e)];
      const double p = P.val[static_cast<size_t>(e)], lp = std::log(std::max(p, kNervProbabilityFloor));
      const double d = dist(i, j);
      if (d <= r2) t += std::exp(-b * (d - dmin)) * (lpf[static_cast<size_t>(i)] - lp);
      u += p * (lp + b * d);
      ps += p;
    }
    const double lse = -b * dmin + std::log(z);
    E += lambda * (u + lse * ps) + (1 - lambda) * (t / z - std::log(z));
  }
  return E;
}

double truncated(const SparseAffinity& P, const std::vector<double>& beta, const MatrixD& Y, double lambda,
                 double cutoff, MatrixD* grad, int threads = 2, NervPrecision prec = NervPrecision::float64) {
  return nerv_objective_truncated(P, beta, Y, lambda, cutoff, grad, threads, nullptr, prec);
}

}  // namespace

TEST(NervCells, SweepsEqualTheTruncatedDefinition) {
  const MatrixD X = clusters(150, 4, 3);
  const AffinityResult a = affinities_sparse(X, 5.0);  // k = 15
  std::vector<double> few = a.beta, many = a.beta;
  for (size_t i = 0; i < few.size(); i += 37) few[i] *= 1e-3;  // a few very wide rows: the wide list
  for (size_t i = 0; i < many.size(); i += 2) many[i] *= 0.02;  // more than it holds: the rest by reach
  for (const std::vector<double>& beta : {a.beta, few, many})
  for (int D : {2, 3})
    for (double cutoff : {2.0, 8.0, 20.0})
      for (double scale : {0.5, 3.0, 40.0}) {  // crowded, typical, spread out (the grid enlarged)
        const MatrixD Y = gaussian(150, D, scale, 7 + D);
        const double want = brute_force(a.sparse_conditional, beta, Y, 0.3, cutoff);
        const double got = truncated(a.sparse_conditional, beta, Y, 0.3, cutoff, nullptr);
        EXPECT_NEAR(got, want, 1e-10 * std::abs(want)) << "D " << D << " cutoff " << cutoff << " scale " << scale;
      }
}

TEST(NervCells, PointsOnTheCutOffAndOnCellBoundariesCount) {
  // A lattice with equal bandwidths: nearest distance 1, cutoff 3 so R^2 = 4 exactly; the points at
  // distance 2 are kept (<=), those at sqrt(5) are not, and lattice points fall on cell faces.
  const index_t side = 9, n = side * side;
  MatrixD Y(n, 2);
  for (index_t i = 0; i < n; ++i) Y(i, 0) = static_cast<double>(i % side), Y(i, 1) = static_cast<double>(i / side);
  const AffinityResult a = affinities_sparse(Y, 2.0);
  const std::vector<double> beta(static_cast<size_t>(n), 1.0);
  for (double cutoff : {3.0, 4.0, 1.0}) {
    const double want = brute_force(a.sparse_conditional, beta, Y, 0.5, cutoff);
    EXPECT_NEAR(truncated(a.sparse_conditional, beta, Y, 0.5, cutoff, nullptr), want, 1e-12 * std::abs(want))
        << "cutoff " << cutoff;
  }
  // the same map moved by half a cell: other boundaries, the same cost
  MatrixD Z = Y;
  for (double& v : Z.data) v += 0.5;
  EXPECT_NEAR(truncated(a.sparse_conditional, beta, Z, 0.5, 3.0, nullptr),
              truncated(a.sparse_conditional, beta, Y, 0.5, 3.0, nullptr), 1e-12);
}

TEST(NervCells, GradientIsTheGradientOfTheTruncatedCost) {
  const AffinityResult a = affinities_sparse(clusters(60, 4, 11), 4.0);  // k = 12
  std::vector<double> beta = a.beta;
  beta[5] *= 1e-3;  // a wide row
  for (int D : {2, 3})
    for (double lambda : {0.0, 0.3, 0.7, 1.0}) {
      const MatrixD Y = gaussian(60, D, 2.0, 13 + D);
      MatrixD g, at = Y;
      truncated(a.sparse_conditional, beta, Y, lambda, 6.0, &g);
      EXPECT_TRUE(test::gradient_matches(
          [&](const std::vector<double>& y) {
            at.data = y;
            return truncated(a.sparse_conditional, beta, at, lambda, 6.0, nullptr);
          },
          Y.data, g.data, {1e-6, 1e-6, 1, "truncated, lambda " + std::to_string(lambda) + " D " + std::to_string(D)}));
    }
}

TEST(NervCells, AWideCutoffIsTheExactSparseCost) {
  const AffinityResult a = affinities_sparse(clusters(80, 4, 17), 5.0);
  for (int D : {2, 3}) {
    const MatrixD Y = gaussian(80, D, 1.0, 19);
    MatrixD ge, gt;
    const double Ee = nerv_objective(a.sparse_conditional, a.beta, Y, 0.3, &ge, 2);
    const double Et = truncated(a.sparse_conditional, a.beta, Y, 0.3, 700.0, &gt);
    EXPECT_NEAR(Et, Ee, 1e-10 * std::abs(Ee));
    for (size_t q = 0; q < ge.data.size(); ++q) EXPECT_NEAR(gt.data[q], ge.data[q], 1e-9 * (1 + std::abs(ge.data[q])));
  }
}

TEST(NervCells, ThreadCountChangesNoBitsAndFloatAgreesWithDouble) {
  const AffinityResult a = affinities_sparse(clusters(400, 5, 23), 10.0);
  const MatrixD Y = gaussian(400, 2, 4.0, 29);
  MatrixD g1, g4, gd;
  const double E1 = truncated(a.sparse_conditional, a.beta, Y, 0.3, 20.0, &g1, 1, NervPrecision::float32);
  const double E4 = truncated(a.sparse_conditional, a.beta, Y, 0.3, 20.0, &g4, 4, NervPrecision::float32);
  EXPECT_EQ(E1, E4);
  EXPECT_EQ(g1.data, g4.data);
  const double Ed = truncated(a.sparse_conditional, a.beta, Y, 0.3, 20.0, &gd);
  EXPECT_NEAR(E1, Ed, 1e-5 * std::abs(Ed));
  double num = 0.0, den = 0.0;
  for (size_t q = 0; q < gd.data.size(); ++q) num += (g1.data[q] - gd.data[q]) * (g1.data[q] - gd.data[q]), den += gd.data[q] * gd.data[q];
  EXPECT_LT(std::sqrt(num / den), 1e-4);
}

TEST(NervCells, TruncationErrorIsSmallAndItsEstimateFindsIt) {
  const AffinityResult a = affinities_sparse(clusters(300, 5, 31), 10.0);
  const MatrixD Y = gaussian(300, 2, 3.0, 37);
  const double exact = nerv_objective(a.sparse_conditional, a.beta, Y, 0.3, nullptr, 2);
  for (double cutoff : {4.0, 20.0}) {
    const NervTruncationCheck c = nerv_truncation_check(a.sparse_conditional, a.beta, Y, 0.3, cutoff, 300, 1, 2);
    EXPECT_EQ(c.rows, 300);
    // with every row sampled the estimate is the exact cost (up to the float evaluation)
    EXPECT_NEAR(c.estimated_exact, exact, 1e-5 * std::abs(exact)) << "cutoff " << cutoff;
    EXPECT_GT(c.mean_row_pairs, 0.0);
    EXPECT_LT(c.mean_row_pairs, 299.0);
  }
  const NervTruncationCheck tight = nerv_truncation_check(a.sparse_conditional, a.beta, Y, 0.3, 20.0, 300, 1, 2);
  const NervTruncationCheck loose = nerv_truncation_check(a.sparse_conditional, a.beta, Y, 0.3, 4.0, 300, 1, 2);
  EXPECT_LT(tight.relative_error, 1e-5);
  EXPECT_GT(loose.relative_error, tight.relative_error);
}

TEST(NervCells, ApproximateFitLowersCostKeepsClassesAndRepeats) {
  std::vector<int> labels;
  const MatrixD X = clusters(600, 6, 41, &labels);
  const AffinityResult a = affinities_sparse(X, 10.0);
  NervParams prm;
  prm.pairs = NervPairs::approximate;
  prm.max_iter = 60;
  const NervResult r = fit_nerv(a.sparse_conditional, a.beta, prm, 3, *make_cpu_backend(2));
  EXPECT_TRUE(r.approximate);
  ASSERT_GE(r.objective_trace.size(), 2u);
  EXPECT_LT(r.objective_trace.back(), 0.5 * r.objective_trace.front());
  QualityRequest req;
  req.ks = {1};
  req.curve = false;
  EXPECT_GE(evaluate_quality(r.coords, r.coords, labels, req, *make_cpu_backend(0)).homogeneity_1nn, 0.95);
  const NervResult again = fit_nerv(a.sparse_conditional, a.beta, prm, 3, *make_cpu_backend(1));
  EXPECT_EQ(r.coords.data, again.coords.data);
  // auto takes the exact path below kNervApproximateFrom points, and dense affinities refuse approximate
  prm.pairs = NervPairs::automatic;
  EXPECT_FALSE(nerv_approximate(prm, 600, true));
  EXPECT_TRUE(nerv_approximate(prm, kNervApproximateFrom, true));
  EXPECT_FALSE(nerv_approximate(prm, kNervApproximateFrom, false));
  prm.pairs = NervPairs::approximate;
  EXPECT_THROW(nerv_approximate(prm, 600, false), Error);
}

TEST(NervCells, ScatteredColumnTermsEqualTheGatheredOnes) {
  // the CPU scatters each pair's column share and reads the listed terms' rows packed; the CUDA
  // kernels gather the column share and read the separate arrays (math/nerv_cells.hpp)
  const AffinityResult a = affinities_sparse(clusters(500, 5, 43), 8.0);
  std::vector<double> beta = a.beta;
  for (size_t i = 0; i < beta.size(); i += 3) beta[i] *= 0.05;  // wide rows beyond the list's limit too
  for (int D : {2, 3}) {
    const MatrixD Y = gaussian(500, D, 3.0, 47);
    MatrixD gs, gg;
    cpu::NervCellsEvaluator<double> scatter(a.sparse_conditional, beta, 12.0, D, 2, false);
    cpu::NervCellsEvaluator<double> gather(a.sparse_conditional, beta, 12.0, D, 2, true);
    const double Es = scatter.evaluate(Y, 0.3, &gs), Eg = gather.evaluate(Y, 0.3, &gg);
    EXPECT_EQ(Es, Eg);
    for (size_t q = 0; q < gs.data.size(); ++q) EXPECT_NEAR(gs.data[q], gg.data[q], 1e-10 * (1 + std::abs(gg.data[q])));
  }
}
