// Squared Euclidean distance between two rows, summed in index order. Shared by the kNN search,
// the quality measures and their CUDA versions, so that every path orders neighbors by the
// same numbers (integer-valued inputs give bit-identical distances everywhere).
#pragma once
#include "orrery/math/hd.hpp"

namespace orrery::math {

template <class T>
ORRERY_HD_INLINE T squared_distance(const T* a, const T* b, int d) {
  T s = T(0);
  // On the host the sum is vectorised (a fixed lane order, so still deterministic); integer-valued
  // inputs sum exactly in any order, which keeps CPU and GPU neighbor orders identical on them.
#if !defined(__CUDACC__)
#pragma omp simd reduction(+ : s)
#endif
  for (int i = 0; i < d; ++i) {
    const T t = a[i] - b[i];
    s += t * t;
  }
  return s;
}

// Neighbor order: nearer first, equal distances by the lower index ("ties broken by index").
template <class T, class I>
ORRERY_HD bool neighbor_before(T da, I a, T db, I b) {
  return da < db || (da == db && a < b);
}

}  // namespace orrery::math
