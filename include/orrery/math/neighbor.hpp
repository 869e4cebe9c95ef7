// Heavy-tailed symmetric SNE (MATH.md §4), per-pair arithmetic shared by the CPU loops and the
// CUDA kernels.
//   H(tau) = (alpha tau + 1)^(-1/alpha)   (alpha > 0; alpha = 1 is t-SNE's Student-t)
//   H(tau) = exp(-tau)                     (alpha = 0, Gaussian SSNE)
//   S(tau) = -d log H / d tau = H^alpha = 1 / (alpha tau + 1)   (S = 1 for the Gaussian)
// H is evaluated as exp(-log1p(alpha tau) / alpha), which is accurate for small alpha tau and
// tends to exp(-tau) continuously as alpha -> 0.
#pragma once
#include <cmath>

#include "orrery/math/hd.hpp"

namespace orrery::math {

template <class T>
ORRERY_HD T heavy_tail(T tau, T alpha) {
#if !defined(__CUDA_ARCH__)
  using std::log1p;
#endif
  if (alpha == T(0)) return hd_exp(-tau);
  return hd_exp(-log1p(alpha * tau) / alpha);
}

// log H(tau), without forming H (no underflow for distant pairs).
template <class T>
ORRERY_HD T heavy_tail_log(T tau, T alpha) {
#if !defined(__CUDA_ARCH__)
  using std::log1p;
#endif
  return alpha == T(0) ? -tau : -log1p(alpha * tau) / alpha;
}

template <class T>
ORRERY_HD T heavy_tail_slope(T tau, T alpha) {
  return T(1) / (alpha * tau + T(1));
}

// Per-pair contributions for point i from point j with affinity p and the global normaliser z:
// q = H / z; adds to the fixed-point sums A = sum p S, B = sum q S, and the vector
// sum (A_ij - B_ij) y_j, and to the gradient 4 sum (p - q) S (y_i - y_j).
template <class T, int D>
ORRERY_HD void hssne_pair(const T* yi, const T* yj, T p, T inv_z, T alpha, T& a_sum, T& b_sum, T* ay, T* grad) {
  T tau = T(0);
  for (int d = 0; d < D; ++d) {
    const T diff = yi[d] - yj[d];
    tau += diff * diff;
  }
  const T s = heavy_tail_slope(tau, alpha);
  const T q = heavy_tail(tau, alpha) * inv_z;
  const T a = p * s, b = q * s;
  a_sum += a;
  b_sum += b;
  for (int d = 0; d < D; ++d) {
    ay[d] += (a - b) * yj[d];
    grad[d] += T(4) * (a - b) * (yi[d] - yj[d]);
  }
}

}  // namespace orrery::math
