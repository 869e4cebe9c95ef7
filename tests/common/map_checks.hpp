// Where placed points land in a fixed map: the placement tests count the new points whose nearest
// point of the map is of their class.
#pragma once
#include "orrery/types.hpp"

namespace orrery::test {

// Squared Euclidean distance between row i of A and row j of B.
inline double dist2(const MatrixD& A, index_t i, const MatrixD& B, index_t j) {
  double s = 0;
  for (index_t a = 0; a < A.cols; ++a) s += (A(i, a) - B(j, a)) * (A(i, a) - B(j, a));
  return s;
}

// Rows of Z whose nearest row of Y (the first of equals) is of their class, a row's class being its
// index modulo `classes` in both.
inline int nearest_of_class(const MatrixD& Z, const MatrixD& Y, index_t classes) {
  int right = 0;
  for (index_t i = 0; i < Z.rows; ++i) {
    index_t best = 0;
    double bd = 1e300;
    for (index_t j = 0; j < Y.rows; ++j)
      if (const double d = dist2(Z, i, Y, j); d < bd) bd = d, best = j;
    right += best % classes == i % classes;
  }
  return right;
}

}  // namespace orrery::test
