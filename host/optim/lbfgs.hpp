// Limited-memory BFGS (Nocedal & Wright, Alg. 7.4/7.5) with a backtracking Armijo line search.
// Used on PE's class coordinates, where every objective evaluation is a full pass over the
// posteriors; step 1 is accepted almost always, so an iteration costs ~1 evaluation.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "orrery/run_control.hpp"

namespace orrery::optim {

struct LbfgsOptions {
  int memory = 10;            // (s, y) pairs kept
  int max_iter = 1000;        // iterations (accepted steps)
  double grad_sq_tol = 1e-6;  // stop when |grad|^2 < grad_sq_tol ("eps_phi")
  double ftol = 1e-10;        // stop when f_prev - f <= ftol * max(|f|, 1) ("ftol")
  int max_backtracks = 40;    // step halvings before the line search gives up ("line_search")
};

// f(x, grad) returns the objective at x and writes its gradient.
using LbfgsObjective = std::function<double(const std::vector<double>& x, std::vector<double>& grad)>;

struct LbfgsState {
  int iteration = 0;
  int evaluations = 0;
  double f = 0.0;
  double grad_sq = 0.0;
};

struct LbfgsReport {
  LbfgsState last;
  std::string stop_reason;  // "eps_phi", "ftol", "max_iter", "line_search"
};

// Interruptible minimisation (orrery/run_control.hpp): after every accepted step that does not end
// the run, the control's safe point may save x, the gradient, the curvature pairs and the counters
// ("lbfgs.*"), plus what `save` adds for the caller. With a state to resume, the minimisation
// continues from it: no evaluation at the start, no on_iteration for the steps already taken.
struct LbfgsCheckpoint {
  RunControl* control = nullptr;
  std::function<void(RunState&)> save;
};

// Minimises f from x (updated in place). on_iteration is called after the initial evaluation
// (iteration 0) and after every accepted step.
LbfgsReport lbfgs_minimize(const LbfgsObjective& f, std::vector<double>& x, const LbfgsOptions& options,
                           const std::function<void(const LbfgsState&)>& on_iteration = {},
                           const LbfgsCheckpoint& checkpoint = {});

}  // namespace orrery::optim
