// Quality measures on a seeded subsample of query points: each query's per-point terms are those
// of the full computation (ranks against all points), the estimates are the full formulas with the
// point count of the sums replaced by the number of queries, the sample is a deterministic
// function of the seed, and the reported standard error matches the spread over seeds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "orrery/backend.hpp"
#include "orrery/error.hpp"
#include "orrery/quality.hpp"

using namespace orrery;

namespace {

constexpr index_t kN = 400;
constexpr int kClasses = 4;

// Four Gaussian clusters in 6-D (labels = cluster) and a map of their first two coordinates with
// noise, so every measure is away from its perfect value.
struct Data {
  MatrixD X, Y;
  std::vector<int> labels;
};

Data clusters() {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> z(0, 1);
  Data d{MatrixD(kN, 6), MatrixD(kN, 2), std::vector<int>(kN)};
  for (index_t i = 0; i < kN; ++i) {
    const int c = static_cast<int>(i % kClasses);
    d.labels[static_cast<size_t>(i)] = i % 10 == 3 ? -1 : c;  // some unlabelled points
    for (index_t j = 0; j < 6; ++j) d.X(i, j) = z(rng) + (j == c ? 4.0 : 0.0);
    for (index_t j = 0; j < 2; ++j) d.Y(i, j) = d.X(i, j) + 1.5 * z(rng);
  }
  return d;
}

QualityRequest sampled(index_t queries, unsigned long long seed, int threads = 1) {
  QualityRequest req;
  req.ks = {1, 5, 12};
  req.curve = false;
  req.queries = queries;
  req.seed = seed;
  req.threads = threads;
  return req;
}

}  // namespace

TEST(QualitySample, EstimatesAreTheFullFormulasOverTheQueryRows) {
  const Data d = clusters();
  const QualityRequest req = sampled(90, 17);
  const std::vector<index_t> q = quality_queries(kN, req);
  ASSERT_EQ(q.size(), 90u);
  const QualityReport rep = evaluate_quality(d.X, d.Y, d.labels, req, *make_cpu_backend(0));
  EXPECT_EQ(rep.num_points, kN);
  EXPECT_EQ(rep.queries, 90);
  EXPECT_EQ(rep.seed, 17u);
  ASSERT_EQ(rep.at_k_se.size(), req.ks.size());

  // The full rows, every point against every point; the query rows must be the same integers.
  const int kmax = 12;
  const auto cpu = make_cpu_backend(2);
  const RankRows full = cpu->rank_rows(d.X, d.Y, kmax, RankInput::vectors, {});
  const RankRows part = cpu->rank_rows(d.X, d.Y, kmax, RankInput::vectors, q);
  ASSERT_EQ(part.map_neighbors.size(), q.size() * kmax);
  EXPECT_EQ(part.queries, q);
  for (size_t r = 0; r < q.size(); ++r)
    for (int l = 0; l < kmax; ++l) {
      const size_t a = r * kmax + l, b = static_cast<size_t>(q[r]) * kmax + l;
      ASSERT_EQ(part.map_neighbors[a], full.map_neighbors[b]) << "query " << q[r];
      ASSERT_EQ(part.input_rank_of_map_nb[a], full.input_rank_of_map_nb[b]) << "query " << q[r];
      ASSERT_EQ(part.map_rank_of_input_nb[a], full.map_rank_of_input_nb[b]) << "query " << q[r];
    }

  // The estimators by hand from the full rows of the query points.
  const double N = kN, Q = static_cast<double>(q.size());
  std::vector<std::int64_t> coranking(static_cast<size_t>(kmax) * kmax, 0);
  for (size_t a = 0; a < req.ks.size(); ++a) {
    const int K = req.ks[a];
    std::int64_t t = 0, c = 0, ov = 0;
    double wn = 0, wv = 0;
    std::int64_t hit1 = 0, known = 0;
    for (index_t i : q) {
      const std::int64_t* rho = full.input_rank_of_map_nb.data() + i * kmax;
      const std::int64_t* r = full.map_rank_of_input_nb.data() + i * kmax;
      for (int l = 0; l < K; ++l) {
        t += rho[l] > K ? rho[l] - K : 0;
        c += r[l] > K ? r[l] - K : 0;
        ov += rho[l] <= K;
        wn += static_cast<double>(std::abs(rho[l] - (l + 1))) / (l + 1);
        wv += static_cast<double>(std::abs(r[l] - (l + 1))) / (l + 1);
      }
      if (a == 0)
        for (int l = 0; l < kmax; ++l)
          if (rho[l] <= kmax) ++coranking[static_cast<size_t>((rho[l] - 1) * kmax + l)];
      if (d.labels[static_cast<size_t>(i)] >= 0) {
        ++known;
        hit1 += d.labels[static_cast<size_t>(full.map_neighbors[static_cast<size_t>(i) * kmax])] ==
                d.labels[static_cast<size_t>(i)];
      }
    }
    double H = 0;
    for (int k = 1; k <= K; ++k) H += std::abs(N - 2.0 * k + 1.0) / k;
    const QualityAtK& e = rep.at_k[a];
    EXPECT_EQ(e.trustworthiness, 1.0 - 2.0 * static_cast<double>(t) / (Q * K * (2 * N - 3.0 * K - 1))) << "K=" << K;
    EXPECT_EQ(e.continuity, 1.0 - 2.0 * static_cast<double>(c) / (Q * K * (2 * N - 3.0 * K - 1))) << "K=" << K;
    EXPECT_EQ(e.lcmc, K / (1.0 - N) + static_cast<double>(ov) / (Q * K)) << "K=" << K;
    // real sums: the same terms, summed in chunks rather than in one run
    EXPECT_NEAR(e.mrre_neighborhood, wn / (Q * H), 1e-15) << "K=" << K;
    EXPECT_NEAR(e.mrre_visual, wv / (Q * H), 1e-15) << "K=" << K;
    if (K == 1) {  // 1-NN: a hit when the nearest map neighbor (labelled or not) has the same label
      EXPECT_EQ(rep.homogeneity_1nn, static_cast<double>(hit1) / static_cast<double>(known));
    }
    for (double se : {rep.at_k_se[a].trustworthiness, rep.at_k_se[a].continuity, rep.at_k_se[a].lcmc,
                      rep.at_k_se[a].mrre_neighborhood, rep.at_k_se[a].knn_accuracy})
      EXPECT_TRUE(se > 0 && se < 0.2) << "K=" << K << " se " << se;
  }
  EXPECT_EQ(rep.coranking, coranking);
}

TEST(QualitySample, DeterministicForASeedAndTheThreadCount) {
  const Data d = clusters();
  const std::vector<index_t> a = quality_queries(kN, sampled(100, 3)), b = quality_queries(kN, sampled(100, 3)),
                             c = quality_queries(kN, sampled(100, 4));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));
  EXPECT_EQ(std::set<index_t>(a.begin(), a.end()).size(), a.size());
  EXPECT_GE(a.front(), 0);
  EXPECT_LT(a.back(), kN);

  const QualityReport r1 = evaluate_quality(d.X, d.Y, d.labels, sampled(100, 3, 1), *make_cpu_backend(0)),
                      r2 = evaluate_quality(d.X, d.Y, d.labels, sampled(100, 3, 2), *make_cpu_backend(0)),
                      r3 = evaluate_quality(d.X, d.Y, d.labels, sampled(100, 4, 2), *make_cpu_backend(0));
  for (size_t k = 0; k < r1.at_k.size(); ++k) {
    EXPECT_EQ(r1.at_k[k].trustworthiness, r2.at_k[k].trustworthiness);
    EXPECT_EQ(r1.at_k[k].continuity, r2.at_k[k].continuity);
    EXPECT_EQ(r1.at_k[k].mrre_neighborhood, r2.at_k[k].mrre_neighborhood);
    EXPECT_EQ(r1.at_k[k].mrre_visual, r2.at_k[k].mrre_visual);
    EXPECT_EQ(r1.at_k[k].lcmc, r2.at_k[k].lcmc);
    EXPECT_EQ(r1.at_k[k].knn_accuracy, r2.at_k[k].knn_accuracy);
    EXPECT_EQ(r1.at_k_se[k].trustworthiness, r2.at_k_se[k].trustworthiness);
  }
  EXPECT_EQ(r1.coranking, r2.coranking);
  EXPECT_NE(r1.at_k[2].trustworthiness, r3.at_k[2].trustworthiness);  // another seed, other queries
}

TEST(QualitySample, SizeRuleIsARequestParameter) {
  QualityRequest req;
  req.sample_above = 300;
  req.sample_queries = 70;
  EXPECT_EQ(quality_queries(kN, req).size(), 70u);  // above the threshold: the rule's sample
  EXPECT_TRUE(quality_queries(300, req).empty());   // at it: all points
  req.queries = 0;
  EXPECT_TRUE(quality_queries(kN, req).empty());    // 0: all points at any size
  req.queries = kN;
  EXPECT_TRUE(quality_queries(kN, req).empty());    // as many as there are points: all of them
  req.queries = 25;
  EXPECT_EQ(quality_queries(kN, req).size(), 25u);  // a count overrides the rule either side of it
  EXPECT_EQ(quality_queries(200, req).size(), 25u);
  // the shipped rule: all points up to kQualitySampleAbove
  EXPECT_TRUE(quality_queries(kQualitySampleAbove, QualityRequest{}).empty());
  EXPECT_EQ(quality_queries(kQualitySampleAbove + 1, QualityRequest{}).size(), static_cast<size_t>(kQualityQueries));

  const Data d = clusters();
  req.queries = -1;
  req.ks = {5};
  const QualityReport all = evaluate_quality(d.X, d.Y, d.labels, [&] { auto r = req; r.queries = 0; return r; }(), *make_cpu_backend(0));
  EXPECT_EQ(all.queries, kN);
  EXPECT_TRUE(all.at_k_se.empty());
  EXPECT_EQ(evaluate_quality(d.X, d.Y, d.labels, req, *make_cpu_backend(0)).queries, 70);
}

// Over many seeds the estimates centre on the full value (unbiased) and spread as the reported
// standard error says. Deterministic: the seeds are fixed.
TEST(QualitySample, EstimatesCentreOnTheFullValueWithTheReportedSpread) {
  const Data d = clusters();
  QualityRequest req = sampled(0, 0);
  req.ks = {10};
  const QualityAtK full = evaluate_quality(d.X, d.Y, d.labels, req, *make_cpu_backend(0)).at_k[0];
  constexpr int kSeeds = 60;
  double se_mean = 0;
  std::vector<double> t, lc;
  for (int s = 0; s < kSeeds; ++s) {
    req.queries = 80;
    req.seed = 1000 + s;
    const QualityReport r = evaluate_quality(d.X, d.Y, d.labels, req, *make_cpu_backend(0));
    t.push_back(r.at_k[0].trustworthiness);
    lc.push_back(r.at_k[0].lcmc);
    se_mean += r.at_k_se[0].trustworthiness / kSeeds;
  }
  auto mean = [](const std::vector<double>& v) {
    double m = 0;
    for (double x : v) m += x / static_cast<double>(v.size());
    return m;
  };
  double sd = 0;
  for (double x : t) sd += (x - mean(t)) * (x - mean(t)) / (kSeeds - 1);
  sd = std::sqrt(sd);
  // the mean of 60 estimates lies within 4 standard errors of the mean of the full value
  EXPECT_LT(std::abs(mean(t) - full.trustworthiness), 4 * se_mean / std::sqrt(kSeeds));
  EXPECT_LT(std::abs(mean(lc) - full.lcmc), 0.05);
  EXPECT_GT(sd, 0.6 * se_mean);
  EXPECT_LT(sd, 1.5 * se_mean);
}

TEST(QualitySample, BadQueryCountIsAnInputError) {
  const Data d = clusters();
  QualityRequest req = sampled(-2, 0);
  EXPECT_THROW(evaluate_quality(d.X, d.Y, d.labels, req, *make_cpu_backend(0)), Error);
}
