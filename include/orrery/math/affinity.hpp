// Perplexity calibration of one row of Gaussian neighbour probabilities, shared by every path
// that needs input neighbourhoods (NeRV's smoothed precision/recall, SNE-family affinities).
//
//   p_j = exp(-beta d2_j) / sum_l exp(-beta d2_l),   H(p) = log Z + beta E_p[d2]
//
// H decreases monotonically in beta, so a bracketed search on beta finds H = log(perplexity). Exponents are shifted by the smallest d2 so no
// row underflows to Z = 0, whatever the scale of the distances.
#pragma once
#include "orrery/math/exp.hpp"
#include "orrery/math/hd.hpp"

namespace orrery::math {

// Sums over d2[lo, hi) of w = exp(-beta (d2 - dmin)) (dmin <= every d2: w <= 1), w u and w u^2
// with u = d2 - dmin, added to z, m and m2: the loop of row_entropy, vectorised on the CPU.
template <class T, class I>
ORRERY_HD_INLINE void entropy_sums(const T* d2, I lo, I hi, T beta, T dmin, T* z, T* m, T* m2) {
  T sz = T(0), sm = T(0), sm2 = T(0);
  ORRERY_SIMD(reduction(+ : sz, sm, sm2))
  for (I j = lo; j < hi; ++j) {
    const T u = d2[j] - dmin;
    const T w = exp_nonpositive(-beta * u);
    sz += w;
    sm += w * u;
    sm2 += w * u * u;
  }
  *z += sz, *m += sm, *m2 += sm2;
}

// The smallest of d2[lo, hi), or `init` if it is smaller.
template <class T, class I>
ORRERY_HD_INLINE T range_min(const T* d2, I lo, I hi, T init) {
  T v = init;
  ORRERY_SIMD(reduction(min : v))
  for (I j = lo; j < hi; ++j) v = d2[j] < v ? d2[j] : v;
  return v;
}

// Entropy of the row at precision beta; entries with index == skip are left out (the point
// itself). Returns H and writes log Z (of the shifted exponents) and the shift; when var is
// non-null it receives Var_p(d2), since dH/dbeta = -beta Var_p(d2).
template <class T, class I>
ORRERY_HD_INLINE T row_entropy(const T* d2, I count, I skip, T beta, T* log_z, T* shift, T* var = nullptr) {
  // The entries used: [0, a) and [b, count).
  const I a = skip >= I(0) && skip < count ? skip : count;
  const I b = a < count ? a + 1 : count;
  T dmin = T(0);
  if (a > I(0)) dmin = range_min(d2, I(0), a, range_min(d2, b, count, d2[0]));
  else if (b < count) dmin = range_min(d2, b, count, d2[b]);
  T z = T(0), m = T(0), m2 = T(0);
  entropy_sums(d2, I(0), a, beta, dmin, &z, &m, &m2);
  entropy_sums(d2, b, count, beta, dmin, &z, &m, &m2);
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
ORRERY_HD_INLINE T bandwidth_for_perplexity(const T* d2, I count, I skip, T perplexity, T tol, int max_iter) {
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
