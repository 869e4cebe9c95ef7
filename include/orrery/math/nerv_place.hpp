// Out-of-sample placement into a frozen NeRV map (orrery/nerv_place.hpp), per new point: its row's
// floor, its start, the sums over the reference map, the cost with its gradient and Hessian, and the
// Newton iteration with a backtracking line search. Shared by the CPU loop (host/cpu/
// nerv_place_engine.cpp, one point per thread, the sums in reference order) and the CUDA kernel
// (kernels/nerv_place.cu, a block per point, the sums strided over the threads and reduced in a
// fixed tree), which pass their own `Reduce` to nerv_place_minimise; the pair terms are
// math/nerv.hpp's.
//
// New point x with precision beta (its perplexity calibration), conditional probabilities p_l over
// its k nearest reference points nb_l, P = sum_l p_l, and place y among the N frozen reference
// places r_j (N x D row-major). With u_j = y - r_j, d_j = |u_j|^2, s_j = -beta d_j,
// q_j = exp(s_j - lse), lse = log sum_j exp(s_j) over ALL reference points, and the row of a sparse
// NeRV row: p_j = 0 and log p = lpf (the row's floor, nerv_place_log_floor) outside the list,
//   C(y) = lambda KL(p || q) + (1 - lambda) KL(q || p).
// C depends on y through the d_j. With c_j = dC/dd_j (math::nerv_pair_c), e_j = log q_j - lp_j -
// KL(q || p) and w_j = lambda P + (1 - lambda)(1 + e_j), differentiating c_j once more through the
// softmax gives d^2C / dd_j dd_l = beta^2 (delta_jl q_j w_j - q_j q_l (lambda P + (1 - lambda)(1 + e_j + e_l))),
// hence
//   dC/dy   = 2 sum_j c_j u_j,
//   d2C/dy2 = 2 (sum_j c_j) I + 4 beta^2 [ sum_j q_j w_j u_j u_j' - (lambda P + 1 - lambda) ubar ubar'
//                                          - (1 - lambda)(v ubar' + ubar v') ],
// ubar = sum_j q_j u_j, v = sum_j q_j e_j u_j: five sums over the reference, then D x D arithmetic.
// Every sum runs first over all N points as unlisted (p = 0, lp = lpf), then the k listed pairs add
// their difference (math::nerv_row_listed, math::nerv_pair_c_listed), as the sparse NeRV engines do.
// The shift m = -beta min_j d_j (a first pass) keeps every exp argument <= 0.
#pragma once
#include "orrery/math/exp.hpp"
#include "orrery/math/hd.hpp"
#include "orrery/math/linalg.hpp"
#include "orrery/math/nerv.hpp"

namespace orrery::math {

// orrery/nerv.hpp's kNervProbabilityFloor and the factor of its sparse rows' floor (nerv_row_log_floors),
// repeated here for the device (host/methods/nerv_place.cpp checks that they agree).
constexpr double kNervPlaceProbabilityFloor = 1e-300;
constexpr double kNervPlaceFloorFactor = 1e-3;
// The line search: sufficient decrease (Armijo) and the most halvings of a step.
constexpr double kNervPlaceArmijo = 1e-4;
constexpr int kNervPlaceHalvings = 40;

// log of the floor outside a new point's list, as nerv_row_log_floors gives a sparse row's:
// 1e-3 x its smallest positive p, 1e-3 / N (its N other points) for a row without one.
template <class T>
ORRERY_HD T nerv_place_log_floor(const T* p, int k, long long N) {
  T pmin = T(0);
  bool found = false;
  for (int l = 0; l < k; ++l)
    if (p[l] > T(0) && (!found || p[l] < pmin)) pmin = p[l], found = true;
  const T floor = found ? T(kNervPlaceFloorFactor) * pmin : T(kNervPlaceFloorFactor) / T(N);
  return nerv_log_prob(floor, T(kNervPlaceProbabilityFloor));
}

// One new point's data: the reference map, its list, its precision and floor, lambda.
template <class T, class I>
struct NervPlaceRow {
  const T* ref;  // N x D
  long long N;
  const I* nb;  // k reference indices
  const T* p;   // k probabilities
  int k;
  T beta, lambda, lpf, p_sum;
};

template <class T, class I>
ORRERY_HD NervPlaceRow<T, I> nerv_place_row(const T* ref, long long N, const I* nb, const T* p, int k, T beta,
                                            T lambda) {
  T ps = T(0);
  for (int l = 0; l < k; ++l) ps += p[l];
  return {ref, N, nb, p, k, beta, lambda, nerv_place_log_floor(p, k, N), ps};
}

// The start: the p-weighted mean of the neighbors' places (the uniform mean if every p is 0).
template <int D, class T, class I>
ORRERY_HD void nerv_place_start(const T* ref, const I* nb, const T* p, int k, T* y) {
  T w = T(0);
  for (int d = 0; d < D; ++d) y[d] = T(0);
  for (int l = 0; l < k; ++l) {
    w += p[l];
    for (int d = 0; d < D; ++d) y[d] += p[l] * ref[nb[l] * D + d];
  }
  const bool uniform = !(w > T(0));
  if (uniform) {
    for (int d = 0; d < D; ++d) y[d] = T(0);
    for (int l = 0; l < k; ++l)
      for (int d = 0; d < D; ++d) y[d] += ref[nb[l] * D + d];
    w = T(k);
  }
  for (int d = 0; d < D; ++d) y[d] /= w;
}

// u = y - r_j and d = |u|^2, in axis order.
template <int D, class T>
ORRERY_HD T nerv_place_diff(const T* y, const T* rj, T* u) {
  T d = T(0);
  for (int a = 0; a < D; ++a) {
    u[a] = y[a] - rj[a];
    d += u[a] * u[a];
  }
  return d;
}

// The sums' layout: one flat array, so that a reduction adds them entry by entry.
//   pass 1 (min):  [0] min_j d_j
//   pass 2 (row):  [0] Z = sum w_j, [1] T = sum w_j (s_j - m - lpf)  (math::nerv_row_terms)
//   pass 3 (mom):  [0] sum c_j, [1, D] sum c_j u_j, [1 + D, 2D] ubar, [1 + 2D, 3D] v, then D x D sum q_j w_j u_j u_j'
template <int D>
struct NervPlaceSizes {
  static constexpr int row = 2, moments = 1 + 3 * D + D * D;
};

// Pass 1 over the reference points j = first, first + stride, ... < N: the smallest d_j into *dmin.
template <int D, class T, class I>
ORRERY_HD void nerv_place_min_part(const NervPlaceRow<T, I>& r, const T* y, long long first, long long stride,
                                   T* dmin) {
  T u[D];
  for (long long j = first; j < r.N; j += stride) {
    const T d = nerv_place_diff<D>(y, r.ref + j * D, u);
    if (d < *dmin) *dmin = d;
  }
}

// Pass 2 (shift m): Z and T of the unlisted terms, added to s[0], s[1].
template <int D, class T, class I>
ORRERY_HD void nerv_place_row_part(const NervPlaceRow<T, I>& r, const T* y, T m, long long first, long long stride,
                                   T* s) {
  T u[D];
  for (long long j = first; j < r.N; j += stride) {
    const NervRowTerms<T> e = nerv_row_terms(nerv_place_diff<D>(y, r.ref + j * D, u), r.beta, m, T(0), r.lpf);
    s[0] += e.w;
    s[1] += e.wt;
  }
}

// The row's scalars from its shift and pass 2's sums, with the k listed pairs' differences (serial).
template <int D, class T, class I>
ORRERY_HD NervRow<T> nerv_place_finish_row(const NervPlaceRow<T, I>& r, const T* y, T m, const T* s) {
  T t = s[1], uu = T(0), u[D];
  for (int l = 0; l < r.k; ++l) {
    const T d = nerv_place_diff<D>(y, r.ref + r.nb[l] * D, u);
    const T w = exp_nonpositive(-r.beta * d - m);
    const NervRowTerms<T> e =
        nerv_row_listed(w, d, r.beta, r.p[l], nerv_log_prob(r.p[l], T(kNervPlaceProbabilityFloor)), r.lpf);
    t += e.wt;
    uu += e.pu;
  }
  return nerv_row_finish(r.beta, m, s[0], t, uu, r.p_sum);
}

// C from the row's scalars.
template <class T>
ORRERY_HD T nerv_place_cost(const NervRow<T>& row, T lambda) {
  return lambda * row.kl_pq + (T(1) - lambda) * row.kl_qp;
}

// One pair's terms of pass 3 (q_j, c_j, e_j and w_j at u_j) added to its sums s.
template <int D, class T>
ORRERY_HD void nerv_place_add_moments(const T* u, T q, T c, T e, T wgt, T* s) {
  s[0] += c;
  for (int a = 0; a < D; ++a) {
    s[1 + a] += c * u[a];
    s[1 + D + a] += q * u[a];
    s[1 + 2 * D + a] += q * e * u[a];
    for (int b = 0; b < D; ++b) s[1 + 3 * D + a * D + b] += q * wgt * u[a] * u[b];
  }
}

// Pass 3 (row's scalars known): the moments of the unlisted terms, added to s.
template <int D, class T, class I>
ORRERY_HD void nerv_place_moment_part(const NervPlaceRow<T, I>& r, const NervRow<T>& row, const T* y, long long first,
                                      long long stride, T* s) {
  const T base = r.lambda * row.p_sum + (T(1) - r.lambda);
  T u[D];
  for (long long j = first; j < r.N; j += stride) {
    const T d = nerv_place_diff<D>(y, r.ref + j * D, u);
    const T lq = nerv_log_q(d, row);
    const T q = exp_nonpositive(lq);
    const T c = nerv_pair_c(q, lq, row, T(0), r.lpf, r.lambda);
    const T e = lq - r.lpf - row.kl_qp;
    nerv_place_add_moments<D>(u, q, c, e, base + (T(1) - r.lambda) * e, s);
  }
}

// The listed pairs' differences to pass 3's sums, then dC/dy (D) and d2C/dy2 (D x D row-major).
template <int D, class T, class I>
ORRERY_HD void nerv_place_gradient(const NervPlaceRow<T, I>& r, const NervRow<T>& row, const T* y, const T* s0,
                                   T* grad, T* hess) {
  T s[NervPlaceSizes<D>::moments];
  for (int i = 0; i < NervPlaceSizes<D>::moments; ++i) s[i] = s0[i];
  T u[D];
  for (int l = 0; l < r.k; ++l) {
    const T d = nerv_place_diff<D>(y, r.ref + r.nb[l] * D, u);
    const T lq = nerv_log_q(d, row);
    const T q = exp_nonpositive(lq);
    const T lp = nerv_log_prob(r.p[l], T(kNervPlaceProbabilityFloor));
    const T dc = nerv_pair_c_listed(q, row, r.p[l], lp, r.lpf, r.lambda);
    const T de = r.lpf - lp;  // e_j(listed) - e_j(unlisted)
    s[0] += dc;
    for (int a = 0; a < D; ++a) {
      s[1 + a] += dc * u[a];
      s[1 + 2 * D + a] += q * de * u[a];
      for (int b = 0; b < D; ++b) s[1 + 3 * D + a * D + b] += q * (T(1) - r.lambda) * de * u[a] * u[b];
    }
  }
  const T* ub = s + 1 + D;
  const T* v = s + 1 + 2 * D;
  const T base = r.lambda * row.p_sum + (T(1) - r.lambda);
  const T b4 = T(4) * r.beta * r.beta;
  for (int a = 0; a < D; ++a) {  // the upper triangle, mirrored: exactly symmetric
    grad[a] = T(2) * s[1 + a];
    for (int b = a; b < D; ++b)
      hess[a * D + b] = hess[b * D + a] = (a == b ? T(2) * s[0] : T(0)) +
                                          b4 * (s[1 + 3 * D + a * D + b] - base * ub[a] * ub[b] -
                                                (T(1) - r.lambda) * (v[a] * ub[b] + ub[a] * v[b]));
  }
}

// What the minimisation ends with.
template <class T>
struct NervPlaceOutcome {
  T cost;
  int steps;  // Newton steps taken
};

// Minimises C from y (the start, overwritten with the end). `reduce` runs a pass over the reference:
//   reduce(pass, y, m, row, out): pass 0 fills out[0] with min d_j, pass 1 out[0..1] with pass 2's
//   sums at shift m, pass 2 out[...] with the moments at row; the caller's order of summation
//   (serial on the CPU, a fixed tree on the device).
// Each step: the Newton direction when the Hessian is positive definite (math::solve_spd), else the
// steepest descent direction scaled to one bandwidth 1 / sqrt(beta); then backtracking from the full
// step by halves until C has fallen by at least kNervPlaceArmijo x the slope's prediction. It stops when
// a step is shorter than tol bandwidths, after max_iter steps, or when no halving lowers C (its
// round-off level). Every value is a function of the sums, so every thread of a block takes the same
// path.
template <int D, class T, class I, class Reduce>
ORRERY_HD NervPlaceOutcome<T> nerv_place_minimise(const NervPlaceRow<T, I>& r, T* y, int max_iter, T tol,
                                                  Reduce&& reduce) {
  T out[NervPlaceSizes<D>::moments];
  // C at z, and the row's scalars there
  auto cost_at = [&](const T* z, NervRow<T>& row) {
    reduce(0, z, T(0), row, out);
    const T m = -r.beta * out[0];
    reduce(1, z, m, row, out);
    row = nerv_place_finish_row<D>(r, z, m, out);
    return nerv_place_cost(row, r.lambda);
  };
  NervRow<T> row{};
  T cost = cost_at(y, row);
  const T length = T(1) / hd_sqrt(r.beta);  // one bandwidth in map units
  int steps = 0;
  for (; steps < max_iter; ++steps) {
    T g[D], H[D * D], dir[D], trial[D];
    reduce(2, y, T(0), row, out);
    nerv_place_gradient<D>(r, row, y, out, g, H);
    T g2 = T(0);
    for (int a = 0; a < D; ++a) g2 += g[a] * g[a];
    if (!(g2 > T(0))) break;
    T b[D];
    for (int a = 0; a < D; ++a) b[a] = -g[a];
    if (!solve_spd<T, D>(H, b, dir)) {
      const T sc = length / hd_sqrt(g2);
      for (int a = 0; a < D; ++a) dir[a] = b[a] * sc;
    }
    T slope = T(0), dn = T(0);
    for (int a = 0; a < D; ++a) slope += g[a] * dir[a], dn += dir[a] * dir[a];
    dn = hd_sqrt(dn);
    T t = T(1);
    bool taken = false;
    NervRow<T> trial_row{};
    for (int h = 0; h <= kNervPlaceHalvings; ++h, t *= T(0.5)) {
      for (int a = 0; a < D; ++a) trial[a] = y[a] + t * dir[a];
      const T c = cost_at(trial, trial_row);
      if (c <= cost + T(kNervPlaceArmijo) * t * slope) {
        taken = true;  // (slope < 0: C fell)
        cost = c;
        break;
      }
    }
    if (!taken) break;
    for (int a = 0; a < D; ++a) y[a] = trial[a];
    row = trial_row;
    if (t * dn < tol * length) {
      ++steps;
      break;
    }
  }
  return {cost, steps};
}

}  // namespace orrery::math
