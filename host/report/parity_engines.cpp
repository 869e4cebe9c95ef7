// The engine comparisons of orrery/parity.hpp: what the gpu suite and `orrery check` both run.
#include <algorithm>
#include <cmath>
#include <string>

#include "orrery/backend.hpp"
#include "orrery/hssne.hpp"
#include "orrery/nerv.hpp"
#include "orrery/parity.hpp"
#include "orrery/plsv.hpp"

namespace orrery {
namespace {

// Collects comparisons under their tolerances.
struct Collector {
  Comparisons out;
  void add(const std::string& output, const std::string& tol, const std::vector<double>& ref,
           const std::vector<double>& dev, double scale = -1.0) {
    out.push_back({output, tol, compare(ref, dev, tolerance(tol), scale)});
  }
  void add(const std::string& output, const std::string& tol, double ref, double dev, double scale = -1.0) {
    add(output, tol, std::vector<double>{ref}, std::vector<double>{dev}, scale);
  }
};

double largest(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

// `moved`: the maps are each engine's own after steps, which agree only to hssne.map, so the sums
// are held to hssne.moved_sums; otherwise both engines hold the same map.
void hssne_sums(HssneEngine& ref, HssneEngine& dev, Collector& c, const std::string& when, bool moved = false) {
  HssneSums r, d;
  ref.current_sums(r);
  dev.current_sums(d);
  const std::string sums = moved ? "hssne.moved_sums" : "hssne.row_sums";
  const std::string attraction = moved ? "hssne.moved_sums" : "hssne.attraction";
  const std::string weighted = moved ? "hssne.moved_sums" : "hssne.weighted_sums";
  c.add(when + " sums h", sums, r.h, d.h);
  c.add(when + " sums hs", sums, r.hs, d.hs);
  c.add(when + " sums a", attraction, r.a, d.a);
  c.add(when + " sums p_log_h", attraction, r.p_log_h, d.p_log_h);
  // The y-weighted sums partly cancel: measured against their weights' row sums.
  c.add(when + " sums hsy", weighted, r.hsy.data, d.hsy.data, largest(r.hs));
  c.add(when + " sums ay", weighted, r.ay.data, d.ay.data, largest(r.a));
}

void hssne_totals(const HssneTotals& r, const HssneTotals& d, Collector& c, const std::string& when) {
  c.add(when + " Z", "hssne.totals", r.z, d.z);
  c.add(when + " sum P log H", "hssne.totals", r.p_log_h, d.p_log_h);
}

// A proposal with momentum (from the previous iterate), accepted, then a gradient step (from the
// velocity and gains): the steps that read the optimiser's state beyond the map.
void momentum_and_gradient_steps(HssneEngine& ref, HssneEngine& dev, Collector& c, const std::string& when) {
  hssne_totals(ref.propose(1.0, 0.8, 0.5), dev.propose(1.0, 0.8, 0.5), c, when + "propose with momentum:");
  ref.accept();
  dev.accept();
  c.add(when + "accepted trial with momentum", "hssne.map", ref.coords().data, dev.coords().data);
  hssne_totals(ref.gradient_step(2.0, 0.5, 50.0, true), dev.gradient_step(2.0, 0.5, 50.0, true), c,
               when + "gradient step:");
  c.add(when + "after the gradient step", "hssne.map", ref.coords().data, dev.coords().data);
}

}  // namespace

Comparisons compare_placement_engines(PlacementEngine& ref, PlacementEngine& dev, const PlacementParams& params,
                                      int early) {
  Collector c;
  ref.start();
  dev.start();
  PlacementResult r = ref.result(), d = dev.result();
  c.add("start places (weighted medians of reference places)", "exact", r.coords.data, d.coords.data);
  c.add("start costs", "place.cost", r.cost, d.cost);
  index_t moving_ref = r.coords.rows, moving_dev = d.coords.rows;
  int it = 0;
  for (; it < std::min(early, params.max_iter) && moving_ref > 0; ++it) {
    moving_ref = ref.step(params.tol);
    moving_dev = dev.step(params.tol);
  }
  const std::string after = " after " + std::to_string(it) + " steps";
  r = ref.result(), d = dev.result();
  c.add("places" + after, "place.steps", r.coords.data, d.coords.data);
  c.add("costs" + after, "place.cost", r.cost, d.cost);
  c.add("points moving" + after, "exact", static_cast<double>(moving_ref), static_cast<double>(moving_dev));
  for (; it < params.max_iter && (moving_ref > 0 || moving_dev > 0); ++it) {
    if (moving_ref > 0) moving_ref = ref.step(params.tol);
    if (moving_dev > 0) moving_dev = dev.step(params.tol);
  }
  r = ref.result(), d = dev.result();
  c.add("places at the end", "place.map", r.coords.data, d.coords.data);
  c.add("costs at the end", "place.end_cost", r.cost, d.cost);
  c.add("points summed exactly", "exact", static_cast<double>(r.exact_points), static_cast<double>(d.exact_points));
  c.add("frozen grid made", "exact", r.interpolated ? 1.0 : 0.0, d.interpolated ? 1.0 : 0.0);
  return c.out;
}

Comparisons compare_pe_engines(PeEngine& ref, PeEngine& dev, const MatrixD& R, const std::vector<double>& phi) {
  Collector c;
  ref.set_objects(R);
  dev.set_objects(R);
  c.add("objects() round trip", "pe.objects_roundtrip", R.data, dev.objects().data);
  c.add("objective", "pe.objective", ref.objective(phi), dev.objective(phi));
  const PeNewtonOptions opt;
  std::vector<double> gr, gd;
  const PeSweep sr = ref.solve_objects(phi, opt, &gr);
  const PeSweep sd = dev.solve_objects(phi, opt, &gd);
  c.add("Newton sweep objective", "pe.objective", sr.objective, sd.objective);
  c.add("unconverged objects", "exact", static_cast<double>(sr.unconverged), static_cast<double>(sd.unconverged));
  c.add("R after the sweep", "pe.objects", ref.objects().data, dev.objects().data);
  c.add("class gradient", "pe.class_gradient", gr, gd);
  // The objective at the new R, which the L-BFGS line search compares with the sweep's.
  c.add("objective after the sweep", "pe.objective", ref.objective(phi), dev.objective(phi));
  return c.out;
}

Comparisons compare_hssne_engines(HssneEngine& ref, HssneEngine& dev, const MatrixD& Y) {
  Collector c;
  hssne_totals(ref.start(Y), dev.start(Y), c, "start:");
  hssne_sums(ref, dev, c, "start:");
  c.add("the map as given", "exact", ref.coords().data, dev.coords().data);
  hssne_totals(ref.propose(4.0, 1.0, 0.0), dev.propose(4.0, 1.0, 0.0), c, "propose, c = 4:");
  hssne_totals(ref.damp(), dev.damp(), c, "damp:");
  ref.accept();
  dev.accept();
  c.add("accepted trial", "hssne.map", ref.coords().data, dev.coords().data);
  momentum_and_gradient_steps(ref, dev, c, "");
  hssne_sums(ref, dev, c, "after the steps:", true);
  return c.out;
}

Comparisons compare_hssne_restore(HssneEngine& ref, HssneEngine& dev, const HssneState& s) {
  Collector c;
  hssne_totals(ref.restore(s), dev.restore(s), c, "restored:");
  const HssneState r = ref.state(), d = dev.state();
  c.add("restored map", "exact", s.y.data, d.y.data);
  c.add("restored previous iterate", "exact", s.prev.data, d.prev.data);
  c.add("restored velocity", "exact", s.velocity.data, d.velocity.data);
  c.add("restored gains", "exact", s.gains.data, d.gains.data);
  c.add("the reference's restored map", "exact", s.y.data, r.y.data);
  hssne_sums(ref, dev, c, "restored:");
  momentum_and_gradient_steps(ref, dev, c, "restored, ");
  // (not the gains: a point whose gradient is within rounding of 0 may flip its gain's update on one
  // side, which moves it by nothing)
  const HssneState r2 = ref.state(), d2 = dev.state();
  c.add("restored, velocity after the step", "hssne.map", r2.velocity.data, d2.velocity.data);
  return c.out;
}

Comparisons compare_nerv_engines(NervEngine& ref, NervEngine& dev, const MatrixD& Y) {
  Collector c;
  ref.set_coords(Y);
  dev.set_coords(Y);
  c.add("x as set", "exact", ref.vector(NervVector::x).data, dev.vector(NervVector::x).data);
  c.add("cost", "nerv.cost", ref.evaluate(true), dev.evaluate(true));
  c.add("gradient", "nerv.gradient", ref.vector(NervVector::gradient).data, dev.vector(NervVector::gradient).data);
  c.add("cost without the gradient", "nerv.cost", ref.evaluate(false), dev.evaluate(false));
  ref.update_direction(0.0);
  dev.update_direction(0.0);
  const double gg = ref.dot(NervVector::gradient, NervVector::gradient);
  c.add("|g|^2", "nerv.cost", gg, dev.dot(NervVector::gradient, NervVector::gradient));
  const double t = 0.1 / std::sqrt(gg + 1e-300);  // a step of length 0.1 down the gradient
  c.add("trial cost", "nerv.cost", ref.evaluate_trial(t), dev.evaluate_trial(t));
  c.add("trial gradient", "nerv.gradient", ref.vector(NervVector::trial_gradient).data,
        dev.vector(NervVector::trial_gradient).data);
  ref.accept_trial();
  dev.accept_trial();
  c.add("g . g_old", "nerv.cost", ref.dot(NervVector::gradient, NervVector::trial_gradient),
        dev.dot(NervVector::gradient, NervVector::trial_gradient));
  ref.update_direction(0.5);
  dev.update_direction(0.5);
  c.add("next direction", "nerv.gradient", ref.vector(NervVector::direction).data,
        dev.vector(NervVector::direction).data);
  return c.out;
}

Comparisons compare_plsv_engines(PlsvEngine& ref, PlsvEngine& dev, const MatrixD& X, const MatrixD& theta,
                                 const std::vector<double>& phi, double alpha, double gamma) {
  Collector c;
  for (PlsvEngine* e : {&ref, &dev}) {
    e->set_docs(X);
    e->set_theta(theta);
  }
  const auto sr = ref.e_step(phi, alpha), sd = dev.e_step(phi, alpha);
  c.add("log likelihood", "plsv.log_likelihood", sr.log_likelihood, sd.log_likelihood);
  c.add("alpha sum log theta", "plsv.theta_log_prior", sr.theta_log_prior, sd.theta_log_prior);
  c.add("sum |x|^2", "plsv.docs_sq", sr.docs_sq, sd.docs_sq);
  c.add("R", "plsv.topic_counts", ref.topic_counts().data, dev.topic_counts().data);
  ref.m_step_theta(alpha);
  dev.m_step_theta(alpha);
  c.add("theta", "plsv.theta", ref.theta().data, dev.theta().data);
  PeNewtonOptions opt;
  opt.eps_r = 1e-10;
  opt.max_iter = 50;
  std::vector<double> gr, gd;
  const PeSweep wr = ref.solve_docs(phi, gamma, opt, &gr), wd = dev.solve_docs(phi, gamma, opt, &gd);
  c.add("Newton objective", "plsv.solve_objective", wr.objective, wd.objective);
  c.add("X after Newton", "plsv.docs", ref.docs().data, dev.docs().data);
  c.add("topic gradient", "plsv.topic_gradient", gr, gd);
  const index_t mr = ref.relocate_docs(phi, gamma), md = dev.relocate_docs(phi, gamma);
  c.add("documents relocated", "plsv.relocated", static_cast<double>(mr), static_cast<double>(md),
        static_cast<double>(X.rows));
  return c.out;
}

Comparison compare_traces(const std::string& output, const std::string& tolerance_name, const std::vector<double>& ref,
                          const std::vector<double>& dev) {
  return {output, tolerance_name, compare(ref, dev, tolerance(tolerance_name))};
}

}  // namespace orrery
