// Learning-metric distances on the CPU (orrery/snerv.hpp): the projections u_k(x) = m_k . x of every
// point once (O(N K d)), then every pair's straight-path integral of math/fisher.hpp in double,
// rows of pairs spread over the threads (each pair computed once, mirrored after). The candidate
// path's listed pairs run the same integral from each pair's lower-index end, so a listed pair's
// distance is the matrix's entry bit for bit, and their re-rank uses the neighbor searches' heap.
#include <omp.h>

#include <algorithm>
#include <string>
#include <vector>

#include "orrery/error.hpp"
#include "orrery/math/distance.hpp"
#include "orrery/math/fisher.hpp"
#include "orrery/math/select.hpp"
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

std::vector<double> learning_metric_pairs(const ClassMixture& m, const MatrixD& X, const KnnGraph& g, int pieces,
                                          int threads) {
  if (pieces < 1) input_error("params.pieces: expected >= 1, found " + std::to_string(pieces));
  if (g.num_points != X.rows || g.index.size() != static_cast<size_t>(g.num_points) * static_cast<size_t>(g.k))
    internal_error("learning_metric_pairs: the graph's rows are not X's");
  for (index_t j : g.index)  // (checked here: nothing may throw inside the parallel region)
    if (j < 0 || j >= X.rows) internal_error("learning_metric_pairs: a neighbor index outside the points");
  const MetricProjections proj = metric_projections(m, X, threads);
  const auto K = static_cast<int>(m.centres.rows);
  const index_t N = X.rows;
  std::vector<double> out(g.index.size());
#pragma omp parallel num_threads(threads > 0 ? threads : omp_get_max_threads())
  {
    std::vector<double> scratch(static_cast<size_t>(3 * K));
#pragma omp for schedule(dynamic, 16)
    for (index_t i = 0; i < N; ++i)
      for (int q = 0; q < g.k; ++q) {
        const index_t j = g.neighbors(i)[q];
        const index_t a = std::min(i, j), b = std::max(i, j);
        const double reg = m.euclidean * proj.w * math::squared_distance(X.row(a), X.row(b), static_cast<int>(X.cols));
        out[static_cast<size_t>(i * g.k + q)] =
            a == b ? 0.0
                   : math::fisher_path_distance(proj.U.row(a), proj.U.row(b), proj.h.data(), m.beta.data.data(), proj.w,
                                                K, m.num_classes, pieces, math::kFisherFloor, reg, scratch.data());
      }
  }
  return out;
}

KnnGraph rerank_candidates(const KnnGraph& c, const std::vector<double>& metric, int k, int threads) {
  if (k < 1 || k > c.k)
    internal_error("rerank_candidates: keeps " + std::to_string(k) + " of " + std::to_string(c.k) + " candidates");
  if (metric.size() != c.index.size()) internal_error("rerank_candidates: distances not in the graph's layout");
  KnnGraph g = sized_graph(c.num_points, k);
#pragma omp parallel for schedule(static) num_threads(threads > 0 ? threads : omp_get_max_threads())
  for (index_t i = 0; i < c.num_points; ++i) {
    double* hd = g.dist2.data() + i * k;
    index_t* hi = g.index.data() + i * k;
    int size = 0;
    for (int q = 0; q < c.k; ++q) {
      const double d = metric[static_cast<size_t>(i * c.k + q)];
      math::heap_offer(d * d, c.neighbors(i)[q], hd, hi, size, k);
    }
    math::heap_sort_ascending(hd, hi, k);
  }
  return g;
}

}  // namespace orrery
