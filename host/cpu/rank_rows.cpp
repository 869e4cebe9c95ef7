// The quality measures' rank rows on the CPU (orrery/quality.hpp): per point its kmax nearest in
// each space by a bounded heap over all points (math/select.hpp), then the ranks that link the two
// spaces, read from the other space's kept neighbors or counted. OpenMP over query points; each
// row is independent, so any thread count gives the same integers. O(rows N (d + D)) time, O(N)
// scratch per thread.
#include <omp.h>

#include <algorithm>
#include <vector>

#include "cpu/engines.hpp"
#include "orrery/math/distance.hpp"
#include "orrery/math/select.hpp"
#include "orrery/quality.hpp"

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
      for (index_t l = 0; l < N; ++l) {
        din[l] = distance_matrix ? X(i, l) * X(i, l) : math::squared_distance(X.row(i), X.row(l), dx);
        dout[l] = math::squared_distance(Y.row(i), Y.row(l), dy);
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
