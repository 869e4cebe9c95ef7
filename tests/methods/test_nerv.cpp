// NeRV: cost and gradient against finite differences for several lambda (dense and sparse P),
// lambda = 1 equals the SNE cost, the row/pair-pass evaluation equals the straightforward N x N one,
// sparse equals dense when the lists cover every point, the vectorisable exps are within an ulp (two
// in float) of std::exp, the float evaluation agrees with the double one, and the CG fits lower the
// cost and keep neighborhoods.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "methods/random.hpp"
#include "optim/cg.hpp"
#include "common/gradient_check.hpp"
#include "orrery/affinity.hpp"
#include "orrery/backend.hpp"
#include "orrery/math/nerv.hpp"
#include "orrery/nerv.hpp"
#include "orrery/quality.hpp"

using namespace orrery;

namespace {

MatrixD points(index_t n, int d, unsigned seed, std::vector<int>* labels = nullptr) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0, 1);
  MatrixD X(n, d);
  if (labels) labels->assign(static_cast<size_t>(n), 0);
  for (index_t i = 0; i < n; ++i) {
    const int c = static_cast<int>(i % 3);
    if (labels) (*labels)[static_cast<size_t>(i)] = c;
    for (int k = 0; k < d; ++k) X(i, k) = (k == c ? 5.0 : 0.0) + z(rng);
  }
  return X;
}

MatrixD gaussian(index_t n, int d, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0, 1);
  MatrixD Y(n, d);
  for (double& v : Y.data) v = z(rng);
  return Y;
}

// The straightforward evaluation (one N x N matrix of c_ij, exp and log per pair), with log p_{j|i}
// given as LP(i, j): the reference for the two-pass code.
double reference_objective(const MatrixD& P, const MatrixD& LP, const std::vector<double>& beta, const MatrixD& Y,
                           double lambda, MatrixD* grad) {
  const index_t N = Y.rows;
  const int D = static_cast<int>(Y.cols);
  MatrixD C(N, N, 0.0);
  std::vector<double> e(static_cast<size_t>(N));
  double E = 0.0;
  for (index_t i = 0; i < N; ++i) {
    const double b = beta[static_cast<size_t>(i)];
    double emax = -std::numeric_limits<double>::infinity();
    for (index_t j = 0; j < N; ++j) {
      if (j == i) continue;
      double d2 = 0.0;
      for (int d = 0; d < D; ++d) d2 += (Y(i, d) - Y(j, d)) * (Y(i, d) - Y(j, d));
      e[j] = -b * d2;
      emax = std::max(emax, e[j]);
    }
    double z = 0.0;
    for (index_t j = 0; j < N; ++j)
      if (j != i) z += std::exp(e[j] - emax);
    const double lse = emax + std::log(z);
    double kl_pq = 0.0, kl_qp = 0.0;
    for (index_t j = 0; j < N; ++j) {
      if (j == i) continue;
      const double lq = e[j] - lse, q = std::exp(lq), p = P(i, j), lp = LP(i, j);
      if (p > 0) kl_pq += p * (lp - lq);
      kl_qp += q * (lq - lp);
    }
    E += lambda * kl_pq + (1 - lambda) * kl_qp;
    for (index_t j = 0; j < N; ++j) {
      if (j == i) continue;
      const double lq = e[j] - lse, q = std::exp(lq);
      C(i, j) = lambda * b * (P(i, j) - q) - (1 - lambda) * b * q * ((lq - LP(i, j)) - kl_qp);
    }
  }
  *grad = MatrixD(N, D, 0.0);
  for (index_t i = 0; i < N; ++i)
    for (index_t j = 0; j < N; ++j) {
      if (j == i) continue;
      const double w = 2.0 * (C(i, j) + C(j, i));
      for (int d = 0; d < D; ++d) (*grad)(i, d) += w * (Y(i, d) - Y(j, d));
    }
  return E;
}

MatrixD floored_logs(const MatrixD& P) {
  MatrixD L = P;
  for (double& v : L.data) v = std::log(std::max(v, kNervProbabilityFloor));
  return L;
}

// Every off-diagonal entry of a dense conditional matrix as a CSR row.
SparseAffinity full_csr(const MatrixD& P) {
  SparseAffinity S;
  S.num_points = P.rows;
  S.row_ptr.push_back(0);
  for (index_t i = 0; i < P.rows; ++i) {
    for (index_t j = 0; j < P.cols; ++j)
      if (j != i) {
        S.col.push_back(j);
        S.val.push_back(P(i, j));
      }
    S.row_ptr.push_back(static_cast<index_t>(S.col.size()));
  }
  return S;
}

double max_abs(const MatrixD& M) {
  double m = 0.0;
  for (double v : M.data) m = std::max(m, std::abs(v));
  return m;
}

void expect_same(const MatrixD& a, const MatrixD& b, double rel, const std::string& what) {
  ASSERT_EQ(a.data.size(), b.data.size());
  const double scale = max_abs(b);
  for (size_t q = 0; q < a.data.size(); ++q) EXPECT_NEAR(a.data[q], b.data[q], rel * scale) << what << " entry " << q;
}

}  // namespace

TEST(Nerv, ExpNonpositiveIsWithinAnUlpOfStdExp) {
  std::mt19937_64 rng(7);
  double worst = 0.0;
  for (double lo : {-1.0, -40.0, -708.0}) {
    std::uniform_real_distribution<double> u(lo, 0.0);
    for (int k = 0; k < 200000; ++k) {
      const double x = u(rng);
      worst = std::max(worst, std::abs(math::exp_nonpositive(x) - std::exp(x)) / std::exp(x));
    }
  }
  EXPECT_LE(worst, 2.3e-16);
  EXPECT_EQ(math::exp_nonpositive(0.0), 1.0);
  EXPECT_NEAR(math::exp_nonpositive(1e-15), std::exp(1e-15), 2.3e-16);
  EXPECT_NEAR(math::exp_nonpositive(-708.3), std::exp(-708.3), 1e-15 * std::exp(-708.3));
  for (double x : {-709.1, -745.0, -1023.0, -1e6, -1e300, -std::numeric_limits<double>::infinity()})
    EXPECT_EQ(math::exp_nonpositive(x), 0.0) << x;
}

TEST(Nerv, FloatExpIsWithinTwoUlpsOfExp) {
  std::mt19937_64 rng(8);
  double worst = 0.0;
  for (float lo : {-1.0f, -20.0f, -87.0f}) {
    std::uniform_real_distribution<float> u(lo, 0.0f);
    for (int k = 0; k < 200000; ++k) {
      const float x = u(rng);
      const double e = std::exp(static_cast<double>(x));
      worst = std::max(worst, std::abs(static_cast<double>(math::exp_nonpositive(x)) - e) / e);
    }
  }
  EXPECT_LE(worst, 2.4e-7);  // two float ulps relative to the bottom of a binade (2 x 2^-23)
  EXPECT_EQ(math::exp_nonpositive(0.0f), 1.0f);
  EXPECT_NEAR(math::exp_nonpositive(-87.0f), std::exp(-87.0f), 3e-7f * std::exp(-87.0f));
  for (float x : {-88.0f, -104.0f, -690.0f, -1e6f, -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN()})
    EXPECT_EQ(math::exp_nonpositive(x), 0.0f) << x;
}

// The float evaluation (params.precision = "float") against the double reference: dense and sparse
// rows, D = 2 and 3, several lambda, and N = 1100 so that rows span several 512-column tiles with
// the diagonal inside one.
TEST(Nerv, FloatEvaluationAgreesWithDouble) {
  struct Case {
    index_t n;
    int D;
    double lambda;
  };
  for (const Case c : {Case{60, 2, 0.0}, Case{60, 3, 0.3}, Case{60, 2, 1.0}, Case{1100, 2, 0.3}}) {
    const MatrixD X = points(c.n, 5, 51);
    const AffinityResult d = affinities_dense(X, 12.0), s = affinities_sparse(X, 12.0);
    const MatrixD Y = gaussian(c.n, c.D, 52);
    const std::string what = "N " + std::to_string(c.n) + " D " + std::to_string(c.D) + " lambda " +
                              std::to_string(c.lambda);
    MatrixD gd, gf, gf1, gsd, gsf;
    const double Ed = nerv_objective(d.conditional, d.beta, Y, c.lambda, &gd, 2);
    const double Ef = nerv_objective_float(d.conditional, d.beta, Y, c.lambda, &gf, 2);
    EXPECT_NEAR(Ef, Ed, 2e-6 * std::abs(Ed)) << what;
    expect_same(gf, gd, 2e-5, "dense float gradient, " + what);
    EXPECT_EQ(nerv_objective_float(d.conditional, d.beta, Y, c.lambda, &gf1, 1), Ef) << "any thread count, " << what;
    EXPECT_EQ(gf1.data, gf.data) << what;
    const double Esd = nerv_objective(s.sparse_conditional, s.beta, Y, c.lambda, &gsd, 2);
    const double Esf = nerv_objective_float(s.sparse_conditional, s.beta, Y, c.lambda, &gsf, 2);
    EXPECT_NEAR(Esf, Esd, 2e-6 * std::abs(Esd)) << what;
    expect_same(gsf, gsd, 2e-5, "sparse float gradient, " + what);
  }
}

TEST(Nerv, FloatAndDoubleFitsAgreeOverAFewIterations) {
  const MatrixD X = points(80, 4, 61);
  const AffinityResult a = affinities_dense(X, 10.0);
  NervParams prm;
  prm.max_iter = 5;
  prm.precision = NervPrecision::float64;
  const NervResult rd = fit_nerv(a.conditional, a.beta, prm, 4, *make_cpu_backend(2));
  prm.precision = NervPrecision::float32;
  const NervResult rf = fit_nerv(a.conditional, a.beta, prm, 4, *make_cpu_backend(2));
  ASSERT_EQ(rd.objective_trace.size(), rf.objective_trace.size());
  EXPECT_NEAR(rf.objective_trace.back(), rd.objective_trace.back(), 1e-5 * std::abs(rd.objective_trace.back()));
  expect_same(rf.coords, rd.coords, 1e-4, "coordinates after 5 iterations");
}

TEST(Nerv, TwoPassEvaluationEqualsTheStraightforwardOne) {
  const MatrixD X = points(50, 5, 11);
  const AffinityResult a = affinities_dense(X, 8.0);
  const MatrixD L = floored_logs(a.conditional);
  for (int D : {2, 3})
    for (double lambda : {0.0, 0.3, 1.0}) {
      const MatrixD Y = gaussian(50, D, 12 + D);
      MatrixD g, g1, gref;
      const double E = nerv_objective(a.conditional, a.beta, Y, lambda, &g, 2);
      const double Eref = reference_objective(a.conditional, L, a.beta, Y, lambda, &gref);
      EXPECT_NEAR(E, Eref, 1e-9 * std::abs(Eref)) << "lambda " << lambda << " D " << D;
      expect_same(g, gref, 1e-9, "gradient");
      EXPECT_EQ(nerv_objective(a.conditional, a.beta, Y, lambda, nullptr, 2), E) << "the cost without the gradient";
      EXPECT_EQ(nerv_objective(a.conditional, a.beta, Y, lambda, &g1, 1), E) << "any thread count: same bits";
      EXPECT_EQ(g1.data, g.data);
    }
}

// The gradient at random maps in 2-D and 3-D for several lambda against central differences
// (every third coordinate), for dense or sparse P.
template <class P>
void expect_gradient_matches(const P& prob, const std::vector<double>& beta, index_t n, unsigned seed,
                             const std::string& what) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0, 1);
  for (int D : {2, 3})
    for (double lambda : {0.0, 0.3, 0.7, 1.0}) {
      MatrixD Y(n, D), g;
      for (double& v : Y.data) v = z(rng);
      nerv_objective(prob, beta, Y, lambda, &g, 2);
      MatrixD at = Y;
      EXPECT_TRUE(test::gradient_matches(
          [&](const std::vector<double>& y) {
            at.data = y;
            return nerv_objective(prob, beta, at, lambda, nullptr);
          },
          Y.data, g.data, {1e-6, 1e-6, 3, what + ", lambda " + std::to_string(lambda) + " D " + std::to_string(D)}));
    }
}

TEST(Nerv, SparseGradientMatchesFiniteDifferences) {
  const AffinityResult a = affinities_sparse(points(40, 4, 21), 4.0);  // k = 12 of 39 other points
  expect_gradient_matches(a.sparse_conditional, a.beta, 40, 22, "sparse");
}

TEST(Nerv, SparseUsesTheDocumentedFloorForUnlistedPairs) {
  const MatrixD X = points(36, 4, 31);
  const AffinityResult a = affinities_sparse(X, 3.0);  // k = 9
  const SparseAffinity& S = a.sparse_conditional;
  // Dense P with zeros off the lists; log p floored at 1e-3 times the row's smallest listed p.
  MatrixD P(36, 36, 0.0), L(36, 36, 0.0);
  for (index_t i = 0; i < 36; ++i) {
    double pmin = 1.0;
    for (index_t q = S.row_ptr[i]; q < S.row_ptr[i + 1]; ++q) pmin = std::min(pmin, S.val[q]);
    for (index_t j = 0; j < 36; ++j) L(i, j) = std::log(1e-3 * pmin);
    for (index_t q = S.row_ptr[i]; q < S.row_ptr[i + 1]; ++q) {
      P(i, S.col[q]) = S.val[q];
      L(i, S.col[q]) = std::log(S.val[q]);
    }
  }
  for (double lambda : {0.0, 0.4, 1.0}) {
    const MatrixD Y = gaussian(36, 2, 32);
    MatrixD g, gref;
    const double E = nerv_objective(S, a.beta, Y, lambda, &g, 2);
    const double Eref = reference_objective(P, L, a.beta, Y, lambda, &gref);
    EXPECT_NEAR(E, Eref, 1e-10 * std::abs(Eref)) << "lambda " << lambda;
    expect_same(g, gref, 1e-10, "gradient");
  }
}

TEST(Nerv, SparseEqualsDenseWhenListsCoverAllPoints) {
  const MatrixD X = points(31, 4, 41);
  const AffinityResult d = affinities_dense(X, 10.0), s = affinities_sparse(X, 10.0);  // k = 30 = N - 1
  const SparseAffinity full = full_csr(d.conditional);
  for (int D : {2, 3})
    for (double lambda : {0.0, 0.3, 1.0}) {
      const MatrixD Y = gaussian(31, D, 42 + D);
      MatrixD gd, gs, ga;
      const double Ed = nerv_objective(d.conditional, d.beta, Y, lambda, &gd, 2);
      const double Es = nerv_objective(full, d.beta, Y, lambda, &gs, 2);
      EXPECT_NEAR(Es, Ed, 1e-10 * std::abs(Ed)) << "lambda " << lambda << " D " << D;
      expect_same(gs, gd, 1e-10, "gradient");
      // affinities_sparse's own rows (calibrated on the 30 neighbors: the same P up to round-off)
      const double Ea = nerv_objective(s.sparse_conditional, s.beta, Y, lambda, &ga, 2);
      EXPECT_NEAR(Ea, Ed, 1e-7 * std::abs(Ed)) << "lambda " << lambda << " D " << D;
      expect_same(ga, gd, 1e-7, "gradient from affinities_sparse");
    }
}

TEST(Nerv, GradientMatchesFiniteDifferences) {
  const AffinityResult a = affinities_dense(points(25, 4, 1), 6.0);
  expect_gradient_matches(a.conditional, a.beta, 25, 2, "dense");
}

TEST(Nerv, LambdaOneIsTheSneCost) {
  const MatrixD X = points(20, 3, 3);
  const AffinityResult a = affinities_dense(X, 5.0);
  MatrixD Y = points(20, 2, 4);
  double sne = 0;
  for (index_t i = 0; i < 20; ++i) {
    double z = 0;
    for (index_t j = 0; j < 20; ++j)
      if (j != i) z += std::exp(-a.beta[i] * (std::pow(Y(i, 0) - Y(j, 0), 2) + std::pow(Y(i, 1) - Y(j, 1), 2)));
    for (index_t j = 0; j < 20; ++j) {
      if (j == i) continue;
      const double q = std::exp(-a.beta[i] * (std::pow(Y(i, 0) - Y(j, 0), 2) + std::pow(Y(i, 1) - Y(j, 1), 2))) / z;
      sne += a.conditional(i, j) * std::log(a.conditional(i, j) / q);
    }
  }
  EXPECT_NEAR(nerv_objective(a.conditional, a.beta, Y, 1.0, nullptr), sne, 1e-10 * std::abs(sne));
}

TEST(Nerv, ConjugateGradientFitLowersCostAndKeepsClasses) {
  std::vector<int> labels;
  const MatrixD X = points(90, 4, 5, &labels);
  const AffinityResult a = affinities_dense(X, 10.0);
  NervParams prm;
  prm.max_iter = 200;
  const NervResult fit = fit_nerv(a.conditional, a.beta, prm, 3, *make_cpu_backend(2));
  ASSERT_GE(fit.objective_trace.size(), 2u);
  for (size_t i = 1; i < fit.objective_trace.size(); ++i) EXPECT_LE(fit.objective_trace[i], fit.objective_trace[i - 1]);
  QualityRequest req;
  req.ks = {1};
  req.curve = false;
  EXPECT_GE(evaluate_quality(fit.coords, fit.coords, labels, req, *make_cpu_backend(0)).homogeneity_1nn, 0.9);
  const NervResult again = fit_nerv(a.conditional, a.beta, prm, 3, *make_cpu_backend(1));
  EXPECT_EQ(again.coords.data, fit.coords.data) << "same seed, any thread count: same bits";
}

TEST(Nerv, SparseConjugateGradientFitLowersCostAndKeepsClasses) {
  std::vector<int> labels;
  const MatrixD X = points(90, 4, 5, &labels);
  const AffinityResult a = affinities_sparse(X, 10.0);
  NervParams prm;
  prm.max_iter = 200;
  const NervResult fit = fit_nerv(a.sparse_conditional, a.beta, prm, 3, *make_cpu_backend(2));
  ASSERT_GE(fit.objective_trace.size(), 2u);
  for (size_t i = 1; i < fit.objective_trace.size(); ++i) EXPECT_LE(fit.objective_trace[i], fit.objective_trace[i - 1]);
  QualityRequest req;
  req.ks = {1};
  req.curve = false;
  EXPECT_GE(evaluate_quality(fit.coords, fit.coords, labels, req, *make_cpu_backend(0)).homogeneity_1nn, 0.9);
  const NervResult again = fit_nerv(a.sparse_conditional, a.beta, prm, 3, *make_cpu_backend(1));
  EXPECT_EQ(again.coords.data, fit.coords.data) << "same seed, any thread count: same bits";
}

TEST(Nerv, AGivenStartIsRescaledToTheInputBandwidth) {
  std::mt19937_64 rng(21);
  std::normal_distribution<double> z(0.0, 1.0);
  MatrixD X(60, 4), S(60, 2);
  for (double& v : X.data) v = z(rng);
  for (index_t i = 0; i < 60; ++i) S(i, 0) = X(i, 0), S(i, 1) = X(i, 1);
  const AffinityResult a = affinities_dense(X, 10.0);
  auto cpu = make_backend("cpu", 1);
  NervParams prm;
  prm.max_iter = 3;
  MatrixD S2 = S;
  for (double& v : S2.data) v *= 7.0;  // the start's own scale does not matter
  const NervResult r1 = fit_nerv(a.conditional, a.beta, prm, 1, *cpu, {}, &S);
  const NervResult r2 = fit_nerv(a.conditional, a.beta, prm, 1, *cpu, {}, &S2);
  const NervResult rr = fit_nerv(a.conditional, a.beta, prm, 1, *cpu);
  ASSERT_EQ(r1.coords.data.size(), r2.coords.data.size());
  for (size_t q = 0; q < r1.coords.data.size(); ++q)
    EXPECT_NEAR(r1.coords.data[q], r2.coords.data[q], 1e-9 * (1 + std::abs(r1.coords.data[q])));
  EXPECT_NE(r1.coords.data, rr.coords.data);
  // sparse rows take the same start
  const AffinityResult s = affinities_sparse(X, 10.0);
  const NervResult rs = fit_nerv(s.sparse_conditional, s.beta, prm, 1, *cpu, {}, &S);
  EXPECT_EQ(rs.coords.rows, 60);
}

// The engine's conjugate gradient is conjugate gradient on host vectors: the same start, the same
// evaluations and the same dots give the same trace and map, bit for bit (double arithmetic). The
// fit works in units of sigma (bandwidths beta / median beta) and scales the map back.
TEST(Nerv, EngineConjugateGradientIsConjugateGradientOnHostVectors) {
  const MatrixD X = points(70, 4, 9);
  const AffinityResult a = affinities_dense(X, 8.0);
  NervParams prm;
  prm.max_iter = 25;
  prm.precision = NervPrecision::float64;
  const NervResult fit = fit_nerv(a.conditional, a.beta, prm, 5, *make_cpu_backend(2));

  std::vector<double> sorted = a.beta;
  std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
  const double median = sorted[sorted.size() / 2], sigma = 1.0 / std::sqrt(median);
  std::vector<double> beta = a.beta;
  for (double& b : beta) b /= median;
  std::vector<double> x = seeded_gaussian(70 * 2, 5, fit.init_scale);  // auto: 1 on the exact path
  const MatrixD logP = nerv_log_probabilities(a.conditional);
  MatrixD Y(70, 2), g;
  optim::CgOptions o;
  o.max_iter = prm.max_iter;
  o.ftol = prm.ftol;
  const optim::CgReport rep = optim::cg_minimize(
      [&](const std::vector<double>& xs, std::vector<double>& grad) {
        Y.data = xs;
        const double E = nerv_objective(a.conditional, logP, beta, Y, prm.lambda, &g, 2);
        grad = g.data;
        return E;
      },
      x, o);
  for (double& v : x) v *= sigma;
  EXPECT_EQ(fit.objective_trace, rep.trace);
  EXPECT_EQ(fit.evaluations, rep.evaluations);
  EXPECT_EQ(fit.coords.data, x);
  EXPECT_EQ(fit.arithmetic, "double");
}

// The engine's operations by their definitions: a trial point is x + t d with its cost and
// gradient as if evaluated there, dots are sums of products, accept_trial swaps.
TEST(Nerv, EngineOperationsFollowTheirDefinitions) {
  const MatrixD X = points(50, 3, 4);
  const AffinityResult a = affinities_sparse(X, 6.0);
  auto cpu = make_cpu_backend(2);
  for (NervPrecision prec : {NervPrecision::float32, NervPrecision::float64}) {
    SCOPED_TRACE(enum_name(prec));
    auto e = cpu->make_nerv(a.sparse_conditional, a.beta, NervOptions{0.4, 2, prec});
    const MatrixD Y = gaussian(50, 2, 8);
    e->set_coords(Y);
    const double E0 = e->evaluate(true);
    const MatrixD g0 = e->vector(NervVector::gradient);
    EXPECT_EQ(E0, e->evaluate(false)) << "the cost without the gradient";
    e->update_direction(0.0);
    const MatrixD d = e->vector(NervVector::direction);
    for (size_t q = 0; q < d.data.size(); ++q) ASSERT_EQ(d.data[q], -g0.data[q]);
    double gg = 0;
    for (double v : g0.data) gg += v * v;
    EXPECT_EQ(e->dot(NervVector::gradient, NervVector::gradient), gg);
    EXPECT_EQ(e->dot(NervVector::gradient, NervVector::direction), -gg);
    const double Et = e->evaluate_trial(0.01);
    MatrixD Yt = Y;
    for (size_t q = 0; q < Yt.data.size(); ++q) Yt.data[q] += 0.01 * d.data[q];
    EXPECT_EQ(e->vector(NervVector::trial).data, Yt.data);
    auto fresh = cpu->make_nerv(a.sparse_conditional, a.beta, NervOptions{0.4, 2, prec});
    fresh->set_coords(Yt);
    EXPECT_EQ(Et, fresh->evaluate(true));
    EXPECT_EQ(e->vector(NervVector::trial_gradient).data, fresh->vector(NervVector::gradient).data);
    EXPECT_LT(Et, E0) << "a small step down the gradient lowers the cost";
    e->accept_trial();
    EXPECT_EQ(e->vector(NervVector::x).data, Yt.data);
    EXPECT_EQ(e->vector(NervVector::trial).data, Y.data);
    EXPECT_EQ(e->vector(NervVector::trial_gradient).data, g0.data);
    e->update_direction(0.5);
    const MatrixD d2 = e->vector(NervVector::direction), g1 = e->vector(NervVector::gradient);
    for (size_t q = 0; q < d2.data.size(); ++q) ASSERT_EQ(d2.data[q], -g1.data[q] + 0.5 * d.data[q]);
  }
}
