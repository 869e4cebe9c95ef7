// Exact k nearest neighbours (Euclidean), shared by the neighbour-embedding methods (sparse
// affinities) and the quality measures (ranks in input and output space).
//
// Conventions, relied on by every caller and by the tests:
// - A point is never its own neighbour (self is excluded by index, so duplicates of a point are
//   neighbours at distance 0).
// - Neighbours are sorted by increasing squared distance; equal distances are ordered by the lower
//   index first ("ties broken by index").
// - Squared distances are computed as sum_d (x_d - y_d)^2 in double, in a fixed order, so the result
//   is identical for any thread count and equals a brute-force loop bit for bit.
#pragma once
#include <vector>

#include "orrery/types.hpp"

namespace orrery {

struct KnnGraph {
  index_t num_points = 0;
  int k = 0;
  std::vector<index_t> index;  // num_points x k, row-major
  std::vector<double> dist2;   // num_points x k, squared Euclidean distances
  const index_t* neighbours(index_t i) const { return index.data() + i * k; }
  const double* distances2(index_t i) const { return dist2.data() + i * k; }
};

// X: N x d points. Requires 1 <= k <= N - 1 (an input error otherwise, naming k and N).
// threads <= 0: the OpenMP default.
KnnGraph exact_knn(const MatrixD& X, int k, int threads = 0);

// The k nearest of every row of a symmetric N x N distance matrix (dist2 holds squared distances),
// in the same order and with the same ties as exact_knn.
KnnGraph knn_from_distance_matrix(const MatrixD& D, int k, int threads = 0);

// Backend::knn runs this search on its device: on CUDA (kernels/knn.cu) one thread per query over
// the same double distances and the same bounded heap, so the graph equals exact_knn's wherever the
// distances agree to the last bit (always for integer-valued inputs; otherwise up to order among
// near-ties).

}  // namespace orrery
