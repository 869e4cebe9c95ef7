// PLSV, per-document and per-word arithmetic (MATH.md §2), shared by the CPU engine and the CUDA
// kernels. Theta is held word-major (theta_w = (theta_1w .. theta_Zw), Z contiguous values per
// word), so that a nonzero (n, w) reads one contiguous row and the statistics of word w are one
// contiguous row too.
//
// One E-step visits every nonzero twice, never storing r_nwz (Z values per nonzero):
//   by documents: P_z = P(z|x_n); m = sum_z P_z theta_zw; u_nw = c_nw / m;
//                 log-likelihood += c_nw log m;  R_nz = P_z sum_w u_nw theta_zw
//   by words:     S_zw = theta_zw sum_n u_nw P(z|x_n)
// both of which follow from r_nwz = P_z theta_zw / m.
#pragma once
#include "orrery/math/hd.hpp"
#include "orrery/math/pe.hpp"

namespace orrery::math {

// P(z|x) = softmax_z(-|x - phi_z|^2 / 2) into p (Z values); stabilised by the largest exponent.
template <class T, int D>
ORRERY_HD void plsv_topic_proportions(const T* x, const T* phi, int Z, T* p) {
  T emax = pe_exponent<T, D>(T(0), phi, x);
  p[0] = emax;
  for (int z = 1; z < Z; ++z) {
    p[z] = pe_exponent<T, D>(T(0), phi + z * D, x);
    emax = hd_max(emax, p[z]);
  }
  T s = T(0);
  for (int z = 0; z < Z; ++z) s += (p[z] = hd_exp(p[z] - emax));
  const T inv = T(1) / s;
  for (int z = 0; z < Z; ++z) p[z] *= inv;
}

#if defined(__CUDACC__)
// Warp sum and max in a fixed tree order (shfl_down), broadcast from lane 0 so that every lane holds
// the same bits.
template <class T>
__device__ __forceinline__ T warp_sum(T v) {
  for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffffu, v, off);
  return __shfl_sync(0xffffffffu, v, 0);
}
template <class T>
__device__ __forceinline__ T warp_max(T v) {
  for (int off = 16; off > 0; off /= 2) v = hd_max(v, __shfl_down_sync(0xffffffffu, v, off));
  return __shfl_sync(0xffffffffu, v, 0);
}

// plsv_topic_proportions computed by a warp: lane l holds topics l, l + 32, ... in p[0 .. kPerLane)
// (Z <= 32 kPerLane; slots past Z hold 0). The same exponents, shift by the largest and
// normalisation as the serial form, with the max and the sum taken across the warp.
template <class T, int D, int kPerLane>
__device__ __forceinline__ void plsv_topic_proportions_warp(const T* x, const T* phi, int Z, int lane,
                                                            T (&p)[kPerLane]) {
  T emax = -INFINITY;
#pragma unroll
  for (int j = 0; j < kPerLane; ++j) {
    const int z = lane + 32 * j;
    p[j] = z < Z ? pe_exponent<T, D>(T(0), phi + z * D, x) : T(-INFINITY);
    emax = hd_max(emax, p[j]);
  }
  emax = warp_max(emax);
  T s = T(0);
#pragma unroll
  for (int j = 0; j < kPerLane; ++j) {
    p[j] = lane + 32 * j < Z ? hd_exp(p[j] - emax) : T(0);
    s += p[j];
  }
  const T inv = T(1) / warp_sum(s);
#pragma unroll
  for (int j = 0; j < kPerLane; ++j) p[j] *= inv;
}
#endif

// m = sum_z P_z theta_zw for one word's theta row.
template <class T>
ORRERY_HD T plsv_word_mixture(const T* p, const T* theta_w, int Z) {
  T m = T(0);
  for (int z = 0; z < Z; ++z) m += p[z] * theta_w[z];
  return m;
}

// The M-step for one theta entry: (S_zw + alpha) / (sum_w S_zw + alpha W).
template <class T>
ORRERY_HD T plsv_theta_update(T stat, T topic_total, T alpha, T num_words) {
  return (stat + alpha) / (topic_total + alpha * num_words);
}

// Information of a document's topic proportions, log Z - H(P) >= 0 (0 for uniform P).
template <class T>
ORRERY_HD T plsv_topic_information(const T* p, int Z) {
  T h = T(0);
  for (int z = 0; z < Z; ++z)
    if (p[z] > T(0)) h -= p[z] * hd_log(p[z]);
  return hd_log(T(Z)) - h;
}

// One document's log posterior in its coordinate x (the model fixed):
//   sum_w c_nw log sum_z P(z|x) theta_zw - gamma/2 |x|^2.
// p: Z values of scratch (left holding P(z|x)).
template <class T, int D>
ORRERY_HD T plsv_document_log_posterior(const T* x, const T* phi, int Z, const int* words, const T* counts,
                                        long long nnz, const T* theta_t, T gamma, T* p) {
  plsv_topic_proportions<T, D>(x, phi, Z, p);
  T lp = T(0), sq = T(0);
  for (int d = 0; d < D; ++d) sq += x[d] * x[d];
  for (long long i = 0; i < nnz; ++i)
    lp += counts[i] * hd_log(plsv_word_mixture(p, theta_t + static_cast<long long>(words[i]) * Z, Z));
  return lp - T(0.5) * gamma * sq;
}

// Candidate topics per relocation (plus the centre and the current coordinate).
inline constexpr int kPlsvRelocateCandidates = 4;

// Relocation of one document: its log posterior in x_n can have several maxima (one near each
// group of topics its words come from) and EM only climbs to the nearest. The candidates are the
// centre and the positions of the kPlsvRelocateCandidates topics under which its words are most
// likely (sum_w c_nw log theta_zw); the document moves to the best of them when that beats its
// current coordinate. Returns -2 (stayed), -1 (centre) or the topic. l, p: Z values of scratch each.
// log_theta_t, when given, holds log theta_t (the host computes it once per relocation, W x Z
// logarithms instead of one per word occurrence and topic).
template <class T, int D>
ORRERY_HD int plsv_relocate_document(T* x, const T* phi, int Z, const int* words, const T* counts, long long nnz,
                                     const T* theta_t, T gamma, T* l, T* p, const T* log_theta_t = nullptr) {
  for (int z = 0; z < Z; ++z) l[z] = T(0);
  for (long long i = 0; i < nnz; ++i) {
    const long long at = static_cast<long long>(words[i]) * Z;
    if (log_theta_t)
      for (int z = 0; z < Z; ++z) l[z] += counts[i] * log_theta_t[at + z];
    else
      for (int z = 0; z < Z; ++z) l[z] += counts[i] * hd_log(theta_t[at + z]);
  }
  int top[kPlsvRelocateCandidates];
  const int k = Z < kPlsvRelocateCandidates ? Z : kPlsvRelocateCandidates;
  for (int j = 0; j < k; ++j) {  // selection of the k largest, ties by lower topic
    int arg = -1;
    for (int z = 0; z < Z; ++z) {
      bool taken = false;
      for (int t = 0; t < j; ++t) taken = taken || top[t] == z;
      if (!taken && (arg < 0 || l[z] > l[arg])) arg = z;
    }
    top[j] = arg;
  }
  T best = plsv_document_log_posterior<T, D>(x, phi, Z, words, counts, nnz, theta_t, gamma, p);
  int which = -2;
  for (int j = -1; j < k; ++j) {
    const int cand = j < 0 ? -1 : top[j];
    T y[D];
    for (int d = 0; d < D; ++d) y[d] = cand < 0 ? T(0) : phi[cand * D + d];
    const T lp = plsv_document_log_posterior<T, D>(y, phi, Z, words, counts, nnz, theta_t, gamma, p);
    if (lp > best) {
      best = lp;
      which = cand;
    }
  }
  if (which != -2)
    for (int d = 0; d < D; ++d) x[d] = which < 0 ? T(0) : phi[which * D + d];
  return which;
}

// Newton on one document's coordinate through PE's per-object solver: posteriors R_nz / M_n,
// eta_r = gamma / (2 M_n), the gradient tolerance per word. r_scaled (Z) holds R_nz / M_n, zeros
// (Z) log priors of 0; -Q_n = M_n * result.objective.
template <class T, int D>
ORRERY_HD_INLINE PeObjectResult<T> plsv_newton_document(const T* r_scaled, const T* zeros, const T* phi, int Z, T* x,
                                                  T length, T gamma, T eps_x, int max_iter, T* scratch) {
  return pe_newton_object<T, D>(r_scaled, zeros, phi, Z, x, gamma / (T(2) * length), eps_x, max_iter, scratch);
}

}  // namespace orrery::math
