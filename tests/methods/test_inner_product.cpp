// input.metric inner_product (orrery/inner_product.hpp): the paired Euclidean searches between the
// queries [x, 0] and the references [x, sqrt(M^2 - |x|^2)] list each point's largest inner
// products (checked against a brute-force loop), the approximate search finds them, the affinities
// are exponential in the inner product, and the quality measures rank the input by it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "common/input_error.hpp"
#include "orrery/affinity.hpp"
#include "orrery/backend.hpp"
#include "orrery/inner_product.hpp"
#include "orrery/knn.hpp"
#include "orrery/quality.hpp"

using namespace orrery;

namespace {

// Gaussian points whose rows have lengths spread over [0.2, 3]: a point is then often not its own
// largest inner product, which a search of the rows among themselves would assume.
MatrixD spread_points(index_t n, index_t d, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0.0, 1.0);
  std::uniform_real_distribution<double> len(0.2, 3.0);
  MatrixD X(n, d);
  for (index_t i = 0; i < n; ++i) {
    const double s = len(rng);
    for (index_t c = 0; c < d; ++c) X(i, c) = s * z(rng);
  }
  return X;
}

double dot(const MatrixD& A, index_t i, const MatrixD& B, index_t j) {
  double s = 0;
  for (index_t c = 0; c < A.cols; ++c) s += A(i, c) * B(j, c);
  return s;
}
double dot(const MatrixD& X, index_t i, index_t j) { return dot(X, i, X, j); }

// Point i's k largest inner products, itself excluded, ties by lower index: a brute-force loop.
std::vector<index_t> top_inner_products(const MatrixD& X, index_t i, int k) {
  std::vector<index_t> order;
  for (index_t j = 0; j < X.rows; ++j)
    if (j != i) order.push_back(j);
  std::stable_sort(order.begin(), order.end(), [&](index_t a, index_t b) { return dot(X, i, a) > dot(X, i, b); });
  order.resize(static_cast<size_t>(k));
  return order;
}

}  // namespace

TEST(InnerProduct, ExactNeighborsAreTheLargestInnerProducts) {
  const MatrixD X = spread_points(300, 5, 1);
  const int k = 12;
  const MatrixD R = inner_product_references(X), Q = inner_product_queries(X);
  ASSERT_EQ(R.cols, 6);
  double M2 = 0;
  for (index_t i = 0; i < X.rows; ++i) M2 = std::max(M2, dot(X, i, i));
  const KnnGraph g = exact_knn_paired(R, Q, k, 2);
  index_t not_own_nearest = 0;
  for (index_t i = 0; i < X.rows; ++i) {
    const std::vector<index_t> want = top_inner_products(X, i, k);
    for (int l = 0; l < k; ++l) {
      ASSERT_EQ(g.neighbors(i)[l], want[static_cast<size_t>(l)]) << "point " << i << ", neighbor " << l;
      // the squared distance is the query's constant minus twice the inner product
      const double d2 = dot(X, i, i) + M2 - 2.0 * dot(X, i, want[static_cast<size_t>(l)]);
      EXPECT_NEAR(g.distances2(i)[l], d2, 1e-12 * (M2 + dot(X, i, i)));
    }
    not_own_nearest += dot(X, i, want[0]) > dot(X, i, i);
  }
  EXPECT_GT(not_own_nearest, 30) << "points whose largest inner product is another point's";
  // the queries may be of any length: the placement's new points against the same references
  MatrixD far = spread_points(40, 5, 2);
  for (double& v : far.data) v *= 4.0;  // longer than every reference
  const KnnGraph h = exact_knn_to(R, inner_product_queries(far), k, 2);
  for (index_t i = 0; i < far.rows; ++i) {
    std::vector<index_t> order(static_cast<size_t>(X.rows));
    std::iota(order.begin(), order.end(), index_t(0));
    std::stable_sort(order.begin(), order.end(),
                     [&](index_t a, index_t b) { return dot(far, i, X, a) > dot(far, i, X, b); });
    for (int l = 0; l < k; ++l) ASSERT_EQ(h.neighbors(i)[l], order[static_cast<size_t>(l)]) << "new point " << i;
  }
}

TEST(InnerProduct, ApproximateSearchFindsTheLargestInnerProducts) {
  const MatrixD X = spread_points(3000, 12, 3);
  const int k = 30;
  const MatrixD R = inner_product_references(X), Q = inner_product_queries(X);
  const KnnGraph exact = exact_knn_paired(R, Q, k, 2);
  const KnnGraph approx = approximate_knn_paired(R, Q, k, 7, 2);
  index_t found = 0;
  for (index_t i = 0; i < X.rows; ++i) {
    const index_t* e = exact.neighbors(i);
    for (int l = 0; l < k; ++l) {
      ASSERT_NE(approx.neighbors(i)[l], i) << "a point listed as its own neighbor";
      found += std::find(e, e + k, approx.neighbors(i)[l]) != e + k;
    }
  }
  const double recall = static_cast<double>(found) / (static_cast<double>(X.rows) * k);
  EXPECT_GE(recall, 0.9);
  // the estimate on every point is that count (no ties among random inner products)
  const KnnRecall r = estimate_knn_recall_paired(R, Q, approx, X.rows, 5, 2);
  EXPECT_EQ(r.sample, X.rows);
  EXPECT_NEAR(r.recall, recall, 1e-12);
  EXPECT_GE(estimate_knn_recall_paired(R, Q, approx, 500, 5, 2).recall, 0.9);
}

// p_{j|i} = exp(2 beta_i <x_i, x_j>) / Z_i: the log-ratio of two entries of a row is 2 beta_i times
// the difference of their inner products; with every pair listed, sparse equals dense.
TEST(InnerProduct, AffinitiesAreExponentialInTheInnerProduct) {
  const MatrixD X = spread_points(40, 4, 4);
  const double perplexity = 8.0;
  const MatrixD R = inner_product_references(X), Q = inner_product_queries(X);
  const AffinityResult dense = affinities_dense_paired(R, Q, perplexity, 2);
  for (index_t i = 0; i < X.rows; ++i) {
    const index_t a = (i + 1) % X.rows, b = (i + 7) % X.rows;
    const double beta = dense.beta[static_cast<size_t>(i)];
    EXPECT_NEAR(std::log(dense.conditional(i, a) / dense.conditional(i, b)),
                2.0 * beta * (dot(X, i, a) - dot(X, i, b)), 1e-9)
        << "row " << i;
  }
  const AffinityResult sparse = affinities_from_knn(exact_knn_paired(R, Q, static_cast<int>(X.rows) - 1, 2), 8.0, 2);
  for (index_t i = 0; i < X.rows; ++i)
    for (index_t j = 0; j < X.rows; ++j) EXPECT_NEAR(sparse.sparse.at(i, j), dense.dense(i, j), 1e-12);
  // every row zero: no point is nearer than another, an error naming the setting
  const std::string e = test::input_error_of([] { inner_product_references(MatrixD(5, 3, 0.0)); });
  EXPECT_NE(e.find("input.metric: inner_product: every row"), std::string::npos) << e;
}

// The quality measures' input ranks: rho(i, j) = 1 + the points (not i) of larger inner product
// with x_i (no ties among random ones), on all points and on a subsample of queries.
TEST(InnerProduct, QualityRanksTheInputByInnerProduct) {
  const MatrixD X = spread_points(250, 6, 5), Y = spread_points(250, 2, 6);
  const auto cpu = make_cpu_backend(2);
  const int kmax = 10;
  const MatrixD R = inner_product_references(X);
  for (const std::vector<index_t>& queries : {std::vector<index_t>{}, std::vector<index_t>{0, 17, 99, 249}}) {
    const RankRows rows = cpu->rank_rows(R, Y, kmax, RankInput::inner_product, queries);
    const index_t count = queries.empty() ? X.rows : static_cast<index_t>(queries.size());
    for (index_t r = 0; r < count; ++r) {
      const index_t i = queries.empty() ? r : queries[static_cast<size_t>(r)];
      for (int l = 0; l < kmax; ++l) {
        const index_t j = static_cast<index_t>(rows.map_neighbors[static_cast<size_t>(r * kmax + l)]);
        std::int64_t rho = 1;
        for (index_t m = 0; m < X.rows; ++m) rho += m != i && dot(X, i, m) > dot(X, i, j);
        ASSERT_EQ(rows.input_rank_of_map_nb[static_cast<size_t>(r * kmax + l)], rho) << "point " << i;
      }
    }
  }
  // through evaluate_quality: the same as ranking by a distance matrix in the same order per row
  QualityRequest req;
  req.ks = {3, 8};
  req.inner_product = true;
  double top = 0;
  for (index_t i = 0; i < X.rows; ++i)
    for (index_t j = 0; j < X.rows; ++j) top = std::max(top, dot(X, i, j));
  MatrixD D(X.rows, X.rows);
  for (index_t i = 0; i < X.rows; ++i)
    for (index_t j = 0; j < X.rows; ++j) D(i, j) = i == j ? 0.0 : 1.0 + top - dot(X, i, j);  // decreasing in <x_i, x_j>
  QualityRequest by_matrix = req;
  by_matrix.inner_product = false;
  by_matrix.input_is_distance_matrix = true;
  const QualityReport a = evaluate_quality(X, Y, {}, req, *cpu), b = evaluate_quality(D, Y, {}, by_matrix, *cpu);
  for (size_t q = 0; q < req.ks.size(); ++q) {
    EXPECT_EQ(a.at_k[q].trustworthiness, b.at_k[q].trustworthiness);
    EXPECT_EQ(a.at_k[q].continuity, b.at_k[q].continuity);
  }
  EXPECT_EQ(a.coranking, b.coranking);
}
