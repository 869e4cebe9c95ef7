// Learning-metric distances of supervised NeRV (MATH.md §3), per pair, shared by the CPU loops
// and the CUDA kernel. The class-posterior model is the discriminative mixture of labelled
// Gaussians with K centres m_k, one width s and class weights beta_ck (columns sum to 1):
//   r_k(x) = softmax_k(-|x - m_k|^2 / 2s^2),   p_c(x) = sum_k beta_ck r_k(x).
// Its Fisher information J(x) = sum_c p_c grad log p_c grad log p_c^T has, along a direction v,
//   v' J v = sum_c (v . grad p_c)^2 / p_c,   v . grad p_c = sum_k beta_ck r_k (a_k - abar) / s^2,
// with a_k = m_k . v and abar = sum_k r_k a_k (d r_k / dx = r_k (m_k - mbar) / s^2).
// Everything a pair needs comes from the projections u_k(x) = m_k . x of its two points: along
// the straight path x(t) = x1 + t (x2 - x1), u_k(x(t)) interpolates linearly, and |x|^2 cancels in
// the softmax, so r_k(x(t)) = softmax_k((u_k(x(t)) - |m_k|^2 / 2) / s^2). One pair then costs
// O(T K C), independent of the input dimension, after an O(N K d) projection.
//   d(x1, x2) = sum_{t=1..T} sqrt(dx' J(x1 + (t - 1/2) dx) dx + eta |dx|^2 / s^2),   dx = (x2 - x1) / T.
// The isotropic term eta / s^2 (a small multiple of the model's own scale) regularises the metric:
// where the posterior is flat J vanishes, and without it points deep inside a class would be at
// distance ~0 from each other, so that their perplexity bandwidths (reused in the map) explode.
#pragma once
#include "orrery/math/hd.hpp"

namespace orrery::math {

// 1 / p_c in the Fisher information uses max(p_c, kFisherFloor): a class the model gives no mass at
// a point contributes nothing there instead of dividing by zero.
inline constexpr double kFisherFloor = 1e-12;

// Responsibilities r_k at a point with projections u (K), half squared norms h_k = |m_k|^2 / 2,
// inverse variance w = 1 / s^2; returns nothing, fills r (K).
template <class T>
ORRERY_HD void mixture_responsibilities(const T* u, const T* h, T w, int K, T* r) {
  T top = (u[0] - h[0]) * w;
  for (int k = 1; k < K; ++k) top = hd_max(top, (u[k] - h[k]) * w);
  T z = T(0);
  for (int k = 0; k < K; ++k) {
    r[k] = hd_exp((u[k] - h[k]) * w - top);
    z += r[k];
  }
  for (int k = 0; k < K; ++k) r[k] /= z;
}

// v' J(x) v at a point with responsibilities r (K); a (K) = m_k . v; beta is K x C row-major
// (beta[k * C + c]); p_floor keeps 1 / p_c finite where the model gives a class no mass.
template <class T>
ORRERY_HD T fisher_quadratic(const T* r, const T* a, const T* beta, T w, int K, int C, T p_floor) {
  T abar = T(0);
  for (int k = 0; k < K; ++k) abar += r[k] * a[k];
  T q = T(0);
  for (int c = 0; c < C; ++c) {
    T p = T(0), g = T(0);
    for (int k = 0; k < K; ++k) {
      const T br = beta[k * C + c] * r[k];
      p += br;
      g += br * (a[k] - abar);
    }
    g *= w;
    q += g * g / hd_max(p, p_floor);
  }
  return q;
}

// Straight-path learning-metric distance between two points given by their projections u1, u2
// (K each), with T pieces (midpoint rule); reg = eta |x2 - x1|^2 / s^2. scratch: 3 K values.
template <class T>
ORRERY_HD T fisher_path_distance(const T* u1, const T* u2, const T* h, const T* beta, T w, int K, int C, int pieces,
                                 T p_floor, T reg, T* scratch) {
  T* a = scratch;
  T* u = scratch + K;
  T* r = scratch + 2 * K;
  const T inv = T(1) / T(pieces);
  for (int k = 0; k < K; ++k) a[k] = (u2[k] - u1[k]) * inv;
  T d = T(0);
  for (int t = 0; t < pieces; ++t) {
    const T f = (T(t) + T(0.5)) * inv;
    for (int k = 0; k < K; ++k) u[k] = u1[k] + f * (u2[k] - u1[k]);
    mixture_responsibilities(u, h, w, K, r);
    d += hd_sqrt(fisher_quadratic(r, a, beta, w, K, C, p_floor) + reg * inv * inv);
  }
  return d;
}

}  // namespace orrery::math
