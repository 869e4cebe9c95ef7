// Input affinities: calibrated entropies, symmetry and normalisation, sparse = dense when the
// neighbour lists cover every point, and the input errors the neighbour-embedding runs rely on.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "orrery/affinity.hpp"
#include "orrery/error.hpp"
#include "orrery/math/affinity.hpp"

using namespace orrery;

namespace {

MatrixD gaussian_points(index_t n, index_t d, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0, 1);
  MatrixD X(n, d);
  for (double& v : X.data) v = z(rng) * (1 + (rng() % 3));
  return X;
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    return e.what();
  }
  ADD_FAILURE() << "expected an input error";
  return "";
}

}  // namespace

TEST(Bandwidth, HitsTargetEntropyWithinTolerance) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (double scale : {1e-4, 1.0, 1e4}) {
    std::vector<double> d2(200);
    for (double& v : d2) v = scale * u(rng) * u(rng) * 50;
    for (double perp : {2.0, 10.0, 60.0}) {
      const double beta = math::bandwidth_for_perplexity<double, int>(d2.data(), 200, 7, perp, 1e-10, 200);
      double lz, sh;
      const double h = math::row_entropy<double, int>(d2.data(), 200, 7, beta, &lz, &sh);
      EXPECT_NEAR(h, std::log(perp), 1e-6) << "scale " << scale << " perplexity " << perp;
    }
  }
}

TEST(Affinity, DenseIsSymmetricNormalisedWithZeroDiagonal) {
  const MatrixD X = gaussian_points(120, 5, 1);
  const AffinityResult a = affinities_dense(X, 15.0, 2);
  double total = 0;
  for (index_t i = 0; i < 120; ++i) {
    EXPECT_EQ(a.dense(i, i), 0.0);
    for (index_t j = 0; j < 120; ++j) {
      EXPECT_EQ(a.dense(i, j), a.dense(j, i));
      EXPECT_GE(a.dense(i, j), 0.0);
      total += a.dense(i, j);
    }
  }
  EXPECT_NEAR(total, 1.0, 1e-12);
}

TEST(Affinity, SparseEqualsDenseWhenNeighbourListsCoverAllPoints) {
  const MatrixD X = gaussian_points(31, 4, 2);  // k = ceil(3 * 10) = 30 = N - 1
  const AffinityResult d = affinities_dense(X, 10.0, 1), s = affinities_sparse(X, 10.0, 3);
  for (index_t i = 0; i < 31; ++i) {
    EXPECT_NEAR(s.beta[i], d.beta[i], 1e-9 * d.beta[i]);
    for (index_t j = 0; j < 31; ++j) EXPECT_NEAR(s.sparse.at(i, j), d.dense(i, j), 1e-12) << i << "," << j;
  }
}

TEST(Affinity, SparseIsSymmetricAndSumsToOne) {
  const MatrixD X = gaussian_points(400, 6, 4);
  const AffinityResult s = affinities_sparse(X, 20.0, 2);
  double total = 0;
  for (index_t i = 0; i < 400; ++i)
    for (index_t p = s.sparse.row_ptr[i]; p < s.sparse.row_ptr[i + 1]; ++p) {
      const index_t j = s.sparse.col[p];
      EXPECT_NE(i, j);
      EXPECT_DOUBLE_EQ(s.sparse.val[p], s.sparse.at(j, i));
      total += s.sparse.val[p];
    }
  EXPECT_NEAR(total, 1.0, 1e-12);
}

TEST(Affinity, BadInputNamesTheProblem) {
  MatrixD X = gaussian_points(30, 3, 5);
  EXPECT_NE(message_of([&] { affinities_dense(X, 40.0); }).find("N - 1 = 29"), std::string::npos);
  EXPECT_NE(message_of([&] { affinities_sparse(X, 12.0); }).find("perplexity"), std::string::npos);
  MatrixD dup = X;
  for (index_t c = 0; c < 3; ++c) dup(17, c) = dup(4, c);
  EXPECT_NE(message_of([&] { affinities_dense(dup, 5.0); }).find("rows 5 and 18"), std::string::npos);
  EXPECT_NE(message_of([&] { affinities_sparse(dup, 5.0); }).find("rows 5 and 18"), std::string::npos);
  MatrixD nan = X;
  nan(9, 2) = std::nan("");
  EXPECT_NE(message_of([&] { affinities_dense(nan, 5.0); }).find("row 10, column 3"), std::string::npos);
}

TEST(AffinityEntries, SymmetrisedScaledAndChecked) {
  using orrery::index_t;
  // a directed graph with a repeated entry: (A + A') / 2, scaled to sum 1
  const std::vector<index_t> r = {0, 1, 2, 0}, c = {1, 2, 0, 1};
  const std::vector<double> v = {1.0, 2.0, 3.0, 1.0};
  const orrery::SparseAffinity P = orrery::affinities_from_entries(3, 3, r, c, v, "test");
  const double total = 7.0;
  EXPECT_DOUBLE_EQ(P.at(0, 1), 0.5 * 2.0 / total);
  EXPECT_DOUBLE_EQ(P.at(1, 0), 0.5 * 2.0 / total);
  EXPECT_DOUBLE_EQ(P.at(1, 2), 0.5 * 2.0 / total);
  EXPECT_DOUBLE_EQ(P.at(0, 2), 0.5 * 3.0 / total);
  double sum = 0;
  for (double x : P.val) sum += x;
  EXPECT_NEAR(sum, 1.0, 1e-15);
  EXPECT_THROW(orrery::affinities_from_entries(3, 4, r, c, v, "test"), orrery::Error);
  EXPECT_THROW(orrery::affinities_from_entries(3, 3, {0}, {0}, {1.0}, "test"), orrery::Error);
  EXPECT_THROW(orrery::affinities_from_entries(3, 3, {0}, {1}, {-1.0}, "test"), orrery::Error);
}
