// Test inputs given as distances: the Euclidean distance matrix of a set of points, computed the
// plain way (every pair, coordinates summed in order) for comparison with the vector paths.
#pragma once
#include <cmath>

#include "orrery/types.hpp"

namespace orrery::test {

inline MatrixD euclidean_distances(const MatrixD& X) {
  MatrixD D(X.rows, X.rows);
  for (index_t i = 0; i < X.rows; ++i)
    for (index_t j = 0; j < X.rows; ++j) {
      double s = 0;
      for (index_t c = 0; c < X.cols; ++c) s += (X(i, c) - X(j, c)) * (X(i, c) - X(j, c));
      D(i, j) = std::sqrt(s);
    }
  return D;
}

}  // namespace orrery::test
