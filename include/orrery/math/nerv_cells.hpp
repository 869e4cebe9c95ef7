// NeRV with the output Gaussian truncated (orrery/nerv.hpp, params.pairs = approximate): the per-point
// sweeps over a uniform cell grid that the CPU loops and the CUDA kernels both run.
//
// The truncated cost. Row i keeps the pairs whose weight w_ij = exp(-beta_i (d_ij - dmin_i)) is at
// least e^-c (c = params.cutoff, in nats; dmin_i the squared distance to i's nearest other point in
// the map, so w = 1 for that point and Z_i >= 1): the set S_i = {j : d_ij <= R_i^2} with
// R_i^2 = dmin_i + c / beta_i. q_ij = w_ij / Z_i on S_i and 0 elsewhere, Z_i = sum over S_i. Every
// other term is NeRV's sparse-row cost unchanged (math/nerv.hpp): listed pairs (the input's k nearest)
// contribute p_ij (lp_ij + beta_i d_ij) to U_i wherever they are, and inside S_i the floor log lpf_i
// stands for log p outside the lists. So
//   E = sum_i lambda (U_i + lse_i P_i) + (1 - lambda) (T_i / Z_i - log Z_i)
// over truncated sums, and dE/dd_ij = c_ij of math/nerv.hpp with q_ij = 0 outside S_i: the gradient is
// exactly that of the truncated cost (the sets are fixed between membership changes, and a pair changes
// membership at weight e^-c, so the cost jumps by at most that). The truncation drops at most e^-c of
// Z_i per point outside S_i; c = 20 leaves 2e-9 per dropped point, far below float's resolution of Z_i
// for the few points just beyond the cut.
//
// The grid. Points are sorted by cell (cells of side h, row-major, points in index order within a
// cell), coordinates by dimension in that order. Sweeps for sorted point k:
//   nearest:   rings of cells around k until the ring's inner distance exceeds the best found (dmin_k);
//   row sums:  cells within R_k, the floor part of Z_k and T_k (p = 0, lp = lpf_k) over S_k;
//   gradient:  cells within V_k = max(R_k, reach of k's cell): sum_j (c_kj + c_jk)(y_k - y_j) over the
//              floor part of both rows.
// A column term c_jk needs k in S_j, i.e. d_jk <= R_j^2, which can exceed R_k; the cell's `reach` is
// the largest R_j of any cell within R_j of it, so every such j lies within reach. Rows with a very wide
// R_j (a handful, isolated or with a large input bandwidth) would make reach large everywhere near them:
// they carry col_r2 = -1 here and their column terms come from a short list instead (nerv_cells_wide).
// Each sweep visits the cells as runs along x (RowWalk); sums run in T within a run and in double
// across runs, in cell order: a fixed order. The CPU takes the column terms from the rows that own them instead
// (host/cpu/nerv_cells.cpp scatters each pair's share into fixed blocks), the same terms summed in
// another order; the gather here is what a GPU thread per point does without atomics.
#pragma once
#include <cmath>
#include <limits>
#include <vector>

#include "orrery/math/exp.hpp"
#include "orrery/math/hd.hpp"
#include "orrery/math/nerv.hpp"

namespace orrery::math {

// The grid's rules, the same on every backend. The cell side is a third of the truncation radius of
// a row with the median bandwidth at dmin = 0, h = sqrt(c / beta_median) / 3, so a typical row's
// disk spans 7 rows of cells, each visited as one run of points trimmed to the disk; it grows when
// the map's box would need more than kCellsPerPoint cells per point (a spread-out start), so the
// grid stays O(N). Rows wider than kWideCells cells (twice the median radius) are wide when they
// are few (at most kWideRows + N / 1000, the widest first); their column terms are summed from a
// list by every point, O(N) each.
inline constexpr double kCellsPerPoint = 4.0;
inline constexpr double kWideCells = 6.0;
inline double cells_side(double cutoff, double median_beta) { return std::sqrt(cutoff / median_beta) / 3.0; }
inline constexpr long long kWideRows = 64;
inline long long cells_wide_limit(long long n) { return kWideRows + n / 1000; }

// The grid over a map's box [lo, hi] (per axis, D of them): cells of side h >= h0, enlarged until
// there are at most kCellsPerPoint per point (+ 64).
struct CellsPlan {
  double h = 0.0;
  int g[3] = {1, 1, 1};
  long long cells = 1;
};
inline CellsPlan cells_plan(const double* lo, const double* hi, int D, double h0, long long n) {
  CellsPlan c;
  c.h = h0;
  for (;;) {
    double cells = 1.0;
    for (int a = 0; a < D; ++a) cells *= std::floor((hi[a] - lo[a]) / c.h) + 1.0;
    if (cells <= kCellsPerPoint * static_cast<double>(n) + 64.0) break;
    c.h *= std::pow(cells / (kCellsPerPoint * static_cast<double>(n)), 1.0 / D) * 1.01;
  }
  for (int a = 0; a < D; ++a) {
    c.g[a] = static_cast<int>(std::floor((hi[a] - lo[a]) / c.h)) + 1;
    c.cells *= c.g[a];
  }
  return c;
}

// The sorted map and the per-point values the sweeps read (device or host pointers; `start` has one
// entry per cell plus one).
template <class T, int D>
struct NervCells {
  T lo[3];
  T h, inv_h;
  int g[3];                 // cells per axis
  const long long* start;   // points of cell c: [start[c], start[c + 1]) in sorted order
  const T* y[3];            // sorted coordinates by dimension
  // per sorted point
  const T* beta;
  const T* dmin;
  const T* r2;      // R^2 = dmin + cutoff / beta
  const T* col_r2;  // r2, or -1 for a wide row (its column terms come from the wide list)
  const T* lpf;     // floor log p of the row
  const T* lz;      // log Z of the row
  const T* kl_qp;
  const T* p_sum;
  const T* q_scale;  // 1 / Z
  // per cell
  const T* cell_r2;  // largest col_r2 of the cell's points (-1 when none)
  const T* reach2;   // squared reach (header comment)
};

template <class T, int D>
ORRERY_HD_INLINE T cells_sqdist(const T* p, const T* q) {
  T s = (p[0] - q[0]) * (p[0] - q[0]);
  if constexpr (D > 1) s += (p[1] - q[1]) * (p[1] - q[1]);
  if constexpr (D > 2) s += (p[2] - q[2]) * (p[2] - q[2]);
  return s;
}

// The cell of a point (clamped to the grid), per axis.
template <class T, int D>
ORRERY_HD void cells_of(const NervCells<T, D>& g, const T* p, int* c) {
  for (int a = 0; a < D; ++a) {
    int v = static_cast<int>((p[a] - g.lo[a]) * g.inv_h);
    v = v < 0 ? 0 : v;
    c[a] = v >= g.g[a] ? g.g[a] - 1 : v;
  }
}

template <class T, int D>
ORRERY_HD long long cells_index(const NervCells<T, D>& g, const int* c) {
  long long k = c[D - 1];
  for (int a = D - 2; a >= 0; --a) k = k * g.g[a] + c[a];
  return k;
}

// Squared distance from p to cell coordinate c along axis a (0 inside the slab).
template <class T, int D>
ORRERY_HD T cells_axis_gap2(const NervCells<T, D>& g, const T* p, int a, int c) {
  const T b0 = g.lo[a] + static_cast<T>(c) * g.h, b1 = b0 + g.h;
  const T e = p[a] < b0 ? b0 - p[a] : (p[a] > b1 ? p[a] - b1 : T(0));
  return e * e;
}

// The cells along axis a within distance v of p: [c0, c1], clamped to the grid; false when none.
template <class T, int D>
ORRERY_HD_INLINE bool cells_span(const NervCells<T, D>& g, const T* p, int a, T v, int& c0, int& c1) {
  const T lo = (p[a] - v - g.lo[a]) * g.inv_h, hi = (p[a] + v - g.lo[a]) * g.inv_h;
  c0 = lo < T(0) ? 0 : (lo >= T(g.g[a]) ? g.g[a] : static_cast<int>(lo));
  c1 = hi < T(0) ? -1 : (hi >= T(g.g[a]) ? g.g[a] - 1 : static_cast<int>(hi));
  return c0 <= c1;
}

// The box of cells within squared radius v2 of p, per axis (0 beyond D); false when it is empty.
template <class T, int D>
ORRERY_HD_INLINE bool cells_box(const NervCells<T, D>& g, const T* p, T v2, int* c0, int* c1) {
  const T v = hd_sqrt(v2);
  bool any = true;
  for (int a = 0; a < 3; ++a) {
    if (a >= D) {
      c0[a] = c1[a] = 0;
      continue;
    }
    any = cells_span(g, p, a, v, c0[a], c1[a]) && any;
  }
  return any;
}

// The points within squared radius v2 of p, as contiguous runs of sorted points: for each row of
// cells (fixed y, and z in 3-D) that the disk reaches, the cells along x that it reaches, whose
// points are consecutive in the sorted order. Longer runs than cell by cell, so the loops over
// them fill the vector lanes.
//   for (RowWalk<T, D> w(g, p, v2); w.next();) ... points [w.j0, w.j1)
template <class T, int D>
struct RowWalk {
  const NervCells<T, D>& g;
  const T* p;
  T v2;
  int c0[3], c1[3], c[3];
  T ez = 0;
  long long j0 = 0, j1 = 0;
  bool done = false;

  ORRERY_HD_INLINE RowWalk(const NervCells<T, D>& grid, const T* point, T radius2) : g(grid), p(point), v2(radius2) {
    done = !cells_box(g, p, v2, c0, c1);
    c[1] = c0[1] - 1, c[2] = c0[2];
    ez = D > 2 ? cells_axis_gap2(g, p, 2, c[2]) : T(0);
  }
  ORRERY_HD_INLINE bool next() {
    while (!done) {
      if (++c[1] > c1[1]) {
        c[1] = c0[1];
        if (++c[2] > c1[2]) {
          done = true;
          break;
        }
        ez = D > 2 ? cells_axis_gap2(g, p, 2, c[2]) : T(0);
      }
      const T e = ez + cells_axis_gap2(g, p, 1, c[1]);
      if (e > v2) continue;
      // the x-extent of the disk at this row's nearest y (and z)
      int x0, x1;
      if (!cells_span(g, p, 0, hd_sqrt(v2 - e), x0, x1)) continue;
      int a[3] = {x0, c[1], c[2]};
      j0 = g.start[cells_index(g, a)];
      a[0] = x1;
      j1 = g.start[cells_index(g, a) + 1];
      if (j1 > j0) return true;
    }
    return false;
  }
};

template <class T, int D>
ORRERY_HD void cells_point(const NervCells<T, D>& g, long long k, T* p) {
  for (int a = 0; a < D; ++a) p[a] = g.y[a][k];
  for (int a = D; a < 3; ++a) p[a] = T(0);
}

// Squared distance from sorted point k to its nearest other point (+inf when it is alone).
template <class T, int D>
ORRERY_HD T nerv_cells_nearest(const NervCells<T, D>& g, long long k) {
  T p[3];
  cells_point(g, k, p);
  const T *y0 = g.y[0], *y1 = g.y[D > 1 ? 1 : 0], *y2 = g.y[D > 2 ? 2 : 0];
  int ck[3];
  cells_of(g, p, ck);
  int span = 0;
  for (int a = 0; a < D; ++a) span = span > g.g[a] ? span : g.g[a];
  T best = std::numeric_limits<T>::infinity();
  for (int L = 0; L <= span; ++L) {
    int c[3] = {0, 0, 0};
    for (c[2] = D > 2 ? ck[2] - L : 0; c[2] <= (D > 2 ? ck[2] + L : 0); ++c[2]) {
      if (D > 2 && (c[2] < 0 || c[2] >= g.g[2])) continue;
      for (c[1] = D > 1 ? ck[1] - L : 0; c[1] <= (D > 1 ? ck[1] + L : 0); ++c[1]) {
        if (D > 1 && (c[1] < 0 || c[1] >= g.g[1])) continue;
        const bool inner = (D < 3 || (c[2] != ck[2] - L && c[2] != ck[2] + L)) &&
                           (D < 2 || (c[1] != ck[1] - L && c[1] != ck[1] + L));
        // on the ring: every cell of an outer row or layer, else the two ends of the row
        const int step = inner && L > 0 ? 2 * L : 1;
        for (c[0] = ck[0] - L; c[0] <= ck[0] + L; c[0] += step) {
          if (c[0] < 0 || c[0] >= g.g[0]) continue;
          const long long cell = cells_index(g, c);
          const long long j0 = g.start[cell], j1 = g.start[cell + 1];
          T b = best;  // a minimum: the same in any order, so the loop vectorises
          ORRERY_SIMD(reduction(min : b))
          for (long long j = j0; j < j1; ++j) {
            T s = (p[0] - y0[j]) * (p[0] - y0[j]);  // cells_sqdist's terms in its order
            if constexpr (D > 1) s += (p[1] - y1[j]) * (p[1] - y1[j]);
            if constexpr (D > 2) s += (p[2] - y2[j]) * (p[2] - y2[j]);
            const T d = j == k ? std::numeric_limits<T>::infinity() : s;
            b = d < b ? d : b;
          }
          best = b;
        }
      }
    }
    // every point outside the rings scanned so far is at least L h away
    const T bound = static_cast<T>(L) * g.h;
    if (best <= bound * bound) break;
  }
  return best;
}

// The floor part of row k's sums over S_k: Z and T with p = 0 and lp = lpf_k.
template <class T>
struct CellRowSums {
  double z = 0.0, t = 0.0, pairs = 0.0;  // pairs: |S_k|
};

template <class T, int D>
ORRERY_HD_INLINE CellRowSums<T> nerv_cells_row_sums(const NervCells<T, D>& g, long long k) {
  T p[3];
  cells_point(g, k, p);
  const T b = g.beta[k], dm = g.dmin[k], r2 = g.r2[k], lpf = g.lpf[k];
  const T p0 = p[0], p1 = p[1], p2 = p[2];
  const T *x0 = g.y[0], *x1 = g.y[D > 1 ? 1 : 0], *x2 = g.y[D > 2 ? 2 : 0];
  CellRowSums<T> s;
  for (RowWalk<T, D> walk(g, p, r2); walk.next();) {
    T z = 0, t = 0;
    int m = 0;
    const long long j0 = walk.j0, j1 = walk.j1;
    ORRERY_SIMD(reduction(+ : z, t, m))
    for (long long j = j0; j < j1; ++j) {
      T d = (p0 - x0[j]) * (p0 - x0[j]);
      if constexpr (D > 1) d += (p1 - x1[j]) * (p1 - x1[j]);
      if constexpr (D > 2) d += (p2 - x2[j]) * (p2 - x2[j]);
      const T sh = hd_min(-b * (d - dm), T(0));
      const T w = exp_nonpositive(sh);
      const bool in = (d <= r2) & (j != k);
      z += in ? w : T(0);
      t += in ? w * (sh - lpf) : T(0);
      m += in ? 1 : 0;
    }
    s.pairs += m;
    s.z += static_cast<double>(z);
    s.t += static_cast<double>(t);
  }
  return s;
}

// Row r's weight and c for a pair at squared distance d inside S_r, on the floor (p = 0, lp = lpf_r).
template <class T, int D>
ORRERY_HD_INLINE T nerv_cells_floor_c(const NervCells<T, D>& g, long long r, T d, T lambda) {
  const T sh = hd_min(-g.beta[r] * (d - g.dmin[r]), T(0));
  const T q = exp_nonpositive(sh) * g.q_scale[r];
  const NervRow<T> row{g.beta[r], T(0), g.kl_qp[r], T(0), g.p_sum[r], g.q_scale[r]};
  return nerv_pair_c(q, sh - g.lz[r], row, T(0), g.lpf[r], lambda);
}

// The floor part of dE/dy_k / 2 from the sweep: sum_j (c_kj [j in S_k] + c_jk [k in S_j, j not wide])
// (y_k - y_j); out[a] gets the sums in double.
template <class T, int D>
ORRERY_HD_INLINE void nerv_cells_gradient(const NervCells<T, D>& g, long long k, T lambda, double* out) {
  T p[3];
  cells_point(g, k, p);
  int ck[3];
  cells_of(g, p, ck);
  const T r2 = g.r2[k];
  const T reach = g.reach2[cells_index(g, ck)];
  const T v2 = reach > r2 ? reach : r2;
  const T bk = g.beta[k], dmk = g.dmin[k], lzk = g.lz[k], lpfk = g.lpf[k];
  const T psk = g.p_sum[k], klk = g.kl_qp[k], qsk = g.q_scale[k];
  const T p0 = p[0], p1 = p[1], p2 = p[2];
  const T *x0 = g.y[0], *x1 = g.y[D > 1 ? 1 : 0], *x2 = g.y[D > 2 ? 2 : 0];
  for (int a = 0; a < D; ++a) out[a] = 0.0;
  const T *bj_ = g.beta, *dmj_ = g.dmin, *qsj_ = g.q_scale, *lzj_ = g.lz, *psj_ = g.p_sum, *klj_ = g.kl_qp,
          *lpfj_ = g.lpf, *crj_ = g.col_r2;
  for (RowWalk<T, D> walk(g, p, v2); walk.next();) {
    T s0 = 0, s1 = 0, s2 = 0;
    const long long j0 = walk.j0, j1 = walk.j1;
    ORRERY_SIMD(reduction(+ : s0, s1, s2))
    for (long long j = j0; j < j1; ++j) {
      const T u0 = p0 - x0[j], u1 = D > 1 ? p1 - x1[j] : T(0), u2 = D > 2 ? p2 - x2[j] : T(0);
      T d = u0 * u0;
      if constexpr (D > 1) d += u1 * u1;
      if constexpr (D > 2) d += u2 * u2;
      const T shk = hd_min(-bk * (d - dmk), T(0));
      const T ck_ = nerv_pair_c_of(exp_nonpositive(shk) * qsk, shk - lzk, bk, psk, klk, T(0), lpfk, lambda);
      const T bj = bj_[j];
      const T shj = hd_min(-bj * (d - dmj_[j]), T(0));
      const T cj =
          nerv_pair_c_of(exp_nonpositive(shj) * qsj_[j], shj - lzj_[j], bj, psj_[j], klj_[j], T(0), lpfj_[j], lambda);
      // masks as arithmetic, no branch in the loop, so it vectorises
      const T self = j == k ? T(0) : T(1);
      const T c = self * ((d <= r2 ? ck_ : T(0)) + (d <= crj_[j] ? cj : T(0)));
      s0 += c * u0;
      s1 += c * u1;
      s2 += c * u2;
    }
    out[0] += static_cast<double>(s0);
    if (D > 1) out[1] += static_cast<double>(s1);
    if (D > 2) out[2] += static_cast<double>(s2);
  }
}

}  // namespace orrery::math

namespace orrery::math {

// The per-point values in the input's order, the sparse rows and their transpose, for the terms the
// sweeps leave out: the listed pairs (p > 0) of every row, and the column terms of the wide rows.
// Index: the type of the neighbor indices (col, t_row, wide); the CPU's are 32-bit, so that its
// loops over them vectorise (16 float lanes need 16 indices in one AVX-512 register).
template <class T, int D, class Index = long long>
struct NervCellsRows {
  const T* y[3];  // coordinates by dimension, input order (the same values the grid holds)
  const T *beta, *dmin, *r2, *lpf, *lz, *kl_qp, *p_sum, *q_scale;
  // row i's list: entries [row_ptr[i], row_ptr[i + 1]) of col (neighbor), p and lp (floored log p)
  const long long* row_ptr;
  const Index* col;
  const T *p, *lp;
  // the transpose (nerv_lists_transpose): the rows listing i are t_row[t_ptr[i] .. t_ptr[i + 1]),
  // their entries' p and lp at the same places of t_p and t_lp
  const long long* t_ptr;
  const Index* t_row;
  const T *t_p, *t_lp;
  const Index* wide;  // the wide rows, ascending
  long long num_wide;
  // Optional (null: read through `wide`): the wide rows' values packed by field, num_wide each in
  // the order of `wide`, fields as NervWideField says; every point reads all of them, so contiguous
  // loads beat eleven gathers a row.
  const T* wide_packed;
  // Optional (null: the arrays above): every row's coordinates and scalars packed by row,
  // NervRowField's kRowFields values a row, so that the pass over the rows listing a point reads
  // one cache line per row instead of seven.
  const T* row_packed;
};

// The fields of NervCellsRows::row_packed, in order (the last one unused).
enum NervRowField { kRowY0, kRowY1, kRowY2, kRowBeta, kRowDmin, kRowR2, kRowQScale, kRowLpf, kRowFields };

// The fields of NervCellsRows::wide_packed, in order.
enum NervWideField { kWideY0, kWideY1, kWideY2, kWideBeta, kWideDmin, kWideR2, kWideQScale, kWideLz, kWidePSum,
                     kWideKlQp, kWideLpf, kWideFields };


// The transpose of the sparse rows (host code, built once per fit): for each point i the rows
// listing it, ascending, with those entries' p and lp copied into the same order, so that the
// gradient's pass over them reads the values in sequence instead of gathering them by entry (on
// 70,000 points that gather missed the cache on nearly every pair: 40% of an evaluation).
template <class T, class Index>
struct NervListsTranspose {
  std::vector<long long> ptr;
  std::vector<Index> row;
  std::vector<T> p, lp;
};
template <class T, class Index>
NervListsTranspose<T, Index> nerv_lists_transpose(long long n, const std::vector<long long>& row_ptr,
                                                  const std::vector<Index>& col, const std::vector<T>& p,
                                                  const std::vector<T>& lp) {
  NervListsTranspose<T, Index> t;
  t.ptr.assign(static_cast<std::size_t>(n) + 1, 0);
  for (Index j : col) ++t.ptr[static_cast<std::size_t>(j) + 1];
  for (long long i = 0; i < n; ++i) t.ptr[static_cast<std::size_t>(i) + 1] += t.ptr[static_cast<std::size_t>(i)];
  t.row.resize(col.size());
  t.p.resize(col.size());
  t.lp.resize(col.size());
  std::vector<long long> fill(t.ptr.begin(), t.ptr.end() - 1);
  for (long long i = 0; i < n; ++i)
    for (long long e = row_ptr[static_cast<std::size_t>(i)]; e < row_ptr[static_cast<std::size_t>(i) + 1]; ++e) {
      const auto at = static_cast<std::size_t>(fill[static_cast<std::size_t>(col[static_cast<std::size_t>(e)])]++);
      t.row[at] = static_cast<Index>(i);
      t.p[at] = p[static_cast<std::size_t>(e)];
      t.lp[at] = lp[static_cast<std::size_t>(e)];
    }
  return t;
}

// Row i's listed pairs: what they add to T (inside S_i: w (lpf - lp)), U and P (everywhere).
struct ListedSums {
  double t = 0.0, u = 0.0, p = 0.0;
};

// How the listed loops read a row's values: through the separate arrays, or packed by row
// (NervCellsRows::row_packed). at(j) is where row j's values are; the loops are written once.
template <class T, class Index>
struct RowsByArray {
  const T *x0, *x1, *x2, *beta_, *dmin_, *r2_, *q_scale_, *lpf_;
  const T *lz_, *p_sum_, *kl_qp_;  // the finished rows' sums (the wide rows' column terms read them)
  ORRERY_HD_INLINE Index at(Index j) const { return j; }
  template <class I>
  ORRERY_HD_INLINE T y0(I b) const { return x0[b]; }
  template <class I>
  ORRERY_HD_INLINE T y1(I b) const { return x1[b]; }
  template <class I>
  ORRERY_HD_INLINE T y2(I b) const { return x2[b]; }
  template <class I>
  ORRERY_HD_INLINE T beta(I b) const { return beta_[b]; }
  template <class I>
  ORRERY_HD_INLINE T dmin(I b) const { return dmin_[b]; }
  template <class I>
  ORRERY_HD_INLINE T r2(I b) const { return r2_[b]; }
  template <class I>
  ORRERY_HD_INLINE T q_scale(I b) const { return q_scale_[b]; }
  template <class I>
  ORRERY_HD_INLINE T lpf(I b) const { return lpf_[b]; }
  template <class I>
  ORRERY_HD_INLINE T lz(I b) const { return lz_[b]; }
  template <class I>
  ORRERY_HD_INLINE T p_sum(I b) const { return p_sum_[b]; }
  template <class I>
  ORRERY_HD_INLINE T kl_qp(I b) const { return kl_qp_[b]; }
};
template <class T, class Index>
struct RowsPacked {
  const T* q;
  ORRERY_HD_INLINE Index at(Index j) const { return j * Index(kRowFields); }  // (CPU: N < 2^31 / kRowFields)
  ORRERY_HD_INLINE T y0(Index b) const { return q[b + kRowY0]; }
  ORRERY_HD_INLINE T y1(Index b) const { return q[b + kRowY1]; }
  ORRERY_HD_INLINE T y2(Index b) const { return q[b + kRowY2]; }
  ORRERY_HD_INLINE T beta(Index b) const { return q[b + kRowBeta]; }
  ORRERY_HD_INLINE T dmin(Index b) const { return q[b + kRowDmin]; }
  ORRERY_HD_INLINE T r2(Index b) const { return q[b + kRowR2]; }
  ORRERY_HD_INLINE T q_scale(Index b) const { return q[b + kRowQScale]; }
  ORRERY_HD_INLINE T lpf(Index b) const { return q[b + kRowLpf]; }
};
template <class T, int D, class Index>
ORRERY_HD_INLINE RowsByArray<T, Index> rows_by_array(const NervCellsRows<T, D, Index>& r) {
  return {r.y[0], r.y[D > 1 ? 1 : 0], r.y[D > 2 ? 2 : 0], r.beta, r.dmin, r.r2, r.q_scale, r.lpf,
          r.lz, r.p_sum, r.kl_qp};
}
// The same view of the wide rows' values packed by field (NervCellsRows::wide_packed), wide row w at w.
template <class T, int D, class Index>
ORRERY_HD_INLINE RowsByArray<T, Index> wide_by_field(const NervCellsRows<T, D, Index>& r) {
  const T* f = r.wide_packed;
  const long long nw = r.num_wide;
  return {f + kWideY0 * nw,     f + kWideY1 * nw, f + kWideY2 * nw,  f + kWideBeta * nw,
          f + kWideDmin * nw,   f + kWideR2 * nw, f + kWideQScale * nw, f + kWideLpf * nw,
          f + kWideLz * nw,     f + kWidePSum * nw, f + kWideKlQp * nw};
}

// The loops below run over a list's entries in T with ORRERY_SIMD reductions (gathers of the
// listed points), then add to double.
template <class T, int D, class Index, class Rows>
ORRERY_HD_INLINE ListedSums nerv_cells_listed_sums_from(const NervCellsRows<T, D, Index>& r, const Rows& v, long long i) {
  const Index self = v.at(static_cast<Index>(i));
  const T b = v.beta(self), dm = v.dmin(self), r2 = v.r2(self), lpf = v.lpf(self);
  const T p0 = v.y0(self), p1 = D > 1 ? v.y1(self) : T(0), p2 = D > 2 ? v.y2(self) : T(0);
  const Index* col = r.col;
  const T *pv = r.p, *lpv = r.lp;
  T st = 0, su = 0, sp = 0;
  const long long e0 = r.row_ptr[i], e1 = r.row_ptr[i + 1];
  ORRERY_SIMD(reduction(+ : st, su, sp))
  for (long long e = e0; e < e1; ++e) {
    const Index j = v.at(col[e]);
    T d = (p0 - v.y0(j)) * (p0 - v.y0(j));
    if constexpr (D > 1) d += (p1 - v.y1(j)) * (p1 - v.y1(j));
    if constexpr (D > 2) d += (p2 - v.y2(j)) * (p2 - v.y2(j));
    const T w = exp_nonpositive(hd_min(-b * (d - dm), T(0)));
    const NervRowTerms<T> t = nerv_row_listed(w, d, b, pv[e], lpv[e], lpf);
    st += d <= r2 ? t.wt : T(0);
    su += t.pu;
    sp += pv[e];
  }
  ListedSums s;
  s.t = static_cast<double>(st), s.u = static_cast<double>(su), s.p = static_cast<double>(sp);
  return s;
}
// (The separate arrays: the coordinates' two of them stay in a faster cache than the packed rows.)
template <class T, int D, class Index>
ORRERY_HD_INLINE ListedSums nerv_cells_listed_sums(const NervCellsRows<T, D, Index>& r, long long i) {
  return nerv_cells_listed_sums_from(r, rows_by_array(r), i);
}

// c_ij(p, lp) - c_ij(0, lpf) of a row's scalars (its beta, dmin, R^2, q scale and floor log) for a
// listed pair at squared distance d, with q = 0 outside S_i (the whole of c_ij there: beta_i lambda p).
template <class T>
ORRERY_HD_INLINE T nerv_cells_listed_c(T b, T dmin, T r2, T q_scale, T lpf, T d, T p, T lp, T lambda) {
  const T q = d <= r2 ? exp_nonpositive(hd_min(-b * (d - dmin), T(0))) * q_scale : T(0);
  return b * (lambda * p + (T(1) - lambda) * q * (lp - lpf));  // nerv_pair_c_listed
}

// c_ji of a wide row j's floor term at squared distance d from point i (0 unless i is another point
// within R_j), from row j's scalars.
template <class T>
ORRERY_HD_INLINE T nerv_cells_wide_c(T d, T bj, T dmin, T r2, T q_scale, T lz, T p_sum, T kl_qp, T lpf, T lambda,
                                     bool other) {
  const T sh = hd_min(-bj * (d - dmin), T(0));
  const T c0 = nerv_pair_c_of(exp_nonpositive(sh) * q_scale, sh - lz, bj, p_sum, kl_qp, T(0), lpf, lambda);
  return (other & (d <= r2)) ? c0 : T(0);
}

// Row i's own list and the rows listing i: their c_ij (y_i - y_j) summed into s. The own list reads
// the separate arrays (two coordinates per listed point, which stay in a faster cache than the
// packed rows); the rows listing i read their seven values through v.
template <class T, int D, class Index, class Rows>
ORRERY_HD_INLINE void nerv_cells_listed_terms(const NervCellsRows<T, D, Index>& r, const Rows& v, long long i, T lambda,
                                              T& s0, T& s1, T& s2) {
  const RowsByArray<T, Index> a = rows_by_array(r);
  const Index self = static_cast<Index>(i);
  const T p0 = a.y0(self), p1 = D > 1 ? a.y1(self) : T(0), p2 = D > 2 ? a.y2(self) : T(0);
  {  // row i's own list
    const long long e0 = r.row_ptr[i], e1 = r.row_ptr[i + 1];
    const Index* col = r.col;
    const T *pv = r.p, *lpv = r.lp;
    const T bi = a.beta(self), dmi = a.dmin(self), r2i = a.r2(self), qsi = a.q_scale(self), lpfi = a.lpf(self);
    ORRERY_SIMD(reduction(+ : s0, s1, s2))
    for (long long e = e0; e < e1; ++e) {
      const Index j = col[e];
      const T u0 = p0 - a.y0(j), u1 = D > 1 ? p1 - a.y1(j) : T(0), u2 = D > 2 ? p2 - a.y2(j) : T(0);
      const T d = u0 * u0 + u1 * u1 + u2 * u2;
      const T c = nerv_cells_listed_c(bi, dmi, r2i, qsi, lpfi, d, pv[e], lpv[e], lambda);
      s0 += c * u0, s1 += c * u1, s2 += c * u2;
    }
  }
  {  // the rows listing i
    const long long t0 = r.t_ptr[i], t1 = r.t_ptr[i + 1];
    const Index* t_row = r.t_row;
    const T *tp = r.t_p, *tlp = r.t_lp;
    ORRERY_SIMD(reduction(+ : s0, s1, s2))
    for (long long t = t0; t < t1; ++t) {
      const Index j = v.at(t_row[t]);
      const T u0 = p0 - v.y0(j), u1 = D > 1 ? p1 - v.y1(j) : T(0), u2 = D > 2 ? p2 - v.y2(j) : T(0);
      const T d = u0 * u0 + u1 * u1 + u2 * u2;
      const T c = nerv_cells_listed_c(v.beta(j), v.dmin(j), v.r2(j), v.q_scale(j), v.lpf(j), d, tp[t], tlp[t], lambda);
      s0 += c * u0, s1 += c * u1, s2 += c * u2;
    }
  }
}

// The wide rows' floor terms, i in their S_j: c_ji (y_i - y_j) summed into s, wide row w's values
// read through v at at(w).
template <class T, int D, class Index, class At>
ORRERY_HD_INLINE void nerv_cells_wide_terms(const NervCellsRows<T, D, Index>& r, const RowsByArray<T, Index>& v,
                                            const At& at, long long i, T lambda, T& s0, T& s1, T& s2) {
  const T p0 = r.y[0][i], p1 = r.y[D > 1 ? 1 : 0][i], p2 = r.y[D > 2 ? 2 : 0][i];
  const long long nw = r.num_wide;
  const Index* wide = r.wide;
  const Index self = static_cast<Index>(i);
  ORRERY_SIMD(reduction(+ : s0, s1, s2))
  for (long long w = 0; w < nw; ++w) {
    const auto j = at(w);  // w itself for the packed fields: contiguous loads
    const T u0 = p0 - v.y0(j), u1 = D > 1 ? p1 - v.y1(j) : T(0), u2 = D > 2 ? p2 - v.y2(j) : T(0);
    const T d = u0 * u0 + u1 * u1 + u2 * u2;
    const T c = nerv_cells_wide_c(d, v.beta(j), v.dmin(j), v.r2(j), v.q_scale(j), v.lz(j), v.p_sum(j), v.kl_qp(j),
                                  v.lpf(j), lambda, wide[w] != self);
    s0 += c * u0, s1 += c * u1, s2 += c * u2;
  }
}

// What the sweep leaves out of dE/dy_i / 2: the listed corrections of row i and of the rows listing
// i, and the floor column terms of the wide rows; added to out[a] in double. The arrays are read
// through local pointers (or the accessors above): loaded through `r` inside the loops they kept
// GCC from vectorising them.
template <class T, int D, class Index>
ORRERY_HD_INLINE void nerv_cells_listed_gradient(const NervCellsRows<T, D, Index>& r, long long i, T lambda, double* out) {
  T s0 = 0, s1 = 0, s2 = 0;
  if (r.row_packed)
    nerv_cells_listed_terms(r, RowsPacked<T, Index>{r.row_packed}, i, lambda, s0, s1, s2);
  else
    nerv_cells_listed_terms(r, rows_by_array(r), i, lambda, s0, s1, s2);
  // the wide rows' floor terms: packed by field, wide row w at w; or through the arrays, at wide[w]
  const Index* wide = r.wide;
  if (r.wide_packed)
    nerv_cells_wide_terms(r, wide_by_field(r), [](long long w) { return w; }, i, lambda, s0, s1, s2);
  else
    nerv_cells_wide_terms(r, rows_by_array(r), [wide](long long w) { return wide[w]; }, i, lambda, s0, s1, s2);
  out[0] += static_cast<double>(s0);
  if (D > 1) out[1] += static_cast<double>(s1);
  if (D > 2) out[2] += static_cast<double>(s2);
}

}  // namespace orrery::math
