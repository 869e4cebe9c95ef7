// Heavy-tailed symmetric SNE (MATH.md §4), per-pair arithmetic shared by the CPU loops and the
// CUDA kernels.
//   H(tau) = (alpha tau + 1)^(-1/alpha)   (alpha > 0; alpha = 1 is t-SNE's Student-t)
//   H(tau) = exp(-tau)                     (alpha = 0, Gaussian SSNE)
//   S(tau) = -d log H / d tau = H^alpha = 1 / (alpha tau + 1)   (S = 1 for the Gaussian)
// H is evaluated as exp(-log1p(alpha tau) / alpha), which is accurate for small alpha tau and
// tends to exp(-tau) continuously as alpha -> 0.
#pragma once
#include <cmath>

#include "orrery/math/exp.hpp"
#include "orrery/math/hd.hpp"

namespace orrery::math {

// The exp and log1p are math/exp.hpp's (the device's own functions under nvcc), whose arguments
// here are <= 0 and >= 0: on the CPU a loop over pairs of any tail then vectorises.
// H for alpha > 0, without the branch on alpha (for loops that pick the branch outside).
template <class T>
ORRERY_HD_INLINE T heavy_tail_positive(T tau, T alpha) {
  return exp_nonpositive(-log1p_nonnegative(alpha * tau) / alpha);
}

template <class T>
ORRERY_HD_INLINE T heavy_tail(T tau, T alpha) {
  if (alpha == T(0)) return exp_nonpositive(-tau);
  return heavy_tail_positive(tau, alpha);
}

// log H(tau), without forming H (no underflow for distant pairs).
template <class T>
ORRERY_HD_INLINE T heavy_tail_log(T tau, T alpha) {
  return alpha == T(0) ? -tau : -log1p_nonnegative(alpha * tau) / alpha;
}

template <class T>
ORRERY_HD_INLINE T heavy_tail_slope(T tau, T alpha) {
  return hd_recip(alpha * tau + T(1));
}

// One pair's H, S and log H for a tail kind fixed at compile time, for loops that pick the tail
// once outside (on the CPU a branch on alpha inside a loop keeps it scalar): kTail 1 is t-SNE's
// (division only; log H = -log(1 + tau)), 0 the Gaussian (H = exp(-tau), S = 1), 2 any other
// alpha > 0 (heavy_tail_positive). A caller that does not use a term lets the compiler drop it.
template <class T>
struct TailTerms {
  T h, s, log_h;
};
template <int kTail, class T>
ORRERY_HD_INLINE TailTerms<T> heavy_tail_terms(T tau, T alpha) {
  if constexpr (kTail == 1) {
    const T s = hd_recip(T(1) + tau);
    return {s, s, -log_positive(T(1) + tau)};
  } else if constexpr (kTail == 0) {
    return {exp_nonpositive(-tau), T(1), -tau};
  } else {
    const T log_h = -log1p_nonnegative(alpha * tau) / alpha;
    return {exp_nonpositive(log_h), heavy_tail_slope(tau, alpha), log_h};
  }
}

// H and S of one squared distance, the tail picked at run time; alpha = 1 (t-SNE) takes the exact
// division-only path.
template <class T>
ORRERY_HD_INLINE void heavy_tail_pair(T tau, T alpha, T& h, T& s) {
  TailTerms<T> t;
  if (alpha == T(1)) t = heavy_tail_terms<1>(tau, alpha);
  else if (alpha == T(0)) t = heavy_tail_terms<0>(tau, alpha);
  else t = heavy_tail_terms<2>(tau, alpha);
  h = t.h;
  s = t.s;
}

// One row's unnormalised sums, accumulated pair by pair in a single pass; the normaliser
// Z = sum_i h_sum_i is applied afterwards, so nothing needs Z before the pass (B_ij = H_ij S_ij / Z).
template <class T, int D>
struct HssneRow {
  T h_sum = T(0);    // sum_j H_ij                 (its total over i is Z)
  T a_sum = T(0);    // sum_j P_ij S_ij            (A_i)
  T hs_sum = T(0);   // sum_j H_ij S_ij            (Z B_i)
  T p_log_h = T(0);  // sum_j P_ij log H_ij        (for the objective)
  T ay[D] = {};      // sum_j P_ij S_ij y_j
  T hsy[D] = {};     // sum_j H_ij S_ij y_j
};

// Adds pair (i, j): the repulsive part (H terms, every pair) when `repulse`, the attractive part
// (P terms) when p > 0. alpha = 1 (t-SNE) takes an exact division-only path.
template <class T, int D>
ORRERY_HD void hssne_accumulate(const T* yi, const T* yj, T p, T alpha, bool repulse, HssneRow<T, D>& acc) {
  T tau = T(0);
  for (int d = 0; d < D; ++d) {
    const T diff = yi[d] - yj[d];
    tau += diff * diff;
  }
  T h, s;
  heavy_tail_pair(tau, alpha, h, s);
  if (repulse) {
    const T hs = h * s;
    acc.h_sum += h;
    acc.hs_sum += hs;
    for (int d = 0; d < D; ++d) acc.hsy[d] += hs * yj[d];
  }
  if (p > T(0)) {
    const T ps = p * s;
    acc.a_sum += ps;
    acc.p_log_h += p * heavy_tail_log(tau, alpha);
    for (int d = 0; d < D; ++d) acc.ay[d] += ps * yj[d];
  }
}

// The optimisers' per-coordinate updates, from one point's sums at the current map Y (fields of
// HssneRow: a = A_i unscaled, hs = Z B_i, ay, hsy), the exaggeration c (P scaled by c; 1 = none)
// and 1/Z. With a_c = c A_i, b = hs / Z and m = c ay - hsy / Z = sum_j (c A_ij - B_ij) y_j,
// the gradient of J_c = -c sum P log H + log Z is 4 (y a_c - y b - m)   (MATH.md §4).

template <class T>
ORRERY_HD T hssne_gradient_coord(T y, T a, T hs, T ay, T hsy, T c, T inv_z) {
  return T(4) * (y * (c * a - hs * inv_z) - (c * ay - hsy * inv_z));
}

// The paper's fixed-point map, T(y) = (y b + m) / a_c = y - grad / (4 a_c): a gradient step with
// the per-point length 1 / (4 c A_i) that needs no learning rate, so it is taken here as that
// move (no cancellation against y). Returned: the fraction `step` of the move to T(y), plus the
// heavy-ball term beta (y - y_prev) of the accelerated update (step 1, beta 0: the paper's
// update). A point without affinity (a_c = 0) has T(y) = y.
// The length is 1 / (4 max(c A_i, B_i)), B_i = sum_j Q_ij S_ij = hs / Z: a point far from its
// neighbors has A_i ~ P_i / d^2, and 1 / A_i would throw it by its repulsion times d^2 (20,000
// Fashion-MNIST images: one point jumped from 55 to 760 map units in a step, which J, summed
// over all points, barely saw). With B_i the repulsive part of the move is at most the
// hs-weighted mean distance to the other points. Stationary points are unchanged (the move is
// zero exactly where the gradient is), and every point with c A_i >= B_i (all of them while the
// exaggeration lasts) moves as in the paper.
template <class T>
ORRERY_HD T hssne_fixed_point_coord(T y, T y_prev, T a, T hs, T ay, T hsy, T c, T inv_z, T step, T beta) {
  const T a_c = c * a, b = hs * inv_z;
  const T move = a_c > T(0) ? -hssne_gradient_coord(y, a, hs, ay, hsy, c, inv_z) / (T(4) * (a_c > b ? a_c : b)) : T(0);
  return y + step * move + beta * (y - y_prev);
}

// The damped trial: halfway back from the trial t towards the current y.
template <class T>
ORRERY_HD T hssne_damp_coord(T t, T y) {
  return T(0.5) * (t + y);
}

// One coordinate of gradient descent with momentum and t-SNE's delta-bar-delta gains (Jacobs
// 1988, as in every t-SNE implementation): the gain grows by 0.2 while the gradient keeps the
// sign that the last move went against, shrinks by 0.8 otherwise, never below 0.01. Returns the
// new velocity, which is also the move.
template <class T>
ORRERY_HD T tsne_momentum_step(T grad, T& velocity, T& gain, T momentum, T learning_rate) {
  gain = (grad > T(0)) != (velocity > T(0)) ? gain + T(0.2) : gain * T(0.8);
  gain = gain < T(0.01) ? T(0.01) : gain;
  velocity = momentum * velocity - learning_rate * gain * grad;
  return velocity;
}

}  // namespace orrery::math
