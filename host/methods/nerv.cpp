// NeRV's algorithm (Venna et al. 2010; MATH.md §3), written once for every backend: a seeded start
// at the input's length scale, then Polak-Ribiere conjugate gradient (optim/cg.hpp) on the
// backend's NervEngine, which holds P, the iterate, the gradient and the direction; each step moves
// O(1) values (a cost, a dot product, a step length).
#include "orrery/nerv.hpp"

#include <algorithm>
#include <cmath>

#include "methods/random.hpp"
#include "optim/cg.hpp"
#include "orrery/affinity.hpp"
#include "orrery/backend.hpp"
#include "orrery/comm.hpp"
#include "orrery/error.hpp"

namespace orrery {

const std::vector<Field<NervParams>>& nerv_fields() {
  static const std::vector<Field<NervParams>> fields = {
      {"dim", &NervParams::dim, "Output dimension D of the map.", 2, 3},
      {"lambda", &NervParams::lambda,
       "Trade-off: 1 = recall only (SNE's cost), 0 = precision only; the paper's examples use small values.", 0, 1},
      {"max_iter", &NervParams::max_iter, "Cap on conjugate-gradient iterations.", 1, 1e8},
      {"ftol", &NervParams::ftol, "Stop when an iteration lowers E by less than ftol * max(|E|, 1).", 0, 1},
      {"init", &NervParams::init,
       "Start: random (seeded Gaussian), pca (the input vectors' first D principal components), spectral (the "
       "affinity graph's leading nontrivial eigenvectors, as UMAP and openTSNE start), both scaled to init_scale, "
       "auto: pca on the approximate path with input vectors (a random start collapses there before it spreads, "
       "which costs time and cost), random otherwise; or an N x D array file (npy, csv/tsv/txt) taken as given, in "
       "the map's units (the input's), so that a finished map can be continued."},
      {"init_scale", &NervParams::init_scale,
       "Standard deviation of the start (seeded Gaussian, or the first coordinate of a pca or spectral start; not a "
       "given array), in units of the median "
       "input bandwidth sigma; 0 = auto: 1 on the exact path, and on the approximate path the spread at which a "
       "Gaussian cloud of N points holds about perplexity points within sigma of its centre, sqrt(N / (2 perplexity)) "
       "in 2-D, (N / (3.76 perplexity))^(1/3) in 3-D (at least 1).",
       0, 1e6},
      {"precision", &NervParams::precision,
       "CPU arithmetic: float (pair terms in single precision, summed in double per tile of 512; about 2x faster; "
       "holds P and log P in float, half the memory) or double (the reference). CUDA always uses float. The "
       "approximate path always uses float.",
       },
      {"pairs", &NervParams::pairs,
       "exact: every pair, O(N^2) per evaluation; approximate: each row's output Gaussian truncated where its weight "
       "falls below e^-cutoff of the row's largest, summed over a cell grid, O(N x kept pairs) (needs sparse "
       "affinities; the report gives the cost's estimated relative error at the final map); auto: approximate from "
       "5,000 points with sparse affinities, exact below (the 2-core crossover, bench/README.md)."},
      {"cutoff", &NervParams::cutoff,
       "approximate: the truncation in nats. A row keeps the points whose weight is at least e^-cutoff of its "
       "largest; kept pairs grow as cutoff^(D/2), the dropped weight falls as e^-cutoff (12: relative errors of the "
       "cost about 1e-5 and of the gradient within 2e-3 on Fashion-MNIST maps at every lambda; 8: the gradient's "
       "exceeds 1e-2).",
       1, 80},
  };
  return fields;
}


namespace {

// Conjugate gradient's vectors are the engine's.
class EngineProblem final : public optim::CgProblem {
 public:
  EngineProblem(NervEngine& e, index_t n, int dim) : e_(e), n_(n), dim_(dim) {}
  double evaluate() override { return e_.evaluate(true); }
  double evaluate_trial(double t) override { return e_.evaluate_trial(t); }
  double dot(Vector a, Vector b) override { return e_.dot(slot(a), slot(b)); }
  void set_direction(double beta) override { e_.update_direction(beta); }
  void accept_trial() override { e_.accept_trial(); }
  std::vector<double> get(Vector v) override { return e_.vector(slot(v)).data; }
  void set(Vector v, const std::vector<double>& values) override {
    MatrixD m(n_, dim_);
    if (values.size() != m.data.size()) internal_error("checkpoint: a NeRV vector is not N x D");
    m.data = values;
    e_.set_vector(slot(v), m);
  }

 private:
  static NervVector slot(Vector v) {
    switch (v) {
      case kX: return NervVector::x;
      case kGradient: return NervVector::gradient;
      case kDirection: return NervVector::direction;
      case kTrial: return NervVector::trial;
      default: return NervVector::trial_gradient;
    }
  }
  NervEngine& e_;
  index_t n_;
  int dim_;
};

// The map uses the input bandwidths, so it lives at the input's length scale sigma (the median
// bandwidth): a start of unit size on data whose sigma is 100 would see uniform q and a vanishing
// gradient. The engine works in units of sigma (bandwidths beta sigma^2, median 1) and the result
// is scaled back, so that the iterations, in float too, are the same at every scale of the input
// (conjugate gradient's first step and its tolerances are in the engine's units), where sigma^2 of
// 1e-60 or 1e60 would underflow or overflow float squares.
struct UnitBandwidths {
  double sigma = 1.0;
  std::vector<double> beta;  // beta sigma^2
};
UnitBandwidths unit_bandwidths(const std::vector<double>& beta) {
  UnitBandwidths u;
  if (beta.empty()) return u;
  std::vector<double> sorted = beta;
  std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
  const double median = sorted[sorted.size() / 2];
  if (!(median > 0) || !std::isfinite(median)) internal_error("fit_nerv: the median input bandwidth is not positive");
  u.sigma = 1.0 / std::sqrt(median);
  u.beta.resize(beta.size());
  for (size_t i = 0; i < beta.size(); ++i) u.beta[i] = beta[i] / median;
  return u;
}

// A caller's control as the NeRV fit shows it: the optimiser's state ("cg.*", in units of sigma)
// with, where the caller wants the map (RunControl::wants_map), the map in input units ("nerv.y")
// and its trace ("nerv.trace") added, as hssne's state holds
// "hssne.y" and "hssne.trace" (what Python's callbacks read); stop requests passed on.
class NervControl final : public RunControl {
 public:
  NervControl(RunControl* inner, double sigma) : inner_(inner), sigma_(sigma) {}
  const RunState* resume() const override { return inner_->resume(); }
  void safe_point(int iteration, const std::function<RunState()>& capture) override {
    if (!inner_->wants_map()) return inner_->safe_point(iteration, capture);
    inner_->safe_point(iteration, [&] {
      RunState s = capture();
      std::vector<double> y = s.get("cg.x");
      for (double& v : y) v *= sigma_;
      s.put("nerv.y", std::move(y));
      s.put("nerv.trace", s.get("cg.trace"));
      return s;
    });
  }
  bool stop_requested() const override { return inner_->stop_requested(); }
  bool wants_map() const override { return inner_->wants_map(); }

 private:
  RunControl* inner_;
  double sigma_;
};

// The seeded Gaussian start at the input's length scale (in units of sigma), then conjugate
// gradient on the engine.
NervResult fit(NervEngine& engine, index_t N, const UnitBandwidths& unit, const NervParams& prm, double scale,
               unsigned long long seed, const std::function<void(int, double)>& progress, const MatrixD* start,
               RunControl* control, bool start_as_given, Comm* shards) {
  if (static_cast<index_t>(unit.beta.size()) != N) internal_error("fit_nerv: P and beta disagree on N");
  if (shards) engine.shard(*shards);
  MatrixD Y(N, prm.dim);
  Y.data = seeded_gaussian(static_cast<size_t>(N) * prm.dim, seed, scale);
  if (start) {
    if (start->rows != N || start->cols != prm.dim) internal_error("fit_nerv: the start is not N x D");
    double mean = 0.0, var = 0.0;
    for (index_t i = 0; i < N; ++i) mean += (*start)(i, 0) / static_cast<double>(N);
    for (index_t i = 0; i < N; ++i) var += ((*start)(i, 0) - mean) * ((*start)(i, 0) - mean) / static_cast<double>(N);
    // the start is in input units: to init_scale sigma (or as given), in units of sigma
    const double f = !start_as_given && var > 0 ? scale / std::sqrt(var) : 1.0 / unit.sigma;
    for (size_t q = 0; q < Y.data.size(); ++q) Y.data[q] = start->data[q] * f;
  }
  engine.set_coords(Y);
  optim::CgOptions o;
  o.max_iter = prm.max_iter;
  o.ftol = prm.ftol;
  EngineProblem problem(engine, N, prm.dim);
  NervControl shown(control, unit.sigma);
  const optim::CgReport rep = optim::cg_minimize(problem, o, progress, control ? &shown : nullptr);
  NervResult res;
  res.coords = engine.vector(NervVector::x);
  for (double& v : res.coords.data) v *= unit.sigma;
  res.objective_trace = rep.trace;
  res.iterations = rep.iterations;
  res.evaluations = rep.evaluations;
  res.stop_reason = rep.stop_reason;
  res.arithmetic = engine.arithmetic();
  res.init_scale = scale;
  for (double v : res.coords.data)
    if (!std::isfinite(v)) internal_error("NeRV produced non-finite coordinates");
  return res;
}

NervOptions engine_options(const NervParams& prm, bool approximate) {
  return NervOptions{prm.lambda, prm.dim, prm.precision, approximate ? prm.cutoff : 0.0};
}

// The mean over rows of exp(entropy of p_i): the perplexity the affinities were calibrated to.
double mean_perplexity(const SparseAffinity& P) {
  double s = 0.0;
  for (index_t i = 0; i < P.num_points; ++i) {
    double h = 0.0, z = 0.0;
    for (index_t e = P.row_ptr[static_cast<size_t>(i)]; e < P.row_ptr[static_cast<size_t>(i) + 1]; ++e) {
      const double p = P.val[static_cast<size_t>(e)];
      if (p > 0) h -= p * std::log(p), z += p;
    }
    s += z > 0 ? std::exp(h / z + std::log(z)) : 1.0;
  }
  return P.num_points > 0 ? s / static_cast<double>(P.num_points) : 1.0;
}

}  // namespace

void NervEngine::shard(Comm& comm) {
  if (comm.size() > 1)
    internal_error("nerv: the " + name() + " engine runs in one process (" + std::to_string(comm.size()) + " ranks)");
}

bool nerv_approximate(const NervParams& prm, index_t points, bool sparse) {
  if (prm.pairs == NervPairs::approximate && !sparse)
    input_error("params.pairs: approximate needs sparse affinities (input.affinities is dense: every pair)");
  if (prm.pairs == NervPairs::approximate && prm.dim != 2 && prm.dim != 3)
    input_error("params.pairs: approximate maps are 2-D or 3-D");
  return prm.pairs == NervPairs::approximate ||
         (prm.pairs == NervPairs::automatic && sparse && points >= kNervApproximateFrom && prm.dim >= 2);
}

double nerv_start_scale(const NervParams& prm, index_t points, double perplexity, bool approximate) {
  if (prm.init_scale > 0) return prm.init_scale;
  if (!approximate || !(perplexity > 0)) return 1.0;
  const double n = static_cast<double>(points);
  const double s = prm.dim == 2 ? std::sqrt(n / (2.0 * perplexity)) : std::cbrt(n / (3.76 * perplexity));
  return std::max(1.0, s);
}

NervResult fit_nerv(const MatrixD& P, const std::vector<double>& beta, const NervParams& prm, unsigned long long seed,
                    Backend& backend, const std::function<void(int, double)>& progress, const MatrixD* start,
                    RunControl* control, bool start_as_given, Comm* shards) {
  if (P.rows != P.cols) internal_error("fit_nerv: P is not square");
  nerv_approximate(prm, P.rows, false);  // refuses pairs = approximate
  const UnitBandwidths unit = unit_bandwidths(beta);
  auto engine = backend.make_nerv(P, unit.beta, engine_options(prm, false));
  return fit(*engine, P.rows, unit, prm, nerv_start_scale(prm, P.rows, 0.0, false), seed, progress, start, control,
             start_as_given, shards);
}

NervResult fit_nerv(const SparseAffinity& P, const std::vector<double>& beta, const NervParams& prm,
                    unsigned long long seed, Backend& backend, const std::function<void(int, double)>& progress,
                    const MatrixD* start, RunControl* control, bool start_as_given, Comm* shards) {
  const bool approximate = nerv_approximate(prm, P.num_points, true);
  const UnitBandwidths unit = unit_bandwidths(beta);
  auto engine = backend.make_nerv(P, unit.beta, engine_options(prm, approximate));
  const double scale = nerv_start_scale(prm, P.num_points, approximate ? mean_perplexity(P) : 0.0, approximate);
  NervResult r = fit(*engine, P.num_points, unit, prm, scale, seed, progress, start, control, start_as_given, shards);
  r.approximate = approximate;
  if (approximate) {
    // the truncated cost against the exact one at the final map, on sampled rows (in units of the
    // bandwidths as the fit ran: the truncation is scale-free, the float arithmetic is not)
    MatrixD Yu = r.coords;
    for (double& v : Yu.data) v /= unit.sigma;
    r.truncation = nerv_truncation_check(P, unit.beta, Yu, prm.lambda, prm.cutoff, kNervCheckRows, seed,
                                         backend.threads());
  }
  return r;
}

}  // namespace orrery
