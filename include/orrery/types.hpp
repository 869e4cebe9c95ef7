// Owning dense row-major matrix. Host-side only; backends keep their own buffers.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace orrery {

using index_t = std::int64_t;

template <class T>
struct Matrix {
  index_t rows = 0;
  index_t cols = 0;
  std::vector<T> data;

  Matrix() = default;
  Matrix(index_t r, index_t c, T fill = T()) : rows(r), cols(c), data(static_cast<size_t>(r * c), fill) {}

  T& operator()(index_t i, index_t j) { return data[static_cast<size_t>(i * cols + j)]; }
  const T& operator()(index_t i, index_t j) const { return data[static_cast<size_t>(i * cols + j)]; }
  T* row(index_t i) { return data.data() + i * cols; }
  const T* row(index_t i) const { return data.data() + i * cols; }
  bool empty() const { return data.empty(); }
};

using MatrixD = Matrix<double>;
using MatrixF = Matrix<float>;

// A read-only row-major view of rows x cols values owned elsewhere (a Matrix, or an array its caller
// keeps alive): taken by functions that only read a matrix, so that a caller's array (a Python
// caller's numpy array) is read in place rather than copied.
template <class T>
struct MatrixView {
  const T* values = nullptr;
  index_t rows = 0;
  index_t cols = 0;

  MatrixView() = default;
  MatrixView(const T* v, index_t r, index_t c) : values(v), rows(r), cols(c) {}
  MatrixView(const Matrix<T>& m) : values(m.data.data()), rows(m.rows), cols(m.cols) {}  // NOLINT: implicit

  const T& operator()(index_t i, index_t j) const { return values[i * cols + j]; }
  const T* row(index_t i) const { return values + i * cols; }
};

using MatrixViewD = MatrixView<double>;

}  // namespace orrery
