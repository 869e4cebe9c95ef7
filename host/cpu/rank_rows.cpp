// The quality measures' rank rows on the CPU (orrery/quality.hpp): per point its kmax nearest in
// each space by a bounded heap over all points (math/select.hpp; under inner_product from the point's
// query to the references, orrery/inner_product.hpp), then the ranks that link the two
// spaces, read from the other space's kept neighbors or counted. OpenMP over query points; each
// row is independent, so any thread count gives the same integers. O(rows N (d + D + kmax)) time, O(N)
// scratch per thread, and a transposed copy of X and Y (N (d + D) values).
#include <omp.h>

#include <algorithm>
#include <vector>

#include "cpu/engines.hpp"
#include "cpu/map_rows.hpp"
#include "orrery/math/distance.hpp"
#include "orrery/math/select.hpp"
#include "orrery/quality.hpp"
#include "prep/clones.hpp"

namespace orrery::cpu {
namespace {

// For each of the m keys (kd[q], ki[q]): how many points l != self of the row come before it,
// (dist[l], l) < key in math::neighbor_before's order. One branch-free SIMD count per key over the
// row (the row stays in the cache), in AVX2/AVX-512 clones (prep/clones.hpp).
ORRERY_CLONES void count_before(const double* dist, index_t N, index_t self, const double* kd, const std::int64_t* ki,
                                int m, std::int64_t* out) {
  for (int q = 0; q < m; ++q) {
    const double d = kd[q];
    const std::int64_t k = ki[q];
    std::int64_t c = 0;
#pragma omp simd reduction(+ : c)
    for (index_t l = 0; l < N; ++l) c += static_cast<std::int64_t>((dist[l] < d) | ((dist[l] == d) & (l < k)));
    if (math::neighbor_before(dist[self], static_cast<std::int64_t>(self), d, k)) --c;
    out[q] = c;
  }
}

// Ranks in `dist` (one row, self excluded) of the points `list` (the other space's neighbors):
// read from `pos` when the point is among this space's own kept neighbors, counted otherwise
// (1 + the points before it).
void cross_ranks(const std::int64_t* list, int kmax, const std::vector<int>& pos, const double* dist, index_t N,
                 index_t self, std::int64_t* ranks, std::vector<double>& kd, std::vector<std::int64_t>& ki,
                 std::vector<int>& tag, std::vector<std::int64_t>& before) {
  int m = 0;
  for (int l = 0; l < kmax; ++l) {
    const int p = pos[static_cast<size_t>(list[l])];
    if (p >= 0) {
      ranks[l] = p + 1;
    } else {
      kd[m] = dist[static_cast<size_t>(list[l])];
      ki[m] = list[l];
      tag[m++] = l;
    }
  }
  if (m == 0) return;
  count_before(dist, N, self, kd.data(), ki.data(), m, before.data());
  for (int q = 0; q < m; ++q) ranks[tag[q]] = 1 + before[q];
}

// The squared distances of Q query points (xq[q], d coordinates each) to every point in one space,
// into out[q N + l], in loops of their own (the heaps' branches kept out), vectorised across
// points: xt holds the coordinates transposed, dimension by dimension, and each four dimensions add
// their squared differences to a run of the row in one SIMD pass; compiled for AVX2/AVX-512 where
// the processor has them. The points are taken kChunk at a time, every query over a chunk before
// the next, so a chunk of xt (kChunk d doubles) is read from memory once for all Q queries, not once
// each (4,000 queries of 70,000 50-D points streamed 28 MB a query); each distance's sum runs in
// the same order whatever Q.
ORRERY_CLONES void add_squared_differences(const double* xt, index_t N, int d, const double* const* xq, int Q,
                                           double* out) {
  constexpr index_t kChunk = 512;
  const auto col = [&](int c) { return xt + static_cast<size_t>(c) * static_cast<size_t>(N); };
  for (index_t l0 = 0; l0 < N; l0 += kChunk) {
    const index_t l1 = std::min(N, l0 + kChunk);
    for (int q = 0; q < Q; ++q) {
      const double* xi = xq[q];
      double* o = out + static_cast<size_t>(q) * static_cast<size_t>(N);
      for (index_t l = l0; l < l1; ++l) o[l] = 0.0;
      int c = 0;
      for (; c + 4 <= d; c += 4) {  // four dimensions per pass over the run
        const double *c0 = col(c), *c1 = col(c + 1), *c2 = col(c + 2), *c3 = col(c + 3);
        const double v0 = xi[c], v1 = xi[c + 1], v2 = xi[c + 2], v3 = xi[c + 3];
#pragma omp simd
        for (index_t l = l0; l < l1; ++l) {
          const double t0 = c0[l] - v0, t1 = c1[l] - v1, t2 = c2[l] - v2, t3 = c3[l] - v3;
          o[l] += (t0 * t0 + t1 * t1) + (t2 * t2 + t3 * t3);
        }
      }
      for (; c < d; ++c) {
        const double* c0 = col(c);
        const double v0 = xi[c];
#pragma omp simd
        for (index_t l = l0; l < l1; ++l) {
          const double t0 = c0[l] - v0;
          o[l] += t0 * t0;
        }
      }
    }
  }
}

}  // namespace

RankRows rank_rows(const MatrixD& X, const MatrixD& Y, int kmax, RankInput input,
                  const std::vector<index_t>& queries, int threads) {
  const bool distance_matrix = input == RankInput::distance_matrix;
  const index_t N = Y.rows, R = queries.empty() ? N : static_cast<index_t>(queries.size());
  RankRows rows;
  rows.num_points = N;
  rows.kmax = kmax;
  rows.queries = queries;
  const size_t total = static_cast<size_t>(R) * kmax;
  rows.map_neighbors.resize(total);
  rows.input_rank_of_map_nb.resize(total);
  rows.map_rank_of_input_nb.resize(total);
  const int dx = static_cast<int>(X.cols), dy = static_cast<int>(Y.cols);
  const std::vector<double> Xt = distance_matrix ? std::vector<double>() : by_dimension<double>(X),
                            Yt = by_dimension<double>(Y);
  // The input distances of kBlock queries at a time (fewer where N is large: kBlock N doubles a thread).
  constexpr int kBlock = 8;
  const int block = distance_matrix ? 1
                                    : static_cast<int>(std::clamp<index_t>((index_t{1} << 22) / std::max<index_t>(N, 1),
                                                                           1, kBlock));
  const auto point = [&](index_t row) { return queries.empty() ? row : queries[static_cast<size_t>(row)]; };
#pragma omp parallel num_threads(threads > 0 ? threads : omp_get_max_threads())
  {
    std::vector<double> ins(static_cast<size_t>(N) * static_cast<size_t>(block)), dout(static_cast<size_t>(N)),
        hd_in(kmax), hd_out(kmax), kd(kmax);
    std::vector<double> query(input == RankInput::inner_product ? static_cast<size_t>(dx * block) : 0);
    std::vector<std::int64_t> v(kmax), ki(kmax), before(kmax);
    std::vector<int> pos_in(static_cast<size_t>(N), -1), pos_out(static_cast<size_t>(N), -1), tag(kmax);
#pragma omp for schedule(dynamic, 2)
    for (index_t first = 0; first < R; first += block) {
      const int count = static_cast<int>(std::min<index_t>(block, R - first));
      const double* xq[kBlock];
      for (int q = 0; q < count && !distance_matrix; ++q) {
        const index_t i = point(first + q);
        if (input == RankInput::inner_product) {  // the query [x_i, 0] among the references
          double* at = query.data() + static_cast<size_t>(q) * static_cast<size_t>(dx);
          std::copy(X.row(i), X.row(i) + dx, at);
          at[dx - 1] = 0.0;
          xq[q] = at;
        } else {
          xq[q] = X.row(i);
        }
      }
      if (!distance_matrix) add_squared_differences(Xt.data(), N, dx, xq, count, ins.data());
      for (int q = 0; q < count; ++q) {
        const index_t row = first + q, i = point(row);
        double* din = ins.data() + static_cast<size_t>(q) * static_cast<size_t>(N);
        std::int64_t* n = rows.map_neighbors.data() + row * kmax;
        int size_in = 0, size_out = 0;
        if (distance_matrix) {
          const double* x = X.row(i);
          for (index_t l = 0; l < N; ++l) din[l] = x[l] * x[l];
        }
        const double* yi = Y.row(i);
        add_squared_differences(Yt.data(), N, dy, &yi, 1, dout.data());
        for (index_t l = 0; l < N; ++l) {
          if (l == i) continue;
          math::heap_offer(din[l], static_cast<std::int64_t>(l), hd_in.data(), v.data(), size_in, kmax);
          math::heap_offer(dout[l], static_cast<std::int64_t>(l), hd_out.data(), n, size_out, kmax);
        }
        math::heap_sort_ascending(hd_in.data(), v.data(), kmax);
        math::heap_sort_ascending(hd_out.data(), n, kmax);
        for (int p = 0; p < kmax; ++p) {
          pos_in[static_cast<size_t>(v[p])] = p;
          pos_out[static_cast<size_t>(n[p])] = p;
        }
        cross_ranks(n, kmax, pos_in, din, N, i, rows.input_rank_of_map_nb.data() + row * kmax, kd, ki, tag, before);
        cross_ranks(v.data(), kmax, pos_out, dout.data(), N, i, rows.map_rank_of_input_nb.data() + row * kmax, kd, ki,
                    tag, before);
        for (int p = 0; p < kmax; ++p) {
          pos_in[static_cast<size_t>(v[p])] = -1;
          pos_out[static_cast<size_t>(n[p])] = -1;
        }
      }
    }
  }
  return rows;
}

}  // namespace orrery::cpu
