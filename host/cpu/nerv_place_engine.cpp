// Placement into a frozen NeRV map on the CPU (orrery/nerv_place.hpp, Backend::place_nerv): a point
// per OpenMP iteration, each minimised alone by math::nerv_place_minimise with its passes over the
// reference summed serially in reference order. A point's arithmetic is its own, so the thread count
// changes no bits.
#include <limits>
#include <vector>

#include "cpu/engines.hpp"
#include "orrery/engines.hpp"
#include "orrery/knn.hpp"
#include "orrery/math/nerv_place.hpp"

namespace orrery::cpu {
namespace {

template <int D>
void place_all(const MatrixD& R, const KnnGraph& g, const std::vector<double>& p, const std::vector<double>& beta,
               double lambda, const NervPlacementParams& prm, NervPlacementResult& res, int threads) {
  const index_t M = g.num_points;
  const int k = g.k;
#pragma omp parallel for schedule(dynamic, 4) num_threads(threads)
  for (index_t i = 0; i < M; ++i) {
    const auto si = static_cast<size_t>(i);
    const math::NervPlaceRow<double, index_t> r = math::nerv_place_row(
        R.data.data(), static_cast<long long>(R.rows), g.neighbors(i), p.data() + i * k, k, beta[si], lambda);
    double* y = res.coords.row(i);
    math::nerv_place_start<D>(R.data.data(), g.neighbors(i), p.data() + i * k, k, y);
    const auto reduce = [&](int pass, const double* z, double m, const math::NervRow<double>& row, double* out) {
      if (pass == 0) {
        out[0] = std::numeric_limits<double>::infinity();
        math::nerv_place_min_part<D>(r, z, 0, 1, out);
      } else if (pass == 1) {
        out[0] = out[1] = 0.0;
        math::nerv_place_row_part<D>(r, z, m, 0, 1, out);
      } else {
        for (int s = 0; s < math::NervPlaceSizes<D>::moments; ++s) out[s] = 0.0;
        math::nerv_place_moment_part<D>(r, row, z, 0, 1, out);
      }
    };
    const math::NervPlaceOutcome<double> o = math::nerv_place_minimise<D>(r, y, prm.max_iter, prm.tol, reduce);
    res.cost[si] = o.cost;
    res.steps[si] = o.steps;
  }
}

}  // namespace

NervPlacementResult place_nerv(const MatrixD& R, const KnnGraph& g, const std::vector<double>& p,
                               const std::vector<double>& beta, double lambda, const NervPlacementParams& prm,
                               int threads) {
  check_nerv_placement_input(R, g, p, beta, lambda);
  NervPlacementResult res;
  res.coords = MatrixD(g.num_points, R.cols);
  res.cost.assign(static_cast<size_t>(g.num_points), 0.0);
  res.steps.assign(static_cast<size_t>(g.num_points), 0);
  if (R.cols == 2) place_all<2>(R, g, p, beta, lambda, prm, res, threads);
  else place_all<3>(R, g, p, beta, lambda, prm, res, threads);
  return res;
}

}  // namespace orrery::cpu
