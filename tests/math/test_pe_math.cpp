// PE's per-object arithmetic against central finite differences and its own invariants.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "common/gradient_check.hpp"
#include "orrery/math/pe.hpp"

using namespace orrery::math;

namespace {

struct Case {
  int K;
  std::vector<double> p, log_prior, phi;
};

Case make_case(int K, int D, unsigned seed, double spread = 2.0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0.0, 1.0);
  std::uniform_real_distribution<double> u(0.05, 1.0);
  Case c{K, std::vector<double>(K), std::vector<double>(K), std::vector<double>(K * D)};
  double sp = 0, spr = 0;
  for (int k = 0; k < K; ++k) {
    c.p[k] = u(rng) * u(rng);
    sp += c.p[k];
    c.log_prior[k] = u(rng);
    spr += c.log_prior[k];
  }
  for (int k = 0; k < K; ++k) {
    c.p[k] /= sp;
    c.log_prior[k] = std::log(c.log_prior[k] / spr);
  }
  for (double& v : c.phi) v = spread * z(rng);
  return c;
}

// With q scratch (the CPU's path: vectorised K loops, math/exp.hpp's exp) or without (the GPU's).
template <int D>
double eval(const Case& c, const double* r, double eta, double* g, double* H, bool scratch) {
  std::vector<double> q(scratch ? c.K : 0);
  return pe_object_eval<double, D>(c.p.data(), c.log_prior.data(), c.phi.data(), c.K, r, eta, g, H, nullptr,
                                   scratch ? q.data() : nullptr);
}

template <int D>
double J(const Case& c, const double* r, double eta, bool scratch = false) {
  return eval<D>(c, r, eta, nullptr, nullptr, scratch);
}

// Direct evaluation of -sum P log q + eta |r|^2 with a naive softmax, for small exponents.
template <int D>
double J_naive(const Case& c, const double* r, double eta) {
  std::vector<double> w(c.K);
  double s = 0;
  for (int k = 0; k < c.K; ++k) {
    double d2 = 0;
    for (int d = 0; d < D; ++d) d2 += (r[d] - c.phi[k * D + d]) * (r[d] - c.phi[k * D + d]);
    w[k] = std::exp(c.log_prior[k] - 0.5 * d2);
    s += w[k];
  }
  double out = 0, r2 = 0;
  for (int k = 0; k < c.K; ++k) out -= c.p[k] * std::log(w[k] / s);
  for (int d = 0; d < D; ++d) r2 += r[d] * r[d];
  return out + eta * r2;
}

template <int D>
void check_derivatives(int K, unsigned seed, double eta, bool scratch = false) {
  const Case c = make_case(K, D, seed);
  std::mt19937_64 rng(seed + 100);
  std::normal_distribution<double> z(0.0, 1.5);
  double r[D];
  for (double& v : r) v = z(rng);
  double g[D], H[D * D];
  const double f = eval<D>(c, r, eta, g, H, scratch);
  EXPECT_NEAR(f, J_naive<D>(c, r, eta), 1e-10 * (1 + std::abs(f)));
  const std::vector<double> x(r, r + D);
  const std::string where = " K=" + std::to_string(K) + " D=" + std::to_string(D) + (scratch ? " scratch" : "");
  orrery::test::FdOptions o{1e-5, 1e-6, 1, "gradient" + where};
  EXPECT_TRUE(orrery::test::gradient_matches([&](const std::vector<double>& y) { return J<D>(c, y.data(), eta, scratch); },
                                             x, std::vector<double>(g, g + D), o));
  // Row b of the Hessian is the gradient of the gradient's component b.
  for (int b = 0; b < D; ++b) {
    o.what = "Hessian row " + std::to_string(b) + where;
    const auto g_b = [&](const std::vector<double>& y) {
      double gy[D];
      eval<D>(c, y.data(), eta, gy, nullptr, scratch);
      return gy[b];
    };
    EXPECT_TRUE(orrery::test::gradient_matches(g_b, x, std::vector<double>(H + b * D, H + (b + 1) * D), o));
  }
}

// Both paths give one J, gradient and Hessian to rounding.
template <int D>
void check_paths_agree(int K, unsigned seed) {
  const Case c = make_case(K, D, seed, 3.0);
  double r[D];
  for (int d = 0; d < D; ++d) r[d] = 0.7 * d - 1.1;
  double g1[D], g2[D], H1[D * D], H2[D * D];
  const double a = eval<D>(c, r, 0.1, g1, H1, false), b = eval<D>(c, r, 0.1, g2, H2, true);
  EXPECT_NEAR(a, b, 1e-13 * (1 + std::abs(a))) << "K=" << K << " D=" << D;
  for (int d = 0; d < D; ++d) EXPECT_NEAR(g1[d], g2[d], 1e-12) << "K=" << K << " D=" << D;
  for (int i = 0; i < D * D; ++i) EXPECT_NEAR(H1[i], H2[i], 1e-12) << "K=" << K << " D=" << D;
}

}  // namespace

TEST(PeMath, DerivativesMatchFiniteDifferences2D) {
  for (unsigned s = 0; s < 5; ++s) check_derivatives<2>(2 + 3 * s, s, 0.1);
}
TEST(PeMath, DerivativesMatchFiniteDifferences3D) {
  for (unsigned s = 0; s < 5; ++s) check_derivatives<3>(3 + 4 * s, 10 + s, 0.05);
}

TEST(PeMath, VectorisedScratchPathMatchesFiniteDifferencesAndTheOtherPath) {
  // K not a multiple of any SIMD width, so the loops' remainders run too
  for (unsigned s = 0; s < 4; ++s) {
    check_derivatives<2>(2 + 7 * s, 20 + s, 0.1, true);
    check_derivatives<3>(3 + 9 * s, 30 + s, 0.05, true);
    check_paths_agree<2>(5 + 17 * s, 40 + s);
    check_paths_agree<3>(5 + 17 * s, 50 + s);
  }
}

TEST(PeMath, GradientEqualsMathMdFormWhenRowSumsToOne) {
  // MATH.md: dJ/dr = sum_k (q_k - P_k) phi_k + 2 eta r when sum_k P_k = 1.
  const int D = 2, K = 6;
  const Case c = make_case(K, D, 7);
  const double r[2] = {0.4, -1.1}, eta = 0.1;
  double g[2], lse;
  pe_object_eval<double, D>(c.p.data(), c.log_prior.data(), c.phi.data(), K, r, eta, g, nullptr, &lse);
  for (int d = 0; d < D; ++d) {
    double expect = 2 * eta * r[d];
    for (int k = 0; k < K; ++k) {
      const double q = std::exp(pe_exponent<double, D>(c.log_prior[k], &c.phi[k * D], r) - lse);
      expect += (q - c.p[k]) * c.phi[k * D + d];
    }
    EXPECT_NEAR(g[d], expect, 1e-12);
  }
}

TEST(PeMath, HessianIsPositiveDefinite) {
  const Case c = make_case(9, 3, 3);
  const double r[3] = {0.2, 0.1, -0.3};
  double H[9];
  pe_object_eval<double, 3>(c.p.data(), c.log_prior.data(), c.phi.data(), 9, r, 0.1, nullptr, H);
  // Sylvester: leading minors positive
  EXPECT_GT(H[0], 0);
  EXPECT_GT(H[0] * H[4] - H[1] * H[3], 0);
  const double det = H[0] * (H[4] * H[8] - H[5] * H[7]) - H[1] * (H[3] * H[8] - H[5] * H[6]) +
                     H[2] * (H[3] * H[7] - H[4] * H[6]);
  EXPECT_GT(det, 0);
}

TEST(PeMath, VeryDistantObjectsStayFinite) {
  const int D = 2, K = 5;
  Case c = make_case(K, D, 4);
  for (double scale : {1e3, 1e6, 1e9}) {
    const double r[2] = {scale, -scale};
    double g[2], H[4];
    const double f = pe_object_eval<double, D>(c.p.data(), c.log_prior.data(), c.phi.data(), K, r, 0.1, g, H);
    EXPECT_TRUE(std::isfinite(f)) << scale;
    for (double v : g) EXPECT_TRUE(std::isfinite(v)) << scale;
    for (double v : H) EXPECT_TRUE(std::isfinite(v)) << scale;
    float rf[2] = {static_cast<float>(scale / 1e3), static_cast<float>(-scale / 1e3)};  // float: 1e6 max
    std::vector<float> pf(c.p.begin(), c.p.end()), lf(c.log_prior.begin(), c.log_prior.end()),
        phf(c.phi.begin(), c.phi.end());
    float gf[2], Hf[4];
    const float ff = pe_object_eval<float, D>(pf.data(), lf.data(), phf.data(), K, rf, 0.1f, gf, Hf);
    EXPECT_TRUE(std::isfinite(ff)) << scale;
  }
  // Newton from a distant start comes back and converges.
  double r[2] = {1e4, 3e3};
  const auto res = pe_newton_object<double, D>(c.p.data(), c.log_prior.data(), c.phi.data(), K, r, 0.1, 1e-12, 200);
  EXPECT_TRUE(res.converged) << "grad_sq " << res.grad_sq;
  EXPECT_LT(std::abs(r[0]) + std::abs(r[1]), 50.0);
}

TEST(PeMath, NewtonReachesStationaryPointAndLowersObjective) {
  for (unsigned s = 0; s < 10; ++s) {
    const int D = 3, K = 4 + static_cast<int>(s);
    const Case c = make_case(K, D, 20 + s);
    double r[3] = {1.0, -2.0, 0.5};
    const double f0 = J<D>(c, r, 0.1);
    const auto res = pe_newton_object<double, D>(c.p.data(), c.log_prior.data(), c.phi.data(), K, r, 0.1, 1e-14, 50);
    ASSERT_TRUE(res.converged) << "seed " << s << " grad_sq " << res.grad_sq;
    EXPECT_LE(res.objective, f0);
    EXPECT_NEAR(res.objective, J<D>(c, r, 0.1), 1e-12);
    EXPECT_LE(res.iterations, 20) << "Newton should converge quadratically";
    // A second call from the solution takes no step and leaves r unchanged.
    double r2[3] = {r[0], r[1], r[2]};
    const auto again = pe_newton_object<double, D>(c.p.data(), c.log_prior.data(), c.phi.data(), K, r2, 0.1, 1e-14, 50);
    EXPECT_EQ(again.iterations, 0);
    for (int d = 0; d < D; ++d) EXPECT_EQ(r2[d], r[d]);
  }
}

TEST(PeMath, ClassForceSumsToClassGradient) {
  // sum_n pe_class_force over objects = d/dphi sum_n J_n at fixed R (central differences).
  const int D = 2, K = 5, N = 7;
  Case c = make_case(K, D, 9);
  std::mt19937_64 rng(5);
  std::normal_distribution<double> z(0.0, 1.0);
  std::vector<std::vector<double>> P(N), R(N, std::vector<double>(D));
  for (int n = 0; n < N; ++n) {
    P[n] = make_case(K, D, 50 + n).p;
    for (double& v : R[n]) v = z(rng);
  }
  auto total = [&](const std::vector<double>& phi) {
    double s = 0;
    for (int n = 0; n < N; ++n)
      s += pe_object_eval<double, D>(P[n].data(), c.log_prior.data(), phi.data(), K, R[n].data(), 0.1, nullptr,
                                     nullptr);
    return s;
  };
  std::vector<double> grad(K * D, 0.0);
  for (int n = 0; n < N; ++n) {
    double lse;
    pe_object_eval<double, D>(P[n].data(), c.log_prior.data(), c.phi.data(), K, R[n].data(), 0.1, nullptr, nullptr,
                              &lse);
    for (int k = 0; k < K; ++k) {
      double f[D];
      pe_class_force<double, D>(P[n][k], c.log_prior[k], &c.phi[k * D], R[n].data(), lse, f);
      for (int d = 0; d < D; ++d) grad[k * D + d] += f[d];
    }
  }
  EXPECT_TRUE(orrery::test::gradient_matches(total, c.phi, grad, {1e-5, 1e-6, 1, "class coordinates"}));
}

TEST(PeMath, ScratchPathEqualsRecomputingPath) {
  // The CPU keeps q_k in scratch; the GPU recomputes exponentials. Both must give the same
  // objective, gradient, r and class forces.
  const int D = 2, K = 11;
  const Case c = make_case(K, D, 31);
  double r1[2] = {2.0, -1.0}, r2[2] = {2.0, -1.0};
  std::vector<double> scratch(2 * K);
  const auto a = pe_newton_object<double, D>(c.p.data(), c.log_prior.data(), c.phi.data(), K, r1, 0.1, 1e-12, 50);
  const auto b = pe_newton_object<double, D>(c.p.data(), c.log_prior.data(), c.phi.data(), K, r2, 0.1, 1e-12, 50,
                                             scratch.data());
  EXPECT_EQ(a.iterations, b.iterations);
  EXPECT_NEAR(a.objective, b.objective, 1e-13);
  for (int d = 0; d < D; ++d) EXPECT_NEAR(r1[d], r2[d], 1e-13);
  ASSERT_NE(b.q, nullptr);
  std::vector<double> from_q(K * D, 0.0);
  pe_class_forces_from_q<double, D>(c.p.data(), b.q, c.phi.data(), K, r2, from_q.data());
  double qsum = 0;
  for (int k = 0; k < K; ++k) {
    double f[D];
    pe_class_force<double, D>(c.p[k], c.log_prior[k], &c.phi[k * D], r1, a.lse, f);
    for (int d = 0; d < D; ++d) EXPECT_NEAR(from_q[k * D + d], f[d], 1e-12) << "class " << k;
    qsum += b.q[k];
  }
  EXPECT_NEAR(qsum, 1.0, 1e-14);
}

TEST(PeMath, FloatNewtonConvergesLikeDouble) {
  // The CUDA kernels run pe_newton_object in float. Near the solution the Armijo test on J cannot
  // see decreases below J's round-off; the solver must still reach eps_r = 1e-8 (|g| < 1e-4),
  // as the double path does, and land at the same r.
  std::mt19937_64 rng(77);
  std::normal_distribution<double> z(0.0, 1.0);
  int unconverged = 0;
  double worst = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int K = 2 + trial % 40, D = 2;
    const Case c = make_case(K, D, 1000 + trial, 2.5);
    std::vector<float> pf(c.p.begin(), c.p.end()), lf(c.log_prior.begin(), c.log_prior.end()),
        phf(c.phi.begin(), c.phi.end());
    double rd[2] = {2 * z(rng), 2 * z(rng)};
    float rf[2] = {static_cast<float>(rd[0]), static_cast<float>(rd[1])};
    const auto a = pe_newton_object<double, D>(c.p.data(), c.log_prior.data(), c.phi.data(), K, rd, 0.1, 1e-8, 50);
    const auto b = pe_newton_object<float, D>(pf.data(), lf.data(), phf.data(), K, rf, 0.1f, 1e-8f, 50);
    ASSERT_TRUE(a.converged) << "trial " << trial;
    unconverged += b.converged ? 0 : 1;
    for (int d = 0; d < D; ++d) worst = std::max(worst, std::abs(rf[d] - rd[d]));
  }
  EXPECT_EQ(unconverged, 0);
  EXPECT_LT(worst, 2e-3);
}
