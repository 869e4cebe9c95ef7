// One row of the exact neighbour search, shared by exact_knn, the approximate search's fallback and
// its recall estimate, so all three rank by the same double distances in the same order.
#pragma once
#include <string>

#include "orrery/error.hpp"
#include "orrery/knn.hpp"
#include "orrery/math/distance.hpp"
#include "orrery/math/select.hpp"
#include "orrery/types.hpp"

namespace orrery::cpu {

// A graph of `rows` lists of k neighbours, to be filled.
inline KnnGraph sized_graph(index_t rows, int k) {
  KnnGraph g;
  g.num_points = rows;
  g.k = k;
  g.index.resize(static_cast<size_t>(rows * k));
  g.dist2.resize(static_cast<size_t>(rows * k));
  return g;
}

// Every search's precondition, as an input error naming k and N.
inline void check_knn_k(index_t N, int k) {
  if (k < 1 || k > N - 1)
    input_error("k: expected 1 <= k <= N - 1 = " + std::to_string(N - 1) + " neighbours, found " + std::to_string(k));
}

// The k nearest rows of R to the point q (R.cols values), row `skip` excluded (-1: none), sorted by
// (squared distance, index) into hd / hi (k entries each). O(rows d).
inline void nearest_rows(const MatrixD& R, const double* q, index_t skip, int k, double* hd, index_t* hi) {
  const int d = static_cast<int>(R.cols);
  int size = 0;
  for (index_t l = 0; l < R.rows; ++l)
    if (l != skip) math::heap_offer(math::squared_distance(q, R.row(l), d), l, hd, hi, size, k);
  math::heap_sort_ascending(hd, hi, k);
}

// The k nearest of row i among all rows of X, self excluded.
inline void exact_knn_row(const MatrixD& X, index_t i, int k, double* hd, index_t* hi) {
  nearest_rows(X, X.row(i), i, k, hd, hi);
}

}  // namespace orrery::cpu
