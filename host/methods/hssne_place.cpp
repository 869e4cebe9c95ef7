// Out-of-sample placement of new points into a frozen HSSNE map (orrery/hssne.hpp, place_points):
// the new points' conditional rows, the choice of sums (grid or exact), then the steps, each point
// on its own (a PlacementEngine on the run's backend; per point arithmetic in math/place.hpp).
#include <algorithm>
#include <cmath>
#include <memory>

#include "orrery/affinity.hpp"
#include "orrery/backend.hpp"
#include "orrery/error.hpp"
#include "orrery/hssne.hpp"
#include "orrery/interp.hpp"
#include "orrery/knn.hpp"
#include "orrery/math/place.hpp"

namespace orrery {
namespace {

// Steps a point takes, about (60-190 for Fashion-MNIST images; bench hssne-place): auto repulsion's
// estimate of the exact sums' cost.
constexpr double kTypicalSteps = 100;

// `auto` (exact_when_cheaper): the grid only where it costs less than the exact sums would over the
// steps points typically take (a few new points, or a wide 3-D map, are summed exactly). The planned
// grid is the one the engine will freeze (a wider map than the grid allows is refused here, naming
// params.interp_box, as the freeze would).
HssneRepulsion placement_repulsion(const HssneRepulsion& repulsion, const MatrixD& R, double alpha, index_t M) {
  HssneRepulsion r = repulsion;
  r.exact_when_cheaper = false;
  r.tree = false;  // the placement engines have no tree: exact sums over the reference instead
  if (!repulsion.interpolated) return r;
  const int D = static_cast<int>(R.cols);
  const double cells = RepulsionGrid(D, alpha, repulsion.grid, 1).planned_cells(R, kPlacementGridMargin);
  const double grid_cost = (2.0 * D + 3) * cells * std::log2(std::max(cells, 2.0));
  const double exact_cost = kTypicalSteps * static_cast<double>(M) * static_cast<double>(R.rows);
  if (repulsion.exact_when_cheaper && grid_cost > exact_cost) r.interpolated = false;
  return r;
}

}  // namespace

double placement_cost(const double* y, int D, const index_t* nb, const double* p, int k, const MatrixD& R,
                      double alpha, double h, double hs, const double* hsy, double* grad) {
  if (D != R.cols) internal_error("placement_cost: y and the reference differ in dimension");
  if (D == 2) return math::place_cost<2>(y, R.data.data(), nb, p, k, alpha, h, hs, hsy, grad);
  return math::place_cost<3>(y, R.data.data(), nb, p, k, alpha, h, hs, hsy, grad);
}

void check_placement_input(const MatrixD& R, const KnnGraph& g, const std::vector<double>& p) {
  if (R.cols != 2 && R.cols != 3) internal_error("placement: the reference map must be 2-D or 3-D");
  if (g.k < 1 || g.index.size() != static_cast<size_t>(g.num_points * g.k) || p.size() != g.index.size())
    internal_error("placement: the neighbor lists and probabilities must both be M x k");
  for (const index_t j : g.index)
    if (j < 0 || j >= R.rows) internal_error("placement: a neighbor index outside the reference map");
}

PlacementResult place_points(const KnnGraph& g, double perplexity, const MatrixD& R, double alpha,
                             const HssneRepulsion& repulsion, const PlacementParams& params, Backend& backend,
                             const std::function<void(int, index_t)>& progress) {
  if (R.cols != 2 && R.cols != 3) internal_error("place_points: the reference map must be 2-D or 3-D");
  const ConditionalRows rows = conditional_rows(g, perplexity, backend.threads());
  auto engine = backend.make_placement(R, alpha, g, rows.p, placement_repulsion(repulsion, R, alpha, g.num_points));
  engine->start();
  index_t moving = g.num_points;
  for (int it = 1; it <= params.max_iter && moving > 0; ++it) {
    moving = engine->step(params.tol);
    if (progress) progress(it, moving);
  }
  return engine->result();
}

}  // namespace orrery
