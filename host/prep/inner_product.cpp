#include "orrery/inner_product.hpp"

#include <algorithm>
#include <cmath>

#include "orrery/error.hpp"

namespace orrery {
namespace {

double squared_norm(const double* x, index_t d) {
  double s = 0;
  for (index_t c = 0; c < d; ++c) s += x[c] * x[c];
  return s;
}

// X with one more column, filled by last(row).
template <class Last>
MatrixD with_last_column(const MatrixD& X, const Last& last) {
  MatrixD A(X.rows, X.cols + 1);
  for (index_t i = 0; i < X.rows; ++i) {
    std::copy(X.row(i), X.row(i) + X.cols, A.row(i));
    A(i, X.cols) = last(i);
  }
  return A;
}

}  // namespace

MatrixD inner_product_references(const MatrixD& X, const std::string& key) {
  double top = 0;  // M^2, the largest squared norm: each row's own square is at most it, exactly
  for (index_t i = 0; i < X.rows; ++i) top = std::max(top, squared_norm(X.row(i), X.cols));
  if (!std::isfinite(top)) input_error(key + ": inner_product: the vectors hold a value that is not a finite number");
  if (X.rows > 0 && !(top > 0))
    input_error(key + ": inner_product: every row of the vectors is zero, so every inner product is 0 and no "
                "point is nearer than another");
  return with_last_column(X, [&](index_t i) { return std::sqrt(top - squared_norm(X.row(i), X.cols)); });
}

MatrixD inner_product_queries(const MatrixD& X) {
  return with_last_column(X, [](index_t) { return 0.0; });
}

}  // namespace orrery
