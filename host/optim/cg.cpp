#include "optim/cg.hpp"

#include "optim/line_search.hpp"

#include <algorithm>
#include <cmath>

namespace orrery::optim {
namespace {
double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0.0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}
}  // namespace

CgReport cg_minimize(const CgObjective& f, std::vector<double>& x, const CgOptions& o,
                     const std::function<void(int, double)>& progress) {
  CgReport rep;
  std::vector<double> g(x.size()), g_new(x.size()), x_new(x.size()), d(x.size());
  rep.f = f(x, g);
  rep.evaluations = 1;
  for (size_t i = 0; i < x.size(); ++i) d[i] = -g[i];
  double step = 1.0 / std::max(1.0, std::sqrt(dot(g, g)));
  rep.stop_reason = "max_iter";
  bool grow = true;  // the last line search took its first trial
  for (int it = 0; it < o.max_iter; ++it) {
    double gsq = dot(g, g);
    if (gsq < o.grad_sq_tol) {
      rep.stop_reason = "gradient";
      break;
    }
    double slope = dot(g, d);
    if (!(slope < 0)) {  // lost conjugacy: restart
      for (size_t i = 0; i < x.size(); ++i) d[i] = -g[i];
      slope = -gsq;
    }
    const double t0 = grow ? step * 2.0 : step;
    const LineSearchResult ls = backtrack_armijo(f, x, d, rep.f, slope, t0, o.max_backtracks, x_new, g_new, true);
    rep.evaluations += ls.evaluations;
    grow = ls.evaluations == 1;
    if (!ls.accepted) {
      rep.stop_reason = "line_search";
      break;
    }
    step = ls.t;
    const double f_new = ls.f;
    const double beta = (it + 1) % o.restart == 0 ? 0.0 : std::max(0.0, (dot(g_new, g_new) - dot(g_new, g)) / gsq);
    for (size_t i = 0; i < x.size(); ++i) d[i] = -g_new[i] + beta * d[i];
    const double f_old = rep.f;
    x.swap(x_new);
    g.swap(g_new);
    rep.f = f_new;
    rep.iterations = it + 1;
    rep.trace.push_back(f_new);
    if (progress) progress(it, f_new);
    if (f_old - f_new <= o.ftol * std::max(std::abs(f_new), 1.0)) {
      rep.stop_reason = "ftol";
      break;
    }
  }
  return rep;
}

}  // namespace orrery::optim
