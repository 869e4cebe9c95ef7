// HSSNE (Yang, King, Xu, Oja 2009; MATH.md §4): symmetric SNE with the heavy-tail family
// H(tau) = (alpha tau + 1)^(-1/alpha), optimised by the paper's fixed-point update (accelerated
// with restarts that keep J from rising) or by gradient descent with momentum and gains (the t-SNE
// schedule) for comparison; both with early exaggeration.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "orrery/affinity.hpp"
#include "orrery/config.hpp"
#include "orrery/engines.hpp"
#include "orrery/interp.hpp"
#include "orrery/types.hpp"

namespace orrery {

class Backend;
class Comm;
class RunControl;

// HssneParams::optimizer.
enum class HssneOptimizer { automatic, fixed_point, gradient };
template <>
struct EnumNames<HssneOptimizer> {
  static constexpr std::array<const char*, 3> names = {"auto", "fixed_point", "gradient"};
};

// HssneParams::repulsion.
enum class HssneRepulsionMode { automatic, exact, interpolated, tree };
template <>
struct EnumNames<HssneRepulsionMode> {
  static constexpr std::array<const char*, 4> names = {"auto", "exact", "interpolated", "tree"};
};

struct HssneParams {
  // Output dimension D (2 or 3).
  int dim = 2;
  // alpha >= 0: tail heaviness; 0 is Gaussian SSNE, 1 is t-SNE, larger is heavier.
  double alpha = 1.0;
  // "fixed_point" (the paper's update, no learning rate, accelerated: see `acceleration`),
  // "gradient" (momentum and gains with a learning rate, the t-SNE schedule) or "auto": fixed_point
  // with exact repulsion, gradient with interpolated repulsion. The fixed-point update reaches a lower
  // J per iteration but spreads the map faster (20,000 Fashion-MNIST images: 200 units across at
  // iteration 450 against 130 at 1,000 for gradient), and the grid's cost grows with the map's area.
  HssneOptimizer optimizer = HssneOptimizer::automatic;
  // Iteration cap.
  int max_iter = 1000;
  // fixed_point: stop when J falls by less than tol * J in an iteration (checked once the
  // exaggeration is over).
  double tol = 1e-7;
  // fixed_point: the largest momentum of the accelerated update y <- T(y) + beta_k (y - y_prev),
  // beta_k = min(acceleration, (k - 1) / (k + 2)), k the iterations since the last restart
  // (Nesterov's sequence). A step that would raise J is taken again without momentum (a restart,
  // k = 0), so J never rises, as with the paper's update. 0 is the paper's plain update, which
  // converges far more slowly (5,000 Fashion-MNIST images, 1,000 iterations: KL 1.72 against 1.15).
  double acceleration = 1.0;
  // gradient: step size (0: max(200, N / exaggeration), the rate of Belkina et al. 2019 that
  // FIt-SNE and openTSNE default to), momentum before/after momentum_switch.
  double learning_rate = 0.0;
  // gradient: the objective (KL, the trace) is evaluated at every objective_every-th map and at the
  // last one. Its logarithms over P's lists are the costliest part of the attraction (a seventh of
  // a fit at 70,000 points) and no step needs them; the maps do not depend on it. The fixed point
  // reads J at every step.
  int objective_every = 10;
  double momentum = 0.5;
  double final_momentum = 0.8;
  int momentum_switch = 250;
  // Both optimisers: P is multiplied by `exaggeration` for the first `exaggeration_iter` iterations
  // (t-SNE's early exaggeration: the clusters form and move past one another before the map
  // settles, which finds better optima). exaggeration = 1 turns it off (the paper's schedule).
  double exaggeration = 12.0;
  int exaggeration_iter = 250;
  // Semi-supervised mixing P~ = (1 - rho) P + rho U, U uniform over known same-class pairs.
  double rho = 0.0;
  // Repulsion (the sums over all pairs): "exact" over every pair, O(N^2) per iteration;
  // "interpolated" on a grid by FFT (orrery/interp.hpp), O(N) per iteration for a map of fixed
  // extent, with a relative force error of ~6e-3 at the defaults below (1.9e-3 to 6.3e-3 measured
  // on Fashion-MNIST maps; sparse affinities only; the optimisers and the fixed-point guard then see
  // the same approximation of J, so J never rises);
  // "tree": a Barnes-Hut tree at every map (a CPU backend, sparse affinities), O(N log N);
  // "auto" (auto_repulsion): with sparse affinities on a CPU the tree from kTreeRepulsionMinPoints
  // to kTreeRepulsionMaxPoints, the grid from there, on a GPU the grid from
  // kInterpolatedRepulsionMinPoints; the grid then gives way at any map where it would cost more
  // than the pairs (RepulsionGrid::cheaper_than_exact), to the pairs or on a CPU to the tree where
  // that costs less than the pairs and, in 3-D, than the grid (HssneRepulsion::tree_when_grid_dearer);
  // exact otherwise.
  HssneRepulsionMode repulsion = HssneRepulsionMode::automatic;
  // The tree's opening angle: a cell of points stands for them at their centre of mass c where the
  // farthest of them is within tree_angle of its distance from every point of the leaf that walks
  // the tree (host/cpu/repulsion_tree.hpp); 0 sums every pair. At 0.4 the force's relative error
  // was at most 1.2e-3 on clustered 2-D and 3-D maps, every tail (tests/cpu/test_repulsion_tree.cpp).
  double tree_angle = 0.4;
  // Interpolation nodes per box and dimension, and the box width (map units; the kernel's length
  // scale is 1): node spacing interp_box / interp_nodes, each point interpolating from its
  // interp_nodes nearest nodes per axis. The force error falls as the spacing^interp_nodes: 4 nodes
  // and box 1.25 gave 4.4-6.3e-3 on a 10,000-image Fashion-MNIST map, box 0.5 about 1.5e-4 at 6x
  // the grid in 2-D (bench hssne-interp). Deterministic either way.
  int interp_nodes = 4;
  double interp_box = 1.25;
  // Initial coordinates: Gaussian with this standard deviation (seeded). The fixed-point update
  // barely expands a tiny start (it stalls near the collapsed map), hence 1, not t-SNE's 1e-4.
  double init_scale = 1.0;
  // The start: "random" (the seeded Gaussian above), "pca" (the input vectors' first dim principal
  // components) or "spectral" (P's leading nontrivial eigenvectors, orrery/pca.hpp), both scaled so
  // that the first coordinate has standard deviation init_scale, or an N x dim array file (npy,
  // csv/tsv/txt), used as given (orrery/map_start.hpp). The run resolves it to the `start` fit_hssne takes.
  std::string init = "random";
};

const std::vector<Field<HssneParams>>& hssne_fields();

// From this many points `repulsion: auto` interpolates (with sparse affinities, on a backend that
// can). Measured on 2 cores, 1,000 iterations, the first N Fashion-MNIST images (PCA 50, perplexity
// 30, sparse P; bench/README.md, `orrery_bench hssne --data fashion --repulsion exact|interpolated`):
// at 10,000 the exact fixed-point fit takes 27.1 s (5-NN 0.820, KL 1.40), the interpolated gradient
// fit 35.1 s (0.818, 1.47); at 14,000 59.9 s (0.822, 1.49) against 37.0 s (0.822, 1.63); the exact
// cost grows as N^2, the grid's about as N, so they cross near 12,000.
inline constexpr index_t kInterpolatedRepulsionMinPoints = 12000;

// `repulsion: auto` on a CPU (a backend with a tree) from this many points up to (not including)
// kTreeRepulsionMaxPoints: the Barnes-Hut tree with the gradient optimizer. Measured on 2 cores,
// 1,000 iterations, the first N Fashion-MNIST images (PCA 50, perplexity 30, sparse P; bench/README.md,
// `orrery_bench hssne --data fashion --sparse --repulsion R --optimizer O`), seconds (5-NN, KL):
//   N        exact, fixed point      tree, gradient          interpolated, gradient
//   2,000    1.91 (0.788, 0.848)     1.45 (0.773, 0.880)     13.1 (0.781, 0.885)
//   3,500    4.72 (0.792, 1.039)     3.03 (0.788, 1.091)
//   5,000    9.82 (0.815, 1.137)     4.09 (0.812, 1.198)     20.4 (0.812, 1.200)
//   20,000   125.4 (0.829, 1.653)    20.7 (0.827, 1.796)     48.7 (0.826, 1.800)
//   40,000                           44.6 (0.840, 2.155)     72.3 (0.838, 2.155)
//   70,000                           93.6 (0.846, 2.470)     111.8 (0.846, 2.463)
// and on the 50-D 20-cluster mixture (`orrery_bench hssne-scale --device cpu --source mixture --n N
// --steps 0 --repulsion R`) the fit took 114.0 s on the tree and 96.4 s on the grid at 10^5 points
// before the tree's walking groups; with them, measured again, 52.5 s against 56.0 s at 10^5 and
// 115.0 s against 114.4 s at 2 x 10^5 (and 31 s against 53 s on all 70,000 Fashion-MNIST images,
// whose map spreads wider than the mixture's clusters): the tree's cost grows as N log N, the
// grid's about as N, and they now cross near 200,000.
// Below 5,000 the exact fixed point costs a second or two more and gives the lowest KL and the
// highest 5-NN accuracy.
inline constexpr index_t kTreeRepulsionMinPoints = 5000;
inline constexpr index_t kTreeRepulsionMaxPoints = 200000;

// What params.repulsion resolves to for N points with sparse affinities on a backend with (or
// without) the grid and the tree: itself unless `auto`; `auto` gives the tree from
// kTreeRepulsionMinPoints up to kTreeRepulsionMaxPoints (unless params.optimizer is fixed_point,
// which the tree's stepped cost defeats), the grid from kInterpolatedRepulsionMinPoints where no
// tree runs, exact otherwise.
HssneRepulsionMode auto_repulsion(const HssneParams& params, index_t num_points, bool has_grid, bool has_tree);

// Whether a repulsion mode needs sparse affinities (the grid's and the tree's engines sum P's lists).
inline bool needs_sparse_affinities(HssneRepulsionMode mode) {
  return mode == HssneRepulsionMode::interpolated || mode == HssneRepulsionMode::tree;
}

// Refuses repulsion tree with optimizer fixed_point (an input error naming params.optimizer).
void check_tree_optimizer(const HssneParams& params);

// What params.repulsion means for N points on a backend: exact, interpolated or the tree, with
// their settings.
HssneRepulsion resolve_repulsion(const HssneParams& params, index_t num_points, const Backend& backend);

// The parameters a fit of N points runs with: optimizer auto resolved by the repulsion (fixed_point
// when exact, gradient when interpolated) and learning_rate 0 by N.
HssneParams resolve_optimizer(const HssneParams& params, index_t num_points, const HssneRepulsion& repulsion);

struct HssneResult {
  MatrixD coords;
  std::vector<double> objective_trace;  // J = KL(P~ || Q) (without exaggeration) ...
  std::vector<int> objective_iterations;  // ... at the map after this many iterations, for each entry
  int iterations = 0;
  int evaluations = 0;   // passes over all pairs
  int restarts = 0;      // accelerated fixed-point steps that would have raised J, retaken without momentum
  int damped_steps = 0;  // fixed-point steps that raised J even so and were halved towards the map
  std::string stop_reason;  // "tol", "max_iter"
  // What ran: the repulsion (exact for dense P) and the parameters with `auto` resolved (the
  // optimizer, a learning rate of 0 made N / exaggeration), for the report.
  HssneRepulsion repulsion;
  HssneParams used;
};

// The fits drive an HssneEngine (orrery/engines.hpp) from Backend::make_hssne (P dense N x N or
// sparse CSR, which must outlive the engine; alpha >= 0; dim 2 or 3).

// KL(P || Q) and its gradient (N x D) at Y for dense P, from one evaluation of an engine of
// `backend` (exact repulsion; a CPU backend gives the double-precision reference); used by the tests
// and the benchmarks.
double hssne_objective(const MatrixD& P, const MatrixD& Y, double alpha, MatrixD* grad, Backend& backend);

// The same for sparse P (the repulsive normaliser is still exact over all pairs).
double hssne_objective(const SparseAffinity& P, const MatrixD& Y, double alpha, MatrixD* grad, Backend& backend);

// Fits on dense P; labels (-1 unknown) are used only when rho > 0. The backend holds P and the
// map and runs every step (HssneEngine). With a control (orrery/run_control.hpp) a fit can stop at the end of an iteration and continue
// from the saved state with the same bits.
// start (N x dim, optional): the first map instead of the seeded Gaussian (params.init resolved).
// comm (optional, orrery/comm.hpp): the rows are shared among its ranks (HssneEngine::shard), each
// rank holding P, the start and the map whole; every rank returns the same result, bit for bit the
// one-process result, for any number of ranks. Every rank calls with the same arguments.
HssneResult fit_hssne(const MatrixD& P, const std::vector<int>& labels, const HssneParams& params,
                      unsigned long long seed, Backend& backend, const std::function<void(int, double)>& progress = {},
                      RunControl* control = nullptr, const MatrixD* start = nullptr, Comm* comm = nullptr);

// Fits on sparse P (kNN affinities): the attraction runs over the neighbor lists only, the
// repulsion over all pairs (exact) or on the interpolation grid (params.repulsion). rho > 0 is an input error (mixing needs dense P).
HssneResult fit_hssne(const SparseAffinity& P, const HssneParams& params, unsigned long long seed, Backend& backend,
                      const std::function<void(int, double)>& progress = {}, RunControl* control = nullptr,
                      const MatrixD* start = nullptr, Comm* comm = nullptr);

// Out-of-sample placement: new points mapped into a frozen reference map (as openTSNE's transform,
// for every tail). New point i has conditional probabilities p_{j|i} over its k nearest reference
// points (perplexity-calibrated, conditional_rows) and its own output distribution over all N
// reference points, q_{j|i} = H_ij / h_i with h_i = sum_j H_ij; it minimises
//   C_i(y_i) = KL(p_i || q_i) = sum_j p_{j|i} log p_{j|i} - sum_j p_{j|i} log H_ij + log h_i,
//   dC_i/dy_i = 2 sum_j p_{j|i} S_ij (y_i - y_j) - 2 (y_i hs_i - hsy_i) / h_i,
// alone: the reference does not move and new points do not see one another, so a point's place does
// not depend on which others are placed with it. Each starts at the p-weighted median of its
// neighbors' places (per axis) and takes gradient steps whose length it keeps per point: a step
// that lowers C_i is taken and the next one is 1.2x longer, one that does not is refused and the
// length halved (so C_i never rises); it stops when its step is under `tol` map units. The sums
// h, hs, hsy over the reference come from the frozen grid (RepulsionGrid::freeze on the CPU, the
// same grid on a device) with repulsion interpolated (exactly for a point that leaves the grid; with
// exact_when_cheaper, as `auto` sets it, not at all where the grid would cost more than ~100 exact
// steps of every point), else from the exact O(N) loop. The backend runs every step (PlacementEngine).

// to_reference: the new points' k nearest reference points (exact_knn_to / approximate_knn_to);
// reference: the reference map (N x D, D 2 or 3); 1 < perplexity < k. The backend holds the new
// points and runs every step (PlacementEngine, orrery/engines.hpp).
PlacementResult place_points(const KnnGraph& to_reference, double perplexity, const MatrixD& reference, double alpha,
                             const HssneRepulsion& repulsion, const PlacementParams& params, Backend& backend,
                             const std::function<void(int, index_t)>& progress = {});
// One new point's cost and gradient at y, given its sums over the reference (exposed for tests;
// math::place_cost).
double placement_cost(const double* y, int D, const index_t* nb, const double* p, int k, const MatrixD& reference,
                      double alpha, double h, double hs, const double* hsy, double* grad);

// One fixed-point update of MATH.md §4 on dense P by an engine of `backend` (exposed for tests):
// returns J at the input Y.
double hssne_fixed_point_step(const MatrixD& P, double alpha, MatrixD& Y, Backend& backend);

// Semi-supervised affinities: (1 - rho) P + rho U, U uniform over ordered pairs of distinct
// points sharing a known label.
MatrixD mix_same_class_pairs(const MatrixD& P, const std::vector<int>& labels, double rho);

}  // namespace orrery
