// Whole HSSNE fits on the device: a few iterations of each optimiser follow the CPU's and repeat bit
// for bit; a fit interrupted at a safe point and continued from its saved state on a new engine ends
// with the bits of the fit never interrupted.
//
// The fixed-point optimiser decides (restart without momentum, halve the step, accept) by comparing
// objectives J_c computed from the engine's totals, which agree with the CPU's only to
// hssne.totals (2e-5 relative), not bit for bit. So the steps are compared exactly only while every
// gap the CPU's optimiser compared is far (kDecisive times) above that rounding: up to there the
// device must take the same steps (the same calls with the same c, step and momentum), and its
// objective trace must follow the CPU's; a comparison within the rounding may go either way, and
// after one the fits may part, so nothing after it is compared. The case is chosen so that most
// iterations are decisive (asserted).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/require_cuda.hpp"
#include "common/stop_control.hpp"
#include "inputs.hpp"
#include "orrery/affinity.hpp"
#include "orrery/backend.hpp"
#include "orrery/corpus.hpp"
#include "orrery/hssne.hpp"
#include "orrery/knn.hpp"
#include "orrery/nerv.hpp"
#include "orrery/nerv_place.hpp"
#include "orrery/parity.hpp"
#include "orrery/pe.hpp"
#include "orrery/plsv.hpp"
#include "orrery/quality.hpp"
#include "orrery/run_control.hpp"
#include "orrery/snerv.hpp"
#include "parity.hpp"

using namespace orrery;

namespace {

// A decision is taken within rounding when its gap is under this many times the bound on the
// difference of the two sides' objectives.
constexpr double kDecisive = 10.0;

// One call the optimiser made on its engine: the operation ('S'tart, 'P'ropose, 'D'amp, 'A'ccept,
// 'G'radient step, 'R'estore), its arguments, the iterations done before it, and for a proposal or
// a damping the gap J_c(trial) - J_c(current) over the rounding bound of that difference.
struct Call {
  char op;
  double a = 0, b = 0, c = 0;
  int iteration = 0;
  double margin = HUGE_VAL;
};

// An engine that logs every call the optimiser makes on the engine it wraps.
class LoggingEngine final : public HssneEngine {
 public:
  LoggingEngine(std::unique_ptr<HssneEngine> e, std::vector<Call>& log, const std::vector<int>& iterations)
      : e_(std::move(e)), log_(log), iterations_(iterations) {}
  std::string name() const override { return e_->name(); }
  HssneTotals start(const MatrixD& Y) override {
    add({'S'});
    return cur_ = e_->start(Y);
  }
  HssneTotals propose(double c, double step, double beta) override {
    c_ = c;
    trial_ = e_->propose(c, step, beta);
    add({'P', c, step, beta, 0, margin(trial_)});
    return trial_;
  }
  HssneTotals damp() override {
    trial_ = e_->damp();
    add({'D', c_, 0, 0, 0, margin(trial_)});
    return trial_;
  }
  void accept() override {
    e_->accept();
    cur_ = trial_;
    add({'A'});
  }
  HssneTotals gradient_step(double c, double momentum, double learning_rate, bool objective) override {
    add({'G', c, momentum, learning_rate});
    return cur_ = e_->gradient_step(c, momentum, learning_rate, objective);
  }
  MatrixD coords() const override { return e_->coords(); }
  void current_sums(HssneSums& out) const override { e_->current_sums(out); }
  HssneState state() const override { return e_->state(); }
  HssneTotals restore(const HssneState& s) override {
    add({'R'});
    return cur_ = e_->restore(s);
  }
  HssneStageTimes stage_times() const override { return e_->stage_times(); }

 private:
  void add(Call call) {
    call.iteration = static_cast<int>(iterations_.size());
    log_.push_back(call);
  }
  // J_c(t) - J_c(cur) = -c (t.p_log_h - cur.p_log_h) + log(t.z / cur.z) (P sums to 1); each total
  // is within hssne.totals' rel of the other side's, which bounds how far the two sides' gaps differ.
  double margin(const HssneTotals& t) const {
    const double gap = -c_ * (t.p_log_h - cur_.p_log_h) + std::log(t.z / cur_.z);
    const double rounding = tolerance("hssne.totals").rel * (c_ * (std::abs(t.p_log_h) + std::abs(cur_.p_log_h)) + 2.0);
    return std::abs(gap) / rounding;
  }
  std::unique_ptr<HssneEngine> e_;
  std::vector<Call>& log_;
  const std::vector<int>& iterations_;
  HssneTotals cur_, trial_;
  double c_ = 1.0;
};

// A backend that forwards everything to another and logs its HSSNE engines' calls.
class LoggingBackend final : public Backend {
 public:
  LoggingBackend(Backend& b, const std::vector<int>& iterations) : b_(b), iterations_(iterations) {}
  std::vector<Call> log;

  std::string name() const override { return b_.name(); }
  int threads() const override { return b_.threads(); }
  MemoryInfo memory() const override { return b_.memory(); }
  double copy_bandwidth(size_t bytes) const override { return b_.copy_bandwidth(bytes); }
  std::unique_ptr<PeEngine> make_pe(const MatrixD& P, const std::vector<double>& log_priors, int dim,
                                    double eta_r) override {
    return b_.make_pe(P, log_priors, dim, eta_r);
  }
  std::unique_ptr<HssneEngine> make_hssne(const MatrixD& P, double alpha, int dim) override {
    return std::make_unique<LoggingEngine>(b_.make_hssne(P, alpha, dim), log, iterations_);
  }
  bool has_interpolated_repulsion() const override { return b_.has_interpolated_repulsion(); }
  std::unique_ptr<HssneEngine> make_hssne(const SparseAffinity& P, double alpha, int dim,
                                          const HssneRepulsion& repulsion = {}) override {
    return std::make_unique<LoggingEngine>(b_.make_hssne(P, alpha, dim, repulsion), log, iterations_);
  }
  std::unique_ptr<PlacementEngine> make_placement(const MatrixD& reference, double alpha, const KnnGraph& to_reference,
                                                  const std::vector<double>& p,
                                                  const HssneRepulsion& repulsion) override {
    return b_.make_placement(reference, alpha, to_reference, p, repulsion);
  }
  std::unique_ptr<NervEngine> make_nerv(const MatrixD& P, const std::vector<double>& beta,
                                        const NervOptions& options) override {
    return b_.make_nerv(P, beta, options);
  }
  std::unique_ptr<NervEngine> make_nerv(const SparseAffinity& P, const std::vector<double>& beta,
                                        const NervOptions& options) override {
    return b_.make_nerv(P, beta, options);
  }
  NervPlacementResult place_nerv(const MatrixD& reference_map, const KnnGraph& to_reference,
                                 const std::vector<double>& p, const std::vector<double>& beta, double lambda,
                                 const NervPlacementParams& params) const override {
    return b_.place_nerv(reference_map, to_reference, p, beta, lambda, params);
  }
  std::unique_ptr<PlsvEngine> make_plsv(const Corpus& corpus, int topics, int dim) override {
    return b_.make_plsv(corpus, topics, dim);
  }
  KnnGraph knn(const MatrixD& X, int k) const override { return b_.knn(X, k); }
  KnnGraph knn_reporting(const MatrixD& X, int k,
                         const std::function<void(index_t, index_t)>& progress) const override {
    return b_.knn_reporting(X, k, progress);
  }
  RankRows rank_rows(const MatrixD& X, const MatrixD& Y, int kmax, RankInput input,
                     const std::vector<index_t>& queries) const override {
    return b_.rank_rows(X, Y, kmax, input, queries);
  }
  MatrixD learning_metric_distances(const ClassMixture& model, const MatrixD& X, int pieces) const override {
    return b_.learning_metric_distances(model, X, pieces);
  }
  std::vector<double> learning_metric_pairs(const ClassMixture& model, const MatrixD& X, const KnnGraph& graph,
                                            int pieces) const override {
    return b_.learning_metric_pairs(model, X, graph, pieces);
  }

 private:
  Backend& b_;
  const std::vector<int>& iterations_;
};

// The calls as numbers, for ParityCheck::same (which names the first that differs).
std::vector<double> flat(const std::vector<Call>& calls, size_t count) {
  std::vector<double> out;
  for (size_t q = 0; q < count && q < calls.size(); ++q)
    out.insert(out.end(), {static_cast<double>(calls[q].op), calls[q].a, calls[q].b, calls[q].c,
                           static_cast<double>(calls[q].iteration)});
  return out;
}

// Sparse affinities of 900 clustered points.
const AffinityResult& affinities() {
  static const AffinityResult aff = affinities_sparse(test::clustered(900, 8, 5), 15.0);
  return aff;
}

// Each optimiser over both exaggeration phases on `dev` against the reference `ref`: the same steps
// while they are decisive, the objective trace over those iterations, the map when all were; and the
// device's fit twice, bit for bit.
void follow_and_repeat(Backend& ref, Backend& dev, const std::string& where) {
  HssneParams prm;
  prm.max_iter = 8;
  prm.exaggeration_iter = 4;  // both phases, and the momentum restarted between them
  prm.tol = 0.0;
  for (const HssneOptimizer opt : {HssneOptimizer::fixed_point, HssneOptimizer::gradient}) {
    test::ParityCheck check("hssne/fit N900 seed 7 " + enum_name(opt) + " " + where);
    prm.optimizer = opt;
    test::StopControl cr(test::StopControl::kNever), cd(test::StopControl::kNever);
    LoggingBackend lr(ref, cr.iterations), ld(dev, cd.iterations);
    const HssneResult c = fit_hssne(affinities().sparse, prm, 7, lr, {}, &cr);
    const HssneResult g1 = fit_hssne(affinities().sparse, prm, 7, ld, {}, &cd);
    const HssneResult g2 = fit_hssne(affinities().sparse, prm, 7, dev);
    EXPECT_EQ(g1.coords.data, g2.coords.data) << check.where();
    EXPECT_EQ(g1.objective_trace, g2.objective_trace) << check.where();
    EXPECT_EQ(g1.evaluations, g2.evaluations) << check.where();
    // The reference's calls up to its first decision within rounding (that call included: what
    // follows it depends on its outcome).
    size_t decisive = 0;
    while (decisive < lr.log.size() && lr.log[decisive].margin >= kDecisive) ++decisive;
    const bool all = decisive == lr.log.size();
    const int iterations = all ? c.iterations : lr.log[decisive].iteration;
    if (!all) ++decisive;
    EXPECT_GE(iterations, prm.max_iter / 2) << check.where() << ": the case must keep most decisions far from rounding";
    check.same("the optimiser's calls (operation, c, step, momentum, iteration) while decisive", flat(lr.log, decisive),
               flat(ld.log, decisive));
    const auto first = [](const std::vector<double>& v, int n) {
      return std::vector<double>(v.begin(), v.begin() + std::min<long>(n, static_cast<long>(v.size())));
    };
    check.agree("objective trace over the decisive iterations", "hssne.trace", first(c.objective_trace, iterations),
                first(g1.objective_trace, iterations));
    if (all) {
      check.same("evaluations", std::vector<int>{c.evaluations}, std::vector<int>{g1.evaluations});
      check.agree("map", "hssne.map", c.coords.data, g1.coords.data);
    }
  }
}

// The gradient optimiser on interpolated repulsion over both phases (no decisions: the same steps
// always): the CPU's grid to its rounding, and the same bits twice.
void grid_follow_and_repeat(Backend& ref, Backend& dev, const std::string& where) {
  const AffinityResult aff = affinities_sparse(test::clustered(2500, 8, 15), 20.0);
  HssneParams prm;
  prm.max_iter = 12;
  prm.exaggeration_iter = 6;
  prm.tol = 0.0;
  prm.repulsion = HssneRepulsionMode::interpolated;
  prm.optimizer = HssneOptimizer::gradient;
  for (int dim : {2, 3}) {
    prm.dim = dim;
    test::ParityCheck check("hssne/grid fit N2500 seed 7 D" + std::to_string(dim) + " " + where);
    const HssneResult c = fit_hssne(aff.sparse, prm, 7, ref);
    const HssneResult g1 = fit_hssne(aff.sparse, prm, 7, dev);
    const HssneResult g2 = fit_hssne(aff.sparse, prm, 7, dev);
    EXPECT_EQ(g1.coords.data, g2.coords.data) << check.where();
    EXPECT_EQ(g1.objective_trace, g2.objective_trace) << check.where();
    check.agree("objective trace", "hssne.trace", c.objective_trace, g1.objective_trace);
    check.agree("map", "hssne.map", c.coords.data, g1.coords.data);
  }
}

// Fits stopped after iteration k (the engine's state() saved with the optimiser's counters), then
// continued by a new fit, on a new engine, from that state (restore()): the same bits as the fit
// never stopped, for each optimiser and for the grid.
void expect_resume_exact(Backend& b, const std::string& where) {
  HssneParams prm;
  prm.max_iter = 9;
  prm.exaggeration_iter = 4;
  prm.tol = 0.0;
  struct Variant {
    HssneOptimizer opt;
    HssneRepulsionMode repulsion;
  };
  for (const Variant v : {Variant{HssneOptimizer::fixed_point, HssneRepulsionMode::exact},
                          Variant{HssneOptimizer::gradient, HssneRepulsionMode::exact},
                          Variant{HssneOptimizer::gradient, HssneRepulsionMode::interpolated}}) {
    prm.optimizer = v.opt;
    prm.repulsion = v.repulsion;
    const std::string what = where + " hssne N900 seed 7 " + enum_name(v.opt) + " " + enum_name(v.repulsion);
    const HssneResult full = fit_hssne(affinities().sparse, prm, 7, b);
    ASSERT_EQ(full.iterations, prm.max_iter) << what;
    for (const int k : {2, 4, 7}) {  // before, at and after the end of the exaggeration
      const HssneResult resumed = test::stopped_and_continued(
          k, [&](RunControl* control) { return fit_hssne(affinities().sparse, prm, 7, b, {}, control); });
      EXPECT_EQ(resumed.coords.data, full.coords.data) << what << ", stopped after " << k;
      EXPECT_EQ(resumed.objective_trace, full.objective_trace) << what << ", stopped after " << k;
      EXPECT_EQ(resumed.evaluations, full.evaluations) << what << ", stopped after " << k;
      EXPECT_EQ(resumed.restarts, full.restarts) << what << ", stopped after " << k;
      EXPECT_EQ(resumed.damped_steps, full.damped_steps) << what << ", stopped after " << k;
    }
  }
}

}  // namespace

TEST(HssneParityFit, FitsFollowTheCpuAndRepeatBitForBit) {
  ORRERY_REQUIRE_CUDA();
  auto cpu = make_backend("cpu", 0), gpu = make_backend("cuda", 0);
  follow_and_repeat(*cpu, *gpu, "cuda");
}

TEST(HssneParityFit, GridFitsFollowTheCpuAndRepeatBitForBit) {
  ORRERY_REQUIRE_CUDA();
  auto cpu = make_backend("cpu", 0), gpu = make_backend("cuda", 0);
  grid_follow_and_repeat(*cpu, *gpu, "cuda");
}

// The harness above on the CPU (one thread against all, which agree bit for bit): the logging
// backend forwards faithfully, and this case's decisions are far from rounding, as asserted there.
TEST(HssneParityFit, TheHarnessOnTheCpuOneThreadAgainstMany) {
  auto many = make_cpu_backend(0), one = make_cpu_backend(1);
  follow_and_repeat(*many, *one, "cpu");
}

TEST(HssneResume, ResumedOnTheDeviceEqualsTheUninterruptedFit) {
  ORRERY_REQUIRE_CUDA();
  auto gpu = make_backend("cuda", 0);
  expect_resume_exact(*gpu, "cuda");
}

TEST(HssneResume, ResumedOnTheCpuEqualsTheUninterruptedFit) {
  auto cpu = make_backend("cpu", 0);
  expect_resume_exact(*cpu, "cpu");
}
