// ExactSum: fixed-point sums over the whole double range (the scheme and its guarantees are in
// include/orrery/exact_sum.hpp).
#include "orrery/exact_sum.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "orrery/error.hpp"

namespace orrery {
namespace {

constexpr int kDigits = ExactSum::kDigits;
constexpr std::uint64_t kDigitMask = 0xFFFFFFFFull;
constexpr std::int64_t kDigitBase = std::int64_t{1} << ExactSum::kDigitBits;
// Between normalisations a digit starts below 2^32 and each addition moves it by less than 2^32,
// so 2^30 additions keep it below 2^62 + 2^32, and the sum with another such digit below 2^63.
constexpr std::size_t kAdditionsBetweenCarries = std::size_t{1} << 30;
constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();

// Carries propagated upwards so that digits 0..kDigits-2 lie in [0, 2^32) and the top digit carries
// the sign: the one representation of the integer, whatever additions produced it. The top digit
// would overflow only after about 2^44 additions of values near DBL_MAX.
void carry(std::int64_t* d) {
  std::int64_t carried = 0;
  for (int k = 0; k < kDigits - 1; ++k) {
    const std::int64_t v = d[k] + carried;
    const auto low = static_cast<std::int64_t>(static_cast<std::uint64_t>(v) & kDigitMask);
    carried = (v - low) / kDigitBase;  // exact: v - low is a multiple of 2^32 (floor division)
    d[k] = low;
  }
  d[kDigits - 1] += carried;
}

// `count` (<= 53) bits of the non-negative normalised integer d from bit `lo` upwards.
std::uint64_t bits(const std::int64_t* d, int lo, int count) {
  std::uint64_t out = 0;
  for (int got = 0; got < count;) {
    const int k = (lo + got) / ExactSum::kDigitBits, off = (lo + got) % ExactSum::kDigitBits;
    const int take = std::min(ExactSum::kDigitBits - off, count - got);
    const std::uint64_t chunk = (static_cast<std::uint64_t>(d[k]) >> off) & ((std::uint64_t{1} << take) - 1);
    out |= chunk << got;
    got += take;
  }
  return out;
}

// Whether any of the bits 0..end-1 of the non-negative normalised integer d is set.
bool any_bit_below(const std::int64_t* d, int end) {
  const int k_end = end / ExactSum::kDigitBits, off = end % ExactSum::kDigitBits;
  for (int k = 0; k < k_end; ++k)
    if (d[k] != 0) return true;
  return off > 0 && (static_cast<std::uint64_t>(d[k_end]) & ((std::uint64_t{1} << off) - 1)) != 0;
}

// The integer's value times 2^-1074, rounded to nearest with ties to even. Bit 0 weighs 2^-1074,
// the subnormals' spacing, so keeping the 53 bits below the leading one (or all bits down to bit 0
// when there are fewer) is exactly a double's precision at that magnitude, subnormals included, and
// ldexp of the rounded integer is exact.
double to_double(const std::int64_t* sum, std::size_t index) {
  std::int64_t d[kDigits];
  std::copy(sum, sum + kDigits, d);
  carry(d);
  const bool negative = d[kDigits - 1] < 0;
  if (negative) {
    for (auto& digit : d) digit = -digit;
    carry(d);
  }
  const auto overflow = [&] {
    internal_error("exact sum: sum " + std::to_string(index) + " is beyond the range of double (|sum| > " +
                   std::to_string(std::numeric_limits<double>::max()) + ")");
  };
  if (d[kDigits - 1] >= kDigitBase) overflow();  // >= 2^1038
  int top = kDigits - 1;
  while (top >= 0 && d[top] == 0) --top;
  if (top < 0) return 0.0;
  int lead = ExactSum::kDigitBits - 1;
  while (!((static_cast<std::uint64_t>(d[top]) >> lead) & 1u)) --lead;
  const int p = top * ExactSum::kDigitBits + lead;  // the leading bit
  const int q = std::max(p - 52, 0);                // the lowest bit kept
  std::uint64_t m = bits(d, q, p - q + 1);
  if (q > 0 && bits(d, q - 1, 1) && ((m & 1u) || any_bit_below(d, q - 1))) ++m;
  const double value = std::ldexp(static_cast<double>(m), q + ExactSum::kLowestExponent);
  if (std::isinf(value)) overflow();
  return negative ? -value : value;
}

}  // namespace

ExactSum::ExactSum(std::size_t n)
    : n_(n), digits_(n * kDigits + 1, 0), first_non_finite_(kNone) {}

// A double's fields give it as m * 2^(shift - 1074) with integer m < 2^53 and shift >= 0 (a
// subnormal has shift 0): m is added at bit `shift`, across at most three digits.
void ExactSum::add(std::size_t i, double x) {
  std::uint64_t word;
  std::memcpy(&word, &x, sizeof word);
  const int biased = static_cast<int>((word >> 52) & 0x7FF);
  std::uint64_t m = word & ((std::uint64_t{1} << 52) - 1);
  if (biased == 0x7FF) {
    ++digits_[n_ * kDigits];
    if (first_non_finite_ == kNone) first_non_finite_ = i;
    return;
  }
  int shift = 0;
  if (biased != 0) {
    m |= std::uint64_t{1} << 52;
    shift = biased - 1;
  }
  if (m == 0) return;
  const int k = shift / kDigitBits, off = shift % kDigitBits;
  const std::uint64_t parts[3] = {(m << off) & kDigitMask, (off ? m >> (kDigitBits - off) : m >> kDigitBits) & kDigitMask,
                                  off ? m >> (2 * kDigitBits - off) : 0};
  std::int64_t* d = digits_.data() + i * kDigits + k;
  const bool negative = word >> 63;
  for (int j = 0; j < 3 && k + j < kDigits; ++j)
    d[j] += negative ? -static_cast<std::int64_t>(parts[j]) : static_cast<std::int64_t>(parts[j]);
  if (++additions_ == kAdditionsBetweenCarries) normalise();
}

void ExactSum::add(const double* x) {
  for (std::size_t i = 0; i < n_; ++i) add(i, x[i]);
}

void ExactSum::merge(const ExactSum& other) {
  if (other.n_ != n_)
    internal_error("exact sum: merging " + std::to_string(other.n_) + " sums into " + std::to_string(n_));
  normalise();  // this side's digits below 2^32, the other's below 2^62 + 2^32: their sum fits
  for (std::size_t j = 0; j < digits_.size(); ++j) digits_[j] += other.digits_[j];
  if (first_non_finite_ == kNone) first_non_finite_ = other.first_non_finite_;
  normalise();
}

// Normalised digits below 2^32 from fewer than 2^31 ranks cannot overflow MPI's int64 sum; the
// trailing count of non-finite additions travels in the same call.
void ExactSum::allreduce(Comm& comm) {
  normalise();
  comm.allreduce(digits_.data(), digits_.size(), ReduceOp::sum);
  normalise();
}

void ExactSum::check_finite() const {
  const std::int64_t bad = digits_[n_ * kDigits];
  if (bad == 0) return;
  std::string where = first_non_finite_ == kNone ? "" : "; this process's first was added to sum " +
                                                                std::to_string(first_non_finite_);
  internal_error("exact sum: " + std::to_string(bad) + " of the values added were not finite (NaN or infinity)" + where);
}

double ExactSum::result(std::size_t i) const {
  check_finite();
  return to_double(digits_.data() + i * kDigits, i);
}

void ExactSum::results(double* out) const {
  check_finite();
  for (std::size_t i = 0; i < n_; ++i) out[i] = to_double(digits_.data() + i * kDigits, i);
}

void ExactSum::normalise() {
  for (std::size_t i = 0; i < n_; ++i) carry(digits_.data() + i * kDigits);
  additions_ = 0;
}

// Partition independence without a fixed-point format of our own choosing: each rank's values
// enter one ExactSum (exact integers at 2^-1074), the ranks' integers are summed by an int64 MPI
// sum (associative and exact), and the one rounding happens after, identically on every rank.
void exact_allreduce_sum(Comm& comm, const double* local, double* out, std::size_t n) {
  ExactSum sums(n);
  sums.add(local);
  sums.allreduce(comm);
  sums.results(out);
}

}  // namespace orrery
