// Learning-metric distances on the CPU (orrery/snerv.hpp): the projections u_k(x) = m_k . x of every
// point once (O(N K d)), then every pair's straight-path integral of math/fisher.hpp in double,
// rows of pairs spread over the threads (each pair computed once, mirrored after).
#include <omp.h>

#include <string>
#include <vector>

#include "orrery/error.hpp"
#include "orrery/math/distance.hpp"
#include "orrery/math/fisher.hpp"
#include "orrery/snerv.hpp"

namespace orrery {

MetricProjections metric_projections(const ClassMixture& m, const MatrixD& X, int threads) {
  const index_t K = m.centres.rows;
  if (X.cols != m.centres.cols) internal_error("learning_metric_distances: dimension mismatch");
  MetricProjections p;
  p.w = 1.0 / (m.width * m.width);
  p.U = MatrixD(X.rows, K);
  p.h.assign(static_cast<size_t>(K), 0.0);
  for (index_t k = 0; k < K; ++k)
    for (index_t j = 0; j < X.cols; ++j) p.h[static_cast<size_t>(k)] += 0.5 * m.centres(k, j) * m.centres(k, j);
#pragma omp parallel for schedule(static) num_threads(threads > 0 ? threads : omp_get_max_threads())
  for (index_t n = 0; n < X.rows; ++n)
    for (index_t k = 0; k < K; ++k) {
      double s = 0.0;
      for (index_t j = 0; j < X.cols; ++j) s += m.centres(k, j) * X(n, j);
      p.U(n, k) = s;
    }
  return p;
}

MatrixD learning_metric_distances(const ClassMixture& m, const MatrixD& X, int pieces, int threads) {
  if (pieces < 1) input_error("params.pieces: expected >= 1, found " + std::to_string(pieces));
  const MetricProjections proj = metric_projections(m, X, threads);
  const MatrixD& U = proj.U;
  const index_t N = X.rows;
  const auto K = static_cast<int>(m.centres.rows);
  const double w = proj.w;
  MatrixD D(N, N, 0.0);
#pragma omp parallel num_threads(threads > 0 ? threads : omp_get_max_threads())
  {
    std::vector<double> scratch(static_cast<size_t>(3 * K));
#pragma omp for schedule(dynamic, 16)
    for (index_t i = 0; i < N; ++i)
      for (index_t j = i + 1; j < N; ++j) {
        const double reg = m.euclidean * w * math::squared_distance(X.row(i), X.row(j), static_cast<int>(X.cols));
        D(i, j) = math::fisher_path_distance(U.row(i), U.row(j), proj.h.data(), m.beta.data.data(), w, K, m.num_classes,
                                             pieces, math::kFisherFloor, reg, scratch.data());
      }
  }
  for (index_t i = 0; i < N; ++i)
    for (index_t j = 0; j < i; ++j) D(i, j) = D(j, i);
  return D;
}

}  // namespace orrery
