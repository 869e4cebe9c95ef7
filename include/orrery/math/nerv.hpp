// NeRV (MATH.md §3), per-pair arithmetic shared by the CPU loops (host/cpu/nerv_engine.cpp) and the
// CUDA kernels; T is the float type (double on the CPU).
//
// Row i of the map: s_ij = -beta_i d_ij with d_ij = |y_i - y_j|^2, q_{j|i} = exp(s_ij - lse_i),
// lse_i = log sum_{j != i} exp(s_ij); lp_ij = log p_{j|i} (floored, orrery/nerv.hpp), P_i = sum_j p_ij.
//
// Row sums. Shifting by m_i = -beta_i min_{j != i} d_ij (the largest s_ij) keeps every term
// w_ij = exp(s_ij - m_i) in (0, 1] with the largest equal to 1, so nothing overflows and Z_i >= 1:
//   Z_i = sum_j w_ij,   T_i = sum_j w_ij (s_ij - m_i - lp_ij),   U_i = sum_j p_ij (lp_ij + beta_i d_ij)
//   lse_i = m_i + log Z_i,   KL(q_i || p_i) = T_i / Z_i - log Z_i,   KL(p_i || q_i) = U_i + lse_i P_i
// (KL(p || q) = sum_j p_ij (lp_ij - s_ij + lse_i)), and then q_ij = w_ij / Z_i: one exp per pair and
// one log per row for the cost and the gradient together.
//
// Gradient. E = sum_i lambda KL(p_i || q_i) + (1 - lambda) KL(q_i || p_i) depends on d_ij through
// row i only, with derivative
//   c_ij = beta_i [lambda (p_ij - P_i q_ij) - (1 - lambda) q_ij (log q_ij - lp_ij - KL(q_i || p_i))]
// (P_i = 1 for normalised rows, log q_ij = s_ij - lse_i), and y_i, y_j both enter d_ij, so
//   dE/dy_i = 2 sum_j (c_ij + c_ji)(y_i - y_j).
// c_ij needs row i's scalars only: a row's pair terms go to dE/dy_i and, scattered, to every dE/dy_j.
//
// Sparse rows (p listed for some j only): the all-pairs loops use p = 0 and lp = the row's floor lpf
// for every j, and each listed pair then adds the difference (nerv_row_listed, nerv_pair_c_listed).
#pragma once
#include "orrery/math/exp.hpp"
#include "orrery/math/hd.hpp"

namespace orrery::math {

// log of an input probability raised to the floor (so KL(q || p) stays finite).
template <class T>
ORRERY_HD T nerv_log_prob(T p, T floor) {
  return hd_log(hd_max(p, floor));
}

// One pair's terms of the row sums: w_ij, w_ij (s_ij - m_i - lp_ij) and p_ij (lp_ij + beta_i d_ij).
template <class T>
struct NervRowTerms {
  T w, wt, pu;
};

template <class T>
ORRERY_HD NervRowTerms<T> nerv_row_terms(T d, T beta, T m, T p, T lp) {
  const T s = -beta * d - m;
  const T w = exp_nonpositive(s);
  return {w, w * (s - lp), p * (lp + beta * d)};
}

// A listed pair of a sparse row whose all-pairs term (weight w) used p = 0 and lp = lpf: what to add
// to the row's T and U.
template <class T>
ORRERY_HD NervRowTerms<T> nerv_row_listed(T w, T d, T beta, T p, T lp, T lpf) {
  return {T(0), w * (lpf - lp), p * (lp + beta * d)};
}

// A row's scalars, from its shift m and sums Z, T, U, P (header comment); q_ij = w_ij q_scale.
template <class T>
struct NervRow {
  T beta, lse, kl_qp, kl_pq, p_sum, q_scale;
};

template <class T>
ORRERY_HD NervRow<T> nerv_row_finish(T beta, T m, T z, T t, T u, T p_sum) {
  const T lz = hd_log(z);
  const T lse = m + lz;
  return {beta, lse, t / z - lz, u + lse * p_sum, p_sum, T(1) / z};
}

// log q_ij = s_ij - lse_i.
template <class T>
ORRERY_HD T nerv_log_q(T d, const NervRow<T>& r) {
  return -r.beta * d - r.lse;
}

// c_ij from q = q_ij, lq = log q_ij, row i's scalars, p = p_{j|i} and lp its floored log. A kernel
// without the row's weights takes q = exp_nonpositive(lq).
// The same from the row's three scalars it reads: for loops that must keep everything in registers
// (a NervRow built per element would live in memory and stop the loop vectorising).
template <class T>
ORRERY_HD_INLINE T nerv_pair_c_of(T q, T lq, T beta, T p_sum, T kl_qp, T p, T lp, T lambda) {
  return beta * (lambda * (p - p_sum * q) - (T(1) - lambda) * q * (lq - lp - kl_qp));
}
template <class T>
ORRERY_HD T nerv_pair_c(T q, T lq, const NervRow<T>& r, T p, T lp, T lambda) {
  return nerv_pair_c_of(q, lq, r.beta, r.p_sum, r.kl_qp, p, lp, lambda);
}

// c_ij(p, lp) - c_ij(0, lpf): the correction for a listed pair of a sparse row.
template <class T>
ORRERY_HD T nerv_pair_c_listed(T q, const NervRow<T>& r, T p, T lp, T lpf, T lambda) {
  return r.beta * (lambda * p + (T(1) - lambda) * q * (lp - lpf));
}

}  // namespace orrery::math
