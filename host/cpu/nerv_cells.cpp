// NeRV's truncated cost on the CPU: math/nerv_cells.hpp's sweeps over a grid built here each
// evaluation. Steps (the CUDA engine runs the same ones):
//   1. the map in float, its box, the cell side (h0, enlarged while the box needs more than
//      kCellsPerPoint cells per point), a stable counting sort of the points by cell;
//   2. dmin by ring search, R^2 = dmin + c / beta, the wide rows, each cell's largest column radius
//      and its reach (a dilation over the cells);
//   3. the rows' floor sums by sweep, their listed sums, the rows' scalars and costs;
//   4. with the gradient: the sweep and the listed/wide terms, added in double.
// Every point's sums are its own (gathered, never scattered), so the thread count changes no bits.
#include "cpu/nerv_cells.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "cpu/shard_parts.hpp"
#include "orrery/error.hpp"
#include "orrery/math/nerv_cells.hpp"
#include "orrery/nerv.hpp"
#include "prep/clones.hpp"

namespace orrery::cpu {
namespace {

int nthreads(int t) { return t > 0 ? t : omp_get_max_threads(); }

// Fixed blocks of the scatter (step 4), so that the sums do not depend on the thread count.
constexpr long long kScatterBlocks = 32;

template <class T, int D>
using Cells = math::NervCells<T, D>;

template <class T, int D>
ORRERY_CLONES void nearest_range(const Cells<T, D>& g, long long k0, long long k1, T* dmin) {
  for (long long k = k0; k < k1; ++k) dmin[k] = math::nerv_cells_nearest(g, k);
}

template <class T, int D>
ORRERY_CLONES void row_sums_range(const Cells<T, D>& g, long long k0, long long k1, double* z, double* t,
                                  double* pairs) {
  for (long long k = k0; k < k1; ++k) {
    const math::CellRowSums<T> s = math::nerv_cells_row_sums(g, k);
    z[k] = s.z;
    t[k] = s.t;
    pairs[k] = s.pairs;
  }
}

template <class T, int D>
ORRERY_CLONES void gradient_range(const Cells<T, D>& g, long long k0, long long k1, T lambda, double* out) {
  for (long long k = k0; k < k1; ++k) math::nerv_cells_gradient(g, k, lambda, out + k * D);
}

// Row k's floor pairs inside S_k (k in [k0, k1), sorted order): out[k D + a] gets
// sum_j c_kj (y_k - y_j) in double (runs of T); a narrow row also scatters -c_kj (y_k - y_j), the
// pair's share of dE/dy_j / 2, into the block's accumulator acc (D arrays of wn floats over the
// sorted points [w0, w0 + wn)). A wide row's share reaches its points from the wide list instead.
// One run [j0, j1) of row k's sweep: s gets sum_j c_kj (y_k - y_j) over the run's pairs in S_k; with
// kScatter, a[d][j] -= the same terms (the pair's share of dE/dy_j / 2).
template <bool kScatter, class T, int D>
ORRERY_ALWAYS_INLINE void scatter_run(const Cells<T, D>& g, long long k, const T* p, long long j0, long long j1, T lambda,
                                      T* a0, T* a1, T* a2, T* s) {
  const T *x0 = g.y[0], *x1 = g.y[D > 1 ? 1 : 0], *x2 = g.y[D > 2 ? 2 : 0];
  const T p0 = p[0], p1 = p[1], p2 = p[2];
  const T r2 = g.r2[k], bk = g.beta[k], dmk = g.dmin[k], lzk = g.lz[k], lpfk = g.lpf[k];
  const T psk = g.p_sum[k], klk = g.kl_qp[k], qsk = g.q_scale[k];
  T s0 = 0, s1 = 0, s2 = 0;
#pragma omp simd reduction(+ : s0, s1, s2)
  for (long long j = j0; j < j1; ++j) {
    const T u0 = p0 - x0[j], u1 = D > 1 ? p1 - x1[j] : T(0), u2 = D > 2 ? p2 - x2[j] : T(0);
    T d = u0 * u0;
    if constexpr (D > 1) d += u1 * u1;
    if constexpr (D > 2) d += u2 * u2;
    const T sh = math::hd_min(-bk * (d - dmk), T(0));
    const T c0 = math::nerv_pair_c_of(math::exp_nonpositive(sh) * qsk, sh - lzk, bk, psk, klk, T(0), lpfk, lambda);
    const T c = ((d <= r2) & (j != k)) ? c0 : T(0);
    s0 += c * u0;
    s1 += c * u1;
    s2 += c * u2;
    if constexpr (kScatter) {
      a0[j] -= c * u0;
      if constexpr (D > 1) a1[j] -= c * u1;
      if constexpr (D > 2) a2[j] -= c * u2;
    }
  }
  s[0] = s0, s[1] = s1, s[2] = s2;
}

// Row k's floor pairs inside S_k (k in [k0, k1), sorted order): out[k D + a] gets
// sum_j c_kj (y_k - y_j) in double (runs of T); a narrow row also scatters -c_kj (y_k - y_j), the
// pair's share of dE/dy_j / 2, into the block's accumulator acc (D arrays of wn floats over the
// sorted points [w0, w0 + wn)). A wide row's share reaches its points from the wide list instead.
template <class T, int D>
ORRERY_CLONES void scatter_range(const Cells<T, D>& g, long long k0, long long k1, T lambda, double* out, T* acc,
                                 long long w0, long long wn) {
  T* a0 = acc - w0;
  T* a1 = acc + (D > 1 ? wn : 0) - w0;
  T* a2 = acc + (D > 2 ? 2 * wn : 0) - w0;
  for (long long k = k0; k < k1; ++k) {
    T p[3], s[3];
    math::cells_point(g, k, p);
    const bool wide = g.col_r2[k] < T(0);
    double o[3] = {0, 0, 0};
    for (math::RowWalk<T, D> walk(g, p, g.r2[k]); walk.next();) {
      if (wide)
        scatter_run<false, T, D>(g, k, p, walk.j0, walk.j1, lambda, a0, a1, a2, s);
      else
        scatter_run<true, T, D>(g, k, p, walk.j0, walk.j1, lambda, a0, a1, a2, s);
      for (int a = 0; a < 3; ++a) o[a] += static_cast<double>(s[a]);
    }
    for (int a = 0; a < D; ++a) out[k * D + a] = o[a];
  }
}

template <class T, int D>
ORRERY_CLONES void listed_gradient_range(const math::NervCellsRows<T, D, std::int32_t>& r, long long i0, long long i1,
                                         T lambda, double* out) {
  for (long long i = i0; i < i1; ++i) math::nerv_cells_listed_gradient(r, i, lambda, out + i * D);
}

template <class T, int D>
ORRERY_CLONES void listed_sums_range(const math::NervCellsRows<T, D, std::int32_t>& r, long long i0, long long i1,
                                     math::ListedSums* out) {
  for (long long i = i0; i < i1; ++i) out[i] = math::nerv_cells_listed_sums(r, i);
}

// Runs f(k0, k1) over [lo, hi) in fixed chunks, in parallel.
template <class F>
void chunks(long long lo, long long hi, int threads, const F& f) {
  constexpr long long kChunk = 256;
  const long long count = (hi - lo + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (long long c = 0; c < count; ++c) f(lo + c * kChunk, std::min(hi, lo + (c + 1) * kChunk));
}
// The same over this rank's part of [0, n), then every rank's part of each array (`width` values
// an item) gathered: every point's values are its own, so the bits do not depend on the split.
template <class F, class... Arrays>
void shared_chunks(const SplitParts& part, int threads, const F& f, Arrays... arrays) {
  chunks(part.begin(), part.end(), threads, f);
  (part.gather(arrays.first, arrays.second), ...);
}
template <class T>
std::pair<T*, std::size_t> items(std::vector<T>& v, std::size_t width = 1) {
  return {v.data(), width};
}

}  // namespace

template <class T>
NervCellsEvaluator<T>::NervCellsEvaluator(const SparseAffinity& P, const std::vector<double>& beta, double cutoff,
                                       int dim, int threads, bool gather)
    : n_(P.num_points), dim_(dim), threads_(nthreads(threads)), gather_(gather), cutoff_(cutoff) {
  if (dim != 2 && dim != 3) internal_error("nerv (approximate pairs): the map must be 2-D or 3-D");
  if (!(cutoff > 0)) internal_error("nerv (approximate pairs): the cutoff must be positive");
  if (static_cast<index_t>(beta.size()) != n_ || n_ < 2) internal_error("nerv (approximate pairs): P and beta disagree");
  // 32-bit columns, and offsets into the rows packed kRowFields a row
  if (n_ > std::numeric_limits<std::int32_t>::max() / math::kRowFields)
    input_error("nerv (approximate pairs): at most " +
                std::to_string(std::numeric_limits<std::int32_t>::max() / math::kRowFields) +
                " points on the CPU, found " + std::to_string(n_));
  const std::vector<double> floors = nerv_row_log_floors(P);  // checks the CSR
  const size_t nnz = P.col.size();
  row_ptr_.assign(P.row_ptr.begin(), P.row_ptr.end());
  col_.assign(P.col.begin(), P.col.end());
  p_.resize(nnz);
  lp_.resize(nnz);
  for (size_t e = 0; e < nnz; ++e) {
    p_[e] = static_cast<T>(P.val[e]);
    lp_[e] = static_cast<T>(math::nerv_log_prob(P.val[e], kNervProbabilityFloor));
  }
  lpf_.assign(floors.begin(), floors.end());
  beta_.resize(beta.size());
  for (size_t i = 0; i < beta.size(); ++i) {
    if (!(beta[i] > 0) || !std::isfinite(beta[i])) internal_error("nerv (approximate pairs): a bandwidth is not positive");
    beta_[i] = static_cast<T>(beta[i]);
  }
  transpose_ = math::nerv_lists_transpose(n_, row_ptr_, col_, p_, lp_);
  std::vector<double> sorted(beta);
  std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
  h0_ = math::cells_side(cutoff, sorted[sorted.size() / 2]);
}

template <class T>
double NervCellsEvaluator<T>::evaluate(const MatrixD& Y, double lambda, MatrixD* grad, std::vector<double>* row_costs) {
  if (Y.rows != n_ || Y.cols != dim_) internal_error("nerv (approximate pairs): Y has the wrong shape");
  return dim_ == 2 ? run<2>(Y, lambda, grad, row_costs) : run<3>(Y, lambda, grad, row_costs);
}

template <class T>
template <int D>
double NervCellsEvaluator<T>::run(const MatrixD& Y, double lambda, MatrixD* grad, std::vector<double>* row_costs) {
  const long long n = n_;
  const size_t un = static_cast<size_t>(n);
  const T cut = static_cast<T>(cutoff_);
  // 1. the map, its box and grid, the points sorted by cell
  Cells<T, D> g{};
  double box_lo[3] = {0, 0, 0}, box_hi[3] = {0, 0, 0};
  for (int a = 0; a < D; ++a) {
    yo_[a].resize(un);
    T lo = std::numeric_limits<T>::infinity(), hi = -lo;
    for (long long i = 0; i < n; ++i) {
      const T v = static_cast<T>(Y(i, a));
      if (!std::isfinite(v)) internal_error("nerv (approximate pairs): a coordinate is not finite in its arithmetic");
      yo_[a][static_cast<size_t>(i)] = v;
      lo = std::min(lo, v), hi = std::max(hi, v);
    }
    box_lo[a] = lo, box_hi[a] = hi;
    g.lo[a] = lo;
  }
  const math::CellsPlan plan = math::cells_plan(box_lo, box_hi, D, h0_, n);
  const double h = plan.h;
  g.h = static_cast<T>(h);
  g.inv_h = static_cast<T>(1.0 / h);
  const long long ncells = plan.cells;
  for (int a = 0; a < 3; ++a) g.g[a] = plan.g[a];
  std::vector<long long> cell(un);
  start_.assign(static_cast<size_t>(ncells) + 1, 0);
  for (long long i = 0; i < n; ++i) {
    T p[3] = {0, 0, 0};
    for (int a = 0; a < D; ++a) p[a] = yo_[a][static_cast<size_t>(i)];
    int c[3];
    math::cells_of(g, p, c);
    cell[static_cast<size_t>(i)] = math::cells_index(g, c);
    ++start_[static_cast<size_t>(cell[static_cast<size_t>(i)]) + 1];
  }
  for (long long c = 0; c < ncells; ++c) start_[static_cast<size_t>(c) + 1] += start_[static_cast<size_t>(c)];
  perm_.resize(un);
  {
    std::vector<long long> fill(start_.begin(), start_.end() - 1);
    for (long long i = 0; i < n; ++i) perm_[static_cast<size_t>(fill[static_cast<size_t>(cell[static_cast<size_t>(i)])]++)] = i;
  }
  auto gather = [&](std::vector<T>& to, const std::vector<T>& from) {
    to.resize(un);
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (long long k = 0; k < n; ++k) to[static_cast<size_t>(k)] = from[static_cast<size_t>(perm_[static_cast<size_t>(k)])];
  };
  auto scatter = [&](std::vector<T>& to, const std::vector<T>& from) {
    to.resize(un);
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (long long k = 0; k < n; ++k) to[static_cast<size_t>(perm_[static_cast<size_t>(k)])] = from[static_cast<size_t>(k)];
  };
  for (int a = 0; a < D; ++a) {
    gather(ys_[a], yo_[a]);
    g.y[a] = ys_[a].data();
  }
  for (int a = D; a < 3; ++a) g.y[a] = ys_[0].data();
  gather(beta_s_, beta_);
  gather(lpf_s_, lpf_);
  g.start = start_.data();
  g.beta = beta_s_.data();
  g.lpf = lpf_s_.data();

  // 2. nearest distances, radii, wide rows, the cells' radii and reach
  dmin_s_.resize(un);
  const SplitParts part = SplitParts::even(comm_, n);
  shared_chunks(
      part, threads_, [&](long long k0, long long k1) { nearest_range<T, D>(g, k0, k1, dmin_s_.data()); },
      items(dmin_s_));
  r2_s_.resize(un);
  for (long long k = 0; k < n; ++k)
    r2_s_[static_cast<size_t>(k)] = dmin_s_[static_cast<size_t>(k)] + cut / beta_s_[static_cast<size_t>(k)];
  T wide_r2 = static_cast<T>(math::kWideCells * h) * static_cast<T>(math::kWideCells * h);
  {
    const long long limit = math::cells_wide_limit(n);
    std::vector<T> r(r2_s_);
    const long long over = std::count_if(r.begin(), r.end(), [&](T v) { return v > wide_r2; });
    if (over > limit) {
      std::nth_element(r.begin(), r.begin() + limit, r.end(), std::greater<T>());
      wide_r2 = r[static_cast<size_t>(limit)];  // the limit widest are above it (ties stay narrow)
    }
  }
  colr2_s_.resize(un);
  cell_r2_.assign(static_cast<size_t>(ncells), -1.0f);
  wide_.clear();
  for (long long k = 0; k < n; ++k) {
    const T r2 = r2_s_[static_cast<size_t>(k)];
    colr2_s_[static_cast<size_t>(k)] = r2 > wide_r2 ? -1.0f : r2;
    if (r2 > wide_r2) wide_.push_back(static_cast<std::int32_t>(perm_[static_cast<size_t>(k)]));
  }
  std::sort(wide_.begin(), wide_.end());
  for (long long c = 0; c < ncells; ++c)
    for (long long k = start_[static_cast<size_t>(c)]; k < start_[static_cast<size_t>(c) + 1]; ++k)
      cell_r2_[static_cast<size_t>(c)] = std::max(cell_r2_[static_cast<size_t>(c)], colr2_s_[static_cast<size_t>(k)]);
  reach2_.assign(static_cast<size_t>(ncells), 0.0f);
  if (gather_) {
    // cell c' reaches every cell whose box lies within its radius of c's box (only the gathered
    // column terms need it: the scatter reaches its pairs from the rows that own them)
    const int* gc = g.g;
    for (long long c = 0; c < ncells; ++c) {
      const T r2 = cell_r2_[static_cast<size_t>(c)];
      if (r2 < 0) continue;
      int cc[3] = {static_cast<int>(c % gc[0]), static_cast<int>((c / gc[0]) % gc[1]), static_cast<int>(c / gc[0] / gc[1])};
      const int span = static_cast<int>(std::ceil(std::sqrt(r2) / h)) + 1;
      int lo[3], hi[3];
      for (int a = 0; a < 3; ++a) {
        lo[a] = a < D ? std::max(0, cc[a] - span) : 0;
        hi[a] = a < D ? std::min(gc[a] - 1, cc[a] + span) : 0;
      }
      auto gap = [&](int a, int x) {
        const int m = std::abs(x - cc[a]) - 1;
        return m > 0 ? static_cast<T>(m) * g.h * static_cast<T>(m) * g.h : 0.0f;
      };
      for (int z = lo[2]; z <= hi[2]; ++z)
        for (int y = lo[1]; y <= hi[1]; ++y)
          for (int x = lo[0]; x <= hi[0]; ++x) {
            if (gap(0, x) + (D > 1 ? gap(1, y) : 0.0f) + (D > 2 ? gap(2, z) : 0.0f) > r2) continue;
            T& to = reach2_[static_cast<size_t>(x + static_cast<long long>(gc[0]) * (y + static_cast<long long>(gc[1]) * z))];
            to = std::max(to, r2);
          }
    }
  }
  g.dmin = dmin_s_.data();
  g.r2 = r2_s_.data();
  g.col_r2 = colr2_s_.data();
  g.cell_r2 = cell_r2_.data();
  g.reach2 = reach2_.data();

  // 3. rows: floor sums by sweep, listed sums, scalars and costs
  std::vector<double> zs(un), ts(un), pairs(un);
  shared_chunks(
      part, threads_,
      [&](long long k0, long long k1) { row_sums_range<T, D>(g, k0, k1, zs.data(), ts.data(), pairs.data()); },
      items(zs), items(ts), items(pairs));
  scatter(dmin_o_, dmin_s_);
  scatter(r2_o_, r2_s_);
  math::NervCellsRows<T, D, std::int32_t> rows{};
  for (int a = 0; a < 3; ++a) rows.y[a] = yo_[a < D ? a : 0].data();
  rows.beta = beta_.data();
  rows.dmin = dmin_o_.data();
  rows.r2 = r2_o_.data();
  rows.lpf = lpf_.data();
  rows.row_ptr = row_ptr_.data();
  rows.col = col_.data();
  rows.p = p_.data();
  rows.lp = lp_.data();
  rows.t_ptr = transpose_.ptr.data();
  rows.t_row = transpose_.row.data();
  rows.t_p = transpose_.p.data();
  rows.t_lp = transpose_.lp.data();
  rows.wide = wide_.data();
  rows.num_wide = static_cast<long long>(wide_.size());
  std::vector<double> cost(un);
  lz_o_.resize(un), klqp_o_.resize(un), psum_o_.resize(un), qs_o_.resize(un);
  std::vector<double> zo(un), to(un);
  for (long long k = 0; k < n; ++k) {
    zo[static_cast<size_t>(perm_[static_cast<size_t>(k)])] = zs[static_cast<size_t>(k)];
    to[static_cast<size_t>(perm_[static_cast<size_t>(k)])] = ts[static_cast<size_t>(k)];
  }
  std::vector<math::ListedSums> listed(un);
  shared_chunks(
      part, threads_, [&](long long i0, long long i1) { listed_sums_range<T, D>(rows, i0, i1, listed.data()); },
      items(listed));
#pragma omp parallel for schedule(static) num_threads(threads_)
  for (long long i = 0; i < n; ++i) {
    const size_t ui = static_cast<size_t>(i);
    const math::ListedSums& l = listed[ui];
    const double b = beta_[ui];
    const math::NervRow<double> r =
        math::nerv_row_finish(b, -b * static_cast<double>(dmin_o_[ui]), zo[ui], to[ui] + l.t, l.u, l.p);
    cost[ui] = lambda * r.kl_pq + (1.0 - lambda) * r.kl_qp;
    lz_o_[ui] = static_cast<T>(std::log(zo[ui]));
    klqp_o_[ui] = static_cast<T>(r.kl_qp);
    psum_o_[ui] = static_cast<T>(r.p_sum);
    qs_o_[ui] = static_cast<T>(r.q_scale);
  }
  double E = 0.0;
  for (double v : cost) E += v;
  mean_row_pairs_ = 0.0;
  for (double v : pairs) mean_row_pairs_ += v / static_cast<double>(n);
  if (row_costs) *row_costs = cost;
  if (!grad) return E;

  // 4. the gradient
  rows.lz = lz_o_.data();
  rows.kl_qp = klqp_o_.data();
  rows.p_sum = psum_o_.data();
  rows.q_scale = qs_o_.data();
  // The packed values (math::NervWideField, NervRowField); the gathering evaluator reads the
  // separate arrays, as the CUDA kernels do, so that the tests cover both.
  if (!gather_) {  // the wide rows' values, packed by field
    const size_t nw = wide_.size();
    wide_packed_.resize(nw * math::kWideFields);
    T* f = wide_packed_.data();
    for (size_t w = 0; w < nw; ++w) {
      const auto j = static_cast<size_t>(wide_[w]);
      for (int a = 0; a < 3; ++a) f[(math::kWideY0 + a) * nw + w] = yo_[a < D ? a : 0][j];
      f[math::kWideBeta * nw + w] = beta_[j];
      f[math::kWideDmin * nw + w] = dmin_o_[j];
      f[math::kWideR2 * nw + w] = r2_o_[j];
      f[math::kWideQScale * nw + w] = qs_o_[j];
      f[math::kWideLz * nw + w] = lz_o_[j];
      f[math::kWidePSum * nw + w] = psum_o_[j];
      f[math::kWideKlQp * nw + w] = klqp_o_[j];
      f[math::kWideLpf * nw + w] = lpf_[j];
    }
    rows.wide_packed = f;
    // every row's values, packed
    row_packed_.resize(un * math::kRowFields);
    T* rp = row_packed_.data();
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (long long i = 0; i < n; ++i) {
      const auto ui = static_cast<size_t>(i);
      T* q = rp + ui * math::kRowFields;
      for (int a = 0; a < 3; ++a) q[math::kRowY0 + a] = yo_[a < D ? a : 0][ui];
      q[math::kRowBeta] = beta_[ui];
      q[math::kRowDmin] = dmin_o_[ui];
      q[math::kRowR2] = r2_o_[ui];
      q[math::kRowQScale] = qs_o_[ui];
      q[math::kRowLpf] = lpf_[ui];
    }
    rows.row_packed = rp;
  }
  gather(lz_s_, lz_o_);
  gather(klqp_s_, klqp_o_);
  gather(psum_s_, psum_o_);
  gather(qs_s_, qs_o_);
  g.lz = lz_s_.data();
  g.kl_qp = klqp_s_.data();
  g.p_sum = psum_s_.data();
  g.q_scale = qs_s_.data();
  std::vector<double> gs(un * D), gl(un * D, 0.0);
  const T lam = static_cast<T>(lambda);
  if (gather_) {
    shared_chunks(
        part, threads_, [&](long long k0, long long k1) { gradient_range<T, D>(g, k0, k1, lam, gs.data()); },
        items(gs, D));
  } else {
    // kScatterBlocks fixed blocks of sorted points, each scattering into its own window of the
    // points its narrow rows can reach (the layers of cells along the last axis within the block's
    // largest narrow radius), the windows then added in block order
    const long long layer = D == 2 ? g.g[0] : static_cast<long long>(g.g[0]) * g.g[1];
    const long long layers = ncells / layer;
    std::vector<long long> w0(kScatterBlocks), wn(kScatterBlocks), off(kScatterBlocks + 1, 0);
    for (long long b = 0; b < kScatterBlocks; ++b) {
      const long long k0 = b * n / kScatterBlocks, k1 = (b + 1) * n / kScatterBlocks;
      if (k0 == k1) {
        w0[static_cast<size_t>(b)] = 0, wn[static_cast<size_t>(b)] = 0;
      } else {
        T rmax = 0;
        for (long long k = k0; k < k1; ++k) rmax = std::max(rmax, colr2_s_[static_cast<size_t>(k)]);
        const long long span = static_cast<long long>(std::ceil(std::sqrt(static_cast<double>(rmax)) / h)) + 1;
        const long long l0 = std::max(0LL, cell[static_cast<size_t>(perm_[static_cast<size_t>(k0)])] / layer - span);
        const long long l1 = std::min(layers, cell[static_cast<size_t>(perm_[static_cast<size_t>(k1 - 1)])] / layer + span + 1);
        w0[static_cast<size_t>(b)] = start_[static_cast<size_t>(l0 * layer)];
        wn[static_cast<size_t>(b)] = start_[static_cast<size_t>(l1 * layer)] - w0[static_cast<size_t>(b)];
      }
      off[static_cast<size_t>(b) + 1] = off[static_cast<size_t>(b)] + wn[static_cast<size_t>(b)] * D;
    }
    scatter_.assign(static_cast<size_t>(off[kScatterBlocks]), T(0));
    // over ranks: each takes a run of the blocks; their points' own terms and their windows are
    // then gathered, and every rank adds the windows in block order as one process does
    const SplitParts blocks = SplitParts::even(comm_, kScatterBlocks);
    const long long b0 = blocks.begin(), b1 = blocks.end();
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads_)
    for (long long b = b0; b < b1; ++b)
      scatter_range<T, D>(g, b * n / kScatterBlocks, (b + 1) * n / kScatterBlocks, lam, gs.data(),
                          scatter_.data() + off[static_cast<size_t>(b)], w0[static_cast<size_t>(b)],
                          wn[static_cast<size_t>(b)]);
    blocks.in_items([&](long long b) { return b * n / kScatterBlocks; }).gather(gs.data(), D);
    blocks.in_items([&](long long b) { return off[static_cast<size_t>(b)]; }).gather(scatter_.data(), 1);
    for (long long b = 0; b < kScatterBlocks; ++b) {
      const T* acc = scatter_.data() + off[static_cast<size_t>(b)];
      const long long base = w0[static_cast<size_t>(b)], m = wn[static_cast<size_t>(b)];
#pragma omp parallel for schedule(static) num_threads(threads_)
      for (long long q = 0; q < m; ++q)
        for (int a = 0; a < D; ++a) gs[static_cast<size_t>((base + q) * D + a)] += static_cast<double>(acc[a * m + q]);
    }
  }
  shared_chunks(
      part, threads_, [&](long long i0, long long i1) { listed_gradient_range<T, D>(rows, i0, i1, lam, gl.data()); },
      items(gl, D));
  *grad = MatrixD(n, D);
  for (long long k = 0; k < n; ++k) {
    const long long i = perm_[static_cast<size_t>(k)];
    for (int a = 0; a < D; ++a)
      (*grad)(i, a) = 2.0 * (gs[static_cast<size_t>(k * D + a)] + gl[static_cast<size_t>(i * D + a)]);
  }
  return E;
}

template class NervCellsEvaluator<float>;
template class NervCellsEvaluator<double>;

}  // namespace orrery::cpu

namespace orrery {

double nerv_objective_truncated(const SparseAffinity& P, const std::vector<double>& beta, const MatrixD& Y,
                                double lambda, double cutoff, MatrixD* grad, int threads,
                                std::vector<double>* row_costs, NervPrecision precision) {
  if (Y.rows != P.num_points) internal_error("nerv_objective_truncated: P and Y disagree on N");
  if (precision == NervPrecision::float64)
    return cpu::NervCellsEvaluator<double>(P, beta, cutoff, static_cast<int>(Y.cols), threads)
        .evaluate(Y, lambda, grad, row_costs);
  return cpu::NervCellsEvaluator<float>(P, beta, cutoff, static_cast<int>(Y.cols), threads)
      .evaluate(Y, lambda, grad, row_costs);
}

NervTruncationCheck nerv_truncation_check(const SparseAffinity& P, const std::vector<double>& beta, const MatrixD& Y,
                                          double lambda, double cutoff, index_t rows, unsigned long long seed,
                                          int threads) {
  const index_t n = Y.rows;
  cpu::NervCellsEvaluator<float> e(P, beta, cutoff, static_cast<int>(Y.cols), threads);
  std::vector<double> trunc;
  NervTruncationCheck c;
  c.truncated = e.evaluate(Y, lambda, nullptr, &trunc);
  c.mean_row_pairs = e.mean_row_pairs();
  // the sampled rows: a seeded partial shuffle (all rows when rows >= n)
  std::vector<index_t> pick(static_cast<size_t>(n));
  for (index_t i = 0; i < n; ++i) pick[static_cast<size_t>(i)] = i;
  const index_t m = std::min(rows, n);
  unsigned long long s = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  for (index_t i = 0; i < m; ++i) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    const index_t j = i + static_cast<index_t>((s >> 33) % static_cast<unsigned long long>(n - i));
    std::swap(pick[static_cast<size_t>(i)], pick[static_cast<size_t>(j)]);
  }
  const std::vector<double> lpf = nerv_row_log_floors(P);
  std::vector<double> diff(static_cast<size_t>(m));
#pragma omp parallel for schedule(dynamic, 4) num_threads(cpu::nthreads(threads))
  for (index_t r = 0; r < m; ++r) {
    // row i over all points, in double: math/nerv.hpp's row sums with the listed pairs' corrections
    const index_t i = pick[static_cast<size_t>(r)];
    const double b = beta[static_cast<size_t>(i)];
    std::vector<double> d(static_cast<size_t>(n));
    double dmin = kInf;
    for (index_t j = 0; j < n; ++j) {
      double v = 0.0;
      for (index_t a = 0; a < Y.cols; ++a) v += (Y(i, a) - Y(j, a)) * (Y(i, a) - Y(j, a));
      d[static_cast<size_t>(j)] = v;
      if (j != i) dmin = std::min(dmin, v);
    }
    const double m0 = -b * dmin;
    double z = 0.0, t = 0.0, u = 0.0, ps = 0.0;
    for (index_t j = 0; j < n; ++j) {
      if (j == i) continue;
      const math::NervRowTerms<double> e2 =
          math::nerv_row_terms(d[static_cast<size_t>(j)], b, m0, 0.0, lpf[static_cast<size_t>(i)]);
      z += e2.w, t += e2.wt;
    }
    for (index_t q = P.row_ptr[static_cast<size_t>(i)]; q < P.row_ptr[static_cast<size_t>(i) + 1]; ++q) {
      const index_t j = P.col[static_cast<size_t>(q)];
      const double p = P.val[static_cast<size_t>(q)], lp = math::nerv_log_prob(p, kNervProbabilityFloor);
      const double w = std::exp(-b * d[static_cast<size_t>(j)] - m0);
      const math::NervRowTerms<double> l =
          math::nerv_row_listed(w, d[static_cast<size_t>(j)], b, p, lp, lpf[static_cast<size_t>(i)]);
      t += l.wt, u += l.pu, ps += p;
    }
    const math::NervRow<double> row = math::nerv_row_finish(b, m0, z, t, u, ps);
    diff[static_cast<size_t>(r)] = lambda * row.kl_pq + (1.0 - lambda) * row.kl_qp - trunc[static_cast<size_t>(i)];
  }
  double sd = 0.0;
  for (double v : diff) sd += v;
  c.rows = m;
  c.estimated_exact = c.truncated + (m > 0 ? sd * static_cast<double>(n) / static_cast<double>(m) : 0.0);
  c.relative_error = std::abs(c.estimated_exact - c.truncated) / std::max(std::abs(c.estimated_exact), 1e-300);
  return c;
}

}  // namespace orrery
