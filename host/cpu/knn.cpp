// Exact kNN by rows: each query computes its distances to every point and keeps the k best under
// the (distance, index) order. O(N^2 d) time, O(N) scratch per thread;
// rows are independent, so any thread count gives the same graph.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <string>

#include "orrery/backend.hpp"
#include "orrery/error.hpp"
#include "orrery/knn.hpp"
#include "orrery/math/distance.hpp"
#include "orrery/math/select.hpp"
#include "prep/knn_row.hpp"

namespace orrery {

KnnGraph exact_knn(const MatrixD& X, int k, int threads, const KnnProgress& progress) {
  const index_t N = X.rows;
  check_knn_k(N, k);
  KnnGraph g = sized_graph(N, k);
  std::atomic<index_t> done{0};
#pragma omp parallel num_threads(threads > 0 ? threads : omp_get_max_threads())
  {
#pragma omp for schedule(dynamic, 16)
    for (index_t i = 0; i < N; ++i) {
      // reports from thread 0 only, so the callback needs no lock
      const index_t n = ++done;
      if (progress && omp_get_thread_num() == 0 && n % 64 == 0) progress(n, N);
      prep::exact_knn_row(X, i, k, g.dist2.data() + i * k, g.index.data() + i * k);
    }
  }
  if (progress) progress(N, N);
  return g;
}

namespace {

// Query rows [first, first + M) (all of Q: first 0, M -1), each one's k nearest rows of R; `paired`:
// query i skips reference row i.
KnnGraph nearest_to(const MatrixD& R, const MatrixD& Q, int k, bool paired, int threads, const KnnProgress& progress,
                    index_t first = 0, index_t M = -1) {
  if (M < 0) M = Q.rows;
  KnnGraph g = sized_graph(M, k);
  std::atomic<index_t> done{0};
#pragma omp parallel for schedule(dynamic, 16) num_threads(threads > 0 ? threads : omp_get_max_threads())
  for (index_t i = 0; i < M; ++i) {
    const index_t n = ++done;  // reported from thread 0 only
    if (progress && omp_get_thread_num() == 0 && n % 64 == 0) progress(n, M);
    prep::nearest_rows(R, Q.row(first + i), paired ? first + i : -1, k, g.dist2.data() + i * k, g.index.data() + i * k);
  }
  if (progress) progress(M, M);
  return g;
}

}  // namespace

KnnGraph exact_knn_to(const MatrixD& R, const MatrixD& Q, int k, int threads, const KnnProgress& progress) {
  if (k < 1 || k > R.rows)
    input_error("k: expected 1 <= k <= " + std::to_string(R.rows) + " reference points, found " + std::to_string(k));
  if (Q.cols != R.cols) internal_error("exact_knn_to: queries and reference differ in dimension");
  return nearest_to(R, Q, k, false, threads, progress);
}

KnnGraph exact_knn_paired(const MatrixD& R, const MatrixD& Q, int k, int threads, const KnnProgress& progress) {
  check_knn_k(R.rows, k);
  if (Q.rows != R.rows || Q.cols != R.cols) internal_error("exact_knn_paired: queries and reference differ in shape");
  return nearest_to(R, Q, k, true, threads, progress);
}

KnnGraph exact_knn_paired_rows(const MatrixD& R, const MatrixD& Q, int k, index_t first, index_t count, int threads,
                               const KnnProgress& progress) {
  check_knn_k(R.rows, k);
  if (Q.rows != R.rows || Q.cols != R.cols) internal_error("exact_knn_paired_rows: queries and reference differ in shape");
  if (first < 0 || count < 0 || first + count > Q.rows) internal_error("exact_knn_paired_rows: rows out of range");
  return nearest_to(R, Q, k, true, threads, progress, first, count);
}

KnnGraph Backend::knn_reporting(const MatrixD& X, int k, const KnnProgress&) const { return knn(X, k); }

KnnGraph knn_from_distance_matrix(const MatrixD& D, int k, int threads) {
  const index_t N = D.rows;
  if (D.cols != N) internal_error("knn_from_distance_matrix: D is not square");
  check_knn_k(N, k);
  KnnGraph g = sized_graph(N, k);
#pragma omp parallel for schedule(dynamic, 16) num_threads(threads > 0 ? threads : omp_get_max_threads())
  for (index_t i = 0; i < N; ++i) {
    double* hd = g.dist2.data() + i * k;
    index_t* hi = g.index.data() + i * k;
    int size = 0;
    for (index_t l = 0; l < N; ++l)
      if (l != i) math::heap_offer(D(i, l) * D(i, l), l, hd, hi, size, k);
    math::heap_sort_ascending(hd, hi, k);
  }
  return g;
}

}  // namespace orrery
