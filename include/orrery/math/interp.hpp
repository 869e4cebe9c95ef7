// Interpolated kernel sums (the FIt-SNE / openTSNE scheme, SCALE.md), per-point and per-node
// arithmetic shared by the CPU grid and the CUDA kernels.
//
// The map is covered by a regular grid of nodes of spacing h = w / p (w the box width, p the nodes
// per box: the grid spans whole boxes of p nodes per dimension, the node at (k + 1/2) h from the
// grid's origin). A point's charge goes to the p^D nodes nearest to it (its stencil: p per axis,
// centred on it, stencil_of) with Lagrange weights (the polynomial of degree p - 1 through those
// nodes, evaluated at the point), the kernel is convolved over the node grid, and the potentials
// come back with the same weights. The weights sum to 1 and reproduce polynomials of degree < p
// exactly, so the error is that of degree-(p-1) interpolation of the kernel: O((h / l)^p) for a
// kernel of length scale l (here l = 1), which is why the node spacing is bounded, not the box
// count. A centred stencil's error is several times smaller than that of a stencil fixed to the
// point's box (FIt-SNE's), where a point near the box's edge lies outside the middle of its nodes:
// the node polynomial prod_k (x - x_k) reaches 0.56 h^4 (p = 4) in the middle interval, 6.6 h^4 at
// a box's edge (at the 10,000-image map the force's error fell 3-4x, orrery_bench hssne-interp).
#pragma once
#include <cmath>

#include "orrery/math/exp.hpp"
#include "orrery/math/hd.hpp"
#include "orrery/math/neighbor.hpp"

namespace orrery::math {

// The most nodes per box a grid may use (the weights live in fixed arrays).
constexpr int kMaxInterpNodes = 8;

// Lagrange weights of the p nodes (k + 1/2) / p of the unit box at u in [0, 1] (box units):
// w_k = prod_{m != k} (u - x_m) / (x_k - x_m). The denominators depend on p only; written out here
// in a fixed order, so host and device give the same weights for the same u.
template <class T>
ORRERY_HD_INLINE void lagrange_weights(T u, int p, T* w) {
  for (int k = 0; k < p; ++k) {
    const T xk = (T(k) + T(0.5)) / T(p);
    T num = T(1), den = T(1);
    for (int m = 0; m < p; ++m) {
      if (m == k) continue;
      const T xm = (T(m) + T(0.5)) / T(p);
      num *= u - xm;
      den *= xk - xm;
    }
    w[k] = num / den;
  }
}

// The stencil of coordinate y on an axis of G >= p nodes from `origin`, spacing h: its first node
// s (the p nodes s..s+p-1 nearest to y, kept within the grid) and u, y's position in the unit box
// of those nodes (node k at (k + 1/2) / p, as lagrange_weights takes it). With t = (y - origin) / h
// - 1/2 (node k at t = k): s = floor(t + 1 - p / 2), so y lies in the middle node interval (even p)
// or within half a spacing of the middle node (odd p).
template <class T>
ORRERY_HD_INLINE int stencil_of(T y, T origin, T h, int G, int p, T& u) {
  const T t = (y - origin) / h - T(0.5);
  const T first = floor(t + T(1) - T(0.5) * T(p));
  const int s = first < T(0) ? 0 : (first > T(G - p) ? G - p : static_cast<int>(first));
  u = (t - T(s) + T(0.5)) / T(p);
  u = u < T(0) ? T(0) : (u > T(1) ? T(1) : u);
  return s;
}

// The two kernels of HSSNE's repulsion (neighbor.hpp's tail H(tau), tau the squared distance):
// H itself (its sum is the normaliser Z) and H S = H^(1 + alpha) (its sums with charges 1 and y
// give sum_j H_ij S_ij and sum_j H_ij S_ij y_j, the repulsive force and the fixed-point update's
// B terms). Written as exp(-(1 + alpha) log1p(alpha tau) / alpha): stable in float for small
// alpha tau; exactly (1 + tau)^-2 for t-SNE and exp(-tau) for the Gaussian.
template <class T>
ORRERY_HD_INLINE T tail_kernel_h(T tau, T alpha) {
  if (alpha == T(1)) return hd_recip(T(1) + tau);
  return heavy_tail(tau, alpha);
}

template <class T>
ORRERY_HD_INLINE T tail_kernel_hs(T tau, T alpha) {
  if (alpha == T(1)) {
    const T h = hd_recip(T(1) + tau);
    return h * h;
  }
  if (alpha == T(0)) return exp_nonpositive(-tau);
  return exp_nonpositive(-(T(1) + alpha) * log1p_nonnegative(alpha * tau) / alpha);
}

// Kernel value at a grid offset for the circular convolution: index j in [0, M) of an axis of
// M = 2 G points (G nodes per axis) stands for the offset j (j < G), j - M (j > G) or nothing
// (j = G, the padding's middle, never reached by |offset| < G). Returns the offset in nodes and
// whether it is used.
ORRERY_HD_INLINE bool circular_offset(int j, int G, int& offset) {
  offset = j < G ? j : j - 2 * G;
  return j != G;
}

// The stencil positions along one axis (G - p + 1 of them) whose p nodes reach node n:
// n - p < s <= n, within [0, positions - 1]; lo > hi for none.
ORRERY_HD_INLINE void stencils_reaching(int n, int p, int positions, int& lo, int& hi) {
  lo = n - p + 1 > 0 ? n - p + 1 : 0;
  hi = n < positions - 1 ? n : positions - 1;
}

// One coefficient's term of Parseval's sum_w |Q(w)|^2 K(w) over a real grid's spectrum stored with
// axis 0 halved: index k0 of k0 = 0..last stands for itself and its mirror, but for 0 and last
// (the Nyquist index), so it counts twice. K is the kernel's spectrum already scaled by 1 / M.
template <class T>
ORRERY_HD_INLINE T parseval_term(T re, T im, T kernel, long k0, long last) {
  return (k0 == 0 || k0 == last ? T(1) : T(2)) * (re * re + im * im) * kernel;
}

// A point's interaction with itself through the grid, per axis: its charge reaches node m of its
// stencil with weight w_m and is read back from node n with weight w_n, so the grid's self term is
// sum_{m,n} w_m w_n K(x_m - x_n). Per axis the pairs group by the node offset m - n = delta in
// [-(p-1), p-1]: c[delta + p - 1] = sum_m w_m w_{m - delta}, and the self term is
// sum over offsets (delta_0, ..., delta_{D-1}) of K(h^2 |delta|^2) prod_d c_d[delta_d]; (2p - 1)^D
// terms rather than p^(2D). Removing exactly this (not H(0) = 1) leaves the sum over the other
// points, so an isolated point's h and hs keep the accuracy of its neighbors' contributions.
template <class T>
ORRERY_HD_INLINE void self_overlap(const T* w, int p, T* c) {
  for (int delta = -(p - 1); delta < p; ++delta) {
    T sum = T(0);
    for (int m = 0; m < p; ++m) {
      const int n = m - delta;
      if (n >= 0 && n < p) sum += w[m] * w[n];
    }
    c[delta + p - 1] = sum;
  }
}

// The weight of node (k0, k1, k2) of a point's stencil, from its per-axis weights w (D x p, axis d at
// w + d p): the product of the axes' weights, multiplied in this order on every device.
template <int D, class T>
ORRERY_HD_INLINE T stencil_node_weight(const T* w, int p, int k0, int k1, int k2) {
  if constexpr (D == 2) return w[p + k1] * w[k0];
  else return w[2 * p + k2] * (w[p + k1] * w[k0]);
}

// Visits the p^D nodes of a stencil (its first node's linear index `base`, node strides `stride`)
// with their weights, axis 0 fastest: fn(node_index, weight).
template <int D, class T, class Fn>
ORRERY_HD_INLINE void for_stencil_nodes(int p, const T* w, const long* stride, long base, Fn&& fn) {
  for (int k2 = 0; k2 < (D == 3 ? p : 1); ++k2)
    for (int k1 = 0; k1 < p; ++k1)
      for (int k0 = 0; k0 < p; ++k0)
        fn(base + (D == 3 ? k2 * stride[2] : 0) + k1 * stride[1] + k0, stencil_node_weight<D>(w, p, k0, k1, k2));
}

// The grid's self term of a point with per-axis weights w: sum over the (2p - 1)^D node offsets of
// the kernels (self_h, self_hs: K at offset (o0, o1, o2), o0 fastest) times the axes' overlaps
// (self_overlap).
template <int D, class T>
ORRERY_HD_INLINE void grid_self_term(const T* w, int p, const T* self_h, const T* self_hs, T& sh, T& shs) {
  const int span = 2 * p - 1;
  T c[3][2 * kMaxInterpNodes - 1];
  for (int d = 0; d < D; ++d) self_overlap(w + d * p, p, c[d]);
  sh = T(0), shs = T(0);
  int q = 0;
  for (int o2 = 0; o2 < (D == 3 ? span : 1); ++o2)
    for (int o1 = 0; o1 < span; ++o1)
      for (int o0 = 0; o0 < span; ++o0, ++q) {
        T wt = c[0][o0] * c[1][o1];
        if constexpr (D == 3) wt *= c[2][o2];
        sh += wt * self_h[q];
        shs += wt * self_hs[q];
      }
}

// A point's potentials read from the grid: out[k] = sum over its stencil's nodes of weight times
// potential k (D + 2 potentials, nn apart: H * 1, HS * 1, HS * (y_d - c_d)).
// Potentials before `first` are not read (left 0): a fit's grid makes no H potential (its part of
// Z is a total, RepulsionSums::z_grid).
template <int D, class T>
ORRERY_HD_INLINE void gather_potentials(int p, const T* w, const long* stride, long base, const T* potentials, long nn,
                                        T* out, int first = 0) {
  for (int k = 0; k < D + 2; ++k) out[k] = T(0);
  for_stencil_nodes<D>(p, w, stride, base, [&](long node, T wt) {
    for (int k = first; k < D + 2; ++k) out[k] += wt * potentials[k * nn + node];
  });
}

// A grid point's sums over the other points from its potentials acc (gather_potentials), its self
// term (grid_self_term), the charges' centre c and its coordinates y: h, hs and, since the charges
// were y_j - c, hsy = sum_j HS (y_j - c) + c sum_j HS, each less the point's own share.
template <int D, class T>
ORRERY_HD_INLINE void grid_point_sums(const T* acc, T sh, T shs, const T* centre, const T* y, T& h, T& hs, T* hsy) {
  h = acc[0] - sh;
  hs = acc[1] - shs;
  for (int d = 0; d < D; ++d) hsy[d] = acc[2 + d] + centre[d] * acc[1] - shs * y[d];
}

}  // namespace orrery::math
