// Parametric Embedding, per-object arithmetic (MATH.md §1), shared by CpuBackend and the CUDA
// kernels. One object n sees its posterior row P_n (K), the log class priors, the class
// coordinates Phi (K x D, row-major) and its own coordinate r (D).
//
//   e_k  = log pi_k - |r - phi_k|^2 / 2,   log q_k = e_k - lse,   lse = log sum_k exp(e_k)
//   J_n  = -sum_k P_k log q_k + eta_r |r|^2
//   g    = sum_k P_k (r - phi_k) - S sum_k q_k (r - phi_k) + 2 eta_r r          (S = sum_k P_k)
//   H    = S Cov_q(phi) + 2 eta_r I
//
// Stability: lse subtracts the largest exponent, so objects very far from every class give
// finite J and q (no 0/0). The covariance is accumulated about the class with the largest
// exponent, which removes the cancellation of E[phi phi^T] - E[phi]E[phi]^T when q is
// concentrated on one distant class. S is kept explicit (not assumed 1) so g and H are the
// exact derivatives of J_n as computed; validated inputs have S = 1 and then g, H reduce to
// the formulas in MATH.md.
#pragma once
#include <limits>

#include "orrery/math/exp.hpp"
#include "orrery/math/hd.hpp"
#include "orrery/math/linalg.hpp"

namespace orrery::math {

template <class T, int D>
ORRERY_HD_INLINE T pe_exponent(T log_prior, const T* phi_k, const T* r) {
  T d2 = T(0);
  for (int d = 0; d < D; ++d) {
    const T diff = r[d] - phi_k[d];
    d2 += diff * diff;
  }
  return log_prior - T(0.5) * d2;
}

// J_n at r; grad (D) and hess (D x D) are written when non-null. lse_out, when non-null,
// receives log sum_k exp(e_k), which later passes use to recover q_k without a second max.
// q_out (K entries), when non-null, receives q_k; it also serves as scratch that saves
// recomputing the exponents in the second pass (the CPU passes it; a GPU thread, which has no
// room for K values, does not and recomputes). With the scratch the K loops are vectorised on the
// host: the exponents, then exp_nonpositive (math/exp.hpp, within 1 ulp of exp) of each with the
// sums over k in SIMD lanes; an exp per class and object is the cost of PE and of PLSV's document
// steps, and libm's exp does not vectorise.
template <class T, int D>
ORRERY_HD_INLINE T pe_object_eval(const T* p, const T* log_prior, const T* phi, int K, const T* r, T eta_r, T* grad,
                                  T* hess, T* lse_out = nullptr, T* q_out = nullptr) {
  T emax, sw = T(0), sp = T(0), spe = T(0);
  T m1[D] = {}, m2[D * D] = {}, spu[D] = {};
  const T* c;  // centre for the covariance accumulation
  if (q_out) {
    ORRERY_SIMD()
    for (int k = 0; k < K; ++k) q_out[k] = pe_exponent<T, D>(log_prior[k], phi + k * D, r);
    T top = q_out[0];
    ORRERY_SIMD(reduction(max : top))
    for (int k = 1; k < K; ++k) top = q_out[k] > top ? q_out[k] : top;
    emax = top;
    int kmax = 0;  // the first class with the largest exponent
    while (kmax < K - 1 && q_out[kmax] != emax) ++kmax;
    c = phi + kmax * D;
    const T c0 = c[0], c1 = c[1], c2 = D > 2 ? c[2] : T(0);
    const T r0 = r[0], r1 = r[1], r2 = D > 2 ? r[2] : T(0);
    // the weights first (the exp's constants and temporaries hold most registers), then the moments
    // as scalars, so that each is one SIMD reduction
    ORRERY_SIMD(reduction(+ : sw, spe))
    for (int k = 0; k < K; ++k) {
      const T e = q_out[k];
      const T w = exp_nonpositive(e - emax);
      q_out[k] = w;
      sw += w;
      spe += p[k] * e;
    }
    T a0 = 0, a1 = 0, a2 = 0, b00 = 0, b10 = 0, b11 = 0, b20 = 0, b21 = 0, b22 = 0, s0 = 0, s1 = 0, s2 = 0;
    ORRERY_SIMD(reduction(+ : sp, a0, a1, a2, b00, b10, b11, b20, b21, b22, s0, s1, s2))
    for (int k = 0; k < K; ++k) {
      const T* ph = phi + k * D;
      const T w = q_out[k];
      const T pk = p[k];
      sp += pk;
      const T u0 = ph[0] - c0, u1 = ph[1] - c1;
      a0 += w * u0;
      a1 += w * u1;
      s0 += pk * (r0 - ph[0]);
      s1 += pk * (r1 - ph[1]);
      b00 += w * u0 * u0;
      b10 += w * u1 * u0;
      b11 += w * u1 * u1;
      if (D > 2) {
        const T u2 = ph[D > 2 ? 2 : 0] - c2;
        a2 += w * u2;
        s2 += pk * (r2 - ph[D > 2 ? 2 : 0]);
        b20 += w * u2 * u0;
        b21 += w * u2 * u1;
        b22 += w * u2 * u2;
      }
    }
    const T a[3] = {a0, a1, a2}, su[3] = {s0, s1, s2};
    const T b[9] = {b00, 0, 0, b10, b11, 0, b20, b21, b22};
    for (int d = 0; d < D; ++d) {
      m1[d] = a[d];
      spu[d] = su[d];
      for (int e = 0; e <= d; ++e) m2[d * D + e] = b[d * 3 + e];
    }
  } else {
    emax = pe_exponent<T, D>(log_prior[0], phi, r);
    int kmax = 0;
    for (int k = 1; k < K; ++k) {
      const T e = pe_exponent<T, D>(log_prior[k], phi + k * D, r);
      if (e > emax) {
        emax = e;
        kmax = k;
      }
    }
    c = phi + kmax * D;
    for (int k = 0; k < K; ++k) {
      const T* ph = phi + k * D;
      const T e = pe_exponent<T, D>(log_prior[k], ph, r);
      const T w = hd_exp(e - emax);
      const T pk = p[k];
      sw += w;
      sp += pk;
      spe += pk * e;
      T u[D];
      for (int d = 0; d < D; ++d) {
        u[d] = ph[d] - c[d];
        m1[d] += w * u[d];
        spu[d] += pk * (r[d] - ph[d]);
      }
      if (hess) {
        for (int a = 0; a < D; ++a)
          for (int b = 0; b <= a; ++b) m2[a * D + b] += w * u[a] * u[b];
      }
    }
  }
  const T lse = emax + hd_log(sw);
  if (lse_out) *lse_out = lse;
  if (q_out) {
    const T inv = T(1) / sw;
    ORRERY_SIMD()
    for (int k = 0; k < K; ++k) q_out[k] *= inv;
  }
  T r2 = T(0);
  for (int d = 0; d < D; ++d) r2 += r[d] * r[d];
  const T objective = -(spe - sp * lse) + eta_r * r2;
  T mean_u[D];
  for (int d = 0; d < D; ++d) mean_u[d] = m1[d] / sw;
  if (grad) {
    // sum_k q_k (r - phi_k) = r - c - E_q[u]
    for (int d = 0; d < D; ++d) grad[d] = spu[d] - sp * (r[d] - c[d] - mean_u[d]) + T(2) * eta_r * r[d];
  }
  if (hess) {
    for (int a = 0; a < D; ++a) {
      for (int b = 0; b <= a; ++b) {
        T h = sp * (m2[a * D + b] / sw - mean_u[a] * mean_u[b]);
        if (a == b) h += T(2) * eta_r;
        hess[a * D + b] = h;
        hess[b * D + a] = h;
      }
    }
  }
  return objective;
}

template <class T>
struct PeObjectResult {
  T objective;   // J_n at the returned r
  T grad_sq;     // |dJ_n/dr|^2 at the returned r
  T lse;         // log-normaliser at the returned r
  int iterations;
  bool converged;  // grad_sq < eps_r
  const T* q;      // q_k at the returned r (inside the scratch), or null without scratch
};

// Newton's method on one object with Phi fixed (paper section 3, steps 2-5), with Armijo
// backtracking: J_n is convex in r and H is SPD (2 eta_r I bounds it below), so a full Newton
// step is tried first and halved until J_n decreases enough. If H cannot be factorised in the
// working precision, the step falls back to the gradient scaled by 1 / (2 eta_r + S * trace
// bound), which backtracking then shortens as needed. Stops at |g|^2 < eps_r, at max_iter,
// or when no step decreases J_n (round-off floor).
// scratch (2K entries, optional) keeps q at the current and the trial point, so that the caller
// can form class forces without another pass of exponentials (pe_class_forces_from_q).
template <class T, int D>
ORRERY_HD_INLINE PeObjectResult<T> pe_newton_object(const T* p, const T* log_prior, const T* phi, int K, T* r, T eta_r,
                                              T eps_r, int max_iter, T* scratch = nullptr) {
  T* q_cur = scratch;
  T* q_try = scratch ? scratch + K : nullptr;
  T g[D], H[D * D], lse;
  T J = pe_object_eval<T, D>(p, log_prior, phi, K, r, eta_r, g, H, &lse, q_cur);
  T gsq = T(0);
  for (int d = 0; d < D; ++d) gsq += g[d] * g[d];
  int it = 0;
  for (; it < max_iter && !(gsq < eps_r); ++it) {
    T step[D];
    if (!solve_spd<T, D>(H, g, step)) {
      T tr = T(0);
      for (int d = 0; d < D; ++d) tr += H[d * D + d];
      const T inv = T(1) / hd_max(tr, T(2) * eta_r);
      for (int d = 0; d < D; ++d) step[d] = g[d] * inv;
    }
    T slope = T(0);
    for (int d = 0; d < D; ++d) slope += g[d] * step[d];
    T t = T(1);
    bool accepted = false;
    T r_new[D], g_new[D], H_new[D * D], lse_new = lse, J_new = J;
    for (int bt = 0; bt < 40; ++bt) {
      for (int d = 0; d < D; ++d) r_new[d] = r[d] - t * step[d];
      J_new = pe_object_eval<T, D>(p, log_prior, phi, K, r_new, eta_r, g_new, H_new, &lse_new, q_try);
      if (J_new <= J - T(1e-4) * t * slope) {
        accepted = true;
        break;
      }
      // Terminal phase: the predicted decrease is below the round-off of J, so J can no longer
      // rank the trial point; a step that shrinks |g| is accepted instead.
      if (slope <= T(64) * std::numeric_limits<T>::epsilon() * (T(1) + hd_abs(J))) {
        T gsq_new = T(0);
        for (int d = 0; d < D; ++d) gsq_new += g_new[d] * g_new[d];
        if (gsq_new < gsq) {
          accepted = true;
          break;
        }
      }
      t *= T(0.5);
    }
    if (!accepted) break;
    for (int d = 0; d < D; ++d) {
      r[d] = r_new[d];
      g[d] = g_new[d];
    }
    for (int i = 0; i < D * D; ++i) H[i] = H_new[i];
    J = J_new;
    lse = lse_new;
    T* t_swap = q_cur;
    q_cur = q_try;
    q_try = t_swap;
    gsq = T(0);
    for (int d = 0; d < D; ++d) gsq += g[d] * g[d];
  }
  return PeObjectResult<T>{J, gsq, lse, it, gsq < eps_r, q_cur};
}

// One object's contribution to dJ/dphi_k (without the eta_phi term):
//   (P_k - q_k)(phi_k - r),   q_k = exp(e_k - lse).
// Writes D values to out and returns P_k - q_k.
template <class T, int D>
ORRERY_HD T pe_class_force(T p_k, T log_prior_k, const T* phi_k, const T* r, T lse, T* out) {
  const T q = hd_exp(pe_exponent<T, D>(log_prior_k, phi_k, r) - lse);
  const T w = p_k - q;
  for (int d = 0; d < D; ++d) out[d] = w * (phi_k[d] - r[d]);
  return w;
}

// All K class forces of one object from its q (as left by pe_newton_object's scratch), added to
// out (K x D): out_k += (P_k - q_k)(phi_k - r). Same arithmetic as pe_class_force without the
// exponentials.
template <class T, int D>
ORRERY_HD void pe_class_forces_from_q(const T* p, const T* q, const T* phi, int K, const T* r, T* out) {
  for (int k = 0; k < K; ++k) {
    const T w = p[k] - q[k];
    for (int d = 0; d < D; ++d) out[k * D + d] += w * (phi[k * D + d] - r[d]);
  }
}

}  // namespace orrery::math
