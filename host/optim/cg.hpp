// Nonlinear conjugate gradient, Polak-Ribiere+ (beta = max(0, g'(g - g_old) / g_old'g_old)), with
// a restart to steepest descent every `restart` iterations or when the direction is not a
// descent direction, and a backtracking Armijo line search with parabolic interpolation
// (optim/line_search.hpp). Its first trial step is the last accepted one, doubled when that one was
// the first trial of its search: a search that had to backtrack has found the scale, and doubling
// it again would cost a failed trial on most iterations. On NeRV this takes about 1.4 evaluations
// per iteration where doubling every time and halving took 2, and reaches a lower cost at the same
// iteration count. Used by NeRV, as in the paper, and by supervised NeRV's class model.
//
// The algorithm is written once over CgProblem, whose vectors live wherever the objective is
// evaluated (a NeRV engine keeps them on its device): each operation moves O(1) values.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "orrery/run_control.hpp"

namespace orrery::optim {

struct CgOptions {
  int max_iter = 500;
  double ftol = 1e-9;        // stop when f_prev - f <= ftol * max(|f|, 1)
  double grad_sq_tol = 1e-12;
  int restart = 50;
  int max_backtracks = 40;
};

struct CgReport {
  int iterations = 0, evaluations = 0;
  double f = 0.0;
  std::vector<double> trace;  // f after each iteration
  std::string stop_reason;    // "ftol", "gradient", "max_iter", "line_search"
};

// The vectors of one minimisation: the iterate x with its gradient g, the direction d, and a trial
// point x + t d with its gradient.
class CgProblem {
 public:
  enum Vector { kX, kGradient, kDirection, kTrial, kTrialGradient };
  virtual ~CgProblem() = default;
  virtual double evaluate() = 0;                // f(x); g = grad f(x)
  virtual double evaluate_trial(double t) = 0;  // trial = x + t d; f(trial) and its gradient
  virtual double dot(Vector a, Vector b) = 0;   // a . b, summed in a fixed order
  virtual void set_direction(double beta) = 0;  // d = -g + beta d (beta = 0: d = -g)
  virtual void accept_trial() = 0;              // x, g <- trial, its gradient
  // Copies of x, g or d to and from the host, for checkpoints only.
  virtual std::vector<double> get(Vector v) = 0;
  virtual void set(Vector v, const std::vector<double>& values) = 0;
};

// Minimises from the problem's current x, leaving the last accepted iterate there. With a control
// (orrery/run_control.hpp), the end of every iteration that does not stop the minimisation is a
// safe point whose state is x, g, d, the step scale and the counters and trace ("cg.*"); with a
// state to resume, the minimisation continues from it (x, g and d are set, nothing is evaluated).
CgReport cg_minimize(CgProblem& problem, const CgOptions& options,
                     const std::function<void(int, double)>& progress = {}, RunControl* control = nullptr);

// The same on host vectors: x is the start and, on return, the last accepted iterate.
using CgObjective = std::function<double(const std::vector<double>& x, std::vector<double>& grad)>;
CgReport cg_minimize(const CgObjective& f, std::vector<double>& x, const CgOptions& options,
                     const std::function<void(int, double)>& progress = {}, RunControl* control = nullptr);

}  // namespace orrery::optim
