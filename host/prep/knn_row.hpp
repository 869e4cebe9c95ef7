// One row of the exact neighbor search, shared by exact_knn, the approximate search's fallback and
// its recall estimate, so all three rank by the same double distances in the same order.
#pragma once

#include "orrery/knn.hpp"
#include "orrery/math/distance.hpp"
#include "orrery/math/select.hpp"
#include "orrery/types.hpp"

namespace orrery::prep {

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

}  // namespace orrery::prep
