// Radix selection (math/radix_select.hpp), the steps the CUDA NeRV cells run to find one order
// statistic instead of sorting all N values: the key order is float order (negative, zero, NaN and
// infinities included), and the selected value is the descending sort's value at that position,
// for every position, on data with ties.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "orrery/math/radix_select.hpp"

using namespace orrery;

namespace {

// The device's passes on the host: a histogram of the bracket's digits, then one step.
float radix_select(const std::vector<float>& v, long long rank) {
  math::RadixSelect s;
  s.rank = rank;
  for (int pass = 0; pass < math::kRadixPasses; ++pass) {
    unsigned count[math::kRadixBins] = {};
    for (float x : v) {
      const unsigned key = math::radix_key(x);
      if (math::radix_in_bracket(key, s)) ++count[math::radix_digit(key, s.pass)];
    }
    math::radix_select_step(count, s);
  }
  return math::radix_value(s.prefix);
}

unsigned bits(float v) {
  unsigned u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}

TEST(RadixSelect, KeysKeepFloatOrder) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> ascending = {-inf, -3e38f, -2.5f, -1e-30f, -1e-45f, 0.0f, 1e-45f, 1e-30f, 1.0f, 2.5f,
                                        3e38f, inf};
  for (size_t a = 0; a + 1 < ascending.size(); ++a)
    EXPECT_LT(math::radix_key(ascending[a]), math::radix_key(ascending[a + 1])) << ascending[a];
  EXPECT_EQ(math::radix_key(-0.0f), math::radix_key(0.0f));  // as in CUB's radix sort
  EXPECT_GT(math::radix_key(std::numeric_limits<float>::quiet_NaN()), math::radix_key(inf));
  for (float x : ascending) EXPECT_EQ(bits(math::radix_value(math::radix_key(x))), bits(x)) << x;
  EXPECT_EQ(bits(math::radix_value(math::radix_key(-0.0f))), bits(0.0f));
}

TEST(RadixSelect, EveryRankIsTheDescendingSortsValue) {
  std::mt19937_64 rng(17);
  for (int trial = 0; trial < 20; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 600);
    std::vector<float> v(static_cast<size_t>(n));
    std::uniform_real_distribution<float> u(-50.f, 50.f);
    for (float& x : v) {
      switch (rng() % 5) {
        case 0: x = static_cast<float>(rng() % 4); break;  // ties
        case 1: x = std::ldexp(u(rng), -static_cast<int>(rng() % 140)); break;  // tiny and subnormal
        default: x = u(rng);
      }
    }
    if (trial % 3 == 0) v[0] = std::numeric_limits<float>::infinity();
    std::vector<float> sorted(v);
    std::sort(sorted.begin(), sorted.end(), std::greater<float>());
    for (int rank = 0; rank < n; ++rank)
      EXPECT_EQ(radix_select(v, rank), sorted[static_cast<size_t>(rank)]) << "n " << n << ", rank " << rank;
  }
}

TEST(RadixSelect, NearestRadiiLikeTheCellsThreshold) {
  // the wide-row threshold: non-negative radii, the (64 + n / 1000)-th largest of 10^5
  std::mt19937_64 rng(3);
  std::exponential_distribution<float> e(2.f);
  std::vector<float> r2(100000);
  for (float& x : r2) x = e(rng);
  const long long limit = 64 + static_cast<long long>(r2.size()) / 1000;
  std::vector<float> sorted(r2);
  std::nth_element(sorted.begin(), sorted.begin() + limit, sorted.end(), std::greater<float>());
  EXPECT_EQ(bits(radix_select(r2, limit)), bits(sorted[static_cast<size_t>(limit)]));
}

TEST(RadixSelect, NaNIsTheLargest) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> v = {1.f, nan, 3.f, -2.f};
  EXPECT_TRUE(std::isnan(radix_select(v, 0)));
  EXPECT_EQ(radix_select(v, 1), 3.f);
  EXPECT_EQ(radix_select(v, 3), -2.f);
}

}  // namespace
