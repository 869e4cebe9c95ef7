// The vectorisable log and log1p of math/exp.hpp against the standard library (its exp is tested
// with NeRV).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "orrery/math/exp.hpp"

using namespace orrery;

TEST(FastMath, LogPositiveIsWithinAnUlpOfStdLog) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  int worse = 0;
  for (double lo : {std::numeric_limits<double>::min(), 1e-200, 1e-5, 0.5, 1.0, 1e100}) {
    for (int k = 0; k < 200000; ++k) {
      const double x = lo * std::exp(u(rng) * 40.0);
      const double want = std::log(x), got = math::log_positive(x);
      const double ulp = std::nextafter(std::abs(want), std::numeric_limits<double>::infinity()) - std::abs(want);
      if (std::abs(got - want) > ulp) ++worse;
    }
  }
  EXPECT_EQ(worse, 0);
  EXPECT_EQ(math::log_positive(1.0), 0.0);
  EXPECT_DOUBLE_EQ(math::log_positive(2.0), std::log(2.0));
  EXPECT_DOUBLE_EQ(math::log_positive(0.5), -std::log(2.0));
  EXPECT_DOUBLE_EQ(math::log_positive(std::numeric_limits<double>::max()), std::log(std::numeric_limits<double>::max()));
  EXPECT_DOUBLE_EQ(math::log_positive(std::numeric_limits<double>::min()), std::log(std::numeric_limits<double>::min()));
  EXPECT_NEAR(math::log_positive(1.0 + 1e-10), 1e-10, 1e-16);  // log(1 + tau) for close neighbors
}

TEST(FastMath, Log1pNonnegativeIsWithinTwoUlpsOfStdLog1p) {
  std::mt19937_64 rng(4);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  int worse = 0;
  for (double lo : {1e-300, 1e-17, 1e-8, 1e-3, 1.0, 1e100}) {
    for (int k = 0; k < 200000; ++k) {
      const double x = lo * std::exp(u(rng) * 20.0);
      const double want = std::log1p(x), got = math::log1p_nonnegative(x);
      const double ulp = std::nextafter(want, std::numeric_limits<double>::infinity()) - want;
      if (std::abs(got - want) > 2.0 * ulp) ++worse;
    }
  }
  EXPECT_EQ(worse, 0);
  EXPECT_EQ(math::log1p_nonnegative(0.0), 0.0);
  EXPECT_EQ(math::log1p_nonnegative(1e-300), 1e-300);
}
