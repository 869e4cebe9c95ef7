// A table of doubles whose column sums are hard to get the same twice: magnitudes from subnormal to
// near DBL_MAX, both signs, columns that cancel to a tiny remainder. Drawn from std::mt19937_64's
// raw output (specified by the standard), so every platform and every process builds the same
// table; tests/comm and tests/comm/mpi sum it split in different ways.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace orrery::test {

// sign * (1 + 52 random bits) * 2^e with e uniform in [min_exp, max_exp].
inline double random_double(std::mt19937_64& rng, int min_exp, int max_exp) {
  const std::uint64_t bits = rng();
  const int e = min_exp + static_cast<int>(rng() % static_cast<std::uint64_t>(max_exp - min_exp + 1));
  const double v = std::ldexp(1.0 + std::ldexp(static_cast<double>(bits & ((std::uint64_t{1} << 52) - 1)), -52), e);
  return (bits >> 63) ? -v : v;
}

// rows x 5, row-major. Columns: 0 any magnitude (2^-1070 .. 2^1000); 1 near 1; 2 pairs +x/-x over
// rows i and rows-1-i with a tiny middle value (the sum is that value, or 0 for an even count);
// 3 subnormals and tiny normals; 4 huge values (2^1000) that cancel pairwise around a small middle
// value.
inline std::vector<double> exact_sum_table(std::size_t rows) {
  constexpr std::size_t cols = 5;
  std::mt19937_64 rng(35);
  std::vector<double> t(rows * cols);
  for (std::size_t i = 0; i < rows; ++i) {
    t[i * cols + 0] = random_double(rng, -1070, 1000);
    t[i * cols + 1] = random_double(rng, -2, 1);
    t[i * cols + 3] = random_double(rng, -1074, -1000);
  }
  for (std::size_t i = 0; i < rows / 2; ++i) {
    const double x = random_double(rng, -200, 200), big = std::ldexp(random_double(rng, 0, 0), 1000);
    t[i * cols + 2] = x;
    t[(rows - 1 - i) * cols + 2] = -x;
    t[i * cols + 4] = big;
    t[(rows - 1 - i) * cols + 4] = -big;
  }
  if (rows % 2) t[(rows / 2) * cols + 2] = 1e-300;
  if (rows % 2) t[(rows / 2) * cols + 4] = random_double(rng, -20, 20);
  return t;
}

inline std::uint64_t bits_of(double x) {
  std::uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// FNV-1a over the doubles' bytes: one number that names a result bit for bit.
inline std::uint64_t hash_bits(const std::vector<double>& v) {
  std::uint64_t h = 1469598103934665603ull;
  for (double x : v) {
    const std::uint64_t b = bits_of(x);
    for (int k = 0; k < 8; ++k) h = (h ^ ((b >> (8 * k)) & 0xFF)) * 1099511628211ull;
  }
  return h;
}

}  // namespace orrery::test
