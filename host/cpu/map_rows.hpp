// The map by dimension, as the CPU's all-pairs row loops (NeRV, HSSNE) read it: yt[d N + j] = y_jd
// (D x N), so a loop over j loads each coordinate contiguously and vectorises.
#pragma once
#include <vector>

#include "orrery/types.hpp"
#include "prep/clones.hpp"

namespace orrery::cpu {

// Y (N x D, row-major) by dimension, converted to T.
template <class T>
std::vector<T> by_dimension(const MatrixD& Y) {
  const index_t n = Y.rows, D = Y.cols;
  std::vector<T> yt(static_cast<size_t>(n * D));
  for (index_t j = 0; j < n; ++j)
    for (index_t d = 0; d < D; ++d) yt[static_cast<size_t>(d * n + j)] = static_cast<T>(Y(j, d));
  return yt;
}

// |y - x|^2 for D <= 3 coordinates, in the loops' one order (no zero terms past D).
template <class T, int D>
ORRERY_ALWAYS_INLINE T squared_offset(T y0, T y1, T y2, T x0, T x1, T x2) {
  T t = (y0 - x0) * (y0 - x0);
  if constexpr (D > 1) t += (y1 - x1) * (y1 - x1);
  if constexpr (D > 2) t += (y2 - x2) * (y2 - x2);
  return t;
}

// Row i of a map by dimension with D <= 3: one pointer and one scalar of y_i per dimension (GCC sums
// an array-section reduction lane by lane, so the loops keep one scalar per dimension too).
template <class T, int D>
struct MapRow {
  const T *x0, *x1, *x2;
  T y0, y1, y2;
  MapRow(const T* yt, index_t N, index_t i)
      : x0(yt), x1(D > 1 ? yt + N : yt), x2(D > 2 ? yt + 2 * N : yt), y0(x0[i]), y1(x1[i]), y2(x2[i]) {}
  // tau_ij = |y_i - y_j|^2
  ORRERY_ALWAYS_INLINE T tau(index_t j) const {
    return squared_offset<T, D>(y0, y1, y2, x0[j], D > 1 ? x1[j] : T(0), D > 2 ? x2[j] : T(0));
  }
};

}  // namespace orrery::cpu
