// Backtracking line search with the Armijo condition f(x + t d) <= f(x) + c t g'd (c = 1e-4) from
// t0; shared by L-BFGS and nonlinear CG. After a failed trial t is halved, or, with `interpolate`,
// moved to the minimiser of the parabola through f(x), the slope g'd and f(x + t d), kept within
// [0.1 t, 0.5 t] (Nocedal and Wright, section 3.5): one or two trials where halving needs several.
// Non-finite trial values count as failures (and halve t).
#pragma once
#include <cmath>
#include <functional>
#include <vector>

namespace orrery::optim {

using Objective = std::function<double(const std::vector<double>& x, std::vector<double>& grad)>;

struct LineSearchResult {
  bool accepted = false;
  double t = 0.0, f = 0.0;
  int evaluations = 0;
};

// The search along one direction: trial(t) evaluates the objective at x + t d (keeping that point
// and its gradient wherever the caller holds them) and returns f there.
template <class Trial>
LineSearchResult backtrack_armijo(Trial&& trial, double f0, double slope, double t0, int max_backtracks,
                                  bool interpolate = false) {
  LineSearchResult r;
  double t = t0;
  for (int bt = 0; bt <= max_backtracks; ++bt) {
    const double fv = trial(t);
    ++r.evaluations;
    if (std::isfinite(fv) && fv <= f0 + 1e-4 * t * slope) {
      r.accepted = true;
      r.t = t;
      r.f = fv;
      return r;
    }
    if (interpolate && std::isfinite(fv)) {
      const double curvature = fv - f0 - slope * t;  // > 0 here, as the Armijo test failed
      const double t_min = -slope * t * t / (2.0 * curvature);
      t = std::min(0.5 * t, std::max(0.1 * t, t_min));
    } else {
      t *= 0.5;
    }
  }
  return r;
}

// The same on host vectors; on success x_new, g_new hold the accepted point and its gradient.
inline LineSearchResult backtrack_armijo(const Objective& f, const std::vector<double>& x, const std::vector<double>& d,
                                         double f0, double slope, double t0, int max_backtracks,
                                         std::vector<double>& x_new, std::vector<double>& g_new,
                                         bool interpolate = false) {
  return backtrack_armijo(
      [&](double t) {
        for (size_t i = 0; i < x.size(); ++i) x_new[i] = x[i] + t * d[i];
        return f(x_new, g_new);
      },
      f0, slope, t0, max_backtracks, interpolate);
}

}  // namespace orrery::optim
