// math::nan_max (math/hd.hpp), the max of the CUDA reductions (kernels/reduce.cuh MaxOp, PE's and
// PLSV's statistics): a NaN in either argument, and so anywhere in a fold, comes out as NaN,
// whatever the order the reduction visits the items in; without NaN it is the ordinary max.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "orrery/backend.hpp"
#include "orrery/math/hd.hpp"

using namespace orrery;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// A left fold from the identity 0 (the reductions' identity over values >= 0).
double left_fold(const std::vector<double>& v) {
  double m = 0.0;
  for (double x : v) m = math::nan_max(m, x);
  return m;
}

// The device's shape: `threads` strided partial folds, then a pairwise tree over the partials.
double strided_tree_fold(const std::vector<double>& v, int threads) {
  std::vector<double> part(static_cast<size_t>(threads), 0.0);
  for (size_t i = 0; i < v.size(); ++i) part[i % part.size()] = math::nan_max(part[i % part.size()], v[i]);
  for (size_t width = part.size(); width > 1; width = (width + 1) / 2)
    for (size_t i = 0; i + (width + 1) / 2 < width; ++i) part[i] = math::nan_max(part[i], part[i + (width + 1) / 2]);
  return part[0];
}

TEST(NanMax, NaNInEitherArgumentIsNaN) {
  for (double x : {0.0, -1.0, 3.5, kInf, -kInf}) {
    EXPECT_TRUE(std::isnan(math::nan_max(kNaN, x))) << x;
    EXPECT_TRUE(std::isnan(math::nan_max(x, kNaN))) << x;
    EXPECT_TRUE(std::isnan(math::nan_max(static_cast<float>(x), std::numeric_limits<float>::quiet_NaN())));
    EXPECT_TRUE(std::isnan(math::nan_max(std::numeric_limits<float>::quiet_NaN(), static_cast<float>(x))));
  }
  EXPECT_TRUE(std::isnan(math::nan_max(kNaN, kNaN)));
  // the max it replaces loses the NaN in one of the two orders
  const auto plain = [](double a, double b) { return a > b ? a : b; };
  EXPECT_FALSE(std::isnan(plain(kNaN, 1.0)));
  EXPECT_FALSE(std::isnan(std::fmax(1.0, kNaN)));
}

TEST(NanMax, WithoutNaNItIsTheMax) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(-10.0, 10.0);
  for (int t = 0; t < 1000; ++t) {
    const double a = u(rng), b = t % 7 == 0 ? a : u(rng);
    EXPECT_EQ(math::nan_max(a, b), std::max(a, b));
    EXPECT_EQ(math::nan_max(b, a), std::max(a, b));
  }
  EXPECT_EQ(math::nan_max(kInf, 1.0), kInf);
  EXPECT_EQ(math::nan_max(-kInf, 1.0), 1.0);
}

TEST(NanMax, ANaNAnywhereSurvivesEveryFold) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(0.0, 100.0);
  for (int n : {1, 2, 3, 17, 256, 1000}) {
    std::vector<double> v(static_cast<size_t>(n));
    for (double& x : v) x = u(rng);
    const double expect = *std::max_element(v.begin(), v.end());
    EXPECT_EQ(left_fold(v), expect);
    EXPECT_EQ(strided_tree_fold(v, 32), expect);
    for (int at = 0; at < n; ++at) {
      std::vector<double> w(v);
      w[static_cast<size_t>(at)] = kNaN;
      EXPECT_TRUE(std::isnan(left_fold(w))) << "n " << n << ", NaN at " << at;
      std::reverse(w.begin(), w.end());
      EXPECT_TRUE(std::isnan(left_fold(w))) << "n " << n << ", NaN at " << at << ", reversed";
      for (int threads : {1, 7, 32, 256})
        EXPECT_TRUE(std::isnan(strided_tree_fold(w, threads))) << "n " << n << ", NaN at " << at << ", " << threads;
    }
  }
}

}  // namespace

// The CPU reference's PE sweep totals (orrery/backend.hpp) keep a NaN gradient norm too, in any
// object and any chunk, so the CPU and the device agree on a NaN and the stop test sees it.
TEST(NanMax, PeSweepTotalsKeepANaNGradientNorm) {
  struct Object {
    double grad_sq;
    bool converged;
    int iterations;
  };
  for (int at = 0; at < 3; ++at) {
    PeSweep s;
    for (int n = 0; n < 3; ++n) add_object(s, Object{n == at ? kNaN : 1.0 + n, true, 1}, 0.0);
    EXPECT_TRUE(std::isnan(s.max_grad_sq)) << "NaN in object " << at;
    std::vector<PeSweep> parts(3);
    for (int c = 0; c < 3; ++c) parts[static_cast<size_t>(c)].max_grad_sq = c == at ? kNaN : 2.0 + c;
    EXPECT_TRUE(std::isnan(combine_sweeps(parts).max_grad_sq)) << "NaN in chunk " << at;
  }
}
