// The optimisers' line search and nonlinear conjugate gradient on functions whose minima are known.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "optim/cg.hpp"
#include "optim/line_search.hpp"

using namespace orrery;

namespace {

// f(x) = sum_k a_k (x_k - 1)^2 with a_k from 1 to `cond`: minimum 0 at x = 1.
optim::Objective quadratic(int n, double cond, int* evaluations) {
  return [=](const std::vector<double>& x, std::vector<double>& g) {
    ++*evaluations;
    g.assign(x.size(), 0.0);
    double f = 0.0;
    for (int k = 0; k < n; ++k) {
      const double a = n > 1 ? 1.0 + (cond - 1.0) * k / (n - 1) : 1.0;
      f += a * (x[k] - 1.0) * (x[k] - 1.0);
      g[k] = 2.0 * a * (x[k] - 1.0);
    }
    return f;
  };
}

}  // namespace

TEST(LineSearch, InterpolationLandsOnTheMinimumOfAParabola) {
  // f(t) = (t - 1)^2 along d = 1 from 0: f0 = 1, slope -2; the first trial t0 = 8 fails.
  int evals = 0;
  const auto f = quadratic(1, 1.0, &evals);
  std::vector<double> x{0.0}, d{1.0}, x_new(1), g_new(1);
  const optim::LineSearchResult r = optim::backtrack_armijo(f, x, d, 1.0, -2.0, 8.0, 40, x_new, g_new, true);
  ASSERT_TRUE(r.accepted);
  EXPECT_EQ(r.evaluations, 2) << "the parabola through f(0), f'(0), f(8) has its minimum at t = 1";
  EXPECT_DOUBLE_EQ(r.t, 1.0);
  EXPECT_DOUBLE_EQ(x_new[0], 1.0);
  EXPECT_DOUBLE_EQ(r.f, 0.0);
  // Halving tries 8, 4, 2 (f = 1, not below the Armijo line) and accepts 1.
  const optim::LineSearchResult h = optim::backtrack_armijo(f, x, d, 1.0, -2.0, 8.0, 40, x_new, g_new, false);
  EXPECT_EQ(h.evaluations, 4);
  EXPECT_DOUBLE_EQ(h.t, 1.0);
}

TEST(LineSearch, InterpolatedStepsStayWithinTheSafeguards) {
  // A very curved failure (f(t0) huge) would put the parabola's minimum near 0: the step is kept at
  // 0.1 t; a barely failed one would put it past t: the step is kept at 0.5 t.
  int evals = 0;
  std::vector<double> x{0.0}, d{1.0}, x_new(1), g_new(1);
  const optim::Objective steep = [&](const std::vector<double>& v, std::vector<double>& g) {
    ++evals;
    g.assign(1, 0.0);
    return v[0] > 5.0 ? 1e12 : 1.0 - 1e-6 * v[0];
  };
  const optim::LineSearchResult r = optim::backtrack_armijo(steep, x, d, 1.0, -1e-3, 10.0, 40, x_new, g_new, true);
  ASSERT_TRUE(r.accepted);
  EXPECT_DOUBLE_EQ(r.t, 1.0) << "10 -> 0.1 x 10";
  // f(t) = 1 - 1e-4 t: slope -1e-4 but only 1e-4 * c short of Armijo at every t, so every trial fails
  // by a hair and the parabola's minimum lies beyond t; with the 0.5 cap the trials are 8, 4, 2, ...
  const optim::Objective flat = [&](const std::vector<double>& v, std::vector<double>& g) {
    g.assign(1, 0.0);
    return 1.0 - 0.5e-4 * 1e-4 * v[0];
  };
  const optim::LineSearchResult q = optim::backtrack_armijo(flat, x, d, 1.0, -1e-4, 8.0, 3, x_new, g_new, true);
  EXPECT_FALSE(q.accepted);
  EXPECT_EQ(q.evaluations, 4);
}

TEST(ConjugateGradient, MinimisesAnIllConditionedQuadratic) {
  int evals = 0;
  const auto f = quadratic(30, 100.0, &evals);
  std::vector<double> x(30, 0.0);
  optim::CgOptions o;
  o.max_iter = 2000;
  o.ftol = 0.0;
  o.grad_sq_tol = 1e-20;
  const optim::CgReport rep = optim::cg_minimize(f, x, o);
  EXPECT_EQ(rep.stop_reason, "gradient");
  for (double v : x) EXPECT_NEAR(v, 1.0, 1e-9);
  EXPECT_EQ(rep.evaluations, evals);
  EXPECT_LT(rep.evaluations, 2 * rep.iterations) << "most iterations take their first trial step";
  for (size_t i = 1; i < rep.trace.size(); ++i) EXPECT_LE(rep.trace[i], rep.trace[i - 1]);
}

TEST(ConjugateGradient, MinimisesRosenbrock) {
  const optim::Objective f = [](const std::vector<double>& x, std::vector<double>& g) {
    const double a = 1.0 - x[0], b = x[1] - x[0] * x[0];
    g = {-2.0 * a - 400.0 * x[0] * b, 200.0 * b};
    return a * a + 100.0 * b * b;
  };
  std::vector<double> x{-1.2, 1.0};
  optim::CgOptions o;
  o.max_iter = 20000;
  o.ftol = 0.0;
  o.grad_sq_tol = 1e-18;
  const optim::CgReport rep = optim::cg_minimize(f, x, o);
  EXPECT_NEAR(x[0], 1.0, 1e-6) << rep.stop_reason;
  EXPECT_NEAR(x[1], 1.0, 1e-6) << rep.stop_reason;
}
