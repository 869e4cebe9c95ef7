// One row of the exact neighbour search, shared by exact_knn, the approximate search's fallback and
// its recall estimate, so all three rank by the same double distances in the same order.
#pragma once
#include <string>

#include "orrery/error.hpp"
#include "orrery/math/distance.hpp"
#include "orrery/math/select.hpp"
#include "orrery/types.hpp"

namespace orrery::cpu {

// Every search's precondition, as an input error naming k and N.
inline void check_knn_k(index_t N, int k) {
  if (k < 1 || k > N - 1)
    input_error("k: expected 1 <= k <= N - 1 = " + std::to_string(N - 1) + " neighbours, found " + std::to_string(k));
}

// The k nearest of row i among all rows of X, self excluded, sorted by (squared distance, index)
// into hd / hi (k entries each). O(N d).
inline void exact_knn_row(const MatrixD& X, index_t i, int k, double* hd, index_t* hi) {
  const int d = static_cast<int>(X.cols);
  int size = 0;
  for (index_t l = 0; l < X.rows; ++l)
    if (l != i) math::heap_offer(math::squared_distance(X.row(i), X.row(l), d), l, hd, hi, size, k);
  math::heap_sort_ascending(hd, hi, k);
}

}  // namespace orrery::cpu
