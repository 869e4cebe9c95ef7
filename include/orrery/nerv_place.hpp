// Out-of-sample placement into a frozen NeRV (or supervised NeRV) map: new points mapped one by one
// into an earlier fit's map, which does not move.
//
// New point x has conditional probabilities p_{j|x} over its k = ceil(3 perplexity) nearest
// reference points in the input space, calibrated to the model's perplexity (conditional_rows, as
// HSSNE's placement), and with them its own precision beta_x, used in the map too as NeRV does. Its
// place y minimises its own NeRV row cost
//   C_x(y) = lambda KL(p_x || q_x) + (1 - lambda) KL(q_x || p_x),
//   q_{j|x} = exp(-beta_x |y - y_j|^2) / sum over ALL N reference points,
// with p_{j|x} = 0 outside the list and, inside log p of KL(q || p), the floor NeRV's sparse rows
// use (nerv_row_log_floors: 1e-3 x the row's smallest listed p). The reference map is frozen: the new
// point's effect on the reference points' own rows (x would enter their q and p) is ignored, and new
// points do not see one another, so a point's place does not depend on which others are placed with it.
// Each point starts at the p-weighted mean of its neighbors' places and takes Newton steps (the exact
// D x D Hessian; steepest descent scaled to one bandwidth where it is not positive definite) with a
// backtracking line search, so C_x never rises; it stops when a step is shorter than `tol` bandwidths
// 1 / sqrt(beta_x). Each evaluation is exact over the N reference points (O(N D) per evaluation).
// The arithmetic is math/nerv_place.hpp's on every backend (Backend::place_nerv).
#pragma once
#include <vector>

#include "orrery/engines.hpp"
#include "orrery/types.hpp"

namespace orrery {

class Backend;
struct KnnGraph;

// to_reference: the new points' k nearest reference points (exact_knn_to or approximate_knn_to);
// 1 < perplexity < k; reference_map N x D (D 2 or 3); lambda in [0, 1]. The rows'
// calibration runs on the host with the backend's threads, the minimisation on the backend.
NervPlacementResult place_nerv_points(const KnnGraph& to_reference, double perplexity, const MatrixD& reference_map,
                                      double lambda, const NervPlacementParams& params, Backend& backend);

// One new point's C_x at y with its gradient and Hessian (D x D), exact over the reference map (tests;
// math/nerv_place.hpp). nb and p: its k listed reference points and probabilities.
double nerv_placement_cost(const double* y, const MatrixD& reference_map, const index_t* nb, const double* p, int k,
                           double beta, double lambda, double* grad = nullptr, double* hess = nullptr);

}  // namespace orrery
