// Parametric Embedding (Iwata et al., 2007; MATH.md §1): class posteriors p(c_k | x_n) -> object
// coordinates R (N x D) and class coordinates Phi (K x D) such that a Gaussian mixture placed at
// Phi reproduces the posteriors at R.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "orrery/backend.hpp"
#include "orrery/comm.hpp"
#include "orrery/config.hpp"
#include "orrery/run_control.hpp"
#include "orrery/types.hpp"

namespace orrery {

// PeParams::class_init.
enum class PeClassInit { mds, random, file };
template <>
struct EnumNames<PeClassInit> {
  static constexpr std::array<const char*, 3> names = {"mds", "random", "file"};
};

struct PeParams {
  // Output dimension D of the map (2 or 3).
  int dim = 2;
  // eta_r: weight of the Gaussian prior eta_r |r_n|^2 on object coordinates. Keeps every
  // per-object problem strictly convex (Hessian >= 2 eta_r I) and pulls confused objects
  // toward the centre. Paper: 0.1.
  double eta_r = 0.1;
  // eta_phi: weight of eta_phi |phi_k|^2 on class coordinates; larger values pull classes
  // together (smaller map). Paper: 50.
  double eta_phi = 50.0;
  // eps_r: an object is converged when |dJ/dr_n|^2 < eps_r (paper step 3).
  double eps_r = 1e-8;
  // eps_phi: the fit stops when |dJ/dPhi|^2 < eps_phi (paper step 7).
  double eps_phi = 1e-6;
  // ftol: the fit also stops when an L-BFGS step lowers J by less than ftol * max(|J|, 1);
  // float arithmetic on a GPU cannot reach a tiny eps_phi for very large N.
  double ftol = 1e-10;
  // Cap on L-BFGS iterations on the class coordinates (outer iterations).
  int max_iter = 1000;
  // Cap on Newton iterations per object per sweep (steps 2-5).
  int newton_max_iter = 50;
  // Number of (s, y) pairs kept by L-BFGS.
  int lbfgs_memory = 10;
  // Initial class coordinates: "mds" (classical MDS of the classes' posterior columns,
  // deterministic), "random" (Gaussian, seeded), or "file" (input.class_coords).
  PeClassInit class_init = PeClassInit::mds;
  // RMS radius of the initial class coordinates for "mds" and "random".
  double init_scale = 2.0;
  // false: keep the class coordinates given in input.class_coords and place the objects only
  // (PE's out-of-sample mode); the result is then independent of the seed.
  bool fit_classes = true;
};

const std::vector<Field<PeParams>>& pe_fields();

// Inputs of one PE fit, validated by the caller (io/ or the run layer).
struct PeInput {
  MatrixD posteriors;           // N x K, rows non-negative summing to 1
  std::vector<double> priors;   // K entries summing to 1; empty -> uniform
  MatrixD class_coords;         // K x D or empty; required for class_init "file" / fit_classes false
};

// One outer iteration, as recorded in the report and shown as progress.
struct PeTraceEntry {
  int iteration = 0;
  double objective = 0.0;       // J(R, Phi), eta_phi term included
  double class_grad_sq = 0.0;   // |dJ/dPhi|^2
  double max_object_grad_sq = 0.0;
  index_t newton_steps = 0;
  int evaluations = 0;          // objective evaluations (object sweeps) so far
  double seconds = 0.0;         // since the fit started
};

struct PeResult {
  MatrixD object_coords;   // N x D
  MatrixD class_coords;    // K x D
  double objective = 0.0;
  std::string stop_reason;  // "eps_phi", "ftol", "max_iter", "line_search", "classes_fixed"
  bool objects_converged = false;  // every |dJ/dr_n|^2 < eps_r at the end
  int iterations = 0;
  int evaluations = 0;
  std::vector<PeTraceEntry> trace;
  double seconds_init = 0.0, seconds_fit = 0.0;
  // Per rank of the fit's communicator (one entry in a single process): the objects it owned and
  // its fit seconds.
  std::vector<index_t> rank_objects;
  std::vector<double> rank_seconds_fit;
};

using PeProgress = std::function<void(const PeTraceEntry&)>;

// The objects [begin, end) that rank `rank` of `ranks` owns in a fit over `objects` objects:
// contiguous blocks of whole kPeChunk chunks (orrery/engines.hpp), as even in chunks as they can be;
// a rank may own none (fewer chunks than ranks) and the last block ends at `objects`.
struct PeBlock {
  index_t begin = 0, end = 0;
};
PeBlock pe_rank_block(index_t objects, int rank, int ranks);

// Fits PE on `backend`. Same input, seed and backend -> same result, bit for bit. With a control
// (orrery/run_control.hpp) the fit can stop at the end of an L-BFGS iteration and continue from the
// saved state with the same bits (classes fixed: a single evaluation, nothing to interrupt).
// With a communicator of several ranks (null: one process), every rank passes the same input and
// parameters and its engine holds only its block of objects (pe_rank_block); the sums over objects
// are exact (orrery/exact_sum.hpp), so on the CPU the result equals the one-process result bit for
// bit, whatever the number of ranks, and every rank returns all of it. Every rank takes a control
// or none; its captured state holds every rank's objects (gathered at the safe point), so a run
// stopped under G ranks resumes under any number.
PeResult fit_pe(Backend& backend, const PeInput& input, const PeParams& params, unsigned long long seed,
                const PeProgress& progress = {}, RunControl* control = nullptr, Comm* comm = nullptr);

// Posterior q_nk = p(c_k | r_n) of the fitted map (N x K), for reports and tests.
MatrixD pe_map_posteriors(const MatrixD& object_coords, const MatrixD& class_coords,
                          const std::vector<double>& priors);

// PE's prec(h) (paper eq. 12): mean over classes of |top-h objects by P_nk ∩ h objects nearest
// phi_k| / h. Ties are broken by the lower object index.
double pe_precision_at(const MatrixD& posteriors, const MatrixD& object_coords, const MatrixD& class_coords, index_t h);

}  // namespace orrery
