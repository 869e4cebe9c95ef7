// The approximate neighbor search (HNSW) against the exact one: recall on a planted clustered set,
// exact_knn's conventions, determinism across runs and thread counts, and the recall estimate.
#include <gtest/gtest.h>

#include <random>

#include "orrery/error.hpp"
#include "orrery/knn.hpp"
#include "orrery/math/distance.hpp"

using namespace orrery;

namespace {

// Recall the default settings must reach on well separated clusters (the bench's Fashion-MNIST
// figure is >= 0.97 at k = 90; separated Gaussian clusters are easier).
constexpr double kPlantedRecall = 0.99;

// `clusters` Gaussian clusters (unit spread) in d dimensions with centres 20 apart on the axes, so
// every point's k nearest lie in its own cluster when k < its size.
MatrixD planted_clusters(index_t n, int d, int clusters, unsigned seed, std::vector<int>* label) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0, 1);
  MatrixD X(n, d);
  label->assign(static_cast<size_t>(n), 0);
  for (index_t i = 0; i < n; ++i) {
    const int c = static_cast<int>(i % clusters);
    (*label)[static_cast<size_t>(i)] = c;
    for (int j = 0; j < d; ++j) X(i, j) = z(rng) + (j == c % d ? 20.0 * (1 + c / d) : 0.0);
  }
  return X;
}

// Exact recall: a listed neighbor counts when it is no farther than the exact k-th.
double recall_against(const KnnGraph& exact, const KnnGraph& g) {
  double found = 0;
  for (index_t i = 0; i < exact.num_points; ++i)
    for (int l = 0; l < g.k; ++l) found += g.distances2(i)[l] <= exact.distances2(i)[exact.k - 1];
  return found / (static_cast<double>(exact.num_points) * exact.k);
}

}  // namespace

TEST(ApproximateKnn, PlantedClustersReachTheRecallAndStayInTheirCluster) {
  std::vector<int> label;
  const MatrixD X = planted_clusters(3000, 16, 10, 1, &label);
  const int k = 45;
  const KnnGraph exact = exact_knn(X, k, 2);
  const KnnGraph g = approximate_knn(X, k, 7, 2);
  EXPECT_GE(recall_against(exact, g), kPlantedRecall);
  for (index_t i = 0; i < X.rows; ++i)
    for (int l = 0; l < k; ++l) ASSERT_EQ(label[g.neighbors(i)[l]], label[i]) << "point " << i << ", neighbor " << l;
  // The estimate on every point is the exact recall; on a sample it is close to it.
  EXPECT_DOUBLE_EQ(estimate_knn_recall(X, g, X.rows, 3, 2).recall, recall_against(exact, g));
  const KnnRecall est = estimate_knn_recall(X, g, 300, 3, 2);
  EXPECT_EQ(est.sample, 300);
  EXPECT_NEAR(est.recall, recall_against(exact, g), 0.01);
}

TEST(ApproximateKnn, KeepsTheExactSearchConventions) {
  std::vector<int> label;
  const MatrixD X = planted_clusters(800, 5, 4, 2, &label);
  const int k = 20;
  const KnnGraph g = approximate_knn(X, k, 1, 2);
  ASSERT_EQ(g.num_points, X.rows);
  ASSERT_EQ(g.k, k);
  for (index_t i = 0; i < X.rows; ++i) {
    const index_t* nb = g.neighbors(i);
    const double* d2 = g.distances2(i);
    for (int l = 0; l < k; ++l) {
      ASSERT_NE(nb[l], i) << "point " << i << " is its own neighbor";
      ASSERT_EQ(d2[l], math::squared_distance(X.row(i), X.row(nb[l]), 5)) << "point " << i << ", neighbor " << l;
      if (l > 0) {
        ASSERT_TRUE(d2[l - 1] < d2[l] || (d2[l - 1] == d2[l] && nb[l - 1] < nb[l])) << "point " << i;
      }
    }
  }
}

TEST(ApproximateKnn, DuplicatesAndTiesGiveTheExactDistances) {
  // 27 distinct integer points among 70 (copies at distance 0, many ties): the search over so few
  // points visits them all, so every list has the exact distances, whichever tied copies it names.
  std::mt19937_64 rng(4);
  MatrixD X(70, 3);
  for (double& v : X.data) v = static_cast<double>(rng() % 3);
  for (int k : {1, 7, 30}) {
    const KnnGraph exact = exact_knn(X, k, 1), g = approximate_knn(X, k, 5, 2);
    EXPECT_EQ(g.dist2, exact.dist2) << "k = " << k;
    for (index_t i = 0; i < X.rows; ++i)
      for (int l = 0; l < k; ++l) ASSERT_NE(g.neighbors(i)[l], i);
  }
}

TEST(ApproximateKnn, SameSeedSameGraphForAnyThreadCount) {
  // 6,000 points: the first 2,048 inserted one by one, the rest in batches searched in parallel
  std::vector<int> label;
  const MatrixD X = planted_clusters(6000, 8, 6, 3, &label);
  const KnnGraph a = approximate_knn(X, 30, 11, 2), b = approximate_knn(X, 30, 11, 2), c = approximate_knn(X, 30, 11, 1),
                 d = approximate_knn(X, 30, 11, 3);
  EXPECT_EQ(a.index, b.index);
  EXPECT_EQ(a.dist2, b.dist2);
  EXPECT_EQ(a.index, c.index);
  EXPECT_EQ(a.dist2, c.dist2);
  EXPECT_EQ(a.index, d.index);
  EXPECT_EQ(a.dist2, d.dist2);
  // a different sample for the estimate, the same graph's estimate twice
  EXPECT_EQ(estimate_knn_recall(X, a, 100, 5, 2).recall, estimate_knn_recall(X, a, 100, 5, 1).recall);
}

TEST(ApproximateKnn, RefusesKOutsideOneToNMinusOne) {
  std::vector<int> label;
  const MatrixD X = planted_clusters(50, 3, 2, 5, &label);
  EXPECT_THROW(approximate_knn(X, 50, 1, 1), Error);
  EXPECT_THROW(approximate_knn(X, 0, 1, 1), Error);
  ApproxKnnParams p;
  p.M = 1;
  EXPECT_THROW(approximate_knn(X, 5, 1, 1, p), Error);
}

// A rank's share of a sharded search (exact_knn_paired_rows, approximate_knn_paired_rows): rows
// [first, first + count) of the whole search, bit for bit, for blocks that cover the points.
TEST(KnnRows, ABlockOfRowsIsThoseRowsOfTheWholeSearch) {
  std::vector<int> label;
  const MatrixD X = planted_clusters(900, 6, 5, 3, &label);
  const int k = 12;
  const KnnGraph exact = exact_knn(X, k, 2), approx = approximate_knn(X, k, 7, 2);
  for (const auto& [first, count] : {std::pair<index_t, index_t>{0, 300}, {300, 299}, {599, 301}, {899, 1}, {450, 0}}) {
    const KnnGraph e = exact_knn_paired_rows(X, X, k, first, count, 1);
    const KnnGraph a = approximate_knn_paired_rows(X, X, k, first, count, 7, 1);
    ASSERT_EQ(e.num_points, count);
    ASSERT_EQ(a.num_points, count);
    const size_t lo = static_cast<size_t>(first * k), hi = static_cast<size_t>((first + count) * k);
    EXPECT_EQ(e.index, std::vector<index_t>(exact.index.begin() + lo, exact.index.begin() + hi)) << first;
    EXPECT_EQ(e.dist2, std::vector<double>(exact.dist2.begin() + lo, exact.dist2.begin() + hi)) << first;
    EXPECT_EQ(a.index, std::vector<index_t>(approx.index.begin() + lo, approx.index.begin() + hi)) << first;
    EXPECT_EQ(a.dist2, std::vector<double>(approx.dist2.begin() + lo, approx.dist2.begin() + hi)) << first;
  }
  EXPECT_THROW(exact_knn_paired_rows(X, X, k, 800, 101, 1), Error);
}

// A recall target raises the query list until the sampled recall reaches it (or 16 times the first
// list), and the recall it reports is what the estimate of the finished graph gives; a sharded
// search picks the same list for every block of rows.
TEST(ApproximateKnn, ARecallTargetRaisesTheQueryListUntilItIsReached) {
  // 20-D uniform points: high intrinsic dimension, where a small graph and list miss neighbors
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(0, 1);
  MatrixD X(3000, 20);
  for (double& v : X.data) v = u(rng);
  const int k = 30;
  ApproxKnnParams weak;
  weak.M = 4;
  weak.ef_construction = 8;
  weak.ef_search = 8;
  ApproxKnnTuning none;
  const KnnGraph plain = approximate_knn_paired(X, X, k, 5, 2, weak, {}, &none);
  EXPECT_EQ(none.ef, 8);
  EXPECT_EQ(none.sample, 0) << "no target, nothing estimated";
  const double plain_recall = estimate_knn_recall_paired(X, X, plain, 500, 5, 2).recall;
  ASSERT_LT(plain_recall, 0.9) << "the weak settings must miss neighbors for the test to mean anything";

  ApproxKnnParams tuned = weak;
  tuned.target_recall = 0.9;
  tuned.recall_sample = 500;
  ApproxKnnTuning t;
  const KnnGraph g = approximate_knn_paired(X, X, k, 5, 2, tuned, {}, &t);
  EXPECT_GT(t.ef, 8);
  EXPECT_EQ(t.ef % 8, 0) << "the list doubles from ef_search";
  EXPECT_LE(t.ef, 16 * 8);
  EXPECT_EQ(t.sample, 500);
  EXPECT_TRUE(t.recall >= 0.9 || t.ef == 16 * 8) << t.recall << " at ef " << t.ef;
  EXPECT_EQ(t.recall, estimate_knn_recall_paired(X, X, g, 500, 5, 2).recall)
      << "the tuning's figure is the finished graph's estimate";
  EXPECT_GE(recall_against(exact_knn(X, k, 2), g), plain_recall);

  tuned.target_recall = 1.0;  // out of reach: the list stops at 16 times the first
  ApproxKnnTuning capped;
  approximate_knn_paired(X, X, k, 5, 2, tuned, {}, &capped);
  EXPECT_EQ(capped.ef, 16 * 8);

  tuned.target_recall = 0.9;
  for (const auto& [first, count] : {std::pair<index_t, index_t>{0, 1000}, {1000, 2000}}) {
    ApproxKnnTuning rows;
    const KnnGraph a = approximate_knn_paired_rows(X, X, k, first, count, 5, 1, tuned, {}, &rows);
    EXPECT_EQ(rows.ef, t.ef);
    EXPECT_EQ(rows.recall, t.recall);
    const size_t lo = static_cast<size_t>(first * k), hi = static_cast<size_t>((first + count) * k);
    EXPECT_EQ(a.index, std::vector<index_t>(g.index.begin() + lo, g.index.begin() + hi)) << first;
  }
}
