// ExactSum: correctly rounded sums (known answers, ties, subnormals, overflow, non-finite values)
// and the property the multi-process runs rest on: the same values split into chunks in any way,
// each chunk summed alone and the chunks merged in any order, give the same bits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "comm/exact_sum_values.hpp"
#include "orrery/error.hpp"
#include "orrery/exact_sum.hpp"

namespace {

using orrery::ExactSum;
using orrery::test::bits_of;

double exact(const std::vector<double>& values) {
  ExactSum s(1);
  for (double v : values) s.add(0, v);
  return s.result(0);
}

constexpr std::size_t kCols = 5;

// Column sums of `table`'s rows cut at `cuts` (chunk c: rows cuts[c]..cuts[c+1]), each chunk in its
// own ExactSum, merged in the order `merge_order`.
std::vector<double> split_sum(const std::vector<double>& table, const std::vector<std::size_t>& cuts,
                              const std::vector<std::size_t>& merge_order) {
  std::vector<ExactSum> chunks(cuts.size() - 1, ExactSum(kCols));
  for (std::size_t c = 0; c + 1 < cuts.size(); ++c)
    for (std::size_t r = cuts[c]; r < cuts[c + 1]; ++r) chunks[c].add(&table[r * kCols]);
  ExactSum total(kCols);
  for (std::size_t c : merge_order) total.merge(chunks[c]);
  std::vector<double> out(kCols);
  total.results(out.data());
  return out;
}

}  // namespace

TEST(CommExactSum, KnownAnswersThatPlainSummationMisses) {
  EXPECT_EQ(exact({1e16, 1.0, -1e16}), 1.0);
  EXPECT_EQ(exact({1e300, 1.0, -1e300}), 1.0);
  EXPECT_EQ(exact({1e300, 1e-300, -1e300}), 1e-300);
  EXPECT_EQ(exact({DBL_MAX, DBL_MAX, -DBL_MAX}), DBL_MAX);  // beyond the range on the way only
  EXPECT_EQ(exact({-3.5, 1.25, -0.75}), -3.0);
  EXPECT_EQ(exact({}), 0.0);
  EXPECT_EQ(bits_of(exact({-0.0, -0.0})), bits_of(0.0));  // documented: -0 sums to +0
  std::vector<double> tenths(10, 0.1);
  EXPECT_EQ(exact(tenths), 1.0);  // 10 * 0.1 rounds to 1; plain summation gives 0.9999999999999999
  EXPECT_NE(std::accumulate(tenths.begin(), tenths.end(), 0.0), 1.0);
}

TEST(CommExactSum, RoundsToNearestWithTiesToEven) {
  const double two53 = 9007199254740992.0;  // 2^53: doubles here are 2 apart
  EXPECT_EQ(exact({two53, 1.0}), two53);                    // tie, 2^53 is even
  EXPECT_EQ(exact({two53 + 2.0, 1.0}), two53 + 4.0);        // tie, 2^53 + 2 is odd
  EXPECT_EQ(exact({two53, 1.0, std::ldexp(1.0, -100)}), two53 + 2.0);   // just above the tie
  EXPECT_EQ(exact({two53, 1.0, -std::ldexp(1.0, -100)}), two53);        // just below it
  EXPECT_EQ(exact({two53, 1.0, 1.0}), two53 + 2.0);
  EXPECT_EQ(exact({-two53 - 2.0, -1.0}), -two53 - 4.0);     // negative ties alike
}

TEST(CommExactSum, SubnormalsAreExact) {
  const double tiny = std::numeric_limits<double>::denorm_min();
  EXPECT_EQ(exact({tiny, tiny, tiny}), 3 * tiny);
  EXPECT_EQ(exact({DBL_MIN, -DBL_MIN / 2}), DBL_MIN / 2);
  EXPECT_EQ(exact({DBL_MIN, -tiny}), std::nextafter(DBL_MIN, 0.0));
  EXPECT_EQ(exact({1.0, tiny, -1.0}), tiny);
}

// Integers summed in double are exact while the partial sums stay below 2^53, at any scale: the
// plain sum is then the exact one, an independent reference over many values.
TEST(CommExactSum, AgreesWithPlainSummationWhereThatIsExact) {
  std::mt19937_64 rng(7);
  for (int scale : {0, -1000, -1070, 900}) {
    std::vector<double> v(3000);
    for (auto& x : v) x = std::ldexp(static_cast<double>(static_cast<std::int64_t>(rng() % (1ull << 40)) - (1ll << 39)), scale);
    EXPECT_EQ(bits_of(exact(v)), bits_of(std::accumulate(v.begin(), v.end(), 0.0))) << "scale 2^" << scale;
  }
}

TEST(CommExactSum, BeyondTheRangeOfDoubleIsAnError) {
  EXPECT_THROW(exact({DBL_MAX, DBL_MAX}), orrery::Error);
  EXPECT_THROW(exact({-DBL_MAX, -DBL_MAX}), orrery::Error);
  EXPECT_THROW(exact({DBL_MAX, std::ldexp(1.0, 970)}), orrery::Error);  // half an ulp: rounds up to 2^1024
  EXPECT_EQ(exact({DBL_MAX, std::ldexp(1.0, 969)}), DBL_MAX);           // a quarter: rounds down
}

TEST(CommExactSum, NonFiniteValuesAreReportedNotSummed) {
  ExactSum s(3);
  s.add(0, 1.0);
  s.add(2, std::numeric_limits<double>::quiet_NaN());
  s.add(1, -std::numeric_limits<double>::infinity());
  try {
    s.result(0);
    FAIL() << "a sum with NaN and infinity gave a result";
  } catch (const orrery::Error& e) {
    EXPECT_EQ(e.kind(), orrery::ErrorKind::internal);
    const std::string what = e.what();
    EXPECT_NE(what.find("2 of the values"), std::string::npos) << what;
    EXPECT_NE(what.find("sum 2"), std::string::npos) << what;
  }
}

TEST(CommExactSum, ChunksInAnySplitAndMergeOrderGiveTheSameBits) {
  for (std::size_t rows : {1u, 2u, 7u, 1000u, 1001u}) {
    const auto table = orrery::test::exact_sum_table(rows);
    const auto one = split_sum(table, {0, rows}, {0});
    // Sanity of the table: the cancelling columns sum to their middle value alone.
    EXPECT_EQ(one[2], rows % 2 ? 1e-300 : 0.0) << rows << " rows";
    EXPECT_EQ(one[4], rows % 2 ? table[(rows / 2) * kCols + 4] : 0.0) << rows << " rows";
    std::mt19937_64 rng(rows);
    for (std::size_t ranks = 1; ranks <= 4; ++ranks) {
      for (int trial = 0; trial < 5; ++trial) {
        // Uneven cuts, empty chunks allowed (a rank with no rows).
        std::vector<std::size_t> cuts = {0, rows};
        for (std::size_t c = 1; c < ranks; ++c) cuts.push_back(rng() % (rows + 1));
        std::sort(cuts.begin(), cuts.end());
        std::vector<std::size_t> order(ranks);
        std::iota(order.begin(), order.end(), 0);
        std::shuffle(order.begin(), order.end(), rng);
        const auto split = split_sum(table, cuts, order);
        for (std::size_t c = 0; c < kCols; ++c)
          EXPECT_EQ(bits_of(split[c]), bits_of(one[c]))
              << rows << " rows in " << ranks << " chunks, trial " << trial << ", column " << c << ": " << split[c]
              << " vs " << one[c];
      }
    }
    // Row order within one accumulator does not matter either.
    std::vector<std::size_t> perm(rows);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    ExactSum shuffled(kCols);
    for (std::size_t r : perm) shuffled.add(&table[r * kCols]);
    for (std::size_t c = 0; c < kCols; ++c) EXPECT_EQ(bits_of(shuffled.result(c)), bits_of(one[c])) << c;
  }
}

// Plain double summation of the same table in two splits differs: the test above would catch a
// scheme that is not associative.
TEST(CommExactSum, PlainSummationOfTheTableDependsOnTheSplit) {
  const std::size_t rows = 1001;
  const auto table = orrery::test::exact_sum_table(rows);
  bool differs = false;
  for (std::size_t c = 0; c < kCols && !differs; ++c) {
    double whole = 0, first = 0, second = 0;
    for (std::size_t r = 0; r < rows; ++r) whole += table[r * kCols + c];
    for (std::size_t r = 0; r < rows / 3; ++r) first += table[r * kCols + c];
    for (std::size_t r = rows / 3; r < rows; ++r) second += table[r * kCols + c];
    differs = bits_of(whole) != bits_of(first + second);
  }
  EXPECT_TRUE(differs);
}

TEST(CommExactSum, ManyAdditionsOfLargeValuesCarryCorrectly) {
  ExactSum s(2);
  const double big = std::ldexp(1.0, 1000), odd = 3.0 * std::ldexp(1.0, -1074);
  for (int i = 0; i < 200000; ++i) {
    s.add(0, big);
    s.add(0, -big);
    s.add(1, i % 2 ? odd : -odd);
    s.add(1, odd);
  }
  EXPECT_EQ(s.result(0), 0.0);
  EXPECT_EQ(s.result(1), 200000 * odd);
}

TEST(CommExactSum, MergingSumsOfAnotherSizeIsAnError) {
  ExactSum a(2), b(3);
  EXPECT_THROW(a.merge(b), orrery::Error);
}
