// Perplexity calibration of one row of Gaussian neighbour probabilities, shared by every path
// that needs input neighbourhoods (NeRV's smoothed precision/recall, SNE-family affinities).
//
//   p_j = exp(-beta d2_j) / sum_l exp(-beta d2_l),   H(p) = log Z + beta E_p[d2]
//
// H decreases monotonically in beta, so bisection on beta (doubling until bracketed, then
// halving the bracket) finds H = log(perplexity). Exponents are shifted by the smallest d2 so no
// row underflows to Z = 0, whatever the scale of the distances.
#pragma once
#include "orrery/math/hd.hpp"

namespace orrery::math {

// Entropy of the row at precision beta; entries with index == skip are left out (the point
// itself). Returns H and writes log Z (of the shifted exponents) and the shift.
template <class T, class I>
ORRERY_HD T row_entropy(const T* d2, I count, I skip, T beta, T* log_z, T* shift) {
  T dmin = T(0);
  bool first = true;
  for (I j = 0; j < count; ++j) {
    if (j == skip) continue;
    if (first || d2[j] < dmin) dmin = d2[j];
    first = false;
  }
  T z = T(0), m = T(0);
  for (I j = 0; j < count; ++j) {
    if (j == skip) continue;
    const T w = hd_exp(-beta * (d2[j] - dmin));
    z += w;
    m += w * (d2[j] - dmin);
  }
  *log_z = hd_log(z);
  *shift = dmin;
  return *log_z + beta * m / z;
}

// beta (= 1 / sigma^2) with H(p) = log(perplexity) to within tol, or the last bracket midpoint
// after max_iter halvings. Requires perplexity < count - 1 (the caller validates).
template <class T, class I>
ORRERY_HD T bandwidth_for_perplexity(const T* d2, I count, I skip, T perplexity, T tol, int max_iter) {
  const T target = hd_log(perplexity);
  T beta = T(1), lo = T(0), hi = T(-1);  // hi < 0: no upper bound yet
  T log_z, shift;
  for (int it = 0; it < max_iter; ++it) {
    const T h = row_entropy(d2, count, skip, beta, &log_z, &shift);
    const T diff = h - target;
    if (hd_abs(diff) < tol) break;
    if (diff > T(0)) {  // too flat: sharpen
      lo = beta;
      beta = hi < T(0) ? beta * T(2) : (beta + hi) / T(2);
    } else {
      hi = beta;
      beta = (beta + lo) / T(2);
    }
  }
  return beta;
}

}  // namespace orrery::math
