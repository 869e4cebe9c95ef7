// Perplexity calibration of one row of Gaussian neighbor probabilities, shared by every path
// that needs input neighborhoods (NeRV's smoothed precision/recall, SNE-family affinities).
//
//   p_j = exp(-beta d2_j) / sum_l exp(-beta d2_l),   H(p) = log Z + beta E_p[d2]
//
// H decreases monotonically in beta, so a bracketed search on beta finds H = log(perplexity). Exponents are shifted by the smallest d2 so no
// row underflows to Z = 0, whatever the scale of the distances, and the search starts at
// beta = 1 / mean(d2 - min d2), so it takes the same steps at every scale: multiplying every d2 by
// c divides beta by c (up to rounding) and leaves p unchanged.
//
// Entries tied at the minimum (duplicate points at d2 = 0, or equidistant nearest neighbors) keep
// H >= log(ties) at every beta: as beta grows p tends to uniform over them. When log(ties) is not
// below the target the search stops once H is within tol of that floor, at a finite beta where the
// other entries' mass is negligible (the limit the row tends to), instead of running beta away.
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

// The entries of a row used, [0, a) and [b, count): all but index skip (the point itself).
template <class I>
ORRERY_HD_INLINE void used_ranges(I count, I skip, I* a, I* b) {
  *a = skip >= I(0) && skip < count ? skip : count;
  *b = *a < count ? *a + 1 : count;
}

// The smallest used entry (0 for an empty row).
template <class T, class I>
ORRERY_HD_INLINE T row_min(const T* d2, I count, I skip) {
  I a, b;
  used_ranges(count, skip, &a, &b);
  if (a > I(0)) return range_min(d2, I(0), a, range_min(d2, b, count, d2[0]));
  return b < count ? range_min(d2, b, count, d2[b]) : T(0);
}

// Over the used entries: the mean of d2 - dmin (the row's spread, a length scale squared) and how
// many equal dmin (the ties that bound H from below by log(ties)).
template <class T, class I>
ORRERY_HD_INLINE void row_spread(const T* d2, I count, I skip, T dmin, T* mean, I* ties) {
  T sum = T(0);
  I n = I(0), t = I(0);
  for (I j = I(0); j < count; ++j) {
    if (j == skip) continue;
    sum += d2[j] - dmin;
    t += d2[j] == dmin ? I(1) : I(0);
    ++n;
  }
  *mean = n > I(0) ? sum / T(n) : T(0);
  *ties = t;
}

// Entropy of the row at precision beta; entries with index == skip are left out (the point
// itself). Returns H and writes log Z (of the shifted exponents) and the shift; when var is
// non-null it receives Var_p(d2), since dH/dbeta = -beta Var_p(d2).
template <class T, class I>
ORRERY_HD_INLINE T row_entropy(const T* d2, I count, I skip, T beta, T* log_z, T* shift, T* var = nullptr) {
  I a, b;
  used_ranges(count, skip, &a, &b);
  const T dmin = row_min(d2, count, skip);
  T z = T(0), m = T(0), m2 = T(0);
  entropy_sums(d2, I(0), a, beta, dmin, &z, &m, &m2);
  entropy_sums(d2, b, count, beta, dmin, &z, &m, &m2);
  *log_z = hd_log(z);
  *shift = dmin;
  if (var) *var = m2 / z - (m / z) * (m / z);
  return *log_z + beta * m / z;
}

// beta (= 1 / sigma^2) with H(p) = log(perplexity) to within tol (or within tol of the ties'
// floor log(ties) when that is not below the target), or the last iterate after max_iter steps.
// Newton steps on beta (H is smooth and decreasing in beta), kept inside the bracket that every
// evaluation narrows; a step that would leave the bracket is replaced by doubling (no upper bound
// yet) or the bracket midpoint, so the search never diverges. It starts at 1 / mean(d2 - dmin),
// which makes it scale-free. Requires perplexity < count - 1 (the caller validates) and at least
// one entry above the minimum for the target to be reachable (affinity.cpp checks duplicates).
template <class T, class I>
ORRERY_HD_INLINE T bandwidth_for_perplexity(const T* d2, I count, I skip, T perplexity, T tol, int max_iter) {
  const T target = hd_log(perplexity);
  T spread;
  I ties;
  row_spread(d2, count, skip, row_min(d2, count, skip), &spread, &ties);
  const T floor = ties > I(0) ? hd_log(T(ties)) : T(0);
  T beta = spread > T(0) ? T(1) / spread : T(1), lo = T(0), hi = T(-1);  // hi < 0: no upper bound yet
  T log_z, shift, var;
  for (int it = 0; it < max_iter; ++it) {
    const T h = row_entropy(d2, count, skip, beta, &log_z, &shift, &var);
    const T diff = h - target;
    if (hd_abs(diff) < tol) break;
    if (floor >= target && h - floor < tol) break;  // H cannot come nearer the target
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
