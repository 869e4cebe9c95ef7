// Out-of-sample placement into a frozen NeRV map (orrery/nerv_place.hpp): the new points' conditional
// rows and precisions, then every point's minimisation on the backend (Backend::place_nerv; per point
// arithmetic in math/nerv_place.hpp).
#include <cmath>
#include <limits>
#include <string>

#include "orrery/affinity.hpp"
#include "orrery/backend.hpp"
#include "orrery/error.hpp"
#include "orrery/knn.hpp"
#include "orrery/math/nerv_place.hpp"
#include "orrery/nerv.hpp"
#include "orrery/nerv_place.hpp"

namespace orrery {

static_assert(math::kNervPlaceProbabilityFloor == kNervProbabilityFloor,
              "the placement's floor must be NeRV's (orrery/nerv.hpp)");

void check_nerv_placement_input(const MatrixD& R, const KnnGraph& g, const std::vector<double>& p,
                                const std::vector<double>& beta, double lambda) {
  if (R.cols != 2 && R.cols != 3) internal_error("nerv placement: the reference map must be 2-D or 3-D");
  if (R.rows < 1) internal_error("nerv placement: the reference map is empty");
  if (g.k < 1 || g.index.size() != static_cast<size_t>(g.num_points * g.k) || p.size() != g.index.size())
    internal_error("nerv placement: the neighbor lists and probabilities must both be M x k");
  if (beta.size() != static_cast<size_t>(g.num_points)) internal_error("nerv placement: one beta per new point");
  if (!(lambda >= 0.0 && lambda <= 1.0)) internal_error("nerv placement: lambda outside [0, 1]");
  for (const index_t j : g.index)
    if (j < 0 || j >= R.rows) internal_error("nerv placement: a neighbor index outside the reference map");
  for (const double b : beta)
    if (!(b > 0.0) || !std::isfinite(b)) internal_error("nerv placement: a precision beta that is not positive and finite");
}

NervPlacementResult place_nerv_points(const KnnGraph& g, double perplexity, const MatrixD& R, double lambda,
                                      const NervPlacementParams& params, Backend& backend) {
  const ConditionalRows rows = conditional_rows(g, perplexity, backend.threads());
  return backend.place_nerv(R, g, rows.p, rows.beta, lambda, params);
}

double nerv_placement_cost(const double* y, const MatrixD& R, const index_t* nb, const double* p, int k, double beta,
                           double lambda, double* grad, double* hess) {
  if (R.cols != 2 && R.cols != 3) internal_error("nerv_placement_cost: the reference map must be 2-D or 3-D");
  const math::NervPlaceRow<double, index_t> r =
      math::nerv_place_row(R.data.data(), static_cast<long long>(R.rows), nb, p, k, beta, lambda);
  const auto eval = [&](auto dim) {
    constexpr int D = decltype(dim)::value;
    double s[math::NervPlaceSizes<D>::moments] = {std::numeric_limits<double>::infinity()};
    math::nerv_place_min_part<D>(r, y, 0, 1, s);
    const double m = -beta * s[0];
    s[0] = s[1] = 0.0;
    math::nerv_place_row_part<D>(r, y, m, 0, 1, s);
    const math::NervRow<double> row = math::nerv_place_finish_row<D>(r, y, m, s);
    if (grad || hess) {
      double g[D], H[D * D];
      for (double& v : s) v = 0.0;
      math::nerv_place_moment_part<D>(r, row, y, 0, 1, s);
      math::nerv_place_gradient<D>(r, row, y, s, g, H);
      for (int a = 0; a < D; ++a) {
        if (grad) grad[a] = g[a];
        for (int b = 0; b < D && hess; ++b) hess[a * D + b] = H[a * D + b];
      }
    }
    return math::nerv_place_cost(row, lambda);
  };
  return R.cols == 2 ? eval(std::integral_constant<int, 2>{}) : eval(std::integral_constant<int, 3>{});
}

}  // namespace orrery
