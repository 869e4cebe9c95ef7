// math/nerv_place.hpp through nerv_placement_cost: the cost against a direct evaluation of its
// definition, its gradient and Hessian against central differences (2-D and 3-D, recall only,
// precision only and between), the floor against nerv_row_log_floors, and the minimisation: it ends
// where the gradient vanishes, its cost never above the start's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "common/gradient_check.hpp"
#include "orrery/affinity.hpp"
#include "orrery/math/nerv_place.hpp"
#include "orrery/nerv.hpp"
#include "orrery/nerv_place.hpp"

using namespace orrery;

namespace {

struct Case {
  MatrixD R;                // N x D reference map
  std::vector<index_t> nb;  // k listed
  std::vector<double> p;    // k, summing to 1
  double beta = 0.0;
};

Case make_case(index_t N, int D, int k, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0.0, 1.0);
  std::uniform_real_distribution<double> u(0.1, 1.0);
  Case c;
  c.R = MatrixD(N, D);
  for (double& v : c.R.data) v = 2.0 * z(rng);
  std::vector<index_t> all(static_cast<size_t>(N));
  for (index_t j = 0; j < N; ++j) all[static_cast<size_t>(j)] = j;
  std::shuffle(all.begin(), all.end(), rng);
  c.nb.assign(all.begin(), all.begin() + k);
  double s = 0.0;
  for (int l = 0; l < k; ++l) c.p.push_back(u(rng)), s += c.p.back();
  for (double& v : c.p) v /= s;
  c.p[static_cast<size_t>(k - 1)] = 0.0;  // a listed neighbor without mass: log p is floored
  c.beta = 0.7;
  return c;
}

// C(y) straight from its definition: q over every reference point, p = 0 and the row's floor
// outside the list, the floor of nerv_row_log_floors's rule.
double direct_cost(const Case& c, const double* y, double lambda) {
  const index_t N = c.R.rows;
  const int D = static_cast<int>(c.R.cols);
  double pmin = std::numeric_limits<double>::infinity();
  for (const double v : c.p)
    if (v > 0) pmin = std::min(pmin, v);
  const double lpf = std::log(1e-3 * pmin);
  std::vector<double> s(static_cast<size_t>(N)), p(static_cast<size_t>(N), 0.0),
      lp(static_cast<size_t>(N), lpf);
  for (size_t l = 0; l < c.nb.size(); ++l) {
    p[static_cast<size_t>(c.nb[l])] = c.p[l];
    lp[static_cast<size_t>(c.nb[l])] = std::log(std::max(c.p[l], 1e-300));
  }
  double top = -std::numeric_limits<double>::infinity();
  for (index_t j = 0; j < N; ++j) {
    double d = 0;
    for (int a = 0; a < D; ++a) d += (y[a] - c.R(j, a)) * (y[a] - c.R(j, a));
    s[static_cast<size_t>(j)] = -c.beta * d;
    top = std::max(top, s[static_cast<size_t>(j)]);
  }
  double z = 0;
  for (const double v : s) z += std::exp(v - top);
  const double lse = top + std::log(z);
  double pq = 0, qp = 0;
  for (size_t j = 0; j < s.size(); ++j) {
    const double lq = s[j] - lse, q = std::exp(lq);
    if (p[j] > 0) pq += p[j] * (lp[j] - lq);
    qp += q * (lq - lp[j]);
  }
  return lambda * pq + (1 - lambda) * qp;
}

class NervPlaceMath : public ::testing::TestWithParam<std::tuple<int, double>> {};

TEST_P(NervPlaceMath, CostIsItsDefinitionAndGradientAndHessianAreItsDerivatives) {
  const auto [D, lambda] = GetParam();
  const Case c = make_case(60, D, 9, 11u + static_cast<unsigned>(D));
  for (int trial = 0; trial < 3; ++trial) {
    std::vector<double> y(static_cast<size_t>(D));
    for (int a = 0; a < D; ++a) y[static_cast<size_t>(a)] = c.R(trial, a) + 0.3 * (a + 1);
    std::vector<double> g(static_cast<size_t>(D)), H(static_cast<size_t>(D * D));
    const double C = nerv_placement_cost(y.data(), c.R, c.nb.data(), c.p.data(), 9, c.beta, lambda, g.data(), H.data());
    EXPECT_NEAR(C, direct_cost(c, y.data(), lambda), 1e-11 * (1 + std::abs(C))) << "D " << D << " lambda " << lambda;
    const auto f = [&](const std::vector<double>& x) {
      return nerv_placement_cost(x.data(), c.R, c.nb.data(), c.p.data(), 9, c.beta, lambda);
    };
    EXPECT_TRUE(test::gradient_matches(f, y, g, {1e-5, 1e-6, 1, "dC/dy"}));
    for (int b = 0; b < D; ++b) {  // column b of the Hessian: central differences of the gradient
      std::vector<double> a1 = y, a2 = y, g1(static_cast<size_t>(D)), g2(static_cast<size_t>(D));
      a1[static_cast<size_t>(b)] += 1e-5;
      a2[static_cast<size_t>(b)] -= 1e-5;
      nerv_placement_cost(a1.data(), c.R, c.nb.data(), c.p.data(), 9, c.beta, lambda, g1.data());
      nerv_placement_cost(a2.data(), c.R, c.nb.data(), c.p.data(), 9, c.beta, lambda, g2.data());
      for (int a = 0; a < D; ++a) {
        const double fd = (g1[static_cast<size_t>(a)] - g2[static_cast<size_t>(a)]) / 2e-5;
        EXPECT_NEAR(H[static_cast<size_t>(a * D + b)], fd, 1e-5 * (1 + std::abs(fd)))
            << "d2C/dy" << a << "dy" << b << ", D " << D << " lambda " << lambda;
      }
    }
    for (int a = 0; a < D; ++a)
      EXPECT_DOUBLE_EQ(H[static_cast<size_t>(a * D + (a + 1) % D)], H[static_cast<size_t>(((a + 1) % D) * D + a)]);
  }
}

INSTANTIATE_TEST_SUITE_P(Tradeoffs, NervPlaceMath,
                         ::testing::Combine(::testing::Values(2, 3), ::testing::Values(0.0, 0.3, 1.0)));

TEST(NervPlaceMath, FloorIsTheSparseRowsFloor) {
  // the new point as the last of N + 1 points, its list as a CSR row; the others' rows empty
  const Case c = make_case(40, 2, 7, 3);
  SparseAffinity P;
  P.num_points = 41;
  P.row_ptr.assign(41, 0);
  P.row_ptr.push_back(7);
  P.col = c.nb;
  P.val = c.p;
  const std::vector<double> lpf = nerv_row_log_floors(P);
  EXPECT_DOUBLE_EQ(math::nerv_place_log_floor(c.p.data(), 7, 40), lpf[40]);
  EXPECT_DOUBLE_EQ(math::nerv_place_log_floor(c.p.data(), 0, 40), lpf[0]) << "an empty row";
}

// One point minimised with serial sums (as the CPU's placement sums them).
template <int D>
math::NervPlaceOutcome<double> minimise(const Case& c, int k, double lambda, double* y) {
  const math::NervPlaceRow<double, index_t> r =
      math::nerv_place_row(c.R.data.data(), static_cast<long long>(c.R.rows), c.nb.data(), c.p.data(), k, c.beta, lambda);
  math::nerv_place_start<D>(c.R.data.data(), c.nb.data(), c.p.data(), k, y);
  const auto serial = [&](int pass, const double* z, double m, const math::NervRow<double>& row, double* out) {
    for (int s = 0; s < math::NervPlaceSizes<D>::moments; ++s) out[s] = 0.0;
    if (pass == 0) out[0] = std::numeric_limits<double>::infinity();
    if (pass == 0) math::nerv_place_min_part<D>(r, z, 0, 1, out);
    else if (pass == 1) math::nerv_place_row_part<D>(r, z, m, 0, 1, out);
    else math::nerv_place_moment_part<D>(r, row, z, 0, 1, out);
  };
  return math::nerv_place_minimise<D>(r, y, 100, 1e-9, serial);
}

TEST(NervPlaceMath, MinimisationEndsAtAStationaryPointBelowItsStart) {
  for (const int D : {2, 3}) {
    const Case c = make_case(80, D, 12, 5);
    double y[3] = {0, 0, 0};
    if (D == 2) math::nerv_place_start<2>(c.R.data.data(), c.nb.data(), c.p.data(), 12, y);
    else math::nerv_place_start<3>(c.R.data.data(), c.nb.data(), c.p.data(), 12, y);
    const double start = nerv_placement_cost(y, c.R, c.nb.data(), c.p.data(), 12, c.beta, 0.3);
    const math::NervPlaceOutcome<double> o = D == 2 ? minimise<2>(c, 12, 0.3, y) : minimise<3>(c, 12, 0.3, y);
    double g[3] = {0, 0, 0};
    const double end = nerv_placement_cost(y, c.R, c.nb.data(), c.p.data(), 12, c.beta, 0.3, g);
    EXPECT_LT(end, start) << "D " << D;
    EXPECT_DOUBLE_EQ(o.cost, end) << "the outcome's cost is the cost at its place";
    EXPECT_LT(std::sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]), 1e-6) << "D " << D;
    EXPECT_GT(o.steps, 0);
    EXPECT_LT(o.steps, 100) << "converged before the cap";
  }
}

}  // namespace
