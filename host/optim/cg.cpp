#include "optim/cg.hpp"

#include <algorithm>
#include <cmath>

#include "optim/line_search.hpp"
#include "orrery/error.hpp"

namespace orrery::optim {

CgReport cg_minimize(CgProblem& p, const CgOptions& o, const std::function<void(int, double)>& progress,
                     RunControl* control) {
  using V = CgProblem;
  CgReport rep;
  double step = 0.0;
  bool grow = true;  // the last line search took its first trial
  int first = 0;
  if (const RunState* saved = resume_state(control)) {
    p.set(V::kX, saved->get("cg.x"));
    p.set(V::kGradient, saved->get("cg.g"));
    p.set(V::kDirection, saved->get("cg.d"));
    rep.f = saved->scalar("cg.f");
    rep.evaluations = saved->count("cg.evaluations");
    rep.iterations = first = saved->count("cg.iterations");
    rep.trace = saved->get("cg.trace");
    step = saved->scalar("cg.step");
    grow = saved->scalar("cg.grow") != 0.0;
  } else {
    rep.f = p.evaluate();
    rep.evaluations = 1;
    p.set_direction(0.0);
    step = 1.0 / std::max(1.0, std::sqrt(p.dot(V::kGradient, V::kGradient)));
  }
  rep.stop_reason = "max_iter";
  const auto capture = [&] {
    RunState s;
    s.put("cg.x", p.get(V::kX));
    s.put("cg.g", p.get(V::kGradient));
    s.put("cg.d", p.get(V::kDirection));
    s.put("cg.f", rep.f);
    s.put("cg.evaluations", rep.evaluations);
    s.put("cg.iterations", rep.iterations);
    s.put("cg.trace", rep.trace);
    s.put("cg.step", step);
    s.put("cg.grow", grow ? 1.0 : 0.0);
    return s;
  };
  for (int it = first; it < o.max_iter; ++it) {
    const double gsq = p.dot(V::kGradient, V::kGradient);
    if (gsq < o.grad_sq_tol) {
      rep.stop_reason = "gradient";
      break;
    }
    double slope = p.dot(V::kGradient, V::kDirection);
    if (!(slope < 0)) {  // lost conjugacy: restart
      p.set_direction(0.0);
      slope = -gsq;
    }
    const double t0 = grow ? step * 2.0 : step;
    const LineSearchResult ls =
        backtrack_armijo([&](double t) { return p.evaluate_trial(t); }, rep.f, slope, t0, o.max_backtracks, true);
    rep.evaluations += ls.evaluations;
    grow = ls.evaluations == 1;
    if (!ls.accepted) {
      rep.stop_reason = "line_search";
      break;
    }
    step = ls.t;
    p.accept_trial();  // the old gradient is now the trial's
    const double beta = (it + 1) % o.restart == 0
                            ? 0.0
                            : std::max(0.0, (p.dot(V::kGradient, V::kGradient) - p.dot(V::kGradient, V::kTrialGradient)) / gsq);
    p.set_direction(beta);
    const double f_old = rep.f;
    rep.f = ls.f;
    rep.iterations = it + 1;
    rep.trace.push_back(ls.f);
    if (progress) progress(it, ls.f);
    if (f_old - ls.f <= o.ftol * std::max(std::abs(ls.f), 1.0)) {
      rep.stop_reason = "ftol";
      break;
    }
    if (it + 1 < o.max_iter) safe_point(control, it + 1, capture);
    if (stop_requested(control)) {
      rep.stop_reason = "callback";
      break;
    }
  }
  return rep;
}

namespace {

// Host vectors, for objectives evaluated on the host.
class HostProblem final : public CgProblem {
 public:
  HostProblem(const CgObjective& f, std::vector<double>& x)
      : f_(f), x_(x), g_(x.size()), d_(x.size()), t_(x.size()), tg_(x.size()) {}
  double evaluate() override { return f_(x_, g_); }
  double evaluate_trial(double t) override {
    for (size_t i = 0; i < x_.size(); ++i) t_[i] = x_[i] + t * d_[i];
    return f_(t_, tg_);
  }
  double dot(Vector a, Vector b) override {
    const std::vector<double>&u = vec(a), &v = vec(b);
    double s = 0.0;
    for (size_t i = 0; i < u.size(); ++i) s += u[i] * v[i];
    return s;
  }
  void set_direction(double beta) override {
    if (beta == 0.0)
      for (size_t i = 0; i < d_.size(); ++i) d_[i] = -g_[i];
    else
      for (size_t i = 0; i < d_.size(); ++i) d_[i] = -g_[i] + beta * d_[i];
  }
  void accept_trial() override {
    x_.swap(t_);
    g_.swap(tg_);
  }
  std::vector<double> get(Vector v) override { return vec(v); }
  void set(Vector v, const std::vector<double>& values) override {
    if (values.size() != x_.size()) internal_error("checkpoint: a conjugate-gradient vector has the wrong size");
    vec(v) = values;
  }

 private:
  std::vector<double>& vec(Vector v) {
    switch (v) {
      case kX: return x_;
      case kGradient: return g_;
      case kDirection: return d_;
      case kTrial: return t_;
      default: return tg_;
    }
  }
  const CgObjective& f_;
  std::vector<double>& x_;
  std::vector<double> g_, d_, t_, tg_;
};

}  // namespace

CgReport cg_minimize(const CgObjective& f, std::vector<double>& x, const CgOptions& o,
                     const std::function<void(int, double)>& progress, RunControl* control) {
  HostProblem p(f, x);
  return cg_minimize(p, o, progress, control);
}

}  // namespace orrery::optim
