// Exact kNN by rows: each query computes its distances to every point and keeps the k best under
// the (distance, index) order. O(N^2 d) time, O(N) scratch per thread;
// rows are independent, so any thread count gives the same graph.
#include <omp.h>

#include <algorithm>
#include <string>

#include "cpu/nearest.hpp"
#include "orrery/error.hpp"
#include "orrery/knn.hpp"
#include "orrery/math/distance.hpp"

namespace orrery {

KnnGraph exact_knn(const MatrixD& X, int k, int threads) {
  const index_t N = X.rows;
  if (k < 1 || k > N - 1)
    input_error("k: expected 1 <= k <= N - 1 = " + std::to_string(N - 1) + " neighbours, found " + std::to_string(k));
  KnnGraph g;
  g.num_points = N;
  g.k = k;
  g.index.resize(static_cast<size_t>(N * k));
  g.dist2.resize(static_cast<size_t>(N * k));
  const int d = static_cast<int>(X.cols);
#pragma omp parallel num_threads(threads > 0 ? threads : omp_get_max_threads())
  {
    std::vector<double> dist(static_cast<size_t>(N));
    std::vector<index_t> heap, nearest;
#pragma omp for schedule(dynamic, 16)
    for (index_t i = 0; i < N; ++i) {
      for (index_t l = 0; l < N; ++l) dist[l] = math::squared_distance(X.row(i), X.row(l), d);
      select_nearest(dist, i, k, heap, nearest);
      for (int j = 0; j < k; ++j) {
        g.index[static_cast<size_t>(i * k + j)] = nearest[j];
        g.dist2[static_cast<size_t>(i * k + j)] = dist[nearest[j]];
      }
    }
  }
  return g;
}

}  // namespace orrery
