// Supervised NeRV without the N x N matrix: the learning-metric distances of listed pairs, the
// re-rank of Euclidean candidates by the metric, the class model on a seeded subsample, and the
// candidate path against the exact one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "orrery/affinity.hpp"
#include "orrery/backend.hpp"
#include "orrery/error.hpp"
#include "orrery/knn.hpp"
#include "orrery/quality.hpp"
#include "orrery/snerv.hpp"

using namespace orrery;

namespace {

// C classes of n points in d dimensions: class c's mean 3 apart along axis c % 2, the other axes
// noise of spread 2 (so Euclidean neighbors mix classes and the metric has work to do).
void data(int C, int n, int d, unsigned seed, MatrixD& X, std::vector<int>& y) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0.0, 1.0);
  X = MatrixD(C * n, d);
  y.assign(static_cast<size_t>(C * n), 0);
  for (index_t r = 0; r < X.rows; ++r) {
    const int c = static_cast<int>(r % C);
    y[static_cast<size_t>(r)] = c;
    for (int j = 0; j < d; ++j) X(r, j) = (j < 2 ? 0.7 : 2.0) * z(rng) + (j == c % 2 ? 3.0 * (1 + c / 2) : 0.0);
  }
}

ClassMixture model_of(const MatrixD& X, const std::vector<int>& y) {
  ClassMixtureParams prm;
  prm.components = 8;
  prm.width = 1.5;
  prm.max_iter = 60;
  return fit_class_mixture(X, y, prm, 3, 2);
}

}  // namespace

// Every listed pair's distance is the N x N matrix's entry, bit for bit (both integrate from the
// lower-index end), whichever end of the pair lists it.
TEST(SnervCandidates, PairDistancesAreTheMatrixEntries) {
  MatrixD X;
  std::vector<int> y;
  data(3, 40, 6, 1, X, y);
  const ClassMixture m = model_of(X, y);
  const MatrixD D = learning_metric_distances(m, X, 10, 2);
  const KnnGraph g = exact_knn(X, 17, 2);
  auto cpu = make_cpu_backend(2);
  const std::vector<double> pairs = cpu->learning_metric_pairs(m, X, g, 10);
  ASSERT_EQ(pairs.size(), g.index.size());
  for (index_t i = 0; i < g.num_points; ++i)
    for (int q = 0; q < g.k; ++q) {
      const index_t j = g.neighbors(i)[q];
      ASSERT_EQ(pairs[static_cast<size_t>(i * g.k + q)], D(i, j)) << i << " " << j;
      ASSERT_GT(D(i, j), 0.0);
    }
  // one thread gives the same bits as two
  EXPECT_EQ(learning_metric_pairs(m, X, g, 10, 1), pairs);
}

// With every other point as a candidate the re-rank is the exact metric k-NN: the same lists in
// the same order, the same squared distances.
TEST(SnervCandidates, AllPointsAsCandidatesIsTheExactMetricKnn) {
  MatrixD X;
  std::vector<int> y;
  data(4, 30, 5, 2, X, y);
  const ClassMixture m = model_of(X, y);
  const int k = 21;
  const KnnGraph exact = knn_from_distance_matrix(learning_metric_distances(m, X, 10, 2), k, 2);
  auto cpu = make_cpu_backend(2);
  const KnnGraph g = metric_knn(m, X, k, static_cast<int>(X.rows - 1), 10, false, {}, 1, *cpu);
  ASSERT_EQ(g.k, k);
  EXPECT_EQ(g.index, exact.index);
  for (size_t e = 0; e < g.dist2.size(); ++e) ASSERT_NEAR(g.dist2[e], exact.dist2[e], 1e-12 * exact.dist2[e]) << e;
  // fewer candidates: each kept neighbor carries its true metric distance, and a list is never
  // better than the exact one position by position
  const KnnGraph few = metric_knn(m, X, k, 3 * k / 2, 10, false, {}, 1, *cpu);
  const MatrixD D = learning_metric_distances(m, X, 10, 2);
  int differ = 0;
  for (index_t i = 0; i < X.rows; ++i)
    for (int q = 0; q < k; ++q) {
      const double d = D(i, few.neighbors(i)[q]);
      ASSERT_EQ(few.distances2(i)[q], d * d);
      ASSERT_GE(few.distances2(i)[q], exact.distances2(i)[q]);
      differ += few.neighbors(i)[q] != exact.neighbors(i)[q];
    }
  EXPECT_GT(differ, 0) << "the Euclidean candidates should miss some metric neighbors on these data";
}

TEST(SnervCandidates, CandidateCountsAndThePathSwitch) {
  EXPECT_EQ(snerv_candidates(0, 30, 1000), 90);
  EXPECT_EQ(snerv_candidates(0, 30, 50), 49);
  EXPECT_EQ(snerv_candidates(40, 30, 1000), 40);
  EXPECT_THROW(snerv_candidates(20, 30, 1000), Error);
  EXPECT_THROW(snerv_candidates(1000, 30, 1000), Error);
  EXPECT_FALSE(snerv_uses_candidates(SnervNeighbors::automatic, kSnervExactMaxPoints, true));
  EXPECT_TRUE(snerv_uses_candidates(SnervNeighbors::automatic, kSnervExactMaxPoints + 1, true));
  EXPECT_FALSE(snerv_uses_candidates(SnervNeighbors::automatic, kSnervExactMaxPoints + 1, false));
  EXPECT_FALSE(snerv_uses_candidates(SnervNeighbors::exact, 1000000, true));
  EXPECT_TRUE(snerv_uses_candidates(SnervNeighbors::candidates, 10, true));
  EXPECT_THROW(snerv_uses_candidates(SnervNeighbors::candidates, 10, false), Error);
  // the default perplexity stops growing with N
  EXPECT_EQ(snerv_perplexity(0, 70000, 40), kSnervMaxDefaultPerplexity);
  EXPECT_EQ(snerv_perplexity(0, 2000, 40), 25.0);
  EXPECT_EQ(snerv_perplexity(0, 120, 6), 10.0);
}

// The model's sample: seeded, sorted, every class kept, and the fit on it is the fit on those rows.
TEST(SnervCandidates, SubsampleFitIsDeterministicGivenTheSeed) {
  MatrixD X;
  std::vector<int> y;
  data(3, 100, 4, 4, X, y);
  y[1] = y[4] = -1;  // unlabelled rows are never drawn
  for (index_t r = 0; r < X.rows; ++r)  // class 2 rare: two labelled points
    if (y[static_cast<size_t>(r)] == 2 && r != 2 && r != 299) y[static_cast<size_t>(r)] = 0;
  const std::vector<index_t> a = class_mixture_sample(X, y, 40, 7), b = class_mixture_sample(X, y, 40, 7),
                             c = class_mixture_sample(X, y, 40, 8);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));
  EXPECT_GE(a.size(), 40u);
  EXPECT_LE(a.size(), 42u);
  std::set<int> classes;
  for (index_t r : a) {
    ASSERT_GE(y[static_cast<size_t>(r)], 0);
    classes.insert(y[static_cast<size_t>(r)]);
  }
  EXPECT_EQ(classes.size(), 3u);
  EXPECT_EQ(class_mixture_sample(X, y, 0, 7).size(), 298u);
  EXPECT_EQ(class_mixture_sample(X, y, 298, 7).size(), 298u);
  EXPECT_THROW(class_mixture_sample(X, y, -1, 7), Error);

  ClassMixtureParams prm;
  prm.folds = 3;
  prm.max_iter = 40;
  prm.fit_sample = 40;
  const ClassMixture f1 = fit_class_mixture(X, y, prm, 7, 1), f2 = fit_class_mixture(X, y, prm, 7, 2);
  EXPECT_EQ(f1.centres.data, f2.centres.data);
  EXPECT_EQ(f1.beta.data, f2.beta.data);
  // the same as hiding every label outside the sample and fitting on all
  std::vector<int> hidden(y.size(), -1);
  for (index_t r : a) hidden[static_cast<size_t>(r)] = y[static_cast<size_t>(r)];
  prm.fit_sample = 0;
  const ClassMixture h = fit_class_mixture(X, hidden, prm, 7, 2);
  EXPECT_EQ(f1.centres.data, h.centres.data);
  EXPECT_EQ(f1.width, h.width);
  const ClassMixture all = fit_class_mixture(X, y, prm, 7, 2);
  EXPECT_NE(all.centres.data, f1.centres.data);
}

// The candidate path against the exact one on a small labelled set: nearly the same metric
// neighbors, and maps of the same quality (5-NN accuracy within 0.05).
TEST(SnervCandidates, CandidatePathMatchesTheExactPath) {
  MatrixD X;
  std::vector<int> y;
  data(3, 80, 6, 5, X, y);
  SnervParams prm;
  prm.metric.components = 6;
  prm.metric.width = 1.5;
  prm.metric.max_iter = 60;
  prm.perplexity = 10;
  prm.nerv.max_iter = 300;
  auto cpu = make_cpu_backend(2);
  prm.neighbors = SnervNeighbors::exact;
  const SnervResult e = fit_snerv(X, y, prm, 11, *cpu);
  prm.neighbors = SnervNeighbors::candidates;
  const SnervResult c = fit_snerv(X, y, prm, 11, *cpu);
  EXPECT_FALSE(e.candidates);
  EXPECT_EQ(e.metric_distances.rows, X.rows);
  EXPECT_TRUE(c.candidates);
  EXPECT_TRUE(c.metric_distances.data.empty());
  EXPECT_EQ(c.candidate_k, 90);
  EXPECT_EQ(c.model.centres.data, e.model.centres.data);
  // the metric neighbor lists the two paths built their affinities from
  const int k = sparse_neighbors(10);
  const KnnGraph ge = knn_from_distance_matrix(e.metric_distances, k, 2);
  const double scale = input_scale(X);
  MatrixD U = X;
  for (double& v : U.data) v /= scale;
  ClassMixture unit = c.model;
  for (double& v : unit.centres.data) v /= scale;
  unit.width /= scale;
  const KnnGraph gc = metric_knn(unit, U, k, c.candidate_k, prm.metric.pieces, false, {}, 11, *cpu);
  index_t shared = 0;
  for (index_t i = 0; i < X.rows; ++i) {
    const std::set<index_t> s(ge.neighbors(i), ge.neighbors(i) + k);
    for (int q = 0; q < k; ++q) shared += s.count(gc.neighbors(i)[q]);
  }
  const double overlap = static_cast<double>(shared) / static_cast<double>(X.rows * k);
  EXPECT_GT(overlap, 0.95);
  EXPECT_LT(overlap, 1.0) << "the candidates should miss a few metric neighbors (else this tests nothing)";
  QualityRequest req;
  req.ks = {5};
  req.curve = false;
  const double acc_e = evaluate_quality(e.nerv.coords, e.nerv.coords, y, req, *make_cpu_backend(0)).at_k[0].knn_accuracy;
  const double acc_c = evaluate_quality(c.nerv.coords, c.nerv.coords, y, req, *make_cpu_backend(0)).at_k[0].knn_accuracy;
  EXPECT_GT(acc_e, 0.85);
  EXPECT_NEAR(acc_c, acc_e, 0.05);
  // the same seed gives the same map
  EXPECT_EQ(fit_snerv(X, y, prm, 11, *cpu).nerv.coords.data, c.nerv.coords.data);
}
