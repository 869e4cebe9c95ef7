// PCA by subspace iteration: uncorrelated components in decreasing variance, the planted main
// axis recovered, total variance kept when no dimension is dropped, deterministic output.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "common/distances.hpp"
#include "orrery/affinity.hpp"
#include "orrery/error.hpp"
#include "orrery/pca.hpp"

using namespace orrery;

namespace {

MatrixD planted(index_t n, unsigned seed) {
  // axis u = (1, 2, 2, 0, 0)/3 with standard deviation 5, then decreasing noise per coordinate
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0, 1);
  const double u[5] = {1 / 3.0, 2 / 3.0, 2 / 3.0, 0, 0};
  MatrixD X(n, 5);
  for (index_t i = 0; i < n; ++i) {
    const double t = 5 * z(rng);
    for (int c = 0; c < 5; ++c) X(i, c) = 10 + t * u[c] + (0.5 + 0.1 * c) * z(rng);
  }
  return X;
}

double covariance(const MatrixD& Y, int a, int b) {
  double ma = 0, mb = 0, s = 0;
  for (index_t i = 0; i < Y.rows; ++i) ma += Y(i, a) / Y.rows, mb += Y(i, b) / Y.rows;
  for (index_t i = 0; i < Y.rows; ++i) s += (Y(i, a) - ma) * (Y(i, b) - mb);
  return s / (Y.rows - 1);
}

}  // namespace

TEST(Pca, ComponentsAreUncorrelatedOrderedAndFindThePlantedAxis) {
  const MatrixD X = planted(2000, 1);
  const MatrixD Y = pca_project(X, 5);
  double total_x = 0, total_y = 0;
  for (int a = 0; a < 5; ++a) {
    total_x += covariance(X, a, a);
    total_y += covariance(Y, a, a);
    if (a > 0) {
      EXPECT_GE(covariance(Y, a - 1, a - 1), covariance(Y, a, a));
    }
    for (int b = 0; b < a; ++b) EXPECT_NEAR(covariance(Y, a, b), 0.0, 1e-8 * total_x) << a << "," << b;
  }
  EXPECT_NEAR(total_y, total_x, 1e-9 * total_x) << "an orthonormal basis keeps the total variance";
  // The first component is the projection on the planted axis (up to sampling noise).
  double cov = 0, vx = 0;
  for (index_t i = 0; i < X.rows; ++i) {
    const double t = (X(i, 0) - 10) / 3 + 2 * (X(i, 1) - 10) / 3 + 2 * (X(i, 2) - 10) / 3;
    cov += t * Y(i, 0);
    vx += t * t;
  }
  EXPECT_GT(std::abs(cov) / std::sqrt(vx * covariance(Y, 0, 0) * (X.rows - 1)), 0.99);
  EXPECT_EQ(pca_project(X, 2).data, pca_project(X, 2, 1).data) << "same output for any thread count";
  EXPECT_THROW(pca_project(X, 6), Error);
}

namespace {

// Rows whose sample covariance is exactly Q diag(lambda) Q' for a random orthogonal Q: centred
// Gaussian columns made orthonormal (Z'Z = I), scaled by sqrt((n - 1) lambda), rotated by Q'.
MatrixD with_spectrum(index_t n, const std::vector<double>& lambda, MatrixD& Q, unsigned seed) {
  const auto d = static_cast<index_t>(lambda.size());
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0, 1);
  // columns of A (n x d) and of Q (d x d), each orthonormalised against the earlier ones
  const auto orthonormal_columns = [&](index_t rows, bool centre) {
    MatrixD A(rows, d);
    for (double& v : A.data) v = z(rng);
    for (index_t c = 0; c < d; ++c) {
      if (centre) {
        double m = 0;
        for (index_t r = 0; r < rows; ++r) m += A(r, c) / rows;
        for (index_t r = 0; r < rows; ++r) A(r, c) -= m;
      }
      for (int pass = 0; pass < 2; ++pass)
        for (index_t e = 0; e < c; ++e) {
          double dot = 0;
          for (index_t r = 0; r < rows; ++r) dot += A(r, c) * A(r, e);
          for (index_t r = 0; r < rows; ++r) A(r, c) -= dot * A(r, e);
        }
      double nrm = 0;
      for (index_t r = 0; r < rows; ++r) nrm += A(r, c) * A(r, c);
      for (index_t r = 0; r < rows; ++r) A(r, c) /= std::sqrt(nrm);
    }
    return A;
  };
  const MatrixD Z = orthonormal_columns(n, true);
  Q = orthonormal_columns(d, false);
  MatrixD X(n, d, 0.0);
  for (index_t i = 0; i < n; ++i)
    for (index_t k = 0; k < d; ++k) {
      const double s = Z(i, k) * std::sqrt((n - 1) * lambda[static_cast<size_t>(k)]);
      for (index_t c = 0; c < d; ++c) X(i, c) += s * Q(c, k);
    }
  for (double& v : X.data) v += 3.0;
  return X;
}

}  // namespace

// Eigenvalues 2% apart across the cut (lambda_11 / lambda_10 = 0.98): iterating on the ten vectors
// asked for alone would need ~1,000 iterations to separate the tenth direction from the eleventh
// (100 left a 13% error on Fashion-MNIST's 50th component); the extra vectors settle it exactly.
TEST(Pca, RecoversClosePlantedEigenvaluesAndVectors) {
  std::vector<double> lambda;
  for (int k = 0; k < 40; ++k)
    lambda.push_back(k <= 12 ? 100 * std::pow(0.98, k) : 100 * std::pow(0.98, 12) * std::pow(0.6, k - 12));
  MatrixD Q;
  const MatrixD X = with_spectrum(1500, lambda, Q, 3);
  const PcaBasis basis = pca_fit(X, 10, 2);
  const MatrixD Y = pca_apply(basis, X, 2);
  for (int k = 0; k < 10; ++k) {
    EXPECT_NEAR(covariance(Y, k, k), lambda[static_cast<size_t>(k)], 1e-9 * lambda[0]) << "component " << k;
    double align = 0;
    for (index_t c = 0; c < X.cols; ++c) align += basis.components(c, k) * Q(c, k);
    EXPECT_GT(std::abs(align), 1 - 1e-9) << "component " << k;
  }
}

TEST(Affinity, FromDistancesEqualsFromVectors) {
  const MatrixD X = planted(60, 2);
  const MatrixD D = test::euclidean_distances(X);
  const AffinityResult a = affinities_dense(X, 10.0), b = affinities_from_distances(D, 10.0);
  for (size_t q = 0; q < a.dense.data.size(); ++q) EXPECT_NEAR(a.dense.data[q], b.dense.data[q], 1e-12);
  MatrixD bad = D;
  bad(3, 7) += 1.0;
  EXPECT_THROW(affinities_from_distances(bad, 10.0), Error);
  bad = D;
  bad(5, 5) = 0.1;
  EXPECT_THROW(affinities_from_distances(bad, 10.0), Error);
}
