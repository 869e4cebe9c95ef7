// Out-of-sample placement of new points into a frozen HSSNE map (orrery/hssne.hpp, place_points).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>

#include "orrery/affinity.hpp"
#include "orrery/error.hpp"
#include "orrery/hssne.hpp"
#include "orrery/interp.hpp"
#include "orrery/knn.hpp"
#include "orrery/math/neighbor.hpp"

namespace orrery {
namespace {

// The frozen grid reaches this far (map units) beyond the reference map on every side: a new point
// starts inside the reference's extent, and one that moves further out is summed exactly.
constexpr double kPlacementMargin = 4.0;
// Step length growth after a step that lowered the cost, and its cut after one that did not.
constexpr double kGrow = 1.2, kCut = 0.5;
// Steps a point takes, about (60-190 for Fashion-MNIST images; bench hssne-place): auto repulsion's
// estimate of the exact sums' cost.
constexpr double kTypicalSteps = 100;

// The value at which the cumulative weight of the sorted values first reaches half the total.
double weighted_median(std::vector<std::pair<double, double>>& vw) {
  std::sort(vw.begin(), vw.end());
  double total = 0;
  for (const auto& v : vw) total += v.second;
  double run = 0;
  for (const auto& v : vw) {
    run += v.second;
    if (run >= 0.5 * total) return v.first;
  }
  return vw.back().first;
}

// Exact sums of one point y over every reference point.
void exact_point_sums(const double* y, const MatrixD& R, double alpha, double& h, double& hs, double* hsy) {
  const int D = static_cast<int>(R.cols);
  h = hs = 0;
  for (int d = 0; d < D; ++d) hsy[d] = 0;
  for (index_t j = 0; j < R.rows; ++j) {
    double tau = 0;
    for (int d = 0; d < D; ++d) tau += (y[d] - R(j, d)) * (y[d] - R(j, d));
    double hj, sj;
    math::heavy_tail_pair(tau, alpha, hj, sj);
    h += hj;
    hs += hj * sj;
    for (int d = 0; d < D; ++d) hsy[d] += hj * sj * R(j, d);
  }
}

}  // namespace

double placement_cost(const double* y, int D, const index_t* nb, const double* p, int k, const MatrixD& R,
                      double alpha, double h, double hs, const double* hsy, double* grad) {
  double cost = std::log(h);
  for (int d = 0; d < D; ++d) grad[d] = -2.0 * (y[d] * hs - hsy[d]) / h;
  for (int l = 0; l < k; ++l) {
    if (!(p[l] > 0)) continue;
    double tau = 0;
    for (int d = 0; d < D; ++d) tau += (y[d] - R(nb[l], d)) * (y[d] - R(nb[l], d));
    double hj, sj;
    math::heavy_tail_pair(tau, alpha, hj, sj);
    cost += p[l] * (std::log(p[l]) - math::heavy_tail_log(tau, alpha));
    for (int d = 0; d < D; ++d) grad[d] += 2.0 * p[l] * sj * (y[d] - R(nb[l], d));
  }
  return cost;
}

PlacementResult place_points(const KnnGraph& g, double perplexity, const MatrixD& R, double alpha,
                             const HssneRepulsion& repulsion, const PlacementParams& params, int threads,
                             const std::function<void(int, index_t)>& progress) {
  const index_t M = g.num_points;
  const int k = g.k, D = static_cast<int>(R.cols);
  if (D != 2 && D != 3) internal_error("place_points: the reference map must be 2-D or 3-D");
  const int nt = threads > 0 ? threads : omp_get_max_threads();
  const ConditionalRows rows = conditional_rows(g, perplexity, nt);
  PlacementResult res;
  res.coords = MatrixD(M, D);
  res.cost.assign(static_cast<size_t>(M), 0.0);
  res.steps.assign(static_cast<size_t>(M), 0);
  MatrixD& Y = res.coords;
  std::vector<double> grad(static_cast<size_t>(M * D)), eta(static_cast<size_t>(M));
  // The start: per axis the p-weighted median of the neighbours' places; the first step length
  // 1 / (2 sum_j p_j S_ij), the attraction's curvature there.
#pragma omp parallel num_threads(nt)
  {
    std::vector<std::pair<double, double>> vw(static_cast<size_t>(k));
#pragma omp for schedule(static)
    for (index_t i = 0; i < M; ++i) {
      const index_t* nb = g.neighbours(i);
      const double* p = rows.p.data() + i * k;
      for (int d = 0; d < D; ++d) {
        for (int l = 0; l < k; ++l) vw[static_cast<size_t>(l)] = {R(nb[l], d), p[l]};
        Y(i, d) = weighted_median(vw);
      }
      double a = 0;
      for (int l = 0; l < k; ++l) {
        double tau = 0;
        for (int d = 0; d < D; ++d) tau += (Y(i, d) - R(nb[l], d)) * (Y(i, d) - R(nb[l], d));
        double hj, sj;
        math::heavy_tail_pair(tau, alpha, hj, sj);
        a += p[l] * sj;
      }
      eta[static_cast<size_t>(i)] = 1.0 / (2.0 * std::max(a, 1e-12));
    }
  }
  std::unique_ptr<RepulsionGrid> grid;
  if (repulsion.interpolated) {
    grid = std::make_unique<RepulsionGrid>(D, alpha, repulsion.grid, nt);
    // auto: the grid only where it costs less than the exact sums would over the steps points
    // typically take (a few new points, or a wide 3-D map, are summed exactly)
    const double cells = grid->planned_cells(R, kPlacementMargin);
    const double grid_cost = (2.0 * D + 3) * cells * std::log2(std::max(cells, 2.0));
    const double exact_cost = kTypicalSteps * static_cast<double>(M) * static_cast<double>(R.rows);
    if (repulsion.exact_when_cheaper && grid_cost > exact_cost) grid.reset();
    else grid->freeze(R, kPlacementMargin);
  }
  std::vector<unsigned char> summed_exactly(static_cast<size_t>(M), 0);
  // The sums at T (one row per listed point): from the grid where it reaches, else exactly.
  RepulsionSums sums;
  std::vector<unsigned char> inside;
  auto evaluate = [&](const MatrixD& T, const std::vector<index_t>& which) {
    const index_t A = T.rows;
    if (grid) grid->sums_at(T, sums, inside);
    else {
      sums.h.assign(static_cast<size_t>(A), 0.0);
      sums.hs.assign(static_cast<size_t>(A), 0.0);
      sums.hsy = MatrixD(A, D, 0.0);
      inside.assign(static_cast<size_t>(A), 0);
    }
#pragma omp parallel for schedule(dynamic, 16) num_threads(nt)
    for (index_t a = 0; a < A; ++a) {
      if (inside[static_cast<size_t>(a)]) continue;
      exact_point_sums(T.row(a), R, alpha, sums.h[static_cast<size_t>(a)], sums.hs[static_cast<size_t>(a)],
                       sums.hsy.row(a));
      if (grid) summed_exactly[static_cast<size_t>(which[static_cast<size_t>(a)])] = 1;
    }
  };
  std::vector<index_t> active(static_cast<size_t>(M));
  std::iota(active.begin(), active.end(), index_t(0));
  evaluate(Y, active);
#pragma omp parallel for schedule(static) num_threads(nt)
  for (index_t i = 0; i < M; ++i)
    res.cost[static_cast<size_t>(i)] =
        placement_cost(Y.row(i), D, g.neighbours(i), rows.p.data() + i * k, k, R, alpha, sums.h[static_cast<size_t>(i)],
                       sums.hs[static_cast<size_t>(i)], sums.hsy.row(i), grad.data() + i * D);
  for (int it = 1; it <= params.max_iter && !active.empty(); ++it) {
    const auto A = static_cast<index_t>(active.size());
    MatrixD T(A, D);
    for (index_t a = 0; a < A; ++a) {
      const index_t i = active[static_cast<size_t>(a)];
      for (int d = 0; d < D; ++d) T(a, d) = Y(i, d) - eta[static_cast<size_t>(i)] * grad[static_cast<size_t>(i * D + d)];
    }
    evaluate(T, active);
    std::vector<unsigned char> done(static_cast<size_t>(A), 0);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (index_t a = 0; a < A; ++a) {
      const index_t i = active[static_cast<size_t>(a)];
      const auto si = static_cast<size_t>(i);
      double gt[3];
      const double c = placement_cost(T.row(a), D, g.neighbours(i), rows.p.data() + i * k, k, R, alpha,
                                      sums.h[static_cast<size_t>(a)], sums.hs[static_cast<size_t>(a)], sums.hsy.row(a), gt);
      ++res.steps[si];
      if (c < res.cost[si]) {
        for (int d = 0; d < D; ++d) Y(i, d) = T(a, d), grad[si * D + d] = gt[d];
        res.cost[si] = c;
        eta[si] *= kGrow;
      } else {
        eta[si] *= kCut;
      }
      double g2 = 0;
      for (int d = 0; d < D; ++d) g2 += grad[si * D + d] * grad[si * D + d];
      done[static_cast<size_t>(a)] = eta[si] * std::sqrt(g2) < params.tol;
    }
    std::vector<index_t> next;
    for (index_t a = 0; a < A; ++a)
      if (!done[static_cast<size_t>(a)]) next.push_back(active[static_cast<size_t>(a)]);
    active.swap(next);
    if (progress) progress(it, static_cast<index_t>(active.size()));
  }
  res.exact_points = grid ? std::count(summed_exactly.begin(), summed_exactly.end(), 1) : M;
  res.interpolated = grid != nullptr;
  return res;
}

}  // namespace orrery
