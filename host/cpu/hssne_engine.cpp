// HSSNE's CPU engine. Every quantity is a sum over pairs written with the per-pair functions of
// math/neighbor.hpp; rows are independent (OpenMP over i, each row summed in a fixed order) and the
// normaliser is summed per row then in row order, so results do not depend on the thread count.
// Sparse rows run as `omp simd` loops in instruction-set clones (prep/clones.hpp): the repulsion
// over every point from the map by dimension, and, for t-SNE's tail, the attraction over the row's
// list with a vectorisable log; they are about five times faster than the per-pair loop was. Dense
// rows run repulsion and attraction in one such pass (ten times faster). Every tail alpha takes
// these loops, with the tail's branch outside them.
// Cost O(N^2 D) per iteration, memory O(N D) beyond P.
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "cpu/engines.hpp"
#include "cpu/map_rows.hpp"
#include "cpu/repulsion_tree.hpp"
#include "orrery/affinity.hpp"
#include "orrery/comm.hpp"
#include "orrery/engines.hpp"
#include "orrery/error.hpp"
#include "orrery/interp.hpp"
#include "orrery/interp_plan.hpp"
#include "orrery/math/exp.hpp"
#include "orrery/math/neighbor.hpp"
#include "prep/breadth_first.hpp"
#include "prep/clones.hpp"

namespace orrery::cpu {
namespace {

int nthreads(int t) { return t > 0 ? t : omp_get_max_threads(); }

// Sized, and zeroed when they are not: cpu_sums writes every row it owns at every evaluation, and the
// rows it does not own (another rank's) stay zero, so sums of the right size are left as they are.
void resize_sums(HssneSums& s, index_t N, int D) {
  for (auto* v : {&s.h, &s.p_log_h, &s.a, &s.hs})
    if (v->size() != static_cast<size_t>(N)) v->assign(static_cast<size_t>(N), 0.0);
  if (s.ay.rows != N || s.ay.cols != D) s.ay = MatrixD(N, D);
  if (s.hsy.rows != N || s.hsy.cols != D) s.hsy = MatrixD(N, D);
}

// The point y's repulsive sums over the m points of ft (a map by dimension, ft[d m + j]), pair by
// pair in index order; one scalar per dimension, as GCC sums an array-section reduction lane by
// lane.
template <int D, int kTail>
ORRERY_ALWAYS_INLINE void repulsion_from_loop(const double* ft, index_t m, const double* y, double alpha,
                                              math::HssneRow<double, D>& acc) {
  const double *x0 = ft, *x1 = D > 1 ? ft + m : ft, *x2 = D > 2 ? ft + 2 * m : ft;
  const double y0 = y[0], y1 = D > 1 ? y[1] : 0.0, y2 = D > 2 ? y[2] : 0.0;
  double h_sum = 0.0, hs_sum = 0.0, g0 = 0.0, g1 = 0.0, g2 = 0.0;
#pragma omp simd reduction(+ : h_sum, hs_sum, g0, g1, g2)
  for (index_t j = 0; j < m; ++j) {
    double tau = (y0 - x0[j]) * (y0 - x0[j]);
    if constexpr (D > 1) tau += (y1 - x1[j]) * (y1 - x1[j]);
    if constexpr (D > 2) tau += (y2 - x2[j]) * (y2 - x2[j]);
    const math::TailTerms<double> t = math::heavy_tail_terms<kTail>(tau, alpha);
    const double hs = t.h * t.s;
    h_sum += t.h;
    hs_sum += hs;
    g0 += hs * x0[j];
    if constexpr (D > 1) g1 += hs * x1[j];
    if constexpr (D > 2) g2 += hs * x2[j];
  }
  acc.h_sum = h_sum;
  acc.hs_sum = hs_sum;
  const double g[3] = {g0, g1, g2};
  for (int d = 0; d < D; ++d) acc.hsy[d] = g[d];
}

// Row i's repulsive sums over every j != i, from the map by dimension (yt[d N + j] = y_jd, so the
// loads are contiguous), written for the vectoriser: the j == i term is added and removed after
// (H(0) = S(0) = 1), so the loop has no branch on j. kTail is math::heavy_tail_terms's, picked by
// the caller.
template <int D, int kTail>
ORRERY_ALWAYS_INLINE void repulsion_loop(const double* yt, index_t N, index_t i, double alpha,
                                         math::HssneRow<double, D>& acc) {
  const double y[3] = {yt[i], D > 1 ? yt[N + i] : 0.0, D > 2 ? yt[2 * N + i] : 0.0};
  repulsion_from_loop<D, kTail>(yt, N, y, alpha, acc);
  acc.h_sum -= 1.0;
  acc.hs_sum -= 1.0;
  for (int d = 0; d < D; ++d) acc.hsy[d] -= y[d];
}

// Row i's attractive sums over its list (columns col[lo, hi), values val), as hssne_accumulate's
// attraction but vectorised: the list's points are gathered from the row-major map y (a point's
// coordinates share a cache line, so a gather misses once, not once per dimension as from the map
// by dimension), and the logs are math/exp.hpp's, not libm's scalar log1p, which cost more than the
// whole repulsion pass. With Log std::false_type the objective's sum p log H is left out (p_log_h
// untouched), and with it the logarithms.
template <int D, int kTail, class Col, class Val, class Log>
ORRERY_ALWAYS_INLINE void attraction_loop(const double* y, index_t i, const Col* col, const Val* val, index_t lo,
                                          index_t hi, double alpha, Log, math::HssneRow<double, D>& acc) {
  constexpr bool kLog = Log::value;
  const double y0 = y[i * D], y1 = D > 1 ? y[i * D + 1] : 0.0, y2 = D > 2 ? y[i * D + 2] : 0.0;
  double a = 0.0, plh = 0.0, g0 = 0.0, g1 = 0.0, g2 = 0.0;
#pragma omp simd reduction(+ : a, plh, g0, g1, g2)
  for (index_t q = lo; q < hi; ++q) {
    const index_t j = static_cast<index_t>(col[q]) * D;
    const double p = static_cast<double>(val[q]);
    const double x0 = y[j], x1 = D > 1 ? y[j + 1] : 0.0, x2 = D > 2 ? y[j + 2] : 0.0;
    const math::TailTerms<double> t =
        math::heavy_tail_terms<kTail>(cpu::squared_offset<double, D>(y0, y1, y2, x0, x1, x2), alpha);
    const double ps = p * t.s;
    a += ps;
    if constexpr (kLog) plh += p * t.log_h;
    g0 += ps * x0;
    if constexpr (D > 1) g1 += ps * x1;
    if constexpr (D > 2) g2 += ps * x2;
  }
  acc.a_sum += a;
  acc.p_log_h += plh;
  const double g[3] = {g0, g1, g2};
  for (int d = 0; d < D; ++d) acc.ay[d] += g[d];
}

// A dense row: repulsion and attraction in one vectorised pass over every j (P_ij from prow), the
// j == i terms taken out after (H = S = 1 and log H = 0 there, for every tail).
template <int D, int kTail>
ORRERY_ALWAYS_INLINE void dense_loop(const double* yt, index_t N, index_t i, const double* prow, double alpha,
                                     math::HssneRow<double, D>& acc) {
  const cpu::MapRow<double, D> r(yt, N, i);
  const double *x0 = r.x0, *x1 = r.x1, *x2 = r.x2;
  double h_sum = 0.0, hs_sum = 0.0, a = 0.0, plh = 0.0, h0 = 0.0, h1 = 0.0, h2 = 0.0, a0 = 0.0, a1 = 0.0, a2 = 0.0;
#pragma omp simd reduction(+ : h_sum, hs_sum, a, plh, h0, h1, h2, a0, a1, a2)
  for (index_t j = 0; j < N; ++j) {
    const math::TailTerms<double> t = math::heavy_tail_terms<kTail>(r.tau(j), alpha);
    const double hs = t.h * t.s, ps = prow[j] * t.s;
    h_sum += t.h;
    hs_sum += hs;
    a += ps;
    plh += prow[j] * t.log_h;
    h0 += hs * x0[j];
    a0 += ps * x0[j];
    if constexpr (D > 1) h1 += hs * x1[j], a1 += ps * x1[j];
    if constexpr (D > 2) h2 += hs * x2[j], a2 += ps * x2[j];
  }
  const double pii = prow[i], y[3] = {r.y0, r.y1, r.y2}, h[3] = {h0, h1, h2}, g[3] = {a0, a1, a2};
  acc.h_sum = h_sum - 1.0;
  acc.hs_sum = hs_sum - 1.0;
  acc.a_sum = a - pii;
  acc.p_log_h = plh;
  for (int d = 0; d < D; ++d) {
    acc.hsy[d] = h[d] - y[d];
    acc.ay[d] = g[d] - pii * y[d];
  }
}

// The row functions, cloned (prep/clones.hpp) and dispatched on the tail once per row. With t-SNE's
// tail a pair is a division (and a log where P is listed), four to a vector with AVX2 instead of
// two; other tails add an exp and a log1p.
#define ORRERY_HSSNE_TAIL_DISPATCH(loop, ...)                  \
  if (alpha == 1.0) loop<D, 1>(__VA_ARGS__);                    \
  else if (alpha == 0.0) loop<D, 0>(__VA_ARGS__);               \
  else loop<D, 2>(__VA_ARGS__)

template <int D>
ORRERY_CLONES void repulsion_row(const double* yt, index_t N, index_t i, double alpha, math::HssneRow<double, D>& acc) {
  ORRERY_HSSNE_TAIL_DISPATCH(repulsion_loop, yt, N, i, alpha, acc);
}

template <int D>
ORRERY_CLONES void repulsion_from(const double* ft, index_t m, const double* y, double alpha,
                                  math::HssneRow<double, D>& acc) {
  ORRERY_HSSNE_TAIL_DISPATCH(repulsion_from_loop, ft, m, y, alpha, acc);
}

template <int D, class Col, class Val>
ORRERY_CLONES void attraction_row(const double* y, index_t i, const Col* col, const Val* val, index_t lo, index_t hi,
                                  double alpha, bool with_log, math::HssneRow<double, D>& acc) {
  if (with_log) {
    ORRERY_HSSNE_TAIL_DISPATCH(attraction_loop, y, i, col, val, lo, hi, alpha, std::true_type{}, acc);
  } else {
    ORRERY_HSSNE_TAIL_DISPATCH(attraction_loop, y, i, col, val, lo, hi, alpha, std::false_type{}, acc);
  }
}

template <int D>
ORRERY_CLONES void dense_row(const double* yt, index_t N, index_t i, const double* prow, double alpha,
                             math::HssneRow<double, D>& acc) {
  ORRERY_HSSNE_TAIL_DISPATCH(dense_loop, yt, N, i, prow, alpha, acc);
}

#undef ORRERY_HSSNE_TAIL_DISPATCH

// One pass over all pairs. Dense rows take P_ij inside the all-pairs loop (one distance per
// pair); sparse rows run the repulsion alone, then the attraction over the row's list.
// With a grid, the repulsion of every row comes from it (orrery/interp.hpp) and the rows run the
// attraction alone; the same with a tree (repulsion_tree.hpp), used where the grid gives way.
// A sharded engine's part (CpuHssneEngine::shard): rows [first, end) are this rank's; without a
// communicator, every row.
// P's lists in 8 bytes an entry: columns in 32 bits, values in float (the engine's renumbered copy,
// whose own col and val then stay empty).
struct CompactLists {
  std::vector<std::uint32_t> col;
  std::vector<float> val;
};

struct Shard {
  Comm* comm = nullptr;
  const CompactLists* compact = nullptr;  // P's lists, else S's col and val
  index_t first = 0, end = 0;
  std::vector<std::size_t> rows;  // every rank's row count, in rank order
};

template <int D>
void cpu_sums(const MatrixD& Y, double alpha, const MatrixD* P, const SparseAffinity* S, const CompactLists* compact,
              int threads, RepulsionGrid* grid, bool exact_when_cheaper, RepulsionTree* tree, RepulsionSums& rep,
              HssneSums& out, HssneStageTimes& times, index_t first, index_t end, bool objective) {
  const double t0 = omp_get_wtime();
  const index_t N = Y.rows;
  resize_sums(out, N, D);
  // A grid dearer than the pairs (a wide map of few points) gives way to the exact loop, or to the
  // tree where the engine has one and the tree costs less than the pairs. In 3-D the tree's cost is
  // weighed against the grid's at every map (a 3-D grid grows as the map's extent cubed, and the
  // tree is cheap to plan next to it); in 2-D only where the grid gives way (a 2-D grid grows as the
  // points do, and planning a tree at every map would add its cost to the grid's). The grid
  // gives its share of Z as one total (rep.z_grid; the rows' h_sum keep the rest), which saves it
  // an inverse transform.
  // A tree without a grid (`repulsion: tree`) sums every map.
  const bool tree_only = tree && !grid;
  const double pair_units = interp::kPairUnits * static_cast<double>(N) * static_cast<double>(N);
  double tree_units = std::numeric_limits<double>::infinity(), t_tree = 0;
  const auto timed = [&t_tree](auto&& f) {
    const double a = omp_get_wtime();
    f();
    t_tree += omp_get_wtime() - a;
  };
  if (tree_only) timed([&] { tree->sums(Y, rep); });
  if (grid && exact_when_cheaper && tree && D == 3) timed([&] { tree_units = tree->plan(Y); });
  if (grid && exact_when_cheaper) {
    if (!grid->sums_if_cheaper(Y, rep, false, tree_units)) grid = nullptr;
  } else if (grid) {
    grid->sums(Y, rep, false);
  }
  if (!grid) rep.z_grid = 0;
  if (grid) tree = nullptr;
  if (tree && !tree_only) {
    if (D == 2) timed([&] { tree_units = tree->plan(Y); });
    if (tree_units < pair_units) timed([&] { tree->sums_of_plan(rep); });
    else tree = nullptr;
  }
  times.tree += t_tree;
  const bool summed = grid || tree;
  // The map by dimension for the all-pairs loops (the attraction reads the row-major map).
  const std::vector<double> yt = summed && !P ? std::vector<double>() : cpu::by_dimension<double>(Y);
  const double t1 = omp_get_wtime();
#pragma omp parallel for schedule(static) num_threads(nthreads(threads))
  for (index_t i = first; i < end; ++i) {
    math::HssneRow<double, D> acc;
    if (P) {
      dense_row<D>(yt.data(), N, i, P->row(i), alpha, acc);
    } else {
      const index_t lo = S->row_ptr[static_cast<size_t>(i)], hi = S->row_ptr[static_cast<size_t>(i) + 1];
      if (summed) {
        const auto k = static_cast<size_t>(i);
        acc.h_sum = rep.h[k];
        acc.hs_sum = rep.hs[k];
        for (int d = 0; d < D; ++d) acc.hsy[d] = rep.hsy(i, d);
      } else {
        repulsion_row<D>(yt.data(), N, i, alpha, acc);
      }
      if (compact)
        attraction_row<D>(Y.data.data(), i, compact->col.data(), compact->val.data(), lo, hi, alpha, objective, acc);
      else attraction_row<D>(Y.data.data(), i, S->col.data(), S->val.data(), lo, hi, alpha, objective, acc);
    }
    const auto k = static_cast<size_t>(i);
    out.h[k] = acc.h_sum;
    out.p_log_h[k] = acc.p_log_h;
    out.a[k] = acc.a_sum;
    out.hs[k] = acc.hs_sum;
    for (int d = 0; d < D; ++d) {
      out.ay(i, d) = acc.ay[d];
      out.hsy(i, d) = acc.hsy[d];
    }
  }
  // Rows without a grid sum their repulsion and attraction in one pass: all of it counts as pairs.
  const double t2 = omp_get_wtime();
  if (summed) times.attraction += t2 - t1;
  else times.pairs += t2 - t0 - t_tree;
  ++times.evaluations;
}

// The two totals summed row by row in row order. A shard's rows' terms are gathered first, so the
// sums run over the same terms in the same order on every rank, whatever the number of ranks.
// Without `objective` the sparse rows skip p log H, and the totals' p_log_h is NaN.
template <int D>
HssneTotals cpu_evaluate(const MatrixD& Y, double alpha, const MatrixD* P, const SparseAffinity* S, int threads,
                         RepulsionGrid* grid, bool exact_when_cheaper, RepulsionTree* tree, RepulsionSums& rep,
                         HssneSums& out, HssneStageTimes& times, const Shard& shard, bool objective) {
  cpu_sums<D>(Y, alpha, P, S, shard.compact, threads, grid, exact_when_cheaper, tree, rep, out, times, shard.first,
              shard.end, objective);
  HssneTotals t;
  t.z = rep.z_grid;
  if (!objective) t.p_log_h = std::numeric_limits<double>::quiet_NaN();
  if (!shard.comm) {
    for (size_t i = 0; i < out.h.size(); ++i) {
      t.z += out.h[i];
      if (objective) t.p_log_h += out.p_log_h[i];
    }
    return t;
  }
  std::vector<std::array<double, 2>> mine(static_cast<size_t>(shard.end - shard.first));
  for (size_t r = 0; r < mine.size(); ++r) {
    const size_t i = static_cast<size_t>(shard.first) + r;
    mine[r] = {out.h[i], out.p_log_h[i]};
  }
  std::vector<std::array<double, 2>> all(static_cast<size_t>(Y.rows));
  shard.comm->allgatherv(mine.data(), mine.size(), all.data(), shard.rows);
  for (const auto& [h, plh] : all) {
    t.z += h;
    if (objective) t.p_log_h += plh;
  }
  return t;
}

// A breadth-first order of P's graph: from the lowest-numbered point not yet reached, each
// reached point's list in its order. Neighbors in P end up near one another in the order, so
// the attraction's gathers over a map larger than the caches hit lines already loaded (10^6
// points of a 20-cluster mixture: 2.6x faster in one evaluation with the clusters contiguous).
std::vector<index_t> breadth_first_order(const SparseAffinity& S) {
  return breadth_first(S.num_points, 0, [&S](index_t i, const auto& visit) {
    for (index_t q = S.row_ptr[static_cast<size_t>(i)]; q < S.row_ptr[static_cast<size_t>(i) + 1]; ++q)
      visit(S.col[static_cast<size_t>(q)]);
  });
}

// P with its points renumbered: row r is S's row order[r], its columns rank[j] (rank = the inverse
// of order), each row's entries sorted by column. With compact, the lists go there and the
// result's own col and val stay empty.
SparseAffinity renumbered(const SparseAffinity& S, const std::vector<index_t>& order, const std::vector<index_t>& rank,
                          int threads, CompactLists* compact) {
  const index_t N = S.num_points;
  SparseAffinity L;
  L.num_points = N;
  L.row_ptr.assign(static_cast<size_t>(N + 1), 0);
  for (index_t r = 0; r < N; ++r) {
    const auto i = static_cast<size_t>(order[static_cast<size_t>(r)]);
    L.row_ptr[static_cast<size_t>(r + 1)] = L.row_ptr[static_cast<size_t>(r)] + (S.row_ptr[i + 1] - S.row_ptr[i]);
  }
  if (compact) {
    compact->col.resize(S.col.size());
    compact->val.resize(S.val.size());
  } else {
    L.col.resize(S.col.size());
    L.val.resize(S.val.size());
  }
#pragma omp parallel for schedule(dynamic, 1024) num_threads(nthreads(threads))
  for (index_t r = 0; r < N; ++r) {
    const auto i = static_cast<size_t>(order[static_cast<size_t>(r)]);
    std::vector<std::pair<index_t, double>> row;
    for (index_t q = S.row_ptr[i]; q < S.row_ptr[i + 1]; ++q)
      row.emplace_back(rank[static_cast<size_t>(S.col[static_cast<size_t>(q)])], S.val[static_cast<size_t>(q)]);
    std::sort(row.begin(), row.end());
    auto at = static_cast<size_t>(L.row_ptr[static_cast<size_t>(r)]);
    for (const auto& [j, v] : row) {
      if (compact) {
        compact->col[at] = static_cast<std::uint32_t>(j);
        compact->val[at++] = static_cast<float>(v);
      } else {
        L.col[at] = j;
        L.val[at++] = v;
      }
    }
  }
  return L;
}

// The engine on the host: the map, its sums and the optimisers' state in host memory, the steps
// as loops over math/neighbor.hpp's per-coordinate updates (O(N D), next to O(N^2) pairs).
// With the grid (sparse P, the large maps), the engine numbers the points in P's breadth-first
// order inside (breadth_first_order; a copy of P so renumbered): every map, sum and state crosses
// its interface in the caller's numbering.
class CpuHssneEngine final : public HssneEngine {
 public:
  CpuHssneEngine(const MatrixD* P, const SparseAffinity* S, double alpha, int dim, int threads,
                 const HssneRepulsion& repulsion)
      : P_(P), S_(S), alpha_(alpha), dim_(dim), threads_(threads), N_(P ? P->rows : S->num_points) {
    if (repulsion.interpolated) grid_ = std::make_unique<RepulsionGrid>(dim, alpha, repulsion.grid, threads);
    exact_when_cheaper_ = repulsion.exact_when_cheaper;
    if ((grid_ && exact_when_cheaper_ && repulsion.tree_when_grid_dearer) || repulsion.tree)
      tree_ = std::make_unique<RepulsionTree>(dim, alpha, repulsion.tree_angle, threads);
    shard_.end = N_;
    if ((grid_ || tree_) && S) {
      order_ = breadth_first_order(*S);
      std::vector<index_t> rank(order_.size());
      for (size_t r = 0; r < order_.size(); ++r) rank[static_cast<size_t>(order_[r])] = static_cast<index_t>(r);
      // The columns in 32 bits where N allows, and the values in float: the attraction streams P's
      // lists every evaluation and is bound by memory, so 8 bytes an entry instead of 16 (the sums
      // stay double; a value moves by float's rounding, 6e-8 of itself).
      const bool compact = N_ <= static_cast<index_t>(std::numeric_limits<std::uint32_t>::max());
      local_ = renumbered(*S, order_, rank, threads, compact ? &compact_ : nullptr);
      S_ = &local_;
      if (compact) shard_.compact = &compact_;
    }
  }
  std::string name() const override { return "cpu"; }

  // The blocks are of the engine's numbering (P's breadth-first order with a grid or tree), so a
  // rank's rows are neighbours in P and its attraction reads a compact part of the map.
  void shard(Comm& comm) override {
    shard_.comm = comm.size() > 1 ? &comm : nullptr;
    shard_.rows.assign(static_cast<size_t>(comm.size()), 0);
    for (int r = 0; r < comm.size(); ++r)
      shard_.rows[static_cast<size_t>(r)] = static_cast<size_t>(hssne_rank_block(N_, r, comm.size()).count);
    const RowBlock mine = hssne_rank_block(N_, comm.rank(), comm.size());
    shard_.first = mine.first;
    shard_.end = mine.first + mine.count;
    if (grid_) grid_->only_rows(mine.first, mine.count, shard_.comm);
    if (tree_) tree_->only_rows(mine.first, mine.count);
    // The renumbered copy of P keeps this rank's rows only (the attraction reads no other): their
    // entries move to the front and row_ptr is shifted to match; other rows' pointers are unused.
    if (shard_.comm && S_ == &local_) {
      const auto lo = static_cast<size_t>(local_.row_ptr[static_cast<size_t>(shard_.first)]);
      const auto hi = static_cast<size_t>(local_.row_ptr[static_cast<size_t>(shard_.end)]);
      const auto keep = [lo, hi](auto& v) {
        std::remove_reference_t<decltype(v)>(v.begin() + static_cast<std::ptrdiff_t>(lo),
                                             v.begin() + static_cast<std::ptrdiff_t>(hi)).swap(v);
      };
      if (shard_.compact) {
        keep(compact_.col);
        keep(compact_.val);
      } else {
        keep(local_.col);
        keep(local_.val);
      }
      for (index_t& at : local_.row_ptr) at = std::clamp<index_t>(at - static_cast<index_t>(lo), 0, static_cast<index_t>(hi - lo));
    }
  }

  HssneTotals start(const MatrixD& Y_caller) override {
    if (Y_caller.rows != N_ || Y_caller.cols != dim_) internal_error("hssne: Y has the wrong shape");
    const MatrixD Y = inside(Y_caller);
    y_ = Y;
    prev_ = Y;
    trial_ = Y;
    velocity_ = MatrixD(N_, dim_, 0.0);
    gains_ = MatrixD(N_, dim_, 1.0);
    return cur_ = evaluate(y_, sums_);
  }

  HssneTotals propose(double c, double step, double beta) override {
    const double inv_z = 1.0 / cur_.z;
#pragma omp parallel for schedule(static) num_threads(nthreads(threads_))
    for (index_t i = shard_.first; i < shard_.end; ++i) {
      const auto k = static_cast<size_t>(i);
      for (index_t d = 0; d < dim_; ++d)
        trial_(i, d) = math::hssne_fixed_point_coord(y_(i, d), prev_(i, d), sums_.a[k], sums_.hs[k], sums_.ay(i, d),
                                                     sums_.hsy(i, d), c, inv_z, step, beta);
    }
    gather_rows(trial_);
    return trial_totals_ = evaluate(trial_, trial_sums_);
  }

  HssneTotals damp() override {
    for (auto q = static_cast<size_t>(shard_.first * dim_); q < static_cast<size_t>(shard_.end * dim_); ++q)
      trial_.data[q] = math::hssne_damp_coord(trial_.data[q], y_.data[q]);
    gather_rows(trial_);
    return trial_totals_ = evaluate(trial_, trial_sums_);
  }

  void accept() override {
    std::swap(prev_, y_);   // prev <- Y
    std::swap(y_, trial_);  // Y <- trial; the old prev becomes scratch
    std::swap(sums_, trial_sums_);
    cur_ = trial_totals_;
  }

  // The steps are per coordinate, so the rows run in parallel (the same values for any thread count).
  HssneTotals gradient_step(double c, double momentum, double learning_rate, bool objective) override {
    const double inv_z = 1.0 / cur_.z;
#pragma omp parallel for schedule(static) num_threads(nthreads(threads_))
    for (index_t i = shard_.first; i < shard_.end; ++i) {
      const auto k = static_cast<size_t>(i);
      for (index_t d = 0; d < dim_; ++d) {
        const double g = math::hssne_gradient_coord(y_(i, d), sums_.a[k], sums_.hs[k], sums_.ay(i, d), sums_.hsy(i, d),
                                                    c, inv_z);
        y_(i, d) += math::tsne_momentum_step(g, velocity_(i, d), gains_(i, d), momentum, learning_rate);
      }
    }
    gather_rows(y_);
    return cur_ = evaluate(y_, sums_, objective);
  }

  MatrixD coords() const override { return outside(y_); }
  void current_sums(HssneSums& out) const override {
    if (order_.empty()) {
      out = sums_;
      return;
    }
    out.h = outside(sums_.h);
    out.p_log_h = outside(sums_.p_log_h);
    out.a = outside(sums_.a);
    out.hs = outside(sums_.hs);
    out.ay = outside(sums_.ay);
    out.hsy = outside(sums_.hsy);
  }
  // A shard steps only its own rows' velocity and gains: the state gathers them.
  HssneState state() const override {
    MatrixD velocity = velocity_, gains = gains_;
    gather_rows(velocity);
    gather_rows(gains);
    return {outside(y_), outside(prev_), outside(velocity), outside(gains)};
  }

  HssneStageTimes stage_times() const override { return grid_ ? with_grid_stages(times_, grid_->timings()) : times_; }
  HssneTotals restore(const HssneState& s) override {
    for (const MatrixD* m : {&s.y, &s.prev, &s.velocity, &s.gains})
      if (m->rows != N_ || m->cols != dim_) internal_error("hssne: a saved state has the wrong shape");
    y_ = inside(s.y);
    prev_ = inside(s.prev);
    trial_ = y_;
    velocity_ = inside(s.velocity);
    gains_ = inside(s.gains);
    return cur_ = evaluate(y_, sums_);
  }

 private:
  // Rows of the caller's numbering to the engine's (inside) and back (outside).
  MatrixD inside(const MatrixD& M) const {
    if (order_.empty()) return M;
    MatrixD out(M.rows, M.cols);
    for (index_t r = 0; r < M.rows; ++r)
      for (index_t d = 0; d < M.cols; ++d) out(r, d) = M(order_[static_cast<size_t>(r)], d);
    return out;
  }
  MatrixD outside(const MatrixD& M) const {
    if (order_.empty()) return M;
    MatrixD out(M.rows, M.cols);
    for (index_t r = 0; r < M.rows; ++r)
      for (index_t d = 0; d < M.cols; ++d) out(order_[static_cast<size_t>(r)], d) = M(r, d);
    return out;
  }
  std::vector<double> outside(const std::vector<double>& v) const {
    std::vector<double> out(v.size());
    for (size_t r = 0; r < v.size(); ++r) out[static_cast<size_t>(order_[r])] = v[r];
    return out;
  }

  HssneTotals evaluate(const MatrixD& Y, HssneSums& out, bool objective = true) {
    return dim_ == 2 ? cpu_evaluate<2>(Y, alpha_, P_, S_, threads_, grid_.get(), exact_when_cheaper_, tree_.get(), rep_,
                                       out, times_, shard_, objective)
                     : cpu_evaluate<3>(Y, alpha_, P_, S_, threads_, grid_.get(), exact_when_cheaper_, tree_.get(), rep_,
                                       out, times_, shard_, objective);
  }
  // Every rank's rows of M (this rank's stepped, the others' stale) replaced by their owners'.
  void gather_rows(MatrixD& M) const {
    if (!shard_.comm) return;
    std::vector<std::size_t> counts(shard_.rows);
    for (std::size_t& c : counts) c *= static_cast<std::size_t>(dim_);
    std::vector<double> all(M.data.size());
    shard_.comm->allgatherv(M.data.data() + shard_.first * dim_, counts[static_cast<size_t>(shard_.comm->rank())],
                            all.data(), counts);
    M.data.swap(all);
  }

  const MatrixD* P_;
  const SparseAffinity* S_;
  double alpha_;
  int dim_, threads_;
  index_t N_;
  MatrixD y_, prev_, trial_, velocity_, gains_;
  HssneSums sums_, trial_sums_;
  HssneTotals cur_, trial_totals_;
  std::unique_ptr<RepulsionGrid> grid_;  // null: exact repulsion over all pairs
  std::unique_ptr<RepulsionTree> tree_;  // where the grid gives way (null: the exact loop there)
  HssneStageTimes times_;
  CompactLists compact_;  // local_'s lists, where N fits 32 bits (local_.col and .val then empty)
  bool exact_when_cheaper_ = false;
  RepulsionSums rep_;
  // The engine's numbering (empty: the caller's): order_[r] is the caller's point r; local_ is P
  // so renumbered (S_ points to it).
  std::vector<index_t> order_;
  SparseAffinity local_;
  Shard shard_;
};

template <int D>
void exact_repulsion_rows(const MatrixD& Y, double alpha, RepulsionSums& out, int threads) {
  const index_t N = Y.rows;
  const std::vector<double> yt = cpu::by_dimension<double>(Y);
#pragma omp parallel for schedule(static) num_threads(nthreads(threads))
  for (index_t i = 0; i < N; ++i) {
    math::HssneRow<double, D> acc;
    repulsion_row<D>(yt.data(), N, i, alpha, acc);
    out.h[static_cast<size_t>(i)] = acc.h_sum;
    out.hs[static_cast<size_t>(i)] = acc.hs_sum;
    for (int d = 0; d < D; ++d) out.hsy(i, d) = acc.hsy[d];
  }
}

template <int D>
void far_repulsion_rows(const MatrixD& Y, const std::vector<index_t>& far, double alpha, RepulsionSums& out,
                        int threads, index_t first, index_t end) {
  const index_t N = Y.rows, m = static_cast<index_t>(far.size());
  const std::vector<double> yt = cpu::by_dimension<double>(Y);
  std::vector<double> ft(static_cast<size_t>(m * D));
  std::vector<unsigned char> is_far(static_cast<size_t>(N), 0);
  for (index_t r = 0; r < m; ++r) {
    const index_t j = far[static_cast<size_t>(r)];
    is_far[static_cast<size_t>(j)] = 1;
    for (int d = 0; d < D; ++d) ft[static_cast<size_t>(d * m + r)] = Y(j, d);
  }
  // A far point's row costs N pairs, another's m: dynamic chunks keep the threads even; each row's
  // sums are its own, so the schedule changes no bits.
#pragma omp parallel for schedule(dynamic, 1024) num_threads(nthreads(threads))
  for (index_t i = first; i < end; ++i) {
    const auto k = static_cast<size_t>(i);
    math::HssneRow<double, D> acc;
    if (is_far[k]) {
      repulsion_row<D>(yt.data(), N, i, alpha, acc);
      out.h[k] = acc.h_sum;
      out.hs[k] = acc.hs_sum;
      for (int d = 0; d < D; ++d) out.hsy(i, d) = acc.hsy[d];
    } else {
      const double y[3] = {Y(i, 0), Y(i, 1), D > 2 ? Y(i, D - 1) : 0.0};
      repulsion_from<D>(ft.data(), m, y, alpha, acc);
      out.h[k] += acc.h_sum;
      out.hs[k] += acc.hs_sum;
      for (int d = 0; d < D; ++d) out.hsy(i, d) += acc.hsy[d];
    }
  }
}

}  // namespace

void add_far_repulsion(const MatrixD& Y, const std::vector<index_t>& far, double alpha, RepulsionSums& out,
                       int threads, index_t first, index_t end) {
  if (far.empty()) return;
  if (end < 0) end = Y.rows;
  if (Y.cols == 2) far_repulsion_rows<2>(Y, far, alpha, out, threads, first, end);
  else far_repulsion_rows<3>(Y, far, alpha, out, threads, first, end);
}

}  // namespace orrery::cpu

namespace orrery {

// The reference the grid is measured against: the engine's own exact rows.
void exact_repulsion(const MatrixD& Y, double alpha, RepulsionSums& out, int threads) {
  if (Y.cols != 2 && Y.cols != 3) internal_error("exact_repulsion: D must be 2 or 3");
  out.h.assign(static_cast<size_t>(Y.rows), 0.0);
  out.hs.assign(static_cast<size_t>(Y.rows), 0.0);
  out.hsy = MatrixD(Y.rows, Y.cols, 0.0);
  out.z_grid = 0;
  if (Y.cols == 2) cpu::exact_repulsion_rows<2>(Y, alpha, out, threads);
  else cpu::exact_repulsion_rows<3>(Y, alpha, out, threads);
}

}  // namespace orrery

namespace orrery::cpu {

std::unique_ptr<HssneEngine> make_hssne_engine(const MatrixD* dense, const SparseAffinity* sparse, double alpha, int dim,
                                               int threads, const HssneRepulsion& repulsion) {
  if (dense && (repulsion.interpolated || repulsion.tree))
    internal_error("make_hssne_engine: interpolated and tree repulsion need sparse P");
  if ((dense == nullptr) == (sparse == nullptr)) internal_error("make_hssne_engine: give dense or sparse P");
  if (dim != 2 && dim != 3) internal_error("make_hssne_engine: D must be 2 or 3");
  return std::make_unique<CpuHssneEngine>(dense, sparse, alpha, dim, threads, repulsion);
}

}  // namespace orrery::cpu
