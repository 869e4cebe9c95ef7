// The spectral start (params.init = spectral): the generalised eigenvectors W y = mu D y of the
// largest mu after the trivial one. Checked where the answer is known in closed form (a ring's
// vectors are a cosine and a sine: the start is a circle in ring order), by the eigen-equation's
// residual and D-orthogonality on a random graph, on two loosely joined groups (the first
// coordinate separates them), and for determinism across thread counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "orrery/affinity.hpp"
#include "orrery/error.hpp"
#include "orrery/pca.hpp"

using namespace orrery;

namespace {

// CSR from a dense matrix's nonzero off-diagonal entries
SparseAffinity csr(const MatrixD& W) {
  SparseAffinity S;
  S.num_points = W.rows;
  S.row_ptr.push_back(0);
  for (index_t i = 0; i < W.rows; ++i) {
    for (index_t j = 0; j < W.cols; ++j)
      if (i != j && W(i, j) != 0) {
        S.col.push_back(j);
        S.val.push_back(W(i, j));
      }
    S.row_ptr.push_back(static_cast<index_t>(S.col.size()));
  }
  return S;
}

// (P + P') / 2 densely, as spectral_start reads P
MatrixD symmetrised(const MatrixD& P) {
  MatrixD W(P.rows, P.cols, 0.0);
  for (index_t i = 0; i < P.rows; ++i)
    for (index_t j = 0; j < P.cols; ++j) W(i, j) = 0.5 * (P(i, j) + P(j, i));
  return W;
}

}  // namespace

TEST(SpectralStart, ARingBecomesACircleInRingOrder) {
  const index_t n = 60;
  MatrixD W(n, n, 0.0);
  for (index_t i = 0; i < n; ++i)
    for (index_t s : {1, 2}) {
      W(i, (i + s) % n) = W((i + s) % n, i) = s == 1 ? 1.0 : 0.4;
    }
  const MatrixD Y = spectral_start(csr(W), 2, 2);
  ASSERT_EQ(Y.rows, n);
  ASSERT_EQ(Y.cols, 2);
  // mu = (cos(2 pi / n) + 0.4 cos(4 pi / n)) / 1.4, twice: any rotation of (cos, sin) is an answer,
  // so the test reads the radius and the order of the angles, which every rotation keeps
  const double r0 = std::hypot(Y(0, 0), Y(0, 1));
  ASSERT_GT(r0, 0);
  for (index_t i = 0; i < n; ++i) EXPECT_NEAR(std::hypot(Y(i, 0), Y(i, 1)) / r0, 1.0, 1e-5) << "point " << i;
  int forward = 0, backward = 0;
  for (index_t i = 0; i < n; ++i) {
    const index_t j = (i + 1) % n;
    const double cross = Y(i, 0) * Y(j, 1) - Y(i, 1) * Y(j, 0), dot = Y(i, 0) * Y(j, 0) + Y(i, 1) * Y(j, 1);
    const double step = std::atan2(cross, dot);
    EXPECT_NEAR(std::abs(step), 2 * M_PI / static_cast<double>(n), 1e-4) << "between points " << i << " and " << j;
    (step > 0 ? forward : backward)++;
  }
  EXPECT_TRUE(forward == n || backward == n) << forward << " steps one way, " << backward << " the other";
}

TEST(SpectralStart, SolvesTheGeneralisedEigenproblemOfAKnnGraph) {
  // conditional kNN rows of random points (not symmetric, as NeRV's are): W = (P + P') / 2
  std::mt19937_64 rng(3);
  std::normal_distribution<double> z(0.0, 1.0);
  const index_t n = 150;
  MatrixD X(n, 3);
  for (double& v : X.data) v = z(rng);
  const AffinityResult a = affinities_sparse(X, 8.0, 2);
  const SparseAffinity& P = a.sparse_conditional;
  MatrixD Pd(n, n, 0.0);
  for (index_t i = 0; i < n; ++i)
    for (index_t q = P.row_ptr[i]; q < P.row_ptr[i + 1]; ++q) Pd(i, P.col[q]) = P.val[q];
  const MatrixD W = symmetrised(Pd);
  std::vector<double> d(static_cast<size_t>(n), 0.0);
  for (index_t i = 0; i < n; ++i)
    for (index_t j = 0; j < n; ++j) d[i] += W(i, j);
  for (int dims : {2, 3}) {
    const MatrixD Y = spectral_start(P, dims, 2);
    double prev_mu = 2.0;
    for (int k = 0; k < dims; ++k) {
      std::vector<double> Wy(static_cast<size_t>(n), 0.0);
      double yWy = 0, yDy = 0, dy = 0, dnorm = 0;
      for (index_t i = 0; i < n; ++i) {
        for (index_t j = 0; j < n; ++j) Wy[i] += W(i, j) * Y(j, k);
        yWy += Y(i, k) * Wy[i];
        yDy += Y(i, k) * d[i] * Y(i, k);
        dy += d[i] * Y(i, k);
        dnorm += d[i] * d[i] * Y(i, k) * Y(i, k);
      }
      const double mu = yWy / yDy;
      double res = 0;
      for (index_t i = 0; i < n; ++i) res += (Wy[i] - mu * d[i] * Y(i, k)) * (Wy[i] - mu * d[i] * Y(i, k));
      EXPECT_LT(std::sqrt(res / dnorm), 1e-4) << "vector " << k << " of " << dims << ": W y != mu D y";
      EXPECT_LT(std::abs(dy) / std::sqrt(dnorm * static_cast<double>(n)), 1e-8) << "vector " << k << " is not D-orthogonal to 1";
      EXPECT_LT(mu, 1.0);
      EXPECT_LE(mu, prev_mu + 1e-9) << "vectors out of order";
      prev_mu = mu;
      for (int l = 0; l < k; ++l) {  // D-orthogonal to one another
        double c = 0, nl = 0;
        for (index_t i = 0; i < n; ++i) c += Y(i, k) * d[i] * Y(i, l), nl += Y(i, l) * d[i] * Y(i, l);
        EXPECT_LT(std::abs(c) / std::sqrt(yDy * nl), 1e-6);
      }
    }
  }
  // the same bits on one thread and on two, and twice
  const MatrixD one = spectral_start(P, 2, 1), two = spectral_start(P, 2, 2);
  EXPECT_EQ(one.data, two.data);
  EXPECT_EQ(spectral_start(P, 2, 2).data, two.data);
}

TEST(SpectralStart, SeparatesTwoLooselyJoinedGroupsAlongItsFirstCoordinate) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(0.5, 1.0);
  const index_t n = 80;
  MatrixD W(n, n, 0.0);
  for (index_t i = 0; i < n; ++i)
    for (index_t j = i + 1; j < n; ++j)
      if ((i < 40) == (j < 40) && u(rng) > 0.8) W(i, j) = W(j, i) = u(rng);
  for (index_t i = 0; i < n; ++i) W(i, (i + 1) % n) = W((i + 1) % n, i) = 0.6;  // joins 39-40 and 79-0
  W(39, 40) = W(40, 39) = W(79, 0) = W(0, 79) = 0.01;
  const MatrixD Y = spectral_start(csr(W), 2, 2);
  const bool first_positive = Y(0, 0) > 0;
  for (index_t i = 0; i < n; ++i) EXPECT_EQ(Y(i, 0) > 0, (i < 40) == first_positive) << "point " << i;
}

TEST(SpectralStart, DenseRowsKeepTheirLargestEntriesAndIsolatedPointsAreRefused) {
  MatrixD P(4, 4, 0.0);
  P(0, 1) = 0.5, P(0, 2) = 0.3, P(0, 3) = 0.3;  // a tie: the lower column is kept
  P(1, 0) = 0.9, P(1, 3) = 0.1;
  P(2, 3) = 1.0;
  P(3, 0) = 0.2, P(3, 1) = 0.2, P(3, 2) = 0.6;
  const SparseAffinity S = largest_entries(P, 2);
  EXPECT_EQ(S.row_ptr, (std::vector<index_t>{0, 2, 4, 5, 7}));
  EXPECT_EQ(S.col, (std::vector<index_t>{1, 2, 0, 3, 3, 0, 2}));
  EXPECT_EQ(S.val, (std::vector<double>{0.5, 0.3, 0.9, 0.1, 1.0, 0.2, 0.6}));

  MatrixD lone(5, 5, 0.0);
  for (index_t i = 0; i < 4; ++i) lone(i, (i + 1) % 4) = lone((i + 1) % 4, i) = 1.0;
  try {
    spectral_start(csr(lone), 2, 1);
    ADD_FAILURE() << "a point without affinities got a place";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("params.init: spectral: point 5"), std::string::npos) << e.what();
  }
}
