// The optimisers' checkpoint hooks without the command line: a minimisation stopped at a safe point
// and continued in a fresh call from the state it saved ends with the same bits as one never
// stopped, and a control is offered a state at every iteration that does not end the run.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "optim/cg.hpp"
#include "optim/lbfgs.hpp"
#include "common/stop_control.hpp"
#include "orrery/run_control.hpp"

using namespace orrery;

namespace {

// Rosenbrock's valley in n dimensions: curved enough that L-BFGS and CG take dozens of iterations
// with backtracking, so their saved state has everything in it.
double rosenbrock(const std::vector<double>& x, std::vector<double>& g) {
  g.assign(x.size(), 0.0);
  double f = 0.0;
  for (size_t i = 0; i + 1 < x.size(); ++i) {
    const double a = x[i + 1] - x[i] * x[i], b = 1.0 - x[i];
    f += 100.0 * a * a + b * b;
    g[i] += -400.0 * a * x[i] - 2.0 * b;
    g[i + 1] += 200.0 * a;
  }
  return f;
}

// Stopped after every iteration k in turn (the state differs from one to the next: a line search
// that backtracked, a restart, a pair dropped), each resume must end where the full run does.
template <class Minimise>
void expect_resume_is_exact(const char* name, Minimise minimise) {
  std::vector<double> x_full(6, -1.2);
  const auto full = minimise(x_full, nullptr);
  ASSERT_GT(full.first, 25) << name << ": needs more iterations than the stops";
  for (int k = 1; k <= 24; ++k) {
    test::StopControl control(k);
    std::vector<double> x(6, -1.2);
    EXPECT_THROW(minimise(x, &control), Interrupted) << name;
    EXPECT_EQ(control.iterations.size(), static_cast<size_t>(k)) << name << ": one safe point per iteration";
    control.continue_next();
    std::vector<double> x_resumed(6, 7.0);  // the saved state, not this start, is where it continues
    const auto resumed = minimise(x_resumed, &control);
    EXPECT_EQ(resumed.first, full.first) << name << " stopped at " << k;
    EXPECT_EQ(resumed.second, full.second) << name << " stopped at " << k << ": evaluations, objective, trace";
    EXPECT_EQ(x_resumed, x_full) << name << " stopped at " << k;
    EXPECT_EQ(control.iterations[static_cast<size_t>(k)], k + 1) << name << ": the resumed run's first safe point";
  }
}

}  // namespace

TEST(RunControl, LbfgsStoppedAndResumedEqualsUninterrupted) {
  expect_resume_is_exact("L-BFGS", [](std::vector<double>& x, RunControl* control) {
    optim::LbfgsOptions o;
    o.memory = 3;
    o.grad_sq_tol = 1e-20;
    o.ftol = 0;
    o.max_iter = 60;
    const auto r = optim::lbfgs_minimize(rosenbrock, x, o, {}, {control, {}});
    return std::pair{r.last.iteration, std::vector<double>{double(r.last.evaluations), r.last.f, r.last.grad_sq}};
  });
}

TEST(RunControl, ConjugateGradientStoppedAndResumedEqualsUninterrupted) {
  expect_resume_is_exact("CG", [](std::vector<double>& x, RunControl* control) {
    optim::CgOptions o;
    o.max_iter = 60;
    o.ftol = 0;
    o.restart = 7;
    const auto r = optim::cg_minimize(rosenbrock, x, o, {}, control);
    std::vector<double> v{double(r.evaluations), r.f};
    v.insert(v.end(), r.trace.begin(), r.trace.end());
    return std::pair{r.iterations, v};
  });
}
