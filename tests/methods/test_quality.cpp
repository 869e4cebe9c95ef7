// Quality measures against brute-force implementations of their definitions (full rank
// matrices), scikit-learn's trustworthiness, and the values of perfect maps.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "common/distances.hpp"
#include "orrery/backend.hpp"
#include "orrery/error.hpp"
#include "orrery/knn.hpp"
#include "orrery/quality.hpp"

using namespace orrery;

namespace {

// rank[i][j]: 1-based rank of j among i's neighbors (self excluded, ties by index).
std::vector<std::vector<int>> brute_ranks(const MatrixD& M) {
  const index_t N = M.rows;
  std::vector<std::vector<int>> rank(N, std::vector<int>(N, 0));
  for (index_t i = 0; i < N; ++i) {
    std::vector<std::pair<double, index_t>> row;
    for (index_t j = 0; j < N; ++j) {
      if (j == i) continue;
      double s = 0;
      for (index_t c = 0; c < M.cols; ++c) s += (M(i, c) - M(j, c)) * (M(i, c) - M(j, c));
      row.emplace_back(s, j);
    }
    std::sort(row.begin(), row.end());
    for (size_t r = 0; r < row.size(); ++r) rank[i][row[r].second] = static_cast<int>(r + 1);
  }
  return rank;
}

struct Brute {
  double T, C, Wn, Wv, U;
};

Brute brute(const MatrixD& X, const MatrixD& Y, int K) {
  const auto rho = brute_ranks(X), r = brute_ranks(Y);
  const double N = static_cast<double>(X.rows);
  double t = 0, c = 0, wn = 0, wv = 0, ov = 0;
  for (index_t i = 0; i < X.rows; ++i)
    for (index_t j = 0; j < X.rows; ++j) {
      if (i == j) continue;
      const int a = rho[i][j], b = r[i][j];
      if (b <= K && a > K) t += a - K;
      if (a <= K && b > K) c += b - K;
      if (b <= K) wn += std::abs(a - b) / static_cast<double>(b);
      if (a <= K) wv += std::abs(a - b) / static_cast<double>(a);
      if (a <= K && b <= K) ov += 1;
    }
  const double G = K < N / 2 ? N * K * (2 * N - 3 * K - 1) : N * (N - K) * (N - K - 1);
  double H = 0;
  for (int k = 1; k <= K; ++k) H += std::abs(N - 2 * k + 1) / k;
  H *= N;
  // K = N - 1 makes G = 0: every point is everyone's neighbor and both measures are 1
  return {G > 0 ? 1 - 2 * t / G : 1.0, G > 0 ? 1 - 2 * c / G : 1.0, wn / H, wv / H, K / (1 - N) + ov / (N * K)};
}

MatrixD random_matrix(index_t n, index_t d, unsigned seed, int levels = 0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0, 1);
  MatrixD M(n, d);
  for (double& v : M.data) v = levels ? static_cast<double>(rng() % levels) : z(rng);  // few levels: many ties
  return M;
}

void expect_matches_brute(const MatrixD& X, const MatrixD& Y, std::vector<int> ks, const char* what) {
  QualityRequest req;
  req.ks = ks;
  req.threads = 3;
  const QualityReport rep = evaluate_quality(X, Y, {}, req, *make_cpu_backend(0));
  for (size_t q = 0; q < ks.size(); ++q) {
      const Brute b = brute(X, Y, ks[q]);
    const QualityAtK& a = rep.at_k[q];
    EXPECT_NEAR(a.trustworthiness, b.T, 1e-12) << what << " K=" << ks[q];
    EXPECT_NEAR(a.continuity, b.C, 1e-12) << what << " K=" << ks[q];
    EXPECT_NEAR(a.mrre_neighborhood, b.Wn, 1e-12) << what << " K=" << ks[q];
    EXPECT_NEAR(a.mrre_visual, b.Wv, 1e-12) << what << " K=" << ks[q];
    EXPECT_NEAR(a.lcmc, b.U, 1e-12) << what << " K=" << ks[q];
  }
}

}  // namespace

TEST(Knn, MatchesBruteForceWithTiesAndDuplicates) {
  MatrixD X = random_matrix(70, 3, 1, 3);  // 27 distinct points among 70: duplicates and ties
  const auto rank = brute_ranks(X);
  for (int k : {1, 7, 69}) {
    const KnnGraph g = exact_knn(X, k, 2);
    for (index_t i = 0; i < X.rows; ++i)
      for (int l = 0; l < k; ++l) ASSERT_EQ(rank[i][g.neighbors(i)[l]], l + 1) << "i=" << i << " l=" << l;
  }
  EXPECT_THROW(exact_knn(X, 70, 1), Error);
  EXPECT_THROW(exact_knn(X, 0, 1), Error);
}

TEST(Quality, EveryRankMeasureMatchesItsDefinition) {
  expect_matches_brute(random_matrix(50, 4, 2), random_matrix(50, 2, 3), {1, 3, 10, 24, 25, 40, 49}, "gaussian");
  expect_matches_brute(random_matrix(45, 3, 4, 3), random_matrix(45, 2, 5, 4), {1, 5, 22, 30, 44}, "ties");
}

TEST(Quality, CoRankingMatrixMatchesDefinition) {
  const MatrixD X = random_matrix(40, 5, 6), Y = random_matrix(40, 2, 7, 5);
  QualityRequest req;
  req.ks = {4};
  req.kmax = 12;
  const QualityReport rep = evaluate_quality(X, Y, {}, req, *make_cpu_backend(0));
  const auto rho = brute_ranks(X), r = brute_ranks(Y);
  std::vector<std::int64_t> Q(12 * 12, 0);
  for (int i = 0; i < 40; ++i)
    for (int j = 0; j < 40; ++j)
      if (i != j && rho[i][j] <= 12 && r[i][j] <= 12) ++Q[(rho[i][j] - 1) * 12 + (r[i][j] - 1)];
  EXPECT_EQ(rep.coranking, Q);
}

TEST(Quality, TrustworthinessEqualsScikitLearn) {
  // The data are exact binary fractions of integer expressions, reproduced in numpy; values from
  // sklearn.manifold.trustworthiness (scikit-learn 1.2, Debian 12) on the same arrays:
  //   X = [[((i*37+j*11)%17)/7 + i*i*0.00013 + j*i*0.000031 for j in range(5)] for i in range(60)]
  //   Y = [[((i*13+j*5)%11)/3 + i*i*0.00011 + j*i*0.000017 for j in range(2)] for i in range(60)]
  //   trustworthiness(X, Y, n_neighbors=k) and trustworthiness(Y, X, n_neighbors=k) (= continuity)
  MatrixD X(60, 5), Y(60, 2);
  for (int i = 0; i < 60; ++i) {
    for (int j = 0; j < 5; ++j) X(i, j) = ((i * 37 + j * 11) % 17) / 7.0 + i * i * 0.00013 + j * i * 0.000031;
    for (int j = 0; j < 2; ++j) Y(i, j) = ((i * 13 + j * 5) % 11) / 3.0 + i * i * 0.00011 + j * i * 0.000017;
  }
  QualityRequest req;
  req.ks = {1, 5, 10, 29};
  const QualityReport rep = evaluate_quality(X, Y, {}, req, *make_cpu_backend(0));
  const double t[] = {0.6425287356321839, 0.6492948717948718, 0.6708614232209738, 0.6021551724137931};
  const double c[] = {0.7721264367816092, 0.7478205128205129, 0.7346067415730337, 0.5608117816091954};
  for (int q = 0; q < 4; ++q) {
    EXPECT_NEAR(rep.at_k[q].trustworthiness, t[q], 1e-12) << "K=" << req.ks[q];
    EXPECT_NEAR(rep.at_k[q].continuity, c[q], 1e-12) << "K=" << req.ks[q];
  }
}

TEST(Quality, PerfectMapScoresPerfectly) {
  const MatrixD X = random_matrix(80, 2, 8);
  MatrixD Y = X;
  for (double& v : Y.data) v *= 3.0;  // a scaled copy has identical ranks
  std::vector<int> labels(80);
  for (int i = 0; i < 80; ++i) labels[i] = X(i, 0) > 0;
  QualityRequest req;
  req.ks = {1, 10, 40, 79};
  req.perplexity = 10;
  const QualityReport rep = evaluate_quality(X, Y, labels, req, *make_cpu_backend(0));
  for (const auto& q : rep.at_k) {
    EXPECT_DOUBLE_EQ(q.trustworthiness, 1.0) << q.k;
    EXPECT_DOUBLE_EQ(q.continuity, 1.0) << q.k;
    EXPECT_DOUBLE_EQ(q.mrre_neighborhood, 0.0) << q.k;
    EXPECT_DOUBLE_EQ(q.mrre_visual, 0.0) << q.k;
    EXPECT_NEAR(q.lcmc, 1.0 - q.k / 79.0, 1e-12) << "U(K) of a perfect map is 1 - K/(N-1)";
  }
  // identical maps (not scaled) have zero smoothed divergences
  const QualityReport same = evaluate_quality(X, X, labels, req, *make_cpu_backend(0));
  EXPECT_NEAR(same.smoothed_precision, 0.0, 1e-12);
  EXPECT_NEAR(same.smoothed_recall, 0.0, 1e-12);
  EXPECT_LT(rep.smoothed_precision, -1e-3) << "a 3x scaled map is less precise at the input bandwidth";
}

TEST(Quality, SmoothedPrecisionRecallMatchDefinition) {
  const MatrixD X = random_matrix(30, 3, 9), Y = random_matrix(30, 2, 10);
  QualityRequest req;
  req.ks = {5};
  req.perplexity = 7;
  const QualityReport rep = evaluate_quality(X, Y, {}, req, *make_cpu_backend(0));
  double a = 0, b = 0;
  for (int i = 0; i < 30; ++i) {
    // bandwidth by a brute-force bisection on the entropy, independent of the library's
    auto probs = [&](const MatrixD& M, double beta) {
      std::vector<double> p(30, 0.0);
      double z = 0;
      for (int j = 0; j < 30; ++j) {
        if (j == i) continue;
        double s = 0;
        for (index_t c = 0; c < M.cols; ++c) s += (M(i, c) - M(j, c)) * (M(i, c) - M(j, c));
        z += (p[j] = std::exp(-beta * s));
      }
      for (double& v : p) v /= z;
      return p;
    };
    double lo = 1e-6, hi = 1e6;
    for (int it = 0; it < 200; ++it) {
      const double mid = std::sqrt(lo * hi);
      const auto p = probs(X, mid);
      double h = 0;
      for (double v : p)
        if (v > 0) h -= v * std::log(v);
      (h > std::log(7.0) ? lo : hi) = mid;
    }
    const auto p = probs(X, std::sqrt(lo * hi)), q = probs(Y, std::sqrt(lo * hi));
    for (int j = 0; j < 30; ++j)
      if (j != i) {
        a += q[j] * std::log(q[j] / p[j]);
        b += p[j] * std::log(p[j] / q[j]);
      }
  }
  EXPECT_NEAR(rep.smoothed_precision, -a / 30, 1e-6);
  EXPECT_NEAR(rep.smoothed_recall, -b / 30, 1e-6);
}

TEST(Quality, KnnAccuracyAndHomogeneity) {
  // Two well separated groups: every neighbor within a group shares its label.
  MatrixD Y(20, 2, 0.0);
  std::vector<int> labels(20);
  for (int i = 0; i < 20; ++i) {
    labels[i] = i < 10 ? 0 : 1;
    Y(i, 0) = (i < 10 ? 0.0 : 100.0) + i * i * 0.01;  // distinct gaps: no ties
  }
  labels[9] = 1;  // one mislabelled point at the edge of its group: only it is misclassified
  QualityRequest req;
  req.ks = {1, 5};
  const QualityReport rep = evaluate_quality(Y, Y, labels, req, *make_cpu_backend(0));
  EXPECT_DOUBLE_EQ(rep.homogeneity_1nn, 0.95);
  EXPECT_DOUBLE_EQ(rep.at_k[1].knn_accuracy, 0.95);
  // vote ties go to the label whose member is nearest
  const std::vector<index_t> nb = {1, 2, 0, 2, 0, 1};  // point 0's neighbors: 1 (label 1), 2 (label 0)
  EXPECT_DOUBLE_EQ(knn_vote_accuracy(nb, 2, {0, 1, 0}, 2), 1.0 / 3.0);
  // Labels are any integers: a vote is not an array indexed by the label's value.
  EXPECT_DOUBLE_EQ(knn_vote_accuracy(nb, 2, {2147483647, 7, 2147483647}, 2), 1.0 / 3.0);
}

TEST(Quality, ClassScoresFollowPeTable) {
  const ClassScores s = class_scores({0, 0, 1, 1, 1}, {0, 1, 1, 1, 0}, 3);
  EXPECT_DOUBLE_EQ(s.precision[0], 0.5);
  EXPECT_DOUBLE_EQ(s.recall[0], 0.5);
  EXPECT_DOUBLE_EQ(s.precision[1], 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(s.recall[1], 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(s.f_measure[1], 2.0 / 3.0);
  EXPECT_TRUE(std::isnan(s.precision[2]));
}

TEST(Quality, ThreadCountDoesNotChangeResults) {
  const MatrixD X = random_matrix(300, 6, 11), Y = random_matrix(300, 2, 12);
  QualityRequest a, b;
  a.ks = b.ks = {3, 30};
  a.perplexity = b.perplexity = 15;
  a.threads = 1;
  b.threads = 4;
  const auto ra = evaluate_quality(X, Y, {}, a, *make_cpu_backend(0)), rb = evaluate_quality(X, Y, {}, b, *make_cpu_backend(0));
  for (size_t q = 0; q < 2; ++q) {
    EXPECT_EQ(ra.at_k[q].trustworthiness, rb.at_k[q].trustworthiness);
    EXPECT_EQ(ra.at_k[q].mrre_visual, rb.at_k[q].mrre_visual);
  }
  EXPECT_EQ(ra.smoothed_recall, rb.smoothed_recall);
  EXPECT_EQ(ra.coranking, rb.coranking);
}

TEST(Quality, BadInputIsAnInputError) {
  const MatrixD X = random_matrix(10, 3, 13), Y = random_matrix(9, 2, 14);
  QualityRequest req;
  EXPECT_THROW(evaluate_quality(X, Y, {}, req, *make_cpu_backend(0)), Error);  // mismatched N
  req.ks = {10};
  try {
    evaluate_quality(X, random_matrix(10, 2, 15), {}, req, *make_cpu_backend(0));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_NE(std::string(e.what()).find("N - 1 = 9"), std::string::npos) << e.what();
  }
  MatrixD bad = random_matrix(10, 2, 16);
  bad(4, 1) = std::nan("");
  req.ks = {3};
  EXPECT_THROW(evaluate_quality(X, bad, {}, req, *make_cpu_backend(0)), Error);
}

TEST(Quality, DistanceMatrixInputEqualsVectorInput) {
  // Integer points: squaring sqrt(d^2) preserves the order and the ties of these small integers,
  // so the ranks must agree exactly.
  MatrixD X = random_matrix(60, 3, 17, 4);
  const MatrixD D = test::euclidean_distances(X);
  const MatrixD Y = random_matrix(60, 2, 18, 7);
  QualityRequest a, b;
  a.ks = b.ks = {4, 20};
  b.input_is_distance_matrix = true;
  const auto ra = evaluate_quality(X, Y, {}, a, *make_cpu_backend(0)), rb = evaluate_quality(D, Y, {}, b, *make_cpu_backend(0));
  for (size_t q = 0; q < 2; ++q) {
    EXPECT_EQ(ra.at_k[q].continuity, rb.at_k[q].continuity);
    EXPECT_EQ(ra.at_k[q].trustworthiness, rb.at_k[q].trustworthiness);
  }
}

// k-NN test error by its definition on a hand-made map, and the cross-validation protocol: every
// labelled point is held out exactly once, with exactly its fold's labels hidden from the map.
TEST(Quality, KnnTestErrorAndCrossValidation) {
  // Two clusters on a line; point 2 sits in the second cluster but is labelled 0.
  MatrixD Y(8, 1);
  const double xs[8] = {0.0, 0.1, 5.2, 0.3, 5.0, 5.1, 5.3, 5.4};
  for (int i = 0; i < 8; ++i) Y(i, 0) = xs[i];
  const std::vector<int> truth = {0, 0, 0, 0, 1, 1, 1, 1};
  std::vector<int> train = truth;
  train[2] = train[3] = -1;
  // Point 3's 5 nearest labelled: 1, 0 (class 0), 4, 5, 6 (class 1) -> 1 wins: wrong. Point 2's:
  // 5, 6, 4, 7 (class 1) and 1 -> 1: wrong, as its label says 0.
  EXPECT_DOUBLE_EQ(knn_test_error(Y, train, {2, 3}, truth), 1.0);
  EXPECT_DOUBLE_EQ(knn_test_error(Y, train, {2, 3}, truth, 1), 0.5) << "1-NN: point 3's nearest is 1 (class 0)";

  std::vector<int> labels(60);
  MatrixD Z(60, 2);
  for (int i = 0; i < 60; ++i) {
    labels[i] = i % 10 == 9 ? -1 : i % 3;
    Z(i, 0) = 10.0 * (i % 3) + 0.01 * i;
    Z(i, 1) = 0.0;
  }
  std::vector<int> held(60, 0);
  const CrossValidation cv = cross_validate_knn(labels, 4, 5, [&](const std::vector<int>& tr) {
    int hidden = 0;
    for (int i = 0; i < 60; ++i) {
      if (labels[i] < 0) EXPECT_EQ(tr[i], -1);
      else if (tr[i] < 0) ++hidden, ++held[i];
      else EXPECT_EQ(tr[i], labels[i]);
    }
    EXPECT_TRUE(hidden == 13 || hidden == 14) << hidden;  // 54 labelled points in 4 folds
    return Z;
  });
  ASSERT_EQ(cv.errors.size(), 4u);
  for (double e : cv.errors) EXPECT_EQ(e, 0.0) << "separated classes are classified without error";
  EXPECT_EQ(cv.mean, 0.0);
  for (int i = 0; i < 60; ++i) EXPECT_EQ(held[i], labels[i] < 0 ? 0 : 1) << i;
  EXPECT_THROW(cross_validate_knn(labels, 100, 5, [&](const std::vector<int>&) { return Z; }), Error);
}
