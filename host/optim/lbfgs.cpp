#include "optim/lbfgs.hpp"

#include "optim/line_search.hpp"

#include <algorithm>
#include <cmath>
#include <deque>

namespace orrery::optim {
namespace {

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0.0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

struct Pair {
  std::vector<double> s, y;
  double rho;
};

// Two-loop recursion: d = -H g with H the L-BFGS inverse-Hessian approximation, scaled
// initially by gamma = s'y / y'y of the newest pair (Nocedal & Wright eq. 7.20).
std::vector<double> direction(const std::deque<Pair>& mem, const std::vector<double>& g) {
  std::vector<double> q = g;
  std::vector<double> alpha(mem.size());
  for (size_t i = mem.size(); i-- > 0;) {
    alpha[i] = mem[i].rho * dot(mem[i].s, q);
    for (size_t j = 0; j < q.size(); ++j) q[j] -= alpha[i] * mem[i].y[j];
  }
  double gamma = 1.0;
  if (!mem.empty()) gamma = dot(mem.back().s, mem.back().y) / dot(mem.back().y, mem.back().y);
  for (double& v : q) v *= gamma;
  for (size_t i = 0; i < mem.size(); ++i) {
    const double beta = mem[i].rho * dot(mem[i].y, q);
    for (size_t j = 0; j < q.size(); ++j) q[j] += mem[i].s[j] * (alpha[i] - beta);
  }
  for (double& v : q) v = -v;
  return q;
}

// The whole optimiser state, for a checkpoint: pairs flattened oldest first.
RunState save_state(const std::vector<double>& x, const std::vector<double>& g, const LbfgsState& st,
                    const std::deque<Pair>& mem) {
  RunState s;
  s.put("lbfgs.x", x);
  s.put("lbfgs.g", g);
  s.put("lbfgs.f", st.f);
  s.put("lbfgs.grad_sq", st.grad_sq);
  s.put("lbfgs.iteration", st.iteration);
  s.put("lbfgs.evaluations", st.evaluations);
  std::vector<double> sv, yv, rho;
  for (const Pair& p : mem) {
    sv.insert(sv.end(), p.s.begin(), p.s.end());
    yv.insert(yv.end(), p.y.begin(), p.y.end());
    rho.push_back(p.rho);
  }
  s.put("lbfgs.s", sv);
  s.put("lbfgs.y", yv);
  s.put("lbfgs.rho", rho);
  return s;
}

void load_state(const RunState& s, std::vector<double>& x, std::vector<double>& g, LbfgsState& st,
                std::deque<Pair>& mem) {
  const size_t n = x.size();
  x = s.get("lbfgs.x");
  g = s.get("lbfgs.g");
  const std::vector<double>&sv = s.get("lbfgs.s"), &yv = s.get("lbfgs.y"), &rho = s.get("lbfgs.rho");
  if (x.size() != n || g.size() != n || sv.size() != rho.size() * n || yv.size() != sv.size())
    internal_error("checkpoint: the L-BFGS state does not match the problem's size");
  st.f = s.scalar("lbfgs.f");
  st.grad_sq = s.scalar("lbfgs.grad_sq");
  st.iteration = s.count("lbfgs.iteration");
  st.evaluations = s.count("lbfgs.evaluations");
  for (size_t i = 0; i < rho.size(); ++i)
    mem.push_back({std::vector<double>(sv.begin() + i * n, sv.begin() + (i + 1) * n),
                   std::vector<double>(yv.begin() + i * n, yv.begin() + (i + 1) * n), rho[i]});
}

}  // namespace

LbfgsReport lbfgs_minimize(const LbfgsObjective& f, std::vector<double>& x, const LbfgsOptions& options,
                           const std::function<void(const LbfgsState&)>& on_iteration,
                           const LbfgsCheckpoint& checkpoint) {
  LbfgsReport report;
  LbfgsState& st = report.last;
  std::vector<double> g(x.size());
  std::deque<Pair> mem;
  if (const RunState* saved = resume_state(checkpoint.control)) {
    load_state(*saved, x, g, st, mem);
  } else {
    st.f = f(x, g);
    st.evaluations = 1;
    st.grad_sq = dot(g, g);
    if (on_iteration) on_iteration(st);
  }
  std::vector<double> x_new(x.size()), g_new(x.size());
  while (true) {
    if (st.grad_sq < options.grad_sq_tol) {
      report.stop_reason = "eps_phi";
      break;
    }
    if (st.iteration >= options.max_iter) {
      report.stop_reason = "max_iter";
      break;
    }
    std::vector<double> d = direction(mem, g);
    double slope = dot(g, d);
    if (!(slope < 0.0)) {  // not a descent direction (round-off): restart from steepest descent
      mem.clear();
      d = g;
      for (double& v : d) v = -v;
      slope = -st.grad_sq;
    }
    // First step without curvature information: unit length, as the scale of x is unknown.
    double t = mem.empty() ? std::min(1.0, 1.0 / std::sqrt(st.grad_sq)) : 1.0;
    const LineSearchResult ls = backtrack_armijo(f, x, d, st.f, slope, t, options.max_backtracks, x_new, g_new);
    st.evaluations += ls.evaluations;
    if (!ls.accepted) {
      report.stop_reason = "line_search";
      break;
    }
    const double f_new = ls.f;
    Pair p{std::vector<double>(x.size()), std::vector<double>(x.size()), 0.0};
    for (size_t i = 0; i < x.size(); ++i) {
      p.s[i] = x_new[i] - x[i];
      p.y[i] = g_new[i] - g[i];
    }
    const double sy = dot(p.s, p.y);
    // Keep only pairs with positive curvature so the approximation stays positive definite.
    if (sy > 1e-12 * std::sqrt(dot(p.s, p.s) * dot(p.y, p.y))) {
      p.rho = 1.0 / sy;
      mem.push_back(std::move(p));
      if (static_cast<int>(mem.size()) > options.memory) mem.pop_front();
    }
    const double f_old = st.f;
    x = x_new;
    g = g_new;
    st.f = f_new;
    st.grad_sq = dot(g, g);
    ++st.iteration;
    if (on_iteration) on_iteration(st);
    if (f_old - st.f <= options.ftol * std::max(std::abs(st.f), 1.0) && st.grad_sq >= options.grad_sq_tol) {
      report.stop_reason = "ftol";
      break;
    }
    safe_point(checkpoint.control, st.iteration, [&] {
      RunState s = save_state(x, g, st, mem);
      if (checkpoint.save) checkpoint.save(s);
      return s;
    });
  }
  return report;
}

}  // namespace orrery::optim
