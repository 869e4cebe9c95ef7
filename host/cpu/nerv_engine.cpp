// NeRV's CPU engine, exact over all pairs. The per-pair arithmetic is math/nerv.hpp's (formulas in its
// header comment), the code the CUDA kernels run too. One evaluation is one pass over the rows; per
// row i:
//   1. the squared distances to all points and the shift m_i from the nearest other point;
//   2. one exp per pair, w_ij = exp(s_ij - m_i), kept in a row buffer, and the row sums giving lse_i,
//      KL(q_i || p_i) and KL(p_i || q_i);
//   3. (with the gradient) c_ij from q_ij = w_ij / Z_i, no second exp; 2 c_ij (y_i - y_j) is summed
//      into dE/dy_i, and 2 c_ij (y_j - y_i), the same pair's share of dE/dy_j, is scattered into an
//      N x D accumulator owned by the row's block (kBlocks fixed blocks of rows, whatever the thread
//      count); the blocks' accumulators are added in block order at the end.
// Each row of P (and of log P) is read once, by rows, while it is in cache. Beyond P the memory is
// O(N): the row scalars, per thread a few row buffers, and the kBlocks accumulators. Rows are summed
// in j order and blocks in block order, so results do not depend on the thread count. The j loops
// are `omp simd` loops whose exp (math::exp_nonpositive) vectorises, in the instruction-set clones
// of prep/clones.hpp.
//
// Two arithmetics, one template: double (the reference) and float (params.precision, the default
// for fits). In float the pair terms, row buffers, coordinates and block accumulators are float;
// the row sums are taken in tiles of kFloatTile columns whose float sums are added in double, and
// the row scalars, the cost and the final gradient are double. With twice the SIMD lanes and a
// shorter exp polynomial a float evaluation takes about half the time of a double one.
//
// Dense P: log max(p, floor) is taken once per fit (nerv_log_probabilities, or DenseStore in float,
// where P and log P are both converted: half the memory of the double pair), or, in double, per row
// and evaluation when no logs are given. Sparse P (CSR rows): the all-pairs loops use p = 0 and
// the row's floor for log p, and each row's short CSR list adds the listed pairs' corrections (no
// extra exp).
//
// The engine (CpuNervEngine) holds the input in its arithmetic and the five N x D vectors of
// conjugate gradient in double; its dot products run over the entries in index order, and a trial
// point is x + t d entry by entry, so a fit is the same arithmetic as conjugate gradient on host
// vectors.
#include <omp.h>
#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>

#include "cpu/engines.hpp"
#include "cpu/map_rows.hpp"
#include "cpu/nerv_cells.hpp"
#include "cpu/shard_parts.hpp"
#include "orrery/affinity.hpp"
#include "orrery/error.hpp"
#include "orrery/math/nerv.hpp"
#include "orrery/nerv.hpp"
#include "prep/clones.hpp"

namespace orrery {
namespace cpu {
namespace {

int nthreads(int t) { return t > 0 ? t : omp_get_max_threads(); }

// Blocks of rows, each with its own N x D accumulator of the scattered half of the gradient; a fixed
// number, so the summation order does not depend on the thread count.
constexpr index_t kBlocks = 64;
// Float row sums run in tiles of kFloatTile columns: the SIMD lanes add in float within a tile
// (at most kFloatTile / 8 terms each) and the tiles' sums are added in double, so a row of any
// length keeps about float's accuracy. Double rows are one tile each side of the diagonal.
constexpr index_t kFloatTile = 512;
template <class T>
constexpr index_t tile_size() {
  return std::is_same<T, float>::value ? kFloatTile : std::numeric_limits<index_t>::max() / 2;
}

// The column tiles of row i: [0, i) and (i, n) cut into pieces of at most `size` columns.
struct Tiles {
  index_t n, i, size;
  struct Range {
    index_t lo, hi;
  };
  index_t left() const { return (i + size - 1) / size; }
  index_t count() const { return left() + (n - i - 1 + size - 1) / size; }
  Range operator[](index_t t) const {  // tile t, 0 <= t < count()
    if (t < left()) return {t * size, std::min((t + 1) * size, i)};
    const index_t lo = i + 1 + (t - left()) * size;
    return {lo, lo + std::min(size, n - lo)};
  }
};

template <class T, int D>
ORRERY_ALWAYS_INLINE T distances_fixed(const T* yt, index_t n, index_t i, T* dist, index_t lo, index_t hi) {
  const cpu::MapRow<T, D> r(yt, n, i);
  T m = std::numeric_limits<T>::infinity();
#pragma omp simd reduction(min : m)
  for (index_t j = lo; j < hi; ++j) {
    const T s = r.tau(j);
    dist[j] = s;
    m = s < m ? s : m;
  }
  return m;
}

template <class T, int D>
ORRERY_ALWAYS_INLINE T distances_row(const T* yt, index_t n, index_t i, T* dist) {
  return std::min(distances_fixed<T, D>(yt, n, i, dist, 0, i), distances_fixed<T, D>(yt, n, i, dist, i + 1, n));
}

// dist[j] = |y_i - y_j|^2 for every j != i; returns the smallest.
template <class T>
ORRERY_CLONES T row_distances(const T* yt, index_t n, index_t D, index_t i, T* dist) {
  switch (D) {
    case 1:
      return distances_row<T, 1>(yt, n, i, dist);
    case 2:
      return distances_row<T, 2>(yt, n, i, dist);
    case 3:
      return distances_row<T, 3>(yt, n, i, dist);
    default:
      break;
  }
  T m = std::numeric_limits<T>::infinity();
  for (index_t j = 0; j < n; ++j) {
    T s = 0;
    for (index_t d = 0; d < D; ++d) s += (yt[d * n + i] - yt[d * n + j]) * (yt[d * n + i] - yt[d * n + j]);
    dist[j] = s;
    if (j != i) m = std::min(m, s);
  }
  return m;
}

// D <= 3 with one scalar per dimension: GCC sums an array-section reduction (g[:D]) lane by lane,
// in order, which costs more than the rest of the loop. Columns [lo, hi); g[d] gets the tile's sum.
template <class T, int D>
ORRERY_ALWAYS_INLINE void scatter_fixed(const T* yt, index_t n, index_t i, const T* c, T* acc, index_t lo, index_t hi,
                                      double* g) {
  const cpu::MapRow<T, D> r(yt, n, i);
  const T *x0 = r.x0, *x1 = r.x1, *x2 = r.x2;
  const T y0 = r.y0, y1 = r.y1, y2 = r.y2;
  T* a0 = acc;
  T* a1 = D > 1 ? acc + n : acc;
  T* a2 = D > 2 ? acc + 2 * n : acc;
  T g0 = 0, g1 = 0, g2 = 0;
#pragma omp simd reduction(+ : g0, g1, g2)
  for (index_t j = lo; j < hi; ++j) {
    const T t0 = c[j] * (y0 - x0[j]);
    g0 += t0;
    a0[j] -= t0;
    if constexpr (D > 1) {
      const T t1 = c[j] * (y1 - x1[j]);
      g1 += t1;
      a1[j] -= t1;
    }
    if constexpr (D > 2) {
      const T t2 = c[j] * (y2 - x2[j]);
      g2 += t2;
      a2[j] -= t2;
    }
  }
  const T s[3] = {g0, g1, g2};
  for (int d = 0; d < D; ++d) g[d] += static_cast<double>(s[d]);
}

// Row i's pair terms c_ij for j in [lo, hi) (c_ii = 0): g[d] += sum_j c_ij (y_i - y_j) (added in
// T, then to g in double), and the block accumulator (D x n, like yt) gets c_ij (y_j - y_i) at j.
template <class T>
ORRERY_CLONES void scatter_tile(const T* yt, index_t n, index_t D, index_t i, const T* c, T* acc, index_t lo,
                                     index_t hi, double* g) {
  switch (D) {
    case 1:
      return scatter_fixed<T, 1>(yt, n, i, c, acc, lo, hi, g);
    case 2:
      return scatter_fixed<T, 2>(yt, n, i, c, acc, lo, hi, g);
    case 3:
      return scatter_fixed<T, 3>(yt, n, i, c, acc, lo, hi, g);
    default:
      break;
  }
  for (index_t d = 0; d < D; ++d)
    for (index_t j = lo; j < hi; ++j) {
      const T t = c[j] * (yt[d * n + i] - yt[d * n + j]);
      g[d] += static_cast<double>(t);
      acc[d * n + j] -= t;
    }
}

// The whole row, tile by tile: gi = sum_j c_ij (y_i - y_j).
template <class T>
void row_scatter(const T* yt, index_t n, index_t D, index_t i, const T* c, double* gi, T* acc) {
  for (index_t d = 0; d < D; ++d) gi[d] = 0.0;
  for (index_t lo = 0; lo < n; lo += tile_size<T>())
    scatter_tile(yt, n, D, i, c, acc, lo, lo + std::min(tile_size<T>(), n - lo), gi);
}

// Row sums (math/nerv.hpp): Z, T, U and P.
struct RowSums {
  double z = 0.0, t = 0.0, u = 0.0, p = 0.0;
};

// Row sums of a dense row over the columns [lo, hi) (one tile), added in T; w[j] = w_ij.
template <class T>
ORRERY_CLONES RowSums dense_tile_sums(const T* dist, const T* p, const T* lp, T b, T m, T* w, index_t lo,
                                           index_t hi) {
  T z = 0, t = 0, u = 0, ps = 0;
#pragma omp simd reduction(+ : z, t, u, ps)
  for (index_t j = lo; j < hi; ++j) {
    const math::NervRowTerms<T> e = math::nerv_row_terms(dist[j], b, m, p[j], lp[j]);
    w[j] = e.w;
    z += e.w;
    t += e.wt;
    u += e.pu;
    ps += p[j];
  }
  return {static_cast<double>(z), static_cast<double>(t), static_cast<double>(u), static_cast<double>(ps)};
}

// The same with p = 0 and log p = lpf (the all-pairs part of a sparse row).
template <class T>
ORRERY_CLONES RowSums floor_tile_sums(const T* dist, T lpf, T b, T m, T* w, index_t lo, index_t hi) {
  T z = 0, t = 0;
#pragma omp simd reduction(+ : z, t)
  for (index_t j = lo; j < hi; ++j) {
    const math::NervRowTerms<T> e = math::nerv_row_terms(dist[j], b, m, T(0), lpf);
    w[j] = e.w;
    z += e.w;
    t += e.wt;
  }
  return {static_cast<double>(z), static_cast<double>(t), 0.0, 0.0};
}

// Row i's sums over j != i, tile by tile (the tiles' sums added in double); tile(lo, hi) -> RowSums.
template <class T, class F>
RowSums tiled_row_sums(index_t n, index_t i, const F& tile) {
  RowSums s;
  const Tiles tiles{n, i, tile_size<T>()};
  for (index_t k = 0; k < tiles.count(); ++k) {
    const Tiles::Range r = tiles[k];
    const RowSums t = tile(r.lo, r.hi);
    s.z += t.z, s.t += t.t, s.u += t.u, s.p += t.p;
  }
  return s;
}

// c[j] = c_ij for j != i from the weights w, p = p_{j|i} and lp = its floored log (dense); c[i] = 0.
template <class T>
ORRERY_CLONES void dense_pair_c(const T* dist, const T* w, const T* p, const T* lp, math::NervRow<T> r,
                                     T lambda, T* c, index_t n, index_t i) {
#pragma omp simd
  for (index_t j = 0; j < n; ++j)
    c[j] = math::nerv_pair_c(w[j] * r.q_scale, math::nerv_log_q(dist[j], r), r, p[j], lp[j], lambda);
  c[i] = 0;
}

// c[j] = c_ij for j != i with p = 0 and log p = lpf (the all-pairs part of a sparse row); c[i] = 0.
template <class T>
ORRERY_CLONES void floor_pair_c(const T* dist, const T* w, T lpf, math::NervRow<T> r, T lambda, T* c, index_t n,
                                     index_t i) {
#pragma omp simd
  for (index_t j = 0; j < n; ++j)
    c[j] = math::nerv_pair_c(w[j] * r.q_scale, math::nerv_log_q(dist[j], r), r, T(0), lpf, lambda);
  c[i] = 0;
}

// A row's p_{j|i} and floored logs as the pair loops read them.
template <class T>
struct RowP {
  const T* p;
  const T* lp;
};

// Dense input: rows of P and of their floored logs (n x n, row-major) in T. Without LP (double
// only) each row's logs are taken into a row buffer: N logs per row and evaluation instead of an
// N x N matrix.
template <class T>
struct DenseInput {
  index_t n;
  const T* P;
  const T* LP;

  RowP<T> row(index_t i, T* lbuf) const {
    const T* p = P + i * n;
    if (LP) return {p, LP + i * n};
    if constexpr (std::is_same<T, double>::value) {
      for (index_t j = 0; j < n; ++j) lbuf[j] = math::nerv_log_prob(p[j], kNervProbabilityFloor);
      return {p, lbuf};
    } else {
      internal_error("nerv: float evaluation without log P");
    }
  }
  RowSums row_sums(index_t i, const RowP<T>& r, const T* dist, T b, T m, T* w) const {
    return tiled_row_sums<T>(
        n, i, [&](index_t lo, index_t hi) { return dense_tile_sums(dist, r.p, r.lp, b, m, w, lo, hi); });
  }
  void pair_c(index_t i, const RowP<T>& rp, const T* dist, const T* w, const math::NervRow<T>& r, T lambda,
              T* c) const {
    dense_pair_c(dist, w, rp.p, rp.lp, r, lambda, c, n, i);
  }
};

// A dense P and its floored logs in T (the logs taken in double: a float p may have underflowed
// where p did not). Float: half the memory of P and log P in double. Taking p back as exp(log p)
// instead would halve it again but costs a third more time per evaluation: the exp outweighs
// streaming the second matrix.
template <class T>
struct DenseStore {
  std::vector<T> p, lp;
  DenseStore(const MatrixD& P, int threads) : p(P.data.size()), lp(P.data.size()) {
    const index_t n = static_cast<index_t>(P.data.size());
#pragma omp parallel for schedule(static) num_threads(nthreads(threads))
    for (index_t k = 0; k < n; ++k) {
      const double v = P.data[static_cast<size_t>(k)];
      p[static_cast<size_t>(k)] = static_cast<T>(v);
      lp[static_cast<size_t>(k)] = static_cast<T>(math::nerv_log_prob(v, kNervProbabilityFloor));
    }
  }
  DenseInput<T> input(index_t n) const { return {n, p.data(), lp.data()}; }
};

// Sparse input: CSR rows p_{j|i}, their floored logs and each row's floor log p_floor_i, in T.
template <class T>
struct SparseInput {
  const SparseAffinity& P;
  std::vector<T> val, lp, lpf;

  SparseInput(const SparseAffinity& p, index_t n) : P(p) {
    if (P.num_points != n || P.row_ptr.size() != static_cast<size_t>(n) + 1 ||
        P.col.size() != static_cast<size_t>(P.row_ptr.back()) || P.val.size() != P.col.size())
      internal_error("nerv_objective: sparse P and Y disagree on N, or P is not CSR");
    val.resize(P.col.size());
    lp.resize(P.col.size());
    for (size_t q = 0; q < P.val.size(); ++q) {
      val[q] = static_cast<T>(P.val[q]);
      lp[q] = static_cast<T>(math::nerv_log_prob(P.val[q], kNervProbabilityFloor));
    }
    const std::vector<double> floors = nerv_row_log_floors(P);
    lpf.assign(floors.begin(), floors.end());
  }

  RowP<T> row(index_t, T*) const { return {nullptr, nullptr}; }  // kept per stored entry
  RowSums row_sums(index_t i, const RowP<T>&, const T* dist, T b, T m, T* w) const {
    const size_t ui = static_cast<size_t>(i);
    const T f = lpf[ui];
    RowSums s = tiled_row_sums<T>(P.num_points, i,
                               [&](index_t lo, index_t hi) { return floor_tile_sums(dist, f, b, m, w, lo, hi); });
    for (index_t q = P.row_ptr[ui]; q < P.row_ptr[ui + 1]; ++q) {
      const size_t uq = static_cast<size_t>(q);
      const index_t j = P.col[uq];
      const math::NervRowTerms<T> r = math::nerv_row_listed(w[j], dist[j], b, val[uq], lp[uq], lpf[ui]);
      s.t += static_cast<double>(r.wt);
      s.u += static_cast<double>(r.pu);
      s.p += static_cast<double>(val[uq]);
    }
    return s;
  }
  void pair_c(index_t i, const RowP<T>&, const T* dist, const T* w, const math::NervRow<T>& r, T lambda,
              T* c) const {
    const size_t ui = static_cast<size_t>(i);
    floor_pair_c(dist, w, lpf[ui], r, lambda, c, P.num_points, i);
    for (index_t q = P.row_ptr[ui]; q < P.row_ptr[ui + 1]; ++q) {
      const size_t uq = static_cast<size_t>(q);
      const index_t j = P.col[uq];
      c[j] += math::nerv_pair_c_listed(w[j] * r.q_scale, r, val[uq], lp[uq], lpf[ui], lambda);
    }
  }
};

// Flushes denormal results and inputs to zero in this thread while it lives (x86 MXCSR FTZ and
// DAZ), then restores the mode. A float row's far pairs have weights exp(s - m) down to 1e-38,
// and their products with 1/Z, beta and the coordinates land in the denormal range, where x86
// cores take a microcode assist per operation: in a spread-out map that slows a float evaluation
// several times. Flushed, such a term is 0 instead of < 1e-38 of its row's total.
class FlushDenormals {
 public:
  explicit FlushDenormals(bool on) {
#if defined(__SSE2__)
    if (on) {
      saved_ = _mm_getcsr();
      _mm_setcsr(saved_ | 0x8040u);  // FTZ (bit 15) | DAZ (bit 6)
      active_ = true;
    }
#else
    (void)on;
#endif
  }
  ~FlushDenormals() {
#if defined(__SSE2__)
    if (active_) _mm_setcsr(saved_);
#endif
  }
  FlushDenormals(const FlushDenormals&) = delete;
  FlushDenormals& operator=(const FlushDenormals&) = delete;

 private:
  unsigned saved_ = 0;
  bool active_ = false;
};

// One evaluation in T: one pass over kBlocks fixed blocks of rows, then (with grad) the blocks'
// accumulators added in block order. Row totals, the cost and the gradient's sums are double.
// With a communicator of several ranks each rank passes over a run of the blocks, and their rows'
// costs and gradient terms and their accumulators are gathered before the sums: every rank gets
// the cost and gradient of one process, bit for bit.
template <class T, class Input>
double evaluate(const Input& in, const std::vector<double>& beta, const MatrixD& Y, double lambda, MatrixD* grad,
                int threads, Comm* comm = nullptr) {
  const index_t N = Y.rows, D = Y.cols;
  if (static_cast<index_t>(beta.size()) != N) internal_error("nerv_objective: beta and Y disagree on N");
  if (N < 2) internal_error("nerv_objective: needs at least 2 points");
  std::vector<double> cost(static_cast<size_t>(N));
  std::vector<T> acc;
  if (grad) {
    *grad = MatrixD(N, D);
    acc.assign(static_cast<size_t>(kBlocks * N * D), T(0));
  }
  const std::vector<T> yt = cpu::by_dimension<T>(Y);
  const T lam = static_cast<T>(lambda);
  const SplitParts blocks = SplitParts::of_blocks(comm, kBlocks, [](long long b) { return b; });
  const long long b0 = blocks.begin(), b1 = blocks.end();
#pragma omp parallel num_threads(nthreads(threads))
  {
    const FlushDenormals flush(std::is_same<T, float>::value);
    std::vector<T> dist(static_cast<size_t>(N)), w(static_cast<size_t>(N)), lbuf(static_cast<size_t>(N));
    std::vector<T> c(grad ? static_cast<size_t>(N) : 0);
#pragma omp for schedule(static)
    for (index_t blk = b0; blk < b1; ++blk)
      for (index_t i = blk * N / kBlocks; i < (blk + 1) * N / kBlocks; ++i) {
        const T b = static_cast<T>(beta[static_cast<size_t>(i)]);
        const T m = -b * row_distances(yt.data(), N, D, i, dist.data());
        const RowP<T> rp = in.row(i, lbuf.data());
        const RowSums s = in.row_sums(i, rp, dist.data(), b, m, w.data());
        const math::NervRow<double> r =
            math::nerv_row_finish(static_cast<double>(b), static_cast<double>(m), s.z, s.t, s.u, s.p);
        cost[static_cast<size_t>(i)] = lambda * r.kl_pq + (1 - lambda) * r.kl_qp;
        if (grad) {
          const math::NervRow<T> rt{static_cast<T>(r.beta),  static_cast<T>(r.lse),   static_cast<T>(r.kl_qp),
                                    static_cast<T>(r.kl_pq), static_cast<T>(r.p_sum), static_cast<T>(r.q_scale)};
          in.pair_c(i, rp, dist.data(), w.data(), rt, lam, c.data());
          row_scatter(yt.data(), N, D, i, c.data(), grad->row(i), acc.data() + blk * D * N);
        }
      }
  }
  if (blocks.split()) {
    const SplitParts rows = SplitParts::of_blocks(comm, kBlocks, [N](long long b) { return b * N / kBlocks; });
    rows.gather(cost.data(), 1);
    if (grad) {
      rows.gather(grad->data.data(), static_cast<size_t>(D));
      blocks.gather(acc.data(), static_cast<size_t>(D * N));
    }
  }
  if (grad) {
#pragma omp parallel for schedule(static) num_threads(nthreads(threads))
    for (index_t i = 0; i < N; ++i)
      for (index_t d = 0; d < D; ++d) {
        double s = (*grad)(i, d);
        for (index_t blk = 0; blk < kBlocks; ++blk)
          s += static_cast<double>(acc[static_cast<size_t>((blk * D + d) * N + i)]);
        (*grad)(i, d) = 2.0 * s;
      }
  }
  double E = 0.0;
  for (double v : cost) E += v;
  return E;
}


// A dense P and its floored logs in double, the logs taken once (nerv_log_probabilities).
struct DenseLogStore {
  const MatrixD& P;
  MatrixD logP;
  DenseLogStore(const MatrixD& p, int threads) : P(p), logP(nerv_log_probabilities(p, threads)) {}
  DenseInput<double> input(index_t n) const { return {n, P.data.data(), logP.data.data()}; }
};

// Sparse rows in T: the input is its own store.
template <class T>
struct SparseStore {
  SparseInput<T> in;
  SparseStore(const SparseAffinity& P, index_t n) : in(P, n) {}
  const SparseInput<T>& input(index_t) const { return in; }
};

// The truncated cost over a cell grid (cpu/nerv_cells.hpp), float.
struct CellsStore {
  mutable NervCellsEvaluator<float> eval;
  CellsStore(const SparseAffinity& P, const std::vector<double>& beta, double cutoff, int dim, int threads)
      : eval(P, beta, cutoff, dim, threads) {}
};

// One evaluation over a store.
template <class T, class Store>
double evaluate_store(const Store& store, index_t n, const std::vector<double>& beta, const MatrixD& Y, double lambda,
                      MatrixD* grad, int threads, Comm* comm) {
  return cpu::evaluate<T>(store.input(n), beta, Y, lambda, grad, threads, comm);
}
template <class T>
double evaluate_store(const CellsStore& store, index_t, const std::vector<double>&, const MatrixD& Y, double lambda,
                      MatrixD* grad, int, Comm*) {
  return store.eval.evaluate(Y, lambda, grad);  // split over the ranks shard_store gave it
}

// The ranks a store's evaluations are split over, told once: the exact stores take them with each
// evaluation (cpu::evaluate's comm), the cell grid's evaluator keeps them.
template <class Store>
void shard_store(Store&, Comm*) {}
inline void shard_store(CellsStore& store, Comm* comm) { store.eval.shard(comm); }

// The engine over a store of the input in T (DenseLogStore, DenseStore<float>, SparseStore<T>, CellsStore).
template <class T, class Store>
class CpuNervEngine final : public NervEngine {
 public:
  template <class... Args>
  CpuNervEngine(index_t n, const std::vector<double>& beta, const NervOptions& o, int threads, Args&&... store_args)
      : store_(std::forward<Args>(store_args)...), beta_(beta), lambda_(o.lambda), threads_(threads), n_(n) {
    if (static_cast<index_t>(beta.size()) != n) internal_error("nerv: P and beta disagree on N");
    if (n < 2) internal_error("nerv: needs at least 2 points");
    for (MatrixD& v : v_) v = MatrixD(n, o.dim);
  }
  std::string name() const override { return "cpu (" + std::to_string(threads_) + " threads)"; }
  std::string arithmetic() const override { return std::is_same<T, float>::value ? "float" : "double"; }

  void set_coords(const MatrixD& Y) override {
    if (Y.rows != n_ || Y.cols != at(NervVector::x).cols) internal_error("nerv: Y has the wrong shape");
    at(NervVector::x) = Y;
  }
  MatrixD vector(NervVector v) const override { return v_[static_cast<size_t>(v)]; }
  void set_vector(NervVector v, const MatrixD& V) override {
    if (V.rows != n_ || V.cols != at(v).cols) internal_error("nerv: a vector has the wrong shape");
    at(v) = V;
  }
  double evaluate(bool with_gradient) override {
    return evaluate_store<T>(store_, n_, beta_, at(NervVector::x), lambda_,
                             with_gradient ? &at(NervVector::gradient) : nullptr, threads_, comm_);
  }
  double evaluate_trial(double t) override {
    const std::vector<double>&x = at(NervVector::x).data, &d = at(NervVector::direction).data;
    std::vector<double>& trial = at(NervVector::trial).data;
    for (size_t q = 0; q < x.size(); ++q) trial[q] = x[q] + t * d[q];
    return evaluate_store<T>(store_, n_, beta_, at(NervVector::trial), lambda_, &at(NervVector::trial_gradient),
                             threads_, comm_);
  }
  double dot(NervVector a, NervVector b) override {
    const std::vector<double>&u = at(a).data, &v = at(b).data;
    double s = 0.0;
    for (size_t q = 0; q < u.size(); ++q) s += u[q] * v[q];
    return s;
  }
  void update_direction(double beta) override {
    const std::vector<double>& g = at(NervVector::gradient).data;
    std::vector<double>& d = at(NervVector::direction).data;
    if (beta == 0.0)
      for (size_t q = 0; q < d.size(); ++q) d[q] = -g[q];
    else
      for (size_t q = 0; q < d.size(); ++q) d[q] = -g[q] + beta * d[q];
  }
  void accept_trial() override {
    std::swap(at(NervVector::x), at(NervVector::trial));
    std::swap(at(NervVector::gradient), at(NervVector::trial_gradient));
  }
  // The evaluations' passes over the rows are split over the ranks; the five vectors, and so every
  // dot product and step, stay whole on every rank.
  void shard(Comm& comm) override {
    comm_ = comm.size() > 1 ? &comm : nullptr;
    shard_store(store_, comm_);
  }

 private:
  MatrixD& at(NervVector v) { return v_[static_cast<size_t>(v)]; }
  const MatrixD& at(NervVector v) const { return v_[static_cast<size_t>(v)]; }

  Store store_;
  const std::vector<double>& beta_;
  double lambda_;
  int threads_;
  index_t n_;
  Comm* comm_ = nullptr;
  std::array<MatrixD, kNervVectors> v_;  // by NervVector
};

}  // namespace

std::unique_ptr<NervEngine> make_nerv_engine(const MatrixD* dense, const SparseAffinity* sparse,
                                             const std::vector<double>& beta, const NervOptions& o, int threads) {
  if ((dense == nullptr) == (sparse == nullptr)) internal_error("make_nerv_engine: give dense or sparse P");
  if (o.dim < 1) internal_error("make_nerv_engine: D must be positive");
  const bool f32 = o.precision == NervPrecision::float32;
  if (dense) {
    const index_t n = dense->rows;
    if (dense->cols != n) internal_error("make_nerv_engine: P is not square");
    if (f32) return std::make_unique<CpuNervEngine<float, DenseStore<float>>>(n, beta, o, threads, *dense, threads);
    return std::make_unique<CpuNervEngine<double, DenseLogStore>>(n, beta, o, threads, *dense, threads);
  }
  const index_t n = sparse->num_points;
  if (o.cutoff > 0)
    return std::make_unique<CpuNervEngine<float, CellsStore>>(n, beta, o, threads, *sparse, beta, o.cutoff, o.dim,
                                                              threads);
  if (f32) return std::make_unique<CpuNervEngine<float, SparseStore<float>>>(n, beta, o, threads, *sparse, n);
  return std::make_unique<CpuNervEngine<double, SparseStore<double>>>(n, beta, o, threads, *sparse, n);
}

}  // namespace cpu

std::vector<double> nerv_row_log_floors(const SparseAffinity& P) {
  const index_t n = P.num_points;
  if (P.row_ptr.size() != static_cast<size_t>(n) + 1 || P.col.size() != static_cast<size_t>(P.row_ptr.back()) ||
      P.val.size() != P.col.size())
    internal_error("nerv: sparse P is not CSR");
  std::vector<double> lpf(static_cast<size_t>(n));
  for (index_t i = 0; i < n; ++i) {
    double pmin = kInf;
    for (index_t q = P.row_ptr[static_cast<size_t>(i)]; q < P.row_ptr[static_cast<size_t>(i) + 1]; ++q) {
      const double v = P.val[static_cast<size_t>(q)];
      const index_t j = P.col[static_cast<size_t>(q)];
      if (j < 0 || j >= n || j == i) internal_error("nerv_objective: sparse P column out of range or diagonal");
      if (v > 0) pmin = std::min(pmin, v);
    }
    const double floor = pmin < kInf ? 1e-3 * pmin : 1e-3 / static_cast<double>(n - 1);
    lpf[static_cast<size_t>(i)] = math::nerv_log_prob(floor, kNervProbabilityFloor);
  }
  return lpf;
}

MatrixD nerv_log_probabilities(const MatrixD& P, int threads) {
  MatrixD L(P.rows, P.cols);
  const index_t n = static_cast<index_t>(P.data.size());
#pragma omp parallel for schedule(static) num_threads(cpu::nthreads(threads))
  for (index_t k = 0; k < n; ++k)
    L.data[static_cast<size_t>(k)] = math::nerv_log_prob(P.data[static_cast<size_t>(k)], kNervProbabilityFloor);
  return L;
}

double nerv_objective(const MatrixD& P, const MatrixD& logP, const std::vector<double>& beta, const MatrixD& Y,
                      double lambda, MatrixD* grad, int threads) {
  const index_t N = Y.rows;
  if (P.rows != N || P.cols != N || logP.rows != N || logP.cols != N)
    internal_error("nerv_objective: P, log P and Y disagree on N");
  return cpu::evaluate<double>(cpu::DenseInput<double>{N, P.data.data(), logP.data.data()}, beta, Y, lambda, grad, threads);
}

double nerv_objective(const MatrixD& P, const std::vector<double>& beta, const MatrixD& Y, double lambda, MatrixD* grad,
                      int threads) {
  if (P.rows != Y.rows || P.cols != Y.rows) internal_error("nerv_objective: P, beta and Y disagree on N");
  return cpu::evaluate<double>(cpu::DenseInput<double>{Y.rows, P.data.data(), nullptr}, beta, Y, lambda, grad, threads);
}

double nerv_objective(const SparseAffinity& P, const std::vector<double>& beta, const MatrixD& Y, double lambda,
                      MatrixD* grad, int threads) {
  return cpu::evaluate<double>(cpu::SparseInput<double>(P, Y.rows), beta, Y, lambda, grad, threads);
}

double nerv_objective_float(const MatrixD& P, const std::vector<double>& beta, const MatrixD& Y, double lambda,
                            MatrixD* grad, int threads) {
  if (P.rows != Y.rows || P.cols != Y.rows) internal_error("nerv_objective: P, beta and Y disagree on N");
  const cpu::DenseStore<float> store(P, threads);
  return cpu::evaluate<float>(store.input(Y.rows), beta, Y, lambda, grad, threads);
}

double nerv_objective_float(const SparseAffinity& P, const std::vector<double>& beta, const MatrixD& Y, double lambda,
                            MatrixD* grad, int threads) {
  return cpu::evaluate<float>(cpu::SparseInput<float>(P, Y.rows), beta, Y, lambda, grad, threads);
}

}  // namespace orrery
