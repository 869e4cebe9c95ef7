// HSSNE's algorithm (Yang, King, Xu, Oja 2009; MATH.md §4), written once for every backend: the
// paper's fixed-point update, accelerated with restarts that keep J from rising, or t-SNE's
// gradient schedule, both with early exaggeration, driving the backend's HssneEngine with O(1)
// values per step (the two totals of each evaluation decide the step).
#include "orrery/hssne.hpp"

#include <algorithm>
#include <cmath>

#include "methods/random.hpp"
#include "orrery/affinity.hpp"
#include "orrery/backend.hpp"
#include "orrery/comm.hpp"
#include "orrery/engines.hpp"
#include "orrery/error.hpp"
#include "orrery/math/neighbor.hpp"
#include "orrery/run_control.hpp"

namespace orrery {

const std::vector<Field<HssneParams>>& hssne_fields() {
  static const std::vector<Field<HssneParams>> fields = {
      {"dim", &HssneParams::dim, "Output dimension D of the map.", 2, 3},
      {"alpha", &HssneParams::alpha, "Tail heaviness: 0 Gaussian SSNE, 1 t-SNE, larger heavier.", 0, 1e6},
      {"optimizer", &HssneParams::optimizer,
       "fixed_point (the paper's update, no learning rate, accelerated; not with repulsion tree, whose cost "
       "changes in steps), gradient (momentum and gains) or auto: fixed_point with exact repulsion, gradient "
       "with the tree and with interpolated repulsion (whose grid grows with the map, which the fixed point "
       "spreads faster)."},
      {"max_iter", &HssneParams::max_iter, "Iteration cap.", 1, 1e8},
      {"tol", &HssneParams::tol,
       "fixed_point stops when J falls by less than tol * J in an iteration (after the exaggeration).", 0, 1},
      {"acceleration", &HssneParams::acceleration,
       "fixed_point: largest momentum of the accelerated update (restarted whenever J would rise); "
       "0 = the paper's plain update.",
       0, 1},
      {"learning_rate", &HssneParams::learning_rate,
       "gradient: step size; 0 = max(200, N / exaggeration) (Belkina et al. 2019).", 0, 1e6},
      {"objective_every", &HssneParams::objective_every,
       "gradient: the objective (KL, the report's trace) is evaluated every objective_every iterations and at the "
       "last map (its logarithms are a seventh of a fit at 70,000 points; the maps do not depend on it); 1 = every "
       "iteration.",
       1, 1e8},
      {"momentum", &HssneParams::momentum, "gradient: momentum before momentum_switch.", 0, 1},
      {"final_momentum", &HssneParams::final_momentum, "gradient: momentum from momentum_switch on.", 0, 1},
      {"momentum_switch", &HssneParams::momentum_switch, "gradient: iteration where momentum changes.", 0, 1e8},
      {"exaggeration", &HssneParams::exaggeration, "P is multiplied by this early on (1 = off).", 1, 1e4},
      {"exaggeration_iter", &HssneParams::exaggeration_iter, "Iterations with exaggeration.", 0, 1e8},
      {"rho", &HssneParams::rho, "Semi-supervised mixing weight of same-class pairs (0 = unsupervised).", 0, 1},
      {"init_scale", &HssneParams::init_scale,
       "Standard deviation of the seeded Gaussian start, and of the first column of a pca or spectral start.", 0, 1e3,
       true},
      {"init", &HssneParams::init,
       "The start: random (the seeded Gaussian), pca (the input vectors' first dim principal components; needs "
       "vectors), spectral (the leading nontrivial eigenvectors of P's graph, as UMAP and openTSNE start; any "
       "input), both scaled so that the first coordinate has standard deviation init_scale, or an N x dim array file "
       "(npy, csv/tsv/txt) used as given, unscaled (scikit-learn and openTSNE use a given start as it is; "
       "scale it to about init_scale for the same first steps)."},
      {"repulsion", &HssneParams::repulsion,
       "exact (all pairs, O(N^2)), interpolated (FFT grid, O(N) per iteration, FFTW on the CPU and cuFFT on CUDA; "
       "sparse affinities; force error ~6e-3 at the default grid, 2e-4 at interp_box 0.5), tree (a Barnes-Hut "
       "tree, O(N log N), CPU only, sparse affinities; force error ~4e-3 at tree_angle 0.4) or auto, with "
       "sparse affinities: on a CPU exact below 5,000 points, the tree from 5,000, the grid from 200,000 (where a "
       "map's grid would cost more than the pairs, or in 3-D than the tree, the tree where it costs less than "
       "the pairs); on a GPU exact below 12,000 points, the grid from 12,000 (the pairs where it costs more)."},
      {"tree_angle", &HssneParams::tree_angle,
       "tree: opening angle; a cell of points counts as one at its centre of mass where their farthest is "
       "within tree_angle of its distance (0: every pair).", 0, 1},
      {"interp_nodes", &HssneParams::interp_nodes,
       "interpolated: nodes per box and dimension; each point interpolates from the interp_nodes nearest nodes "
       "per axis.", 2, 8},
      {"interp_box", &HssneParams::interp_box,
       "interpolated: box width in map units (node spacing interp_box / interp_nodes); the error falls as "
       "(interp_box / interp_nodes)^interp_nodes.", 0.05, 4, true},
  };
  return fields;
}

namespace {

// Sum over P of p log p and of p (the constant part of KL).
struct Entropy {
  double plogp = 0.0, psum = 0.0;
};
Entropy entropy_terms(const std::vector<double>& values) {
  Entropy e;
  for (double p : values)
    if (p > 0) e.plogp += p * std::log(p), e.psum += p;
  return e;
}

// The objective the steps with exaggeration c descend: J_c = c sum P log(cP / H) + (sum P) log Z,
// whose gradient is 4 sum_j (c P_ij - Q_ij) S_ij (y_i - y_j) when P sums to 1; J_1 = KL(P || Q).
double objective(const Entropy& ent, const HssneTotals& t, double c) {
  return c * (ent.plogp + ent.psum * std::log(c)) - c * t.p_log_h + ent.psum * std::log(t.z);
}

void check_shapes(index_t n, const MatrixD& Y) {
  if (Y.rows != n) internal_error("hssne: P and Y disagree on N");
  if (Y.cols != 2 && Y.cols != 3) internal_error("hssne: D must be 2 or 3");
}

double objective_on(const MatrixD* P, const SparseAffinity* S, const MatrixD& Y, double alpha, MatrixD* grad,
                    Backend& backend) {
  check_shapes(P ? P->rows : S->num_points, Y);
  const int dim = static_cast<int>(Y.cols);
  auto engine = P ? backend.make_hssne(*P, alpha, dim) : backend.make_hssne(*S, alpha, dim);
  const HssneTotals t = engine->start(Y);
  if (grad) {
    HssneSums s;
    engine->current_sums(s);
    *grad = MatrixD(Y.rows, Y.cols);
    for (index_t i = 0; i < Y.rows; ++i) {
      const auto k = static_cast<size_t>(i);
      for (index_t d = 0; d < Y.cols; ++d)
        (*grad)(i, d) = math::hssne_gradient_coord(Y(i, d), s.a[k], s.hs[k], s.ay(i, d), s.hsy(i, d), 1.0, 1.0 / t.z);
    }
  }
  return objective(entropy_terms(P ? P->data : S->val), t, 1.0);
}

}  // namespace

// J = sum P log P - sum P log H + (sum P) log Z.
double hssne_objective(const MatrixD& P, const MatrixD& Y, double alpha, MatrixD* grad, Backend& backend) {
  return objective_on(&P, nullptr, Y, alpha, grad, backend);
}

double hssne_objective(const SparseAffinity& P, const MatrixD& Y, double alpha, MatrixD* grad, Backend& backend) {
  return objective_on(nullptr, &P, Y, alpha, grad, backend);
}

double hssne_fixed_point_step(const MatrixD& P, double alpha, MatrixD& Y, Backend& backend) {
  check_shapes(P.rows, Y);
  auto engine = backend.make_hssne(P, alpha, static_cast<int>(Y.cols));
  const HssneTotals t = engine->start(Y);
  engine->propose(1.0, 1.0, 0.0);
  engine->accept();
  Y = engine->coords();
  return objective(entropy_terms(P.data), t, 1.0);
}

void HssneEngine::shard(Comm& comm) {
  if (comm.size() > 1)
    internal_error("hssne: the " + name() + " engine runs in one process (" + std::to_string(comm.size()) + " ranks)");
}

RowBlock hssne_rank_block(index_t n, int rank, int ranks) {
  const index_t base = n / ranks, extra = n % ranks;
  return {rank * base + std::min<index_t>(rank, extra), base + (rank < extra ? 1 : 0)};
}

MatrixD mix_same_class_pairs(const MatrixD& P, const std::vector<int>& labels, double rho) {
  if (static_cast<index_t>(labels.size()) != P.rows)
    input_error("labels: " + std::to_string(labels.size()) + " labels for " + std::to_string(P.rows) + " points");
  double pairs = 0;
  for (size_t i = 0; i < labels.size(); ++i)
    for (size_t j = 0; j < labels.size(); ++j)
      if (i != j && labels[i] >= 0 && labels[i] == labels[j]) pairs += 1;
  if (rho > 0 && pairs == 0) input_error("params.rho > 0 needs at least two points with the same known label");
  MatrixD out = P;
  for (index_t i = 0; i < P.rows; ++i)
    for (index_t j = 0; j < P.cols; ++j) {
      const bool same = i != j && labels[static_cast<size_t>(i)] >= 0 &&
                        labels[static_cast<size_t>(i)] == labels[static_cast<size_t>(j)];
      out(i, j) = (1 - rho) * P(i, j) + (same && pairs > 0 ? rho / pairs : 0.0);
    }
  return out;
}

namespace {

// The optimisers, on the engine's state; each iteration exchanges O(1) values with it.
HssneResult fit_impl(HssneEngine& engine, const Entropy& ent, index_t N, const HssneParams& prm,
                     unsigned long long seed, const std::function<void(int, double)>& progress,
                     RunControl* control, const MatrixD* given_start) {
  HssneResult res;
  HssneTotals cur;
  int first = 0;  // iterations done before this process
  int k = 0;      // fixed point: steps since the momentum last restarted
  double step = 1.0;  // fixed point: the fraction of the update taken
  if (const RunState* saved = resume_state(control)) {
    cur = engine.restore({saved->matrix("hssne.y", N, prm.dim), saved->matrix("hssne.prev", N, prm.dim),
                          saved->matrix("hssne.velocity", N, prm.dim), saved->matrix("hssne.gains", N, prm.dim)});
    res.objective_trace = saved->get("hssne.trace");
    for (double it : saved->get("hssne.trace_iterations")) res.objective_iterations.push_back(static_cast<int>(it));
    res.iterations = first = saved->count("hssne.iterations");
    res.evaluations = saved->count("hssne.evaluations");
    res.restarts = saved->count("hssne.restarts");
    res.damped_steps = saved->count("hssne.damped_steps");
    k = saved->count("hssne.k");
    step = saved->scalar("hssne.step");
  } else {
    MatrixD start(N, prm.dim);
    if (given_start) {
      if (given_start->rows != N || given_start->cols != prm.dim)
        internal_error("fit_hssne: the start is not N x dim");
      start = *given_start;
    } else {
      start.data = seeded_gaussian(start.data.size(), seed, prm.init_scale);
    }
    cur = engine.start(start);
    res.evaluations = 1;
  }
  const auto capture = [&] {
    const HssneState e = engine.state();
    RunState s;
    s.put("hssne.y", e.y);
    s.put("hssne.prev", e.prev);
    s.put("hssne.velocity", e.velocity);
    s.put("hssne.gains", e.gains);
    s.put("hssne.trace", res.objective_trace);
    const std::vector<int>& at = res.objective_iterations;
    s.put("hssne.trace_iterations", std::vector<double>(at.begin(), at.end()));
    s.put("hssne.iterations", res.iterations);
    s.put("hssne.evaluations", res.evaluations);
    s.put("hssne.restarts", res.restarts);
    s.put("hssne.damped_steps", res.damped_steps);
    s.put("hssne.k", k);
    s.put("hssne.step", step);
    return s;
  };
  const auto exaggeration_at = [&](int it) { return it < prm.exaggeration_iter ? prm.exaggeration : 1.0; };
  // The trace gets J at the map after `done` iterations; progress is told (shown, J).
  const auto record = [&](int done, const HssneTotals& t, int shown) {
    res.objective_trace.push_back(objective(ent, t, 1.0));
    res.objective_iterations.push_back(done);
    if (progress) progress(shown, res.objective_trace.back());
  };
  res.stop_reason = "max_iter";
  if (prm.optimizer == HssneOptimizer::fixed_point) {
    // Late in a large fit the plain update overshoots for some points again and again (10,000
    // points: 359 halvings after iteration 550). The fraction of the update taken, `step`, keeps
    // each halving and grows back by kStepGrowth per clean iteration, so one overshoot does not
    // cost a failed pass on every iteration that follows (1,537 -> 1,091 passes there).
    constexpr double kStepGrowth = 1.1;
    for (int it = first; it < prm.max_iter; ++it) {
      const double c = exaggeration_at(it);
      if (it > 0 && c != exaggeration_at(it - 1)) k = 0;  // the objective changed under the momentum
      const double j_cur = objective(ent, cur, c);
      const double beta = std::max(0.0, std::min(prm.acceleration, (k - 1.0) / (k + 2.0)));
      HssneTotals trial = engine.propose(c, step, beta);
      ++res.evaluations;
      ++k;
      if (beta > 0 && objective(ent, trial, c) > j_cur) {  // restart: the plain step instead
        trial = engine.propose(c, step, 0.0);
        ++res.evaluations;
        ++res.restarts;
        k = 1;
      }
      // The update can overshoot when coordinates are large (paper, section 4): halve the step
      // towards the current map until J does not increase.
      bool damped = false;
      for (int damp = 0; damp < 20 && objective(ent, trial, c) > j_cur; ++damp) {
        if (damp == 0) ++res.damped_steps;
        trial = engine.damp();
        step *= 0.5;
        damped = true;
        ++res.evaluations;
      }
      if (!damped) step = std::min(1.0, step * kStepGrowth);
      const double j_new = objective(ent, trial, c);
      const bool improved = j_new <= j_cur;
      if (improved) {
        engine.accept();
        cur = trial;
      } else {
        k = 0;
      }
      res.iterations = it + 1;
      record(it + 1, cur, it);
      if (c == 1.0 && (!improved || j_cur - j_new <= prm.tol * std::abs(j_new))) {
        res.stop_reason = "tol";
        break;
      }
      if (it + 1 < prm.max_iter) safe_point(control, it + 1, capture);
      if (stop_requested(control)) {
        res.stop_reason = "callback";
        break;
      }
    }
  } else {
    // KL(P || Q) at the start, every objective_every-th map and the last: the steps need only the
    // gradient, so the others' evaluations skip the objective's logarithms (the maps are the same).
    const int every = std::max(1, prm.objective_every);
    if (first == 0) record(0, cur, 0);
    for (int it = first; it < prm.max_iter; ++it) {
      const double mom = it < prm.momentum_switch ? prm.momentum : prm.final_momentum;
      const bool want = (it + 1) % every == 0 || it + 1 == prm.max_iter;
      cur = engine.gradient_step(exaggeration_at(it), mom, prm.learning_rate, want);
      ++res.evaluations;
      res.iterations = it + 1;
      if (want) record(it + 1, cur, it + 1);
      if (it + 1 < prm.max_iter) safe_point(control, it + 1, capture);
      if (stop_requested(control)) {
        res.stop_reason = "callback";
        break;
      }
    }
  }
  res.coords = engine.coords();
  for (double v : res.coords.data)
    if (!std::isfinite(v)) internal_error("HSSNE produced non-finite coordinates");
  return res;
}

}  // namespace

void check_tree_optimizer(const HssneParams& prm) {
  if (prm.repulsion == HssneRepulsionMode::tree && prm.optimizer == HssneOptimizer::fixed_point)
    input_error("params.optimizer: fixed_point needs a smooth cost, and the tree's changes in steps as points cross "
                "its opening test; use gradient (or auto) with repulsion tree");
}

HssneRepulsionMode auto_repulsion(const HssneParams& prm, index_t num_points, bool has_grid, bool has_tree) {
  if (prm.repulsion != HssneRepulsionMode::automatic) return prm.repulsion;
  // the fixed point reads the tree's steps in J as rises (resolve_repulsion refuses the pair)
  if (has_tree && prm.optimizer != HssneOptimizer::fixed_point && num_points >= kTreeRepulsionMinPoints &&
      num_points < kTreeRepulsionMaxPoints)
    return HssneRepulsionMode::tree;
  if (has_grid && num_points >= kInterpolatedRepulsionMinPoints) return HssneRepulsionMode::interpolated;
  return HssneRepulsionMode::exact;
}

HssneRepulsion resolve_repulsion(const HssneParams& prm, index_t num_points, const Backend& backend) {
  HssneRepulsion r;
  r.grid.nodes = prm.interp_nodes;
  r.grid.box_width = prm.interp_box;
  r.tree_angle = prm.tree_angle;
  const bool automatic = prm.repulsion == HssneRepulsionMode::automatic;
  const HssneRepulsionMode mode =
      auto_repulsion(prm, num_points, backend.has_interpolated_repulsion(), backend.has_tree_repulsion());
  if (mode == HssneRepulsionMode::tree && !backend.has_tree_repulsion())
    input_error("params.repulsion: tree runs on a CPU backend only; use device cpu, or repulsion interpolated");
  check_tree_optimizer(prm);
  r.tree = mode == HssneRepulsionMode::tree;
  r.interpolated = mode == HssneRepulsionMode::interpolated;
  r.exact_when_cheaper = automatic && r.interpolated;  // an explicit `interpolated` keeps the grid at every map
  r.tree_when_grid_dearer = r.exact_when_cheaper && backend.has_tree_repulsion();
  return r;
}

HssneParams resolve_optimizer(const HssneParams& prm, index_t num_points, const HssneRepulsion& repulsion) {
  HssneParams out = prm;
  if (out.optimizer == HssneOptimizer::automatic)
    out.optimizer = repulsion.interpolated || repulsion.tree ? HssneOptimizer::gradient : HssneOptimizer::fixed_point;
  if (out.learning_rate == 0.0)
    out.learning_rate = std::max(200.0, static_cast<double>(num_points) / std::max(1.0, prm.exaggeration));
  return out;
}

HssneResult fit_hssne(const MatrixD& P, const std::vector<int>& labels, const HssneParams& prm,
                      unsigned long long seed, Backend& backend, const std::function<void(int, double)>& progress,
                      RunControl* control, const MatrixD* start, Comm* comm) {
  const MatrixD mixed = prm.rho > 0 ? mix_same_class_pairs(P, labels, prm.rho) : MatrixD();
  const MatrixD& Pm = prm.rho > 0 ? mixed : P;
  if (needs_sparse_affinities(prm.repulsion))
    input_error(std::string("params.repulsion: ") + enum_name(prm.repulsion) +
                " repulsion needs sparse affinities (input.affinities: sparse)");
  auto engine = backend.make_hssne(Pm, prm.alpha, prm.dim);
  if (comm) engine->shard(*comm);
  const HssneParams used = resolve_optimizer(prm, P.rows, HssneRepulsion{});
  HssneResult r = fit_impl(*engine, entropy_terms(Pm.data), P.rows, used, seed, progress, control, start);
  r.used = used;
  return r;
}

HssneResult fit_hssne(const SparseAffinity& P, const HssneParams& prm, unsigned long long seed, Backend& backend,
                      const std::function<void(int, double)>& progress, RunControl* control, const MatrixD* start,
                      Comm* comm) {
  if (prm.rho > 0) input_error("params.rho: semi-supervised mixing needs dense affinities (input.affinities)");
  const HssneRepulsion repulsion = resolve_repulsion(prm, P.num_points, backend);
  auto engine = backend.make_hssne(P, prm.alpha, prm.dim, repulsion);
  if (comm) engine->shard(*comm);
  const HssneParams used = resolve_optimizer(prm, P.num_points, repulsion);
  HssneResult r = fit_impl(*engine, entropy_terms(P.val), P.num_points, used, seed, progress, control, start);
  r.repulsion = repulsion;
  r.used = used;
  return r;
}

}  // namespace orrery
