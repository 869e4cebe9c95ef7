// Out-of-sample placement's per-point arithmetic (math/place.hpp), which the CPU placement engine and
// the CUDA kernels both call: the ordered visit and the weighted median against a sort, the first
// step length against its closed form, the cost's gradient against central differences of the cost
// with the exact sums recomputed at each probe, and the step rule.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>
#include <vector>

#include "common/gradient_check.hpp"
#include "orrery/math/place.hpp"
#include "orrery/types.hpp"

using namespace orrery;

namespace {

// The median as the placement computed it before it was shared: sort the pairs, sum the weights in
// that order, the first value whose running weight reaches half.
double sorted_median(std::vector<std::pair<double, double>> vw) {
  std::sort(vw.begin(), vw.end());
  double total = 0;
  for (const auto& v : vw) total += v.second;
  double run = 0;
  for (const auto& v : vw) {
    run += v.second;
    if (run >= 0.5 * total) return v.first;
  }
  return vw.back().first;
}

TEST(PlaceMath, PairsAreVisitedInSortedOrderWithTheirMultiplicity) {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    const int k = 1 + static_cast<int>(rng() % 40);
    std::vector<std::pair<double, double>> vw(static_cast<size_t>(k));
    for (auto& v : vw) v = {static_cast<double>(rng() % 7) - 3.0, static_cast<double>(rng() % 3) * 0.25};  // ties
    std::vector<std::pair<double, double>> seen;
    math::for_each_in_order<double>(
        k, [&](int l) { return vw[static_cast<size_t>(l)].first; },
        [&](int l) { return vw[static_cast<size_t>(l)].second; },
        [&](double v, double w) {
          seen.emplace_back(v, w);
          return false;
        });
    std::sort(vw.begin(), vw.end());
    EXPECT_EQ(seen, vw) << "trial " << trial;
  }
}

TEST(PlaceMath, WeightedMedianIsTheSortedOnesToTheBit) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> z(0.0, 3.0);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int trial = 0; trial < 500; ++trial) {
    const int k = 1 + static_cast<int>(rng() % 60);
    std::vector<double> v(static_cast<size_t>(k)), w(static_cast<size_t>(k));
    for (int l = 0; l < k; ++l) {
      v[static_cast<size_t>(l)] = trial % 3 == 0 ? std::round(z(rng)) : z(rng);  // some with ties
      w[static_cast<size_t>(l)] = trial % 5 == 0 && l % 2 ? 0.0 : u(rng);       // some weights 0
    }
    std::vector<std::pair<double, double>> vw;
    for (int l = 0; l < k; ++l) vw.emplace_back(v[static_cast<size_t>(l)], w[static_cast<size_t>(l)]);
    const double m = math::weighted_median<double>(
        k, [&](int l) { return v[static_cast<size_t>(l)]; }, [&](int l) { return w[static_cast<size_t>(l)]; });
    EXPECT_EQ(m, sorted_median(vw)) << "trial " << trial;
  }
  // all weight on one value; half and half (the lower of the two reaches half first)
  const double v2[3] = {4.0, -1.0, 2.0}, w1[3] = {0.0, 0.0, 1.0}, w2[3] = {0.5, 0.5, 0.0};
  auto value = [&](int l) { return v2[l]; };
  EXPECT_EQ(math::weighted_median<double>(3, value, [&](int l) { return w1[l]; }), 2.0);
  EXPECT_EQ(math::weighted_median<double>(3, value, [&](int l) { return w2[l]; }), -1.0);
}

// A small reference map and one new point's neighbors among it.
struct Reference {
  MatrixD R;
  std::vector<index_t> nb = {3, 7, 11, 19, 23, 31};
  std::vector<double> p = {0.3, 0.25, 0.2, 0.1, 0.15, 0.0};  // the last neighbor adds nothing
};

Reference reference(int D, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0.0, 2.0);
  Reference r;
  r.R = MatrixD(40, D);
  for (double& v : r.R.data) v = z(rng);
  return r;
}

template <int D>
double cost_with_exact_sums(const Reference& r, const double* y, double alpha, double* grad) {
  math::HssneRow<double, D> acc;
  math::place_exact_sums<D>(y, r.R.data.data(), r.R.rows, alpha, acc);
  return math::place_cost<D>(y, r.R.data.data(), r.nb.data(), r.p.data(), static_cast<int>(r.nb.size()), alpha,
                             acc.h_sum, acc.hs_sum, acc.hsy, grad);
}

template <int D>
void check_gradient(double alpha) {
  const Reference r = reference(D, 4 + D);
  const std::vector<double> y = {0.4, -0.7, 0.2};
  std::vector<double> g(D), at(y.begin(), y.begin() + D);
  cost_with_exact_sums<D>(r, at.data(), alpha, g.data());
  const auto f = [&](const std::vector<double>& x) {
    double scratch[D];
    return cost_with_exact_sums<D>(r, x.data(), alpha, scratch);
  };
  test::FdOptions o;
  o.h = 1e-5;
  o.what = "placement cost, D " + std::to_string(D) + ", alpha " + std::to_string(alpha);
  EXPECT_TRUE(test::gradient_matches(f, at, g, o));
}

TEST(PlaceMath, CostGradientMatchesFiniteDifferences) {
  for (double alpha : {0.0, 0.5, 1.0, 2.0}) {
    check_gradient<2>(alpha);
    check_gradient<3>(alpha);
  }
}

// The exact sums are HssneRow's repulsive sums over every reference point, none left out.
TEST(PlaceMath, ExactSumsCoverEveryReferencePoint) {
  const Reference r = reference(2, 9);
  const double y[2] = {0.3, 0.1}, alpha = 0.5;
  math::HssneRow<double, 2> acc;
  math::place_exact_sums<2>(y, r.R.data.data(), r.R.rows, alpha, acc);
  double h = 0, hs = 0, hsy0 = 0;
  for (index_t j = 0; j < r.R.rows; ++j) {
    const double tau = std::pow(y[0] - r.R(j, 0), 2) + std::pow(y[1] - r.R(j, 1), 2);
    const double hj = std::pow(alpha * tau + 1, -1 / alpha);
    h += hj, hs += hj / (alpha * tau + 1), hsy0 += hj / (alpha * tau + 1) * r.R(j, 0);
  }
  EXPECT_NEAR(acc.h_sum, h, 1e-12 * h);
  EXPECT_NEAR(acc.hs_sum, hs, 1e-12 * hs);
  EXPECT_NEAR(acc.hsy[0], hsy0, 1e-12 * (std::abs(hsy0) + 10 * hs));
}

TEST(PlaceMath, FirstStepIsTheInverseAttractionCurvature) {
  const Reference r = reference(3, 11);
  const double y[3] = {0.1, 0.2, -0.3}, alpha = 1.0;
  double a = 0;
  for (size_t l = 0; l < r.nb.size(); ++l) {
    double tau = 0;
    for (int d = 0; d < 3; ++d) tau += std::pow(y[d] - r.R(r.nb[l], d), 2);
    a += r.p[l] / (1 + tau);
  }
  const int k = static_cast<int>(r.nb.size());
  EXPECT_DOUBLE_EQ(math::place_first_step<3>(y, r.R.data.data(), r.nb.data(), r.p.data(), k, alpha), 1 / (2 * a));
  const std::vector<double> none(r.p.size(), 0.0);  // no attraction: the length stops at the floor
  EXPECT_EQ(math::place_first_step<3>(y, r.R.data.data(), r.nb.data(), none.data(), k, alpha),
            1 / (2 * math::kPlaceMinCurvature));
}

TEST(PlaceMath, StartIsThePerAxisMedianOfTheNeighbors) {
  const Reference r = reference(2, 13);
  double y[2];
  const int k = static_cast<int>(r.nb.size());
  math::place_start<2>(r.R.data.data(), r.nb.data(), r.p.data(), k, y);
  for (int d = 0; d < 2; ++d) {
    std::vector<std::pair<double, double>> vw;
    for (int l = 0; l < k; ++l) vw.emplace_back(r.R(r.nb[static_cast<size_t>(l)], d), r.p[static_cast<size_t>(l)]);
    EXPECT_EQ(y[d], sorted_median(vw)) << "axis " << d;
  }
}

// A lower trial is taken and the length grows; a higher (or equal) one is refused and the length
// cut; the point stops when its next step eta |grad| is below tol.
TEST(PlaceMath, TheStepRuleNeverRaisesTheCost) {
  double y[2] = {1.0, 2.0}, grad[2] = {0.3, -0.4}, cost = 5.0, eta = 0.1;
  const double trial[2] = {0.97, 2.04}, trial_grad[2] = {0.06, 0.08};
  EXPECT_TRUE(math::place_accept<2>(4.0, trial, trial_grad, 1e-4, cost, y, grad, eta));
  EXPECT_EQ(cost, 4.0);
  EXPECT_EQ(y[0], 0.97);
  EXPECT_EQ(grad[1], 0.08);
  EXPECT_DOUBLE_EQ(eta, 0.1 * math::kPlaceGrow);
  const double worse[2] = {5.0, 5.0};
  EXPECT_TRUE(math::place_accept<2>(4.0, worse, trial_grad, 1e-4, cost, y, grad, eta));  // equal: refused
  EXPECT_EQ(cost, 4.0);
  EXPECT_EQ(y[0], 0.97);
  EXPECT_DOUBLE_EQ(eta, 0.1 * math::kPlaceGrow * math::kPlaceCut);
  // refused again: eta 0.03 and |grad| 0.1, a next step of 0.003 < tol 0.1 stops the point
  EXPECT_FALSE(math::place_accept<2>(9.0, worse, trial_grad, 0.1, cost, y, grad, eta));
  double step[2];
  math::place_trial<2>(y, grad, 2.0, step);
  EXPECT_DOUBLE_EQ(step[0], 0.97 - 2.0 * 0.06);
  EXPECT_DOUBLE_EQ(step[1], 2.04 - 2.0 * 0.08);
}

}  // namespace
