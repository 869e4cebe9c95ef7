// The Appendix D posterior model: the formula against a direct implementation, the width search,
// classification of separated blobs, determinism, and the errors it names.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>

#include "orrery/error.hpp"
#include "orrery/posterior_model.hpp"

using namespace orrery;

namespace {

struct Labelled {
  MatrixD X;
  std::vector<int> y;     // true classes
  std::vector<int> seen;  // labels given to the model: y or -1
};

// K Gaussian blobs in `dim` dimensions, centres `sep` apart on average, unit noise; a fraction
// `labelled` of the objects keep their label.
Labelled blobs(index_t N, int K, index_t dim, double sep, double labelled, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0.0, 1.0);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  MatrixD mu(K, dim);
  for (auto& v : mu.data) v = sep * z(rng) / std::sqrt(2.0);
  Labelled d{MatrixD(N, dim), std::vector<int>(N), std::vector<int>(N)};
  for (index_t n = 0; n < N; ++n) {
    const int k = static_cast<int>(n % K);
    d.y[n] = k;
    for (index_t j = 0; j < dim; ++j) d.X(n, j) = mu(k, j) + z(rng);
    d.seen[n] = u(rng) < labelled ? k : -1;
  }
  return d;
}

// p(c_k | x) straight from the formula: plain exp and sums, no log space, no distance expansion.
MatrixD direct_posteriors(const MatrixD& X, const std::vector<int>& labels, const std::vector<index_t>& centres,
                          int K, double s) {
  MatrixD P(X.rows, K, 0.0);
  std::vector<double> m(K, 0.0);
  for (index_t j : centres) m[labels[j]] += 1.0;
  for (index_t n = 0; n < X.rows; ++n) {
    double total = 0.0;
    for (index_t j : centres) {
      double d2 = 0.0;
      for (index_t d = 0; d < X.cols; ++d) d2 += (X(n, d) - X(j, d)) * (X(n, d) - X(j, d));
      P(n, labels[j]) += std::exp(-d2 / (2.0 * s * s)) / m[labels[j]];
    }
    for (int k = 0; k < K; ++k) total += P(n, k);
    for (int k = 0; k < K; ++k) P(n, k) /= total;
  }
  return P;
}

void expect_rows_are_distributions(const MatrixD& P) {
  for (index_t n = 0; n < P.rows; ++n) {
    double s = 0.0;
    for (index_t k = 0; k < P.cols; ++k) {
      ASSERT_TRUE(std::isfinite(P(n, k))) << "row " << n << " class " << k;
      ASSERT_GE(P(n, k), 0.0);
      s += P(n, k);
    }
    ASSERT_NEAR(s, 1.0, 1e-12) << "row " << n;
  }
}

std::string error_of(const MatrixD& X, const std::vector<int>& labels, const PosteriorModelParams& p) {
  try {
    fit_posterior_model(X, labels, p, 1);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    return e.what();
  }
  return "";
}

}  // namespace

TEST(PosteriorModel, MatchesDirectFormula) {
  // Overlapping blobs so that posteriors are far from 0/1 and every digit of them is tested.
  const auto d = blobs(150, 3, 6, 2.0, 0.6, 11);
  for (double width : {0.0, 1.7}) {
    PosteriorModelParams p;
    p.per_class = 7;
    p.width = width;
    const auto res = fit_posterior_model(d.X, d.seen, p, 5);
    ASSERT_EQ(res.posteriors.rows, d.X.rows);
    ASSERT_EQ(res.posteriors.cols, 3);
    if (width > 0) {
      EXPECT_EQ(res.width, width);
    }
    const MatrixD ref = direct_posteriors(d.X, d.seen, res.centres, 3, res.width);
    for (size_t i = 0; i < ref.data.size(); ++i)
      ASSERT_NEAR(res.posteriors.data[i], ref.data[i], 1e-11) << "entry " << i << ", width " << res.width;
  }
}

TEST(PosteriorModel, CentresAreLabelledDrawsGroupedByClass) {
  auto d = blobs(200, 4, 3, 3.0, 0.5, 3);
  // Class 3 keeps only two labelled examples: fewer than per_class, so both become centres.
  int kept = 0;
  for (index_t n = 0; n < d.X.rows; ++n)
    if (d.seen[n] == 3 && ++kept > 2) d.seen[n] = -1;
  PosteriorModelParams p;
  p.per_class = 5;
  const auto res = fit_posterior_model(d.X, d.seen, p, 9);
  ASSERT_EQ(res.centres.size(), 5u * 3 + 2);
  std::set<index_t> unique(res.centres.begin(), res.centres.end());
  EXPECT_EQ(unique.size(), res.centres.size());
  for (size_t i = 0; i < res.centres.size(); ++i) {
    const int expect = static_cast<int>(std::min<size_t>(i / 5, 3));
    EXPECT_EQ(d.seen[res.centres[i]], expect) << "centre " << i;
  }
  EXPECT_GT(res.heldout_size, 0);
}

TEST(PosteriorModel, ChosenWidthBeatsGridAndRowsSumToOne) {
  const auto d = blobs(600, 5, 10, 0.8, 0.7, 21);
  PosteriorModelParams p;
  p.per_class = 10;
  p.width_grid = 12;
  const auto res = fit_posterior_model(d.X, d.seen, p, 2);
  expect_rows_are_distributions(res.posteriors);
  ASSERT_GT(res.width_trace.size(), static_cast<size_t>(p.width_grid));
  // The grid is log-spaced; the refinement points come after it.
  const double ratio = res.width_trace[1].first / res.width_trace[0].first;
  for (int i = 1; i < p.width_grid; ++i)
    EXPECT_NEAR(res.width_trace[i].first / res.width_trace[i - 1].first, ratio, 1e-9 * ratio);
  bool found = false;
  for (const auto& [s, ll] : res.width_trace) {
    EXPECT_TRUE(std::isfinite(ll)) << "width " << s;
    EXPECT_GE(res.heldout_loglik, ll) << "candidate width " << s << " scores better than the chosen " << res.width;
    found = found || (s == res.width && ll == res.heldout_loglik);
  }
  EXPECT_TRUE(found);
  // The optimum is interior (blobs overlap somewhat), so the refinement moved off the grid ends.
  EXPECT_GT(res.width, res.width_trace.front().first);
  EXPECT_LT(res.width, res.width_trace[p.width_grid - 1].first);
  // Scores at the given width agree with the search's own bookkeeping.
  PosteriorModelParams fixed = p;
  fixed.width = res.width;
  const auto again = fit_posterior_model(d.X, d.seen, fixed, 2);
  EXPECT_DOUBLE_EQ(again.heldout_loglik, res.heldout_loglik);
  EXPECT_TRUE(again.width_trace.empty());
}

TEST(PosteriorModel, SeparatedBlobsAreClassified) {
  const auto d = blobs(1000, 6, 20, 8.0, 0.2, 4);
  const auto res = fit_posterior_model(d.X, d.seen, PosteriorModelParams{}, 7);
  index_t right = 0;
  for (index_t n = 0; n < d.X.rows; ++n) {
    const double* p = res.posteriors.row(n);
    right += (std::max_element(p, p + 6) - p) == d.y[n];
  }
  EXPECT_GT(static_cast<double>(right) / d.X.rows, 0.95);
}

TEST(PosteriorModel, PixelScaleDistancesDoNotUnderflow) {
  // 784 dimensions on a 0..255 scale: squared distances ~1e7, so at width 20 the densities are
  // exp(-1e4): zero in plain arithmetic, fine in log space.
  std::mt19937_64 rng(8);
  MatrixD X(60, 784);
  std::vector<int> y(60);
  for (index_t n = 0; n < X.rows; ++n) {
    y[n] = static_cast<int>(n % 3);
    for (index_t d = 0; d < X.cols; ++d) X(n, d) = static_cast<double>((rng() % 128) + 64 * y[n]);
  }
  PosteriorModelParams p;
  p.per_class = 4;
  p.width = 20.0;
  const auto res = fit_posterior_model(X, y, p, 1);
  expect_rows_are_distributions(res.posteriors);
  p.width = 0.0;
  expect_rows_are_distributions(fit_posterior_model(X, y, p, 1).posteriors);
}

TEST(PosteriorModel, DeterministicForSeedAndThreads) {
  const auto d = blobs(700, 4, 40, 3.0, 0.5, 13);
  PosteriorModelParams p;
  const auto a = fit_posterior_model(d.X, d.seen, p, 42, 1);
  const auto b = fit_posterior_model(d.X, d.seen, p, 42, 1);
  const auto c = fit_posterior_model(d.X, d.seen, p, 42, 3);
  EXPECT_EQ(a.centres, b.centres);
  EXPECT_EQ(a.width, b.width);
  EXPECT_EQ(a.posteriors.data, b.posteriors.data);
  EXPECT_EQ(a.centres, c.centres);
  EXPECT_EQ(a.width_trace, c.width_trace);
  EXPECT_EQ(a.posteriors.data, c.posteriors.data);  // bit for bit across thread counts
  const auto other = fit_posterior_model(d.X, d.seen, p, 43, 1);
  EXPECT_NE(a.centres, other.centres);
}

TEST(PosteriorModel, ErrorsNameTheProblem) {
  const auto d = blobs(40, 2, 3, 3.0, 1.0, 1);
  const PosteriorModelParams p;
  auto has = [](const std::string& msg, const std::string& part) {
    return msg.find(part) != std::string::npos ? ::testing::AssertionSuccess()
                                               : ::testing::AssertionFailure() << "\"" << msg << "\" lacks \"" << part << "\"";
  };
  EXPECT_TRUE(has(error_of(d.X, std::vector<int>(39, 0), p), "39 labels for 40 vectors"));

  MatrixD bad = d.X;
  bad(2, 1) = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(has(error_of(bad, d.seen, p), "row 3, column 2"));
  bad(2, 1) = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(has(error_of(bad, d.seen, p), "row 3, column 2"));

  auto labels = d.seen;
  labels[5] = -2;
  EXPECT_TRUE(has(error_of(d.X, labels, p), "label -2 at row 6"));
  labels[5] = std::numeric_limits<int>::max();  // K = max + 1 overflowed and sized a vector by it
  EXPECT_TRUE(has(error_of(d.X, labels, p), "label 2147483647 at row 6"));
  labels[5] = 40;  // no more classes than vectors
  EXPECT_TRUE(has(error_of(d.X, labels, p), "label 40 at row 6"));
  EXPECT_TRUE(has(error_of(d.X, std::vector<int>(40, 0), p), "at least 2 classes"));
  EXPECT_TRUE(has(error_of(d.X, std::vector<int>(40, -1), p), "at least 2 classes"));
  labels = d.seen;
  for (int& v : labels) v = v == 1 ? 2 : v;
  EXPECT_TRUE(has(error_of(d.X, labels, p), "class 1 has no labelled vector"));

  PosteriorModelParams q;
  q.per_class = 0;
  EXPECT_TRUE(has(error_of(d.X, d.seen, q), "input.posterior_model.per_class"));
  q = {};
  q.width = -1.0;
  EXPECT_TRUE(has(error_of(d.X, d.seen, q), "input.posterior_model.width"));
  q = {};
  q.width_grid = 2;
  EXPECT_TRUE(has(error_of(d.X, d.seen, q), "input.posterior_model.width_grid"));
  // Every labelled vector becomes a centre: nothing is left to choose the width on.
  q = {};
  q.per_class = 100;
  EXPECT_TRUE(has(error_of(d.X, d.seen, q), "are centres"));
  q.width = 1.0;
  const auto res = fit_posterior_model(d.X, d.seen, q, 1);
  EXPECT_EQ(res.heldout_size, 0);
  EXPECT_TRUE(std::isnan(res.heldout_loglik));
  expect_rows_are_distributions(res.posteriors);
}

TEST(PosteriorModel, FieldTableReadsAndRejects) {
  PosteriorModelParams p;
  read_fields(json{{"per_class", 3}, {"width", 0.5}}, p, posterior_model_fields(), "input.posterior_model");
  EXPECT_EQ(p.per_class, 3);
  EXPECT_EQ(p.width, 0.5);
  EXPECT_THROW(read_fields(json{{"holdout", 5}}, p, posterior_model_fields(), "x"), Error);
  EXPECT_THROW(read_fields(json{{"perclass", 5}}, p, posterior_model_fields(), "x"), Error);
  const json echo = fields_to_json(p, posterior_model_fields());
  EXPECT_EQ(echo.size(), 4u);
  EXPECT_EQ(echo["holdout"], 2000);
}
