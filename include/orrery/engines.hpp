// The engines: what a backend holds for one fit and what a method drives it with (DESIGN.md, rule
// 3). Backend (orrery/backend.hpp) makes them; the methods (orrery/pe.hpp, hssne.hpp, nerv.hpp,
// nerv_place.hpp, snerv.hpp, plsv.hpp) drive them; CpuBackend (host/cpu) and CudaBackend (kernels/)
// implement them. This header holds the interfaces and the small types they exchange, and nothing
// of the methods' parameters or fits, so a backend includes it instead of the methods' API. No CUDA
// types appear here.
#pragma once
#include <string>
#include <vector>

#include "orrery/math/hd.hpp"
#include "orrery/types.hpp"

namespace orrery {

class Comm;
class ExactSum;
struct KnnGraph;
struct SparseAffinity;

// ---------------------------------------------------------------- PE (orrery/pe.hpp)

// Totals of one PE evaluation over all objects.
struct PeSweep {
  double objective = 0.0;       // sum_n J_n (data term + eta_r |r_n|^2), without eta_phi
  double max_grad_sq = 0.0;     // max_n |dJ/dr_n|^2 after the Newton solves
  index_t unconverged = 0;      // objects with |dJ/dr_n|^2 >= eps_r
  index_t newton_steps = 0;     // Newton iterations summed over objects
  int max_newton_steps = 0;     // largest per-object Newton iteration count
};

// Adds one object's Newton result (objective, |g|^2, convergence, steps) to a sweep's totals.
template <class ObjectResult>
void add_object(PeSweep& s, const ObjectResult& r, double objective) {
  s.objective += objective;
  s.max_grad_sq = math::nan_max(s.max_grad_sq, static_cast<double>(r.grad_sq));  // a NaN norm must reach the stop test
  s.unconverged += r.converged ? 0 : 1;
  s.newton_steps += r.iterations;
  s.max_newton_steps = s.max_newton_steps > r.iterations ? s.max_newton_steps : r.iterations;
}

// Totals of chunked partial sweeps, summed in chunk order.
inline PeSweep combine_sweeps(const std::vector<PeSweep>& parts) {
  PeSweep t;
  for (const auto& s : parts) {
    t.objective += s.objective;
    t.max_grad_sq = math::nan_max(t.max_grad_sq, s.max_grad_sq);
    t.unconverged += s.unconverged;
    t.newton_steps += s.newton_steps;
    t.max_newton_steps = t.max_newton_steps > s.max_newton_steps ? t.max_newton_steps : s.max_newton_steps;
  }
  return t;
}

// Objects per reduction chunk of the CPU engine: each chunk's sums are taken in object order, and the
// chunks' sums are then added exactly (PeEngine::solve_objects_exact). A block of objects that starts
// at a multiple of kPeChunk therefore has the same chunks as the whole, which is what lets ranks own
// chunk-aligned blocks and still give the one-process bits.
inline constexpr index_t kPeChunk = 1024;

struct PeNewtonOptions {
  double eps_r = 1e-8;  // per-object convergence: |dJ/dr_n|^2 < eps_r
  int max_iter = 50;    // per-object Newton iteration cap per sweep
};

// A PE problem resident on one backend: posteriors P (N x K), log priors (K), object
// coordinates R (N x D).
class PeEngine {
 public:
  virtual ~PeEngine() = default;
  virtual index_t num_objects() const = 0;
  virtual int num_classes() const = 0;
  virtual int dim() const = 0;

  // Replace R (N x D, host). Used once at the start (and for out-of-sample placement).
  virtual void set_objects(const MatrixD& R) = 0;
  // Copy R back to the host (once, at the end of a fit).
  virtual MatrixD objects() const = 0;

  // Steps 2-5 of the paper for the given Phi (K x D row-major): Newton on every r_n from its
  // current value until |dJ/dr_n|^2 < eps_r or the cap. If class_grad is non-null it receives
  // sum_n (P_nk - q_nk)(phi_k - r_n) at the new R (K x D, without the eta_phi term), computed in
  // a fixed order so that the same input gives the same bits.
  virtual PeSweep solve_objects(const std::vector<double>& phi, const PeNewtonOptions& opt,
                                std::vector<double>* class_grad) = 0;

  // Objective sum_n J_n at the current R and the given Phi, without moving R.
  virtual double objective(const std::vector<double>& phi) = 0;

  // solve_objects, with the class gradient (K x D, sums 0 .. KD-1) and the objective (sum KD) added
  // to `sums` (KD + 1 exact sums) instead of rounded here; the returned sweep's objective is this
  // engine's own. An engine that adds its chunk sums one by one (the CPU's) gives sums that do not
  // depend on how chunk-aligned blocks of objects are spread over engines or ranks; the CUDA engine
  // adds its chunks' sums too (each chunk's block partials summed in order). The default adds the
  // engine's rounded totals: its results are then the same for the same input, but bit-identity
  // across numbers of ranks is not promised.
  virtual PeSweep solve_objects_exact(const std::vector<double>& phi, const PeNewtonOptions& opt, ExactSum& sums);
};

// ---------------------------------------------------------------- HSSNE (orrery/hssne.hpp)

// Unnormalised per-row sums of one evaluation at Y, from one pass over all pairs (MATH.md §4):
// everything the objective, the gradient and the fixed-point update need. Z = sum_i h_i.
struct HssneSums {
  std::vector<double> h;        // sum_j H_ij              (row i's share of Z; with interpolated
                                //  repulsion only what is row i's alone, RepulsionSums::z_grid:
                                //  HssneTotals::z is always the whole Z)
  std::vector<double> p_log_h;  // sum_j P_ij log H_ij
  std::vector<double> a;        // A_i = sum_j P_ij S_ij
  std::vector<double> hs;       // Z B_i = sum_j H_ij S_ij
  MatrixD ay;                   // sum_j P_ij S_ij y_j      (N x D)
  MatrixD hsy;                  // sum_j H_ij S_ij y_j      (N x D)
};

// What an evaluation tells the host: Z = sum_i h_i and sum_i p_log_h_i. J for any exaggeration c
// follows from these and the constant sums over P.
struct HssneTotals {
  double z = 0.0, p_log_h = 0.0;
};

// An engine's per-point optimiser state (N x D each), for checkpoints: the map, the previous
// iterate (fixed-point momentum), and the gradient method's velocity and gains.
struct HssneState {
  MatrixD y, prev, velocity, gains;
};

// Seconds an engine has spent in each stage of its evaluations so far (benchmarks split an
// iteration with them): the repulsion (all pairs, or the grid's plan, scatter, FFT, gather and far
// points), then the attraction over P with the per-point results and totals. 0 for a stage the
// engine does not run.
struct HssneStageTimes {
  double pairs = 0;                                                // exact repulsion over all pairs
  double grid_plan = 0, scatter = 0, fft = 0, gather = 0, far = 0;  // interpolated repulsion
  double tree = 0;                                                 // Barnes-Hut repulsion
  double attraction = 0;
  int evaluations = 0;
};

// An engine's times with its interpolation grid's stages (the CPU grid's timings or the device
// grid's: the same fields).
template <class GridTimings>
HssneStageTimes with_grid_stages(HssneStageTimes t, const GridTimings& g) {
  t.grid_plan = g.grid, t.scatter = g.scatter, t.fft = g.fft, t.gather = g.gather, t.far = g.far;
  return t;
}

// Affinities and the optimiser's state resident on one backend: the current map Y with its
// per-point sums, the previous iterate, a trial map with its sums, and the gradient method's
// velocity and gains. The optimisers (host/methods/hssne.cpp) drive it with O(1) values per
// step; N x D data cross to the host only at start() and coords(). Every step's per-coordinate
// arithmetic is math/neighbor.hpp's. The CPU engine sums in double with the rows spread over
// threads; the CUDA engine sums tiles of pairs in float and tiles into double, the totals in a
// fixed order (same input, same device: same bits).
class HssneEngine {
 public:
  virtual ~HssneEngine() = default;
  virtual std::string name() const = 0;
  // Y becomes the current map and the previous iterate; velocity 0, gains 1; the sums at Y.
  virtual HssneTotals start(const MatrixD& Y) = 0;
  // Fixed point from the current map: trial = Y + step (T_c(Y) - Y) + beta (Y - Y_prev), then the
  // sums there.
  virtual HssneTotals propose(double c, double step, double beta) = 0;
  // trial <- (trial + Y) / 2, then the sums there.
  virtual HssneTotals damp() = 0;
  // Y_prev <- Y, Y <- trial, with the trial's sums.
  virtual void accept() = 0;
  // Gradient descent from the current map (its sums, exaggeration c): velocity and gains
  // updated, Y moved by the velocity, then the sums at the new Y; their p_log_h (the objective's)
  // only where `objective` is true (an engine may skip its logarithms otherwise: NaN).
  virtual HssneTotals gradient_step(double c, double momentum, double learning_rate, bool objective) = 0;
  // Copies to the host: the current map, and its per-point sums.
  virtual MatrixD coords() const = 0;
  virtual void current_sums(HssneSums& out) const = 0;
  // A checkpoint's state going out and coming back; restore() recomputes the sums at its map with
  // the same arithmetic as every step, so the run continues with the same bits.
  virtual HssneState state() const = 0;
  virtual HssneTotals restore(const HssneState& s) = 0;
  // Time per stage over every evaluation so far.
  virtual HssneStageTimes stage_times() const = 0;
  // Before start() or restore(): the engine's rows are split over comm's ranks in contiguous blocks
  // (hssne_rank_block), each rank summing and stepping its own, every map whole on every rank
  // (gathered after each step) and every total summed in one order over all rows, so every rank
  // takes the steps one process takes, bit for bit. current_sums() then gives this rank's rows only.
  // An engine that cannot shard refuses more than one rank.
  virtual void shard(Comm& comm);
};

// Rank `rank`'s rows [first, first + count) of an HSSNE map of n points over `ranks` ranks: the
// first n % ranks ranks one row more.
struct RowBlock {
  index_t first = 0, count = 0;
};
RowBlock hssne_rank_block(index_t n, int rank, int ranks);

// --- Out-of-sample placement into a frozen HSSNE map (orrery/hssne.hpp, place_points: the cost and
// the step rule are described there).
struct PlacementParams {
  int max_iter = 1000;  // the most steps a point tries
  double tol = 1e-4;    // a point stops when its step is shorter than this (map units)
};
struct PlacementResult {
  MatrixD coords;             // M x D
  std::vector<double> cost;   // C_i at the end
  std::vector<int> steps;     // steps tried per point
  index_t exact_points = 0;   // points whose sums were summed exactly at least once (off the grid)
  bool interpolated = false;  // whether the frozen grid was made (auto may give way to exact sums)
};
// The frozen grid reaches this far (map units) beyond the reference map on every side: a new point
// starts inside the reference's extent, and one that moves further out is summed exactly.
inline constexpr double kPlacementGridMargin = 4.0;

// New points being placed into a frozen map, resident on one backend (Backend::make_placement): the
// reference map, the new points' neighbor lists and probabilities, and per point its place,
// gradient, step length, cost and steps; with interpolated repulsion the frozen grid. place_points
// drives it with O(1) values per step; the M x D places cross to the host once, in result(). Every
// point's arithmetic is math/place.hpp's; a point's sums are its own (the grid's gather, or the exact
// loop over the reference in a fixed order), so the same input on the same device gives the same bits.
class PlacementEngine {
 public:
  virtual ~PlacementEngine() = default;
  virtual std::string name() const = 0;
  // Every point at its start (math::place_start) with its first step length, and the sums, cost and
  // gradient there; every point moving.
  virtual void start() = 0;
  // One trial step of every moving point (math::place_trial), the sums there, and the step rule
  // (math::place_accept with tol); returns how many points still move.
  virtual index_t step(double tol) = 0;
  // The places, costs and steps tried, and which points were summed exactly.
  virtual PlacementResult result() const = 0;
};
// Engines come from Backend::make_placement (orrery/backend.hpp), whose factories first check what
// they are given (internal errors: place_points makes it right): the map 2-D or 3-D, p M x k, every
// neighbor a row of the reference.
void check_placement_input(const MatrixD& reference, const KnnGraph& to_reference, const std::vector<double>& p);

// ---------------------------------------------------------------- NeRV (orrery/nerv.hpp)

// The arithmetic of the CPU's NeRV evaluations (NervParams::precision).
enum class NervPrecision { float32, float64 };

// Input probabilities below kNervProbabilityFloor count as the floor inside log p, so KL(q || p)
// stays finite for pairs whose Gaussian input probability underflowed.
constexpr double kNervProbabilityFloor = 1e-300;

// log of each sparse row's floor p_floor_i (orrery/nerv.hpp, the sparse nerv_objective; floored as
// kNervProbabilityFloor), N values: what
// every backend's sparse evaluation uses for the pairs outside row i's list. Checks the CSR (an
// internal error for columns out of range or on the diagonal).
std::vector<double> nerv_row_log_floors(const SparseAffinity& P);

// What a NeRV engine is made with besides its data (Backend::make_nerv).
struct NervOptions {
  double lambda = 0.0;  // the method's params.lambda (NervParams, whose default it is): always given
  int dim = 2;
  NervPrecision precision = NervPrecision::float32;  // the CPU's arithmetic; CUDA always float
  // Sparse P only: the truncated cost over a cell grid (math/nerv_cells.hpp) at this cutoff, in
  // float on every backend; 0 = every pair.
  double cutoff = 0.0;
};

// The N x D vectors a NeRV engine holds for conjugate gradient: the iterate x, the gradient there,
// the search direction, and a trial point x + t d with its gradient.
enum class NervVector { x, gradient, direction, trial, trial_gradient };
inline constexpr int kNervVectors = 5;

// NeRV's objective and the optimiser's state resident on one backend: P (dense rows, or sparse rows
// with their floors: O(N k) memory on every backend) and the five vectors above. Conjugate gradient
// (host/methods/nerv.cpp) drives it with O(1) values per step: a cost, a dot product or a step
// length; N x D data cross at set_coords() and vector() only. The CPU engine evaluates in
// NervOptions::precision (pair terms in float summed in double per 512-column tile, or double); the
// CUDA engine in float tiles summed in double. Reductions run in a fixed order on both (same input,
// same device: same bits).
class NervEngine {
 public:
  virtual ~NervEngine() = default;
  virtual std::string name() const = 0;
  // "float" or "double": the arithmetic of the pair terms.
  virtual std::string arithmetic() const = 0;
  // x <- Y (N x D).
  virtual void set_coords(const MatrixD& Y) = 0;
  // A copy of one vector on the host.
  virtual MatrixD vector(NervVector v) const = 0;
  // One vector <- V (N x D): a checkpoint's x, gradient and direction coming back.
  virtual void set_vector(NervVector v, const MatrixD& V) = 0;
  // E at x, and its gradient into NervVector::gradient when with_gradient.
  virtual double evaluate(bool with_gradient) = 0;
  // trial <- x + t direction; E there, its gradient into NervVector::trial_gradient.
  virtual double evaluate_trial(double t) = 0;
  // sum over the N D entries of a * b, in a fixed order.
  virtual double dot(NervVector a, NervVector b) = 0;
  // direction <- -gradient + beta direction (beta = 0: steepest descent).
  virtual void update_direction(double beta) = 0;
  // x, gradient <- trial, trial_gradient.
  virtual void accept_trial() = 0;
  // Before set_coords(): each evaluation's passes over the rows are split over comm's ranks, which
  // gather one another's terms, so every rank holds every vector whole and takes the steps of one
  // process, bit for bit (the split never changes an order of summation). An engine that cannot
  // shard refuses more than one rank.
  virtual void shard(Comm& comm);
};

// --- Out-of-sample placement into a frozen NeRV map (orrery/nerv_place.hpp, place_nerv_points).
struct NervPlacementParams {
  // Newton steps per point at most (each step one gradient and Hessian, and its line search's costs).
  int max_iter = 100;
  // A point stops when its step is shorter than tol x its bandwidth 1 / sqrt(beta_x) (map units).
  double tol = 1e-7;
};

struct NervPlacementResult {
  MatrixD coords;            // M x D
  std::vector<double> cost;  // C_x at the end
  std::vector<int> steps;    // Newton steps per point
};

// The Backend's entry (Backend::place_nerv) checks what it is given with this (internal errors: the
// map 2-D or 3-D, p M x k, beta M, every neighbor a row of the map, lambda in [0, 1]).
void check_nerv_placement_input(const MatrixD& reference_map, const KnnGraph& to_reference,
                                const std::vector<double>& p, const std::vector<double>& beta, double lambda);

// ---------------------------------------------------------------- supervised NeRV (orrery/snerv.hpp)

// The class-posterior model behind the learning metric (fit_class_mixture), which
// Backend::learning_metric_distances and learning_metric_pairs integrate along straight paths.
struct ValidationPoint {
  int components = 0;
  double width = 0.0;
  double loglik = 0.0;  // mean held-out log p(true class | x) over the folds
};

struct ClassMixture {
  int num_classes = 0;
  double width = 0.0;
  double euclidean = 0.0;  // eta of the metric (ClassMixtureParams::euclidean)
  MatrixD centres;  // K x d
  MatrixD beta;     // K x C, rows on the simplex
  double train_loglik = 0.0;  // mean log p(true class | x) over the labelled points
  int iterations = 0;         // CG iterations of the final fit
  std::vector<ValidationPoint> selection;  // every (K, s) validated, in order; empty when both given
};

// What every backend's distances start from: the projections U (N x K) of the rows on the centres,
// u_k(x) = m_k . x, half their squared norms h_k = |m_k|^2 / 2 and w = 1 / s^2 (math/fisher.hpp).
struct MetricProjections {
  MatrixD U;
  std::vector<double> h;
  double w = 0.0;
};
MetricProjections metric_projections(const ClassMixture& model, const MatrixD& X, int threads = 0);

// ---------------------------------------------------------------- PLSV (orrery/plsv.hpp)

// Documents per reduction chunk of the CPU PLSV engine's word-topic statistics, as kPeChunk is PE's
// objects': each chunk's sums are taken in document order and then added exactly, so a block of
// documents that starts at a multiple of kPlsvChunk has the chunks of the whole corpus (ranks own
// such blocks). Its smaller chunks for threads (the other sums) divide it. Every chunk costs a
// fixed-point addition per topic for each of its words, hence chunks larger than the threads' ones.
inline constexpr index_t kPlsvChunk = 1024;

// The corpus resident on one backend, with X, Theta, the last E-step's R (N x Z) and S (Z x W).
// Engines may each hold a block of one corpus's documents (one per rank, orrery/plsv.hpp): the
// *_exact calls and word_topic_sums then give sums over all blocks that do not depend on the blocks.
class PlsvEngine {
 public:
  virtual ~PlsvEngine() = default;
  virtual std::string name() const = 0;
  virtual void set_docs(const MatrixD& X) = 0;  // N x D
  virtual MatrixD docs() const = 0;
  virtual void set_theta(const MatrixD& theta) = 0;  // Z x W
  virtual MatrixD theta() const = 0;
  struct EStep {
    double log_likelihood = 0.0;   // at the resident X, Theta and the given Phi
    double theta_log_prior = 0.0;  // alpha sum_zw log theta_zw
    double docs_sq = 0.0;          // sum_n |x_n|^2
  };
  // Responsibility sums R_nz and theta statistics S_zw = sum_n c_nw r_nwz at the resident X, Theta
  // and the given Phi (Z x D), kept on the engine; r_nwz itself is never stored.
  virtual EStep e_step(const std::vector<double>& phi, double alpha) = 0;
  // theta_zw = (S_zw + alpha) / (sum_w' S_zw' + alpha W) from the last e_step.
  virtual void m_step_theta(double alpha) = 0;
  // Newton on every x_n (R from the last e_step, Phi given): returns sum_n -Q_n (with gamma/2 |x_n|^2);
  // topic_grad, when non-null, receives -dQ/dPhi at the new X without the beta term (Z x D).
  virtual PeSweep solve_docs(const std::vector<double>& phi, double gamma, const PeNewtonOptions& opt,
                             std::vector<double>* topic_grad) = 0;
  // Moves each document to the best of its coordinate, the centre and the topic positions by its
  // log posterior under the resident theta and the given Phi (math::plsv_relocate_document);
  // returns how many moved.
  virtual index_t relocate_docs(const std::vector<double>& phi, double gamma) = 0;
  virtual MatrixD topic_counts() const = 0;  // R (N x Z) of the last e_step

  // e_step, with its sums over documents added to `sums` (2 exact sums: the log-likelihood, then
  // sum_n |x_n|^2) instead of rounded here; the returned EStep holds this engine's own totals. An
  // engine that adds its chunk sums one by one (the CPU's) gives totals that do not depend on how
  // kPlsvChunk-aligned blocks of documents are spread over engines. The default adds the engine's
  // rounded totals (the CUDA engine's): the same result for the same input, for one engine.
  virtual EStep e_step_exact(const std::vector<double>& phi, double alpha, ExactSum& sums);
  // The last e_step's word-topic statistics S as integers (fixed point) that add up: the element-wise
  // int64 sum of every engine's vector, in any order, is the vector of all their documents together,
  // and m_step_theta reads this vector, so summing it in place over the engines first gives every
  // engine the theta of the whole corpus. Null where the engine keeps S in another form (the
  // default): such an engine must hold the whole corpus.
  virtual std::vector<std::int64_t>* word_topic_sums() { return nullptr; }
  // solve_docs, with the topic gradient (Z x D, sums 0 .. ZD-1) and the objective (sum ZD) added to
  // `sums` (ZD + 1 exact sums) as e_step_exact adds its sums; the returned sweep's objective is this
  // engine's own.
  virtual PeSweep solve_docs_exact(const std::vector<double>& phi, double gamma, const PeNewtonOptions& opt,
                                   ExactSum& sums);
};

}  // namespace orrery
