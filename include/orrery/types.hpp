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

}  // namespace orrery
