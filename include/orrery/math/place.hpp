// Out-of-sample placement into a frozen HSSNE map (orrery/hssne.hpp, place_points), per new point:
// the start, the first step length, the cost with its gradient, the exact sums over the reference
// and the step rule. Shared by the CPU placement engine (host/cpu/place_engine.cpp) and the CUDA one
// (kernels/place.cu), so both take the same steps from the same sums.
//
// New point i (place y) has conditional probabilities p_l over its k nearest reference points
// nb_l (rows of the reference map R, N x D row-major) and its own output distribution over all N
// reference points, q_j = H(|y - r_j|^2) / h with h = sum_j H_j. Its cost and gradient (MATH.md §4,
// with the reference frozen) are
//   C(y) = sum_l p_l log p_l - sum_l p_l log H_l + log h,
//   dC/dy = 2 sum_l p_l S_l (y - r_l) - 2 (y hs - hsy) / h,
// where hs = sum_j H_j S_j and hsy = sum_j H_j S_j r_j come from the grid or the exact loop.
#pragma once
#include "orrery/math/hd.hpp"
#include "orrery/math/neighbor.hpp"

namespace orrery::math {

// Step length growth after a step that lowered the cost, and its cut after one that did not.
constexpr double kPlaceGrow = 1.2, kPlaceCut = 0.5;
// The attraction's curvature below which the first step length stops growing (a point whose
// neighbors all carry p = 0, or lie far out in a light tail).
constexpr double kPlaceMinCurvature = 1e-12;

// |y - r_j|^2, summed in axis order (not vectorised: the same bits on every path).
template <int D, class T, class I>
ORRERY_HD_INLINE T place_tau(const T* y, const T* ref, I j) {
  T tau = T(0);
  for (int d = 0; d < D; ++d) {
    const T diff = y[d] - ref[j * D + d];
    tau += diff * diff;
  }
  return tau;
}

// Visits the k pairs (value(l), weight(l)) in ascending order, by value and then by weight (the
// order std::sort gives the pairs), a pair occurring c times c times: visit(value, weight) returns
// true to stop. A selection, O(k^2), with no scratch: a device thread has no room to sort k pairs,
// and k (3 perplexity) is small. Pairs with a NaN are never visited.
template <class T, class Value, class Weight, class Visit>
ORRERY_HD void for_each_in_order(int k, const Value& value, const Weight& weight, Visit&& visit) {
  T last_v = T(0), last_w = T(0);
  for (int seen = 0; seen < k;) {
    int count = 0;
    T best_v = T(0), best_w = T(0);
    for (int l = 0; l < k; ++l) {
      const T v = value(l), w = weight(l);
      if (seen > 0 && !(v > last_v || (v == last_v && w > last_w))) continue;  // visited already
      if (count == 0 || v < best_v || (v == best_v && w < best_w)) best_v = v, best_w = w, count = 1;
      else if (v == best_v && w == best_w) ++count;
    }
    if (count == 0) return;
    last_v = best_v, last_w = best_w;
    for (int c = 0; c < count; ++c)
      if (visit(best_v, best_w)) return;
    seen += count;
  }
}

// The weighted median: in ascending order of value, the value at which the running weight first
// reaches half the total (both summed in that order); the largest value if it never does.
template <class T, class Value, class Weight>
ORRERY_HD T weighted_median(int k, const Value& value, const Weight& weight) {
  T total = T(0);
  for_each_in_order<T>(k, value, weight, [&](T, T w) {
    total += w;
    return false;
  });
  T run = T(0), at = T(0);
  for_each_in_order<T>(k, value, weight, [&](T v, T w) {
    run += w;
    at = v;
    return run >= T(0.5) * total;
  });
  return at;
}

// A new point's start: per axis the p-weighted median of its neighbors' places (robust to a
// neighbor far out on the map, where a mean would land between clusters).
template <int D, class T, class I>
ORRERY_HD void place_start(const T* ref, const I* nb, const T* p, int k, T* y) {
  for (int d = 0; d < D; ++d)
    y[d] = weighted_median<T>(
        k, [&](int l) { return ref[nb[l] * D + d]; }, [&](int l) { return p[l]; });
}

// The first step length 1 / (2 sum_l p_l S_l) at y: the inverse curvature of the attraction there
// (its Hessian is about 2 sum_l p_l S_l I), so the first step is about a Newton step.
template <int D, class T, class I>
ORRERY_HD T place_first_step(const T* y, const T* ref, const I* nb, const T* p, int k, T alpha) {
  T a = T(0);
  for (int l = 0; l < k; ++l) {
    T h, s;
    heavy_tail_pair(place_tau<D>(y, ref, nb[l]), alpha, h, s);
    a += p[l] * s;
  }
  return T(1) / (T(2) * (a < T(kPlaceMinCurvature) ? T(kPlaceMinCurvature) : a));
}

// C(y) and dC/dy (above) from the sums h, hs, hsy over the reference at y. Neighbors with
// p_l = 0 add nothing (0 log 0 = 0).
template <int D, class T, class I>
ORRERY_HD T place_cost(const T* y, const T* ref, const I* nb, const T* p, int k, T alpha, T h, T hs, const T* hsy,
                       T* grad) {
  T cost = hd_log(h);
  for (int d = 0; d < D; ++d) grad[d] = T(-2) * (y[d] * hs - hsy[d]) / h;
  for (int l = 0; l < k; ++l) {
    if (!(p[l] > T(0))) continue;
    const T tau = place_tau<D>(y, ref, nb[l]);
    T hj, sj;
    heavy_tail_pair(tau, alpha, hj, sj);
    cost += p[l] * (hd_log(p[l]) - heavy_tail_log(tau, alpha));
    for (int d = 0; d < D; ++d) grad[d] += T(2) * p[l] * sj * (y[d] - ref[nb[l] * D + d]);
  }
  return cost;
}

// The sums at y over every reference point (none excluded: y is not one of them), in reference
// order: h, hs and hsy of HssneRow. The pair terms are hssne_accumulate's, as the grid's far points'.
template <int D, class T>
ORRERY_HD void place_exact_sums(const T* y, const T* ref, long long N, T alpha, HssneRow<T, D>& acc) {
  for (long long j = 0; j < N; ++j) hssne_accumulate<T, D>(y, ref + j * D, T(0), alpha, true, acc);
}

// The trial place: a gradient step of the point's own length.
template <int D, class T>
ORRERY_HD void place_trial(const T* y, const T* grad, T eta, T* trial) {
  for (int d = 0; d < D; ++d) trial[d] = y[d] - eta * grad[d];
}

// The step rule: a trial that lowers the cost is taken (place, gradient and cost) and the next step
// is kPlaceGrow longer; one that does not is refused and the length cut by kPlaceCut, so the cost
// never rises. Returns whether the point keeps moving: its next step eta |grad| is not below tol.
template <int D, class T>
ORRERY_HD bool place_accept(T trial_cost, const T* trial, const T* trial_grad, T tol, T& cost, T* y, T* grad, T& eta) {
  if (trial_cost < cost) {
    for (int d = 0; d < D; ++d) y[d] = trial[d], grad[d] = trial_grad[d];
    cost = trial_cost;
    eta *= T(kPlaceGrow);
  } else {
    eta *= T(kPlaceCut);
  }
  T g2 = T(0);
  for (int d = 0; d < D; ++d) g2 += grad[d] * grad[d];
  return !(eta * hd_sqrt(g2) < tol);
}

}  // namespace orrery::math
