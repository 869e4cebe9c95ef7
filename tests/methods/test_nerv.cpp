// NeRV: cost and gradient against finite differences for several lambda, lambda = 1 equals the
// SNE cost, and the CG fit lowers the cost and keeps neighbourhoods.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "orrery/affinity.hpp"
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

}  // namespace

TEST(Nerv, GradientMatchesFiniteDifferences) {
  const MatrixD X = points(25, 4, 1);
  const AffinityResult a = affinities_dense(X, 6.0);
  std::mt19937_64 rng(2);
  std::normal_distribution<double> z(0, 1);
  for (int D : {2, 3})
    for (double lambda : {0.0, 0.3, 0.7, 1.0}) {
      MatrixD Y(25, D), g;
      for (double& v : Y.data) v = z(rng);
      nerv_objective(a.conditional, a.beta, Y, lambda, &g, 2);
      const double h = 1e-6;
      for (size_t q = 0; q < Y.data.size(); q += 3) {
        MatrixD p = Y, m = Y;
        p.data[q] += h;
        m.data[q] -= h;
        const double fd = (nerv_objective(a.conditional, a.beta, p, lambda, nullptr) -
                           nerv_objective(a.conditional, a.beta, m, lambda, nullptr)) / (2 * h);
        EXPECT_NEAR(g.data[q], fd, 1e-6 * (1 + std::abs(fd))) << "lambda " << lambda << " D " << D << " entry " << q;
      }
    }
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
  const NervResult fit = fit_nerv(a.conditional, a.beta, prm, 3, 2);
  ASSERT_GE(fit.objective_trace.size(), 2u);
  for (size_t i = 1; i < fit.objective_trace.size(); ++i) EXPECT_LE(fit.objective_trace[i], fit.objective_trace[i - 1]);
  QualityRequest req;
  req.ks = {1};
  req.curve = false;
  EXPECT_GE(evaluate_quality(fit.coords, fit.coords, labels, req).homogeneity_1nn, 0.9);
  const NervResult again = fit_nerv(a.conditional, a.beta, prm, 3, 1);
  EXPECT_EQ(again.coords.data, fit.coords.data) << "same seed, any thread count: same bits";
}
