// The class-posterior model of supervised NeRV and its learning metric.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include <algorithm>

#include "common/gradient_check.hpp"
#include "orrery/affinity.hpp"
#include "orrery/backend.hpp"
#include "orrery/error.hpp"
#include "orrery/knn.hpp"
#include "orrery/math/fisher.hpp"
#include "orrery/quality.hpp"
#include "orrery/snerv.hpp"

using namespace orrery;

namespace {

// C Gaussian blobs in d dimensions, n points each, centres 4 apart along the axes.
void blobs(int C, int n, int d, unsigned seed, MatrixD& X, std::vector<int>& y) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0.0, 1.0);
  X = MatrixD(C * n, d);
  y.assign(static_cast<size_t>(C * n), 0);
  for (int c = 0; c < C; ++c)
    for (int q = 0; q < n; ++q) {
      const index_t r = c * n + q;
      y[static_cast<size_t>(r)] = c;
      for (int j = 0; j < d; ++j) X(r, j) = z(rng) + (j == c % d ? 4.0 * (1 + c / d) : 0.0);
    }
}

ClassMixture small_model(int d, int C, int K, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0.0, 1.0);
  std::uniform_real_distribution<double> u(0.1, 1.0);
  ClassMixture m;
  m.num_classes = C;
  m.width = 1.3;
  m.centres = MatrixD(K, d);
  for (double& v : m.centres.data) v = 2.0 * z(rng);
  m.beta = MatrixD(K, C);
  for (int k = 0; k < K; ++k) {
    double s = 0;
    for (int c = 0; c < C; ++c) s += (m.beta(k, c) = u(rng));
    for (int c = 0; c < C; ++c) m.beta(k, c) /= s;
  }
  return m;
}

double kl(const MatrixD& P, index_t a, index_t b) {
  double s = 0;
  for (index_t c = 0; c < P.cols; ++c) s += P(a, c) * std::log(P(a, c) / P(b, c));
  return s;
}

}  // namespace

TEST(ClassMixture, LossGradientMatchesFiniteDifferences) {
  MatrixD X;
  std::vector<int> y;
  blobs(3, 15, 4, 1, X, y);
  y[3] = -1;  // unlabelled rows do not count
  const int K = 5, C = 3;
  std::mt19937_64 rng(2);
  std::normal_distribution<double> z(0.0, 1.0);
  std::vector<double> p(static_cast<size_t>(K) * (X.cols + C));
  for (double& v : p) v = 1.5 * z(rng);
  std::vector<double> g;
  class_mixture_loss(X, y, C, 1.7, K, p, &g);
  EXPECT_TRUE(test::gradient_matches([&](const std::vector<double>& params) { return class_mixture_loss(X, y, C, 1.7, K, params, nullptr); },
                                     p, g, {1e-6, 1e-6, 1, "class mixture parameters"}));
}

TEST(ClassMixture, FisherInformationIsTwiceTheLocalKl) {
  // KL(p(x) || p(x + e v)) = e^2 v'J(x)v / 2 + O(e^3): so v'Jv = lim 2 KL / e^2.
  const ClassMixture m = small_model(3, 4, 6, 3);
  const double x[3] = {0.3, -0.7, 1.1}, v[3] = {0.6, 0.2, -0.9};
  const double vjv = class_mixture_fisher(m, x, v);
  ASSERT_GT(vjv, 0.0);
  for (double e : {1e-3, 1e-4}) {
    MatrixD pts(2, 3);
    for (int j = 0; j < 3; ++j) pts(0, j) = x[j], pts(1, j) = x[j] + e * v[j];
    const MatrixD P = class_mixture_posteriors(m, pts);
    EXPECT_NEAR(2.0 * kl(P, 0, 1) / (e * e), vjv, 1e-2 * vjv * (e / 1e-3));
  }
}

TEST(ClassMixture, DistancesAreSymmetricNonNegativeAndLocallyTheFisherNorm) {
  ClassMixture m = small_model(4, 3, 5, 4);
  m.euclidean = 0.3;  // the metric's isotropic term, eta |dx|^2 / s^2, is part of every check below
  MatrixD X(30, 4);
  std::mt19937_64 rng(5);
  std::normal_distribution<double> z(0.0, 1.5);
  for (double& v : X.data) v = z(rng);
  // two nearby points: the path integral tends to the Fisher norm of the step
  for (int j = 0; j < 4; ++j) X(1, j) = X(0, j) + 1e-4 * (j + 1);
  const MatrixD D = learning_metric_distances(m, X, 10);
  for (index_t i = 0; i < X.rows; ++i) {
    EXPECT_EQ(D(i, i), 0.0);
    for (index_t j = 0; j < X.rows; ++j) {
      EXPECT_GE(D(i, j), 0.0);
      EXPECT_EQ(D(i, j), D(j, i));
    }
  }
  const double v[4] = {1e-4, 2e-4, 3e-4, 4e-4};
  const double mid[4] = {X(0, 0) + 0.5 * v[0], X(0, 1) + 0.5 * v[1], X(0, 2) + 0.5 * v[2], X(0, 3) + 0.5 * v[3]};
  EXPECT_NEAR(D(0, 1), std::sqrt(class_mixture_fisher(m, mid, v)), 1e-6 * D(0, 1));
  // the midpoint rule is symmetric in the two ends, whatever the order of the arguments
  const int K = 5;
  std::vector<double> u1(K), u2(K), h(K), s(3 * K);
  for (int k = 0; k < K; ++k)
    for (int j = 0; j < 4; ++j) {
      u1[k] += m.centres(k, j) * X(2, j);
      u2[k] += m.centres(k, j) * X(7, j);
      h[k] += 0.5 * m.centres(k, j) * m.centres(k, j);
    }
  const double w = 1.0 / (m.width * m.width);
  double e2 = 0;
  for (int j = 0; j < 4; ++j) e2 += (X(2, j) - X(7, j)) * (X(2, j) - X(7, j));
  const double reg = m.euclidean * w * e2;
  const double a = math::fisher_path_distance(u1.data(), u2.data(), h.data(), m.beta.data.data(), w, K, 3, 10, 1e-12, reg, s.data());
  const double b = math::fisher_path_distance(u2.data(), u1.data(), h.data(), m.beta.data.data(), w, K, 3, 10, 1e-12, reg, s.data());
  // the isotropic term bounds the distance below by sqrt(eta) |x2 - x7| / s
  EXPECT_GE(a, std::sqrt(reg) * (1 - 1e-12));
  EXPECT_NEAR(a, b, 1e-12 * a);
  EXPECT_NEAR(a, D(2, 7), 1e-12 * a);
  // more pieces converge: T = 10 is within 1% of T = 200 here
  const double fine = learning_metric_distances(m, X, 200)(2, 7);
  EXPECT_NEAR(D(2, 7), fine, 1e-2 * fine);
}

TEST(ClassMixture, FitSeparatesBlobsAndRepeats) {
  MatrixD X;
  std::vector<int> y;
  blobs(3, 40, 5, 6, X, y);
  ClassMixtureParams prm;
  prm.folds = 3;
  const ClassMixture a = fit_class_mixture(X, y, prm, 9, 1), b = fit_class_mixture(X, y, prm, 9, 2);
  EXPECT_EQ(a.centres.data, b.centres.data);
  EXPECT_EQ(a.beta.data, b.beta.data);
  EXPECT_FALSE(a.selection.empty());
  EXPECT_GT(a.train_loglik, std::log(0.9));
  const MatrixD P = class_mixture_posteriors(a, X);
  int right = 0;
  for (index_t n = 0; n < X.rows; ++n) {
    double rs = 0;
    index_t best = 0;
    for (index_t c = 0; c < P.cols; ++c) {
      rs += P(n, c);
      if (P(n, c) > P(n, best)) best = c;
    }
    EXPECT_NEAR(rs, 1.0, 1e-12);
    right += best == y[static_cast<size_t>(n)];
  }
  EXPECT_GE(right, 0.95 * X.rows);
  // the chosen (K, s) is the validated best
  double best = -1e300;
  for (const auto& v : a.selection) best = std::max(best, v.loglik);
  bool found = false;
  for (const auto& v : a.selection)
    found |= v.loglik == best && v.components == a.centres.rows && v.width == a.width;
  EXPECT_TRUE(found);
}

TEST(ClassMixture, BadLabelsAreInputErrors) {
  MatrixD X;
  std::vector<int> y;
  blobs(2, 10, 3, 7, X, y);
  std::vector<int> one(y.size(), 0);
  EXPECT_THROW(fit_class_mixture(X, one, {}, 1), Error);
  std::vector<int> gap = y;
  for (int& v : gap) v = v == 1 ? 2 : v;  // class 1 empty
  EXPECT_THROW(fit_class_mixture(X, gap, {}, 1), Error);
  // A label beyond the number of labelled points cannot name a class 0..C-1 with a point each:
  // refused before anything is sized by it (2147483647 used to overflow the class count).
  std::vector<int> huge = y;
  huge[0] = 2147483647;
  try {
    fit_class_mixture(X, huge, {}, 1);
    ADD_FAILURE() << "expected an input error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("label 2147483647"), std::string::npos) << e.what();
  }
  X(4, 1) = std::nan("");
  EXPECT_THROW(fit_class_mixture(X, y, {}, 1), Error);
}

// fit_snerv is the pipeline it names, step by step: the same model, the distances, the sparse
// affinities at the paper's perplexity and the NeRV fit give the same map bit for bit; and the map
// separates the classes.
TEST(Snerv, FitIsTheModelMetricAffinitiesAndNervPipeline) {
  MatrixD X;
  std::vector<int> y;
  blobs(3, 40, 5, 7, X, y);
  SnervParams prm;
  prm.metric.components = 6;
  prm.metric.width = 1.5;
  prm.metric.max_iter = 40;
  prm.nerv.max_iter = 60;
  auto cpu = make_cpu_backend(2);
  const SnervResult r = fit_snerv(X, y, prm, 11, *cpu);
  const ClassMixture m = fit_class_mixture(X, y, prm.metric, 11, 2);
  const MatrixD D = learning_metric_distances(m, X, prm.metric.pieces, 2);
  // fit_snerv works on X divided by its scale: the same distances up to rounding
  for (size_t q = 0; q < D.data.size(); ++q) ASSERT_NEAR(r.metric_distances.data[q], D.data[q], 1e-12 * D.data[q]) << q;
  const double perplexity = std::clamp(0.5 * 120 / 6.0, 2.0, 119.0 / 3.0);
  EXPECT_EQ(r.perplexity, perplexity);
  const AffinityResult a = affinities_from_knn(
      knn_from_distance_matrix(r.metric_distances, static_cast<int>(std::ceil(3 * perplexity)), 2), perplexity, 2);
  const NervResult n = fit_nerv(a.sparse_conditional, a.beta, prm.nerv, 11, *cpu);
  EXPECT_EQ(r.nerv.coords.data, n.coords.data);
  EXPECT_EQ(r.nerv.objective_trace, n.objective_trace);
  QualityRequest req;
  req.ks = {5};
  req.curve = false;
  EXPECT_GT(evaluate_quality(r.nerv.coords, r.nerv.coords, y, req, *make_cpu_backend(0)).at_k[0].knn_accuracy, 0.9);
}
