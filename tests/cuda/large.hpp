// Inputs of the parity registry's large cases: N >= 2^17 points, so that the device's 64-bit index
// paths (N^2 > 2^32 pairs), its launch shapes for large N (one chunk per pair grid, the default
// neighbor-search tiling) and its per-point buffers at scale are compared with the CPU. The CPU side
// of such a case must stay cheap (a few seconds on 2 cores: ParityCasesOnTheCpu runs every case on
// the CPU twice), so the inputs come with their neighbors known by construction instead of an
// O(N^2) search.
#pragma once
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "orrery/knn.hpp"
#include "orrery/types.hpp"

namespace orrery::test {

// 2^17 + 3: above 2^17, and a multiple of no tile or block size.
inline constexpr index_t kLargeN = 131075;

// Points on a line, x_i = i + 0.3 sin(i) (increasing, since the slope 1 + 0.3 cos i > 0), with
// unequal gaps. Their k nearest neighbors come from a merge of the two sides of i (O(N k)), with
// exact_knn's order: ascending squared distance, ties by lower index.
inline std::vector<double> line_points(index_t n) {
  std::vector<double> x(static_cast<size_t>(n));
  for (index_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = static_cast<double>(i) + 0.3 * std::sin(static_cast<double>(i));
  return x;
}

inline KnnGraph line_knn(const std::vector<double>& x, int k) {
  const auto n = static_cast<index_t>(x.size());
  KnnGraph g = sized_graph(n, k);
  for (index_t i = 0; i < n; ++i) {
    index_t l = i - 1, r = i + 1;
    for (int q = 0; q < k; ++q) {
      const double dl = l >= 0 ? x[static_cast<size_t>(i)] - x[static_cast<size_t>(l)] : HUGE_VAL;
      const double dr = r < n ? x[static_cast<size_t>(r)] - x[static_cast<size_t>(i)] : HUGE_VAL;
      const bool left = dl * dl <= dr * dr;  // a tie goes to the lower index, l
      const auto at = static_cast<size_t>(i * k + q);
      g.index[at] = left ? l : r;
      g.dist2[at] = left ? dl * dl : dr * dr;
      left ? --l : ++r;
    }
  }
  return g;
}

// `count` distinct rows of 0 .. n - 1, sorted: the first and last rows and a seeded sample.
inline std::vector<index_t> sample_rows(index_t n, index_t count, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::vector<index_t> rows = {0, n - 1};
  while (static_cast<index_t>(rows.size()) < std::min(count, n)) {
    const auto r = static_cast<index_t>(rng() % static_cast<unsigned long long>(n));
    if (std::find(rows.begin(), rows.end(), r) == rows.end()) rows.push_back(r);
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

// Those rows of a row-major matrix of `width` columns (or of a vector, width 1).
template <class T>
std::vector<T> rows_of(const std::vector<T>& v, const std::vector<index_t>& rows, index_t width = 1) {
  std::vector<T> out;
  out.reserve(rows.size() * static_cast<size_t>(width));
  for (index_t r : rows)
    for (index_t c = 0; c < width; ++c) out.push_back(v[static_cast<size_t>(r * width + c)]);
  return out;
}

}  // namespace orrery::test
