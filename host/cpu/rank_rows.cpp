// The quality measures' rank rows on the CPU (orrery/quality.hpp): per point its kmax nearest in
// each space by a bounded heap over all points (math/select.hpp), then the ranks that link the two
// spaces, read from the other space's kept neighbors or counted. OpenMP over query points; each
// row is independent, so any thread count gives the same integers. O(rows N (d + D)) time, O(N)
// scratch per thread, and a transposed copy of X and Y (N (d + D) values).
#include <omp.h>

#include <algorithm>
#include <vector>

#include "cpu/engines.hpp"
#include "orrery/math/select.hpp"
#include "orrery/quality.hpp"
#include "prep/clones.hpp"

namespace orrery::cpu {
namespace {

// Ranks in `dist` (one row, self excluded) of the points `list` (the other space's neighbors):
// read from `pos` when the point is among this space's own kept neighbors, counted otherwise.
void cross_ranks(const std::int64_t* list, int kmax, const std::vector<int>& pos, const std::vector<double>& dist,
                 index_t self, std::int64_t* ranks, std::vector<double>& kd, std::vector<std::int64_t>& ki,
                 std::vector<int>& tag, std::vector<std::int64_t>& diff) {
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
  math::sort_keys(kd.data(), ki.data(), tag.data(), m);
  std::fill(diff.begin(), diff.begin() + m + 1, 0);
  const double far = kd[m - 1];
  for (index_t l = 0; l < static_cast<index_t>(dist.size()); ++l)
    if (l != self && dist[l] <= far) ++diff[math::first_key_after(dist[l], static_cast<std::int64_t>(l), kd.data(), ki.data(), m)];
  std::int64_t run = 0;
  for (int q = 0; q < m; ++q) ranks[tag[q]] = 1 + (run += diff[q]);
}

// Row i's squared distances to every point in both spaces, in loops of their own (the heaps'
// branches kept out), vectorised across points: Xt (and Yt) hold the coordinates transposed,
// dimension by dimension, so each dimension adds its squared differences to the whole row in one
// SIMD pass; compiled for AVX2/AVX-512 where the processor has them (prep/clones.hpp).
ORRERY_CLONES void add_squared_differences(const double* xt, index_t N, int d, const double* xi, double* out) {
  for (index_t l = 0; l < N; ++l) out[l] = 0.0;
  for (int c = 0; c < d; ++c) {
    const double* col = xt + static_cast<size_t>(c) * static_cast<size_t>(N);
    const double v = xi[c];
#pragma omp simd
    for (index_t l = 0; l < N; ++l) {
      const double t = col[l] - v;
      out[l] += t * t;
    }
  }
}

std::vector<double> transposed(const MatrixD& M) {
  std::vector<double> t(M.data.size());
  for (index_t r = 0; r < M.rows; ++r)
    for (index_t c = 0; c < M.cols; ++c) t[static_cast<size_t>(c * M.rows + r)] = M(r, c);
  return t;
}

}  // namespace

RankRows rank_rows(const MatrixD& X, const MatrixD& Y, int kmax, bool distance_matrix,
                  const std::vector<index_t>& queries, int threads) {
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
  const std::vector<double> Xt = distance_matrix ? std::vector<double>() : transposed(X), Yt = transposed(Y);
#pragma omp parallel num_threads(threads > 0 ? threads : omp_get_max_threads())
  {
    std::vector<double> din(static_cast<size_t>(N)), dout(static_cast<size_t>(N)), hd_in(kmax), hd_out(kmax), kd(kmax);
    std::vector<std::int64_t> v(kmax), ki(kmax), diff(kmax + 1);
    std::vector<int> pos_in(static_cast<size_t>(N), -1), pos_out(static_cast<size_t>(N), -1), tag(kmax);
#pragma omp for schedule(dynamic, 16)
    for (index_t row = 0; row < R; ++row) {
      const index_t i = queries.empty() ? row : queries[static_cast<size_t>(row)];
      std::int64_t* n = rows.map_neighbors.data() + row * kmax;
      int size_in = 0, size_out = 0;
      if (distance_matrix) {
        const double* x = X.row(i);
        for (index_t l = 0; l < N; ++l) din[l] = x[l] * x[l];
      } else {
        add_squared_differences(Xt.data(), N, dx, X.row(i), din.data());
      }
      add_squared_differences(Yt.data(), N, dy, Y.row(i), dout.data());
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
      cross_ranks(n, kmax, pos_in, din, i, rows.input_rank_of_map_nb.data() + row * kmax, kd, ki, tag, diff);
      cross_ranks(v.data(), kmax, pos_out, dout, i, rows.map_rank_of_input_nb.data() + row * kmax, kd, ki, tag, diff);
      for (int p = 0; p < kmax; ++p) {
        pos_in[static_cast<size_t>(v[p])] = -1;
        pos_out[static_cast<size_t>(n[p])] = -1;
      }
    }
  }
  return rows;
}

}  // namespace orrery::cpu
