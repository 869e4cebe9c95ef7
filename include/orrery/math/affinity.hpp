// Perplexity calibration of one row of Gaussian neighbour probabilities, shared by every path
// that needs input neighbourhoods (NeRV's smoothed precision/recall, SNE-family affinities).
//
//   p_j = exp(-beta d2_j) / sum_l exp(-beta d2_l),   H(p) = log Z + beta E_p[d2]
//
// H decreases monotonically in beta, so a bracketed search on beta finds H = log(perplexity). Exponents are shifted by the smallest d2 so no
// row underflows to Z = 0, whatever the scale of the distances.
#pragma once
#include "orrery/math/hd.hpp"

namespace orrery::math {

// Entropy of the row at precision beta; entries with index == skip are left out (the point
// itself). Returns H and writes log Z (of the shifted exponents) and the shift; when var is
// non-null it receives Var_p(d2), since dH/dbeta = -beta Var_p(d2).
template <class T, class I>
ORRERY_HD T row_entropy(const T* d2, I count, I skip, T beta, T* log_z, T* shift, T* var = nullptr) {
  T dmin = T(0);
  bool first = true;
  for (I j = 0; j < count; ++j) {
    if (j == skip) continue;
    if (first || d2[j] < dmin) dmin = d2[j];
    first = false;
  }
  T z = T(0), m = T(0), m2 = T(0);
  for (I j = 0; j < count; ++j) {
    if (j == skip) continue;
    const T u = d2[j] - dmin;
    const T w = hd_exp(-beta * u);
    z += w;
    m += w * u;
    m2 += w * u * u;
  }
  *log_z = hd_log(z);
  *shift = dmin;
  if (var) *var = m2 / z - (m / z) * (m / z);
  return *log_z + beta * m / z;
}

// beta (= 1 / sigma^2) with H(p) = log(perplexity) to within tol, or the last iterate after
// max_iter steps. Newton steps on beta (H is smooth and decreasing in beta), kept inside the
// bracket that every evaluation narrows; a step that would leave the bracket is replaced by
// doubling (no upper bound yet) or the bracket midpoint, so the search never diverges.
// Requires perplexity < count - 1 (the caller validates).
template <class T, class I>
ORRERY_HD T bandwidth_for_perplexity(const T* d2, I count, I skip, T perplexity, T tol, int max_iter) {
  const T target = hd_log(perplexity);
  T beta = T(1), lo = T(0), hi = T(-1);  // hi < 0: no upper bound yet
  T log_z, shift, var;
  for (int it = 0; it < max_iter; ++it) {
    const T h = row_entropy(d2, count, skip, beta, &log_z, &shift, &var);
    const T diff = h - target;
    if (hd_abs(diff) < tol) break;
    if (diff > T(0)) lo = beta;  // too flat: sharpen
    else hi = beta;
    const T slope = -beta * var;  // dH/dbeta
    T next = slope < T(0) ? beta - diff / slope : T(-1);
    const bool inside = next > lo && (hi < T(0) || next < hi);
    if (!inside) next = hi < T(0) ? beta * T(2) : (lo + hi) / T(2);
    beta = next;
  }
  return beta;
}

}  // namespace orrery::math
