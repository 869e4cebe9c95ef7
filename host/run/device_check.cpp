// `orrery check`'s comparisons, one method's primitives and a few iterations of its fit on a
// device under test against the CPU reference, from the same state (cli/check.cpp runs them and
// writes the result).
#include "run/device_check.hpp"

#include <cmath>
#include <random>

#include "io/corpus.hpp"
#include "io/writers.hpp"
#include "orrery/affinity.hpp"
#include "orrery/backend.hpp"
#include "orrery/error.hpp"
#include "orrery/hssne.hpp"
#include "orrery/inner_product.hpp"
#include "orrery/knn.hpp"
#include "orrery/nerv.hpp"
#include "orrery/parity.hpp"
#include "orrery/pe.hpp"
#include "orrery/plsv.hpp"
#include "orrery/quality.hpp"
#include "orrery/snerv.hpp"
#include "run/ne_config.hpp"
#include "run/pe_config.hpp"
#include "run/plsv_run.hpp"
#include "run/run_common.hpp"
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <sstream>

namespace orrery::pipeline {
namespace {

MatrixD gaussian(index_t rows, index_t cols, unsigned long long seed, double scale) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0.0, scale);
  MatrixD M(rows, cols);
  for (double& v : M.data) v = z(rng);
  return M;
}


}  // namespace

Checks check_pe_run(const RunConfig& run, Backend& ref, Backend& dev, int iterations) {
  const PeRunConfig cfg = read_pe_config(run);
  PeRunData data = load_pe_data(cfg);
  fit_posterior_model_step(cfg, data);
  const MatrixD& P = data.pe.posteriors;
  const index_t K = P.cols;
  const int D = cfg.params.dim;
  std::vector<double> log_priors(static_cast<size_t>(K), -std::log(static_cast<double>(K)));
  if (!data.pe.priors.empty())
    for (index_t k = 0; k < K; ++k) log_priors[static_cast<size_t>(k)] = std::log(data.pe.priors[static_cast<size_t>(k)]);
  Checks out;
  auto er = ref.make_pe(P, log_priors, D, cfg.params.eta_r), ed = dev.make_pe(P, log_priors, D, cfg.params.eta_r);
  out.push_back({"pe engine", compare_pe_engines(*er, *ed, gaussian(P.rows, D, run.seed, 1.0),
                                                 gaussian(K, D, run.seed + 1, cfg.params.init_scale).data)});
  PeParams prm = cfg.params;
  prm.max_iter = iterations;
  const PeResult rr = fit_pe(ref, data.pe, prm, run.seed), rd = fit_pe(dev, data.pe, prm, run.seed);
  std::vector<double> tr, td;
  for (const auto& e : rr.trace) tr.push_back(e.objective);
  for (const auto& e : rd.trace) td.push_back(e.objective);
  out.push_back({"pe fit", {compare_traces("objective per iteration", "pe.fit_objective", tr, td)}});
  return out;
}

Checks check_ne_run(const RunConfig& run, Backend& ref, Backend& dev, int iterations) {
  const NeRunConfig cfg = read_ne_config(run);
  if (!cfg.input.model.empty())
    input_error("check: input.model (placement) is not checked here; the gpu test suite compares the placement "
                "engines (tests/cuda/test_place_parity.cpp)");
  const NeData d = load_ne_data(cfg);
  const index_t N = d.points();
  const MemoryInfo mem = ref.memory();
  const NePlan plan = plan_ne_run(cfg, N, mem, false, d.X.cols);
  check_memory_plan(plan.memory, mem, false);
  const bool snerv = cfg.method == NeMethod::snerv, hssne = cfg.method == NeMethod::hssne;
  const bool vectors = !cfg.input.vectors.empty();
  Checks out;
  // (inner_product's neighbor search runs on the host on every backend: no device search to check)
  const bool inner = cfg.input.vector_metric == VectorMetric::inner_product;
  if (vectors && !snerv && !inner) {
    const int k = static_cast<int>(std::min<index_t>(N - 1, sparse_neighbors(cfg.input.perplexity)));
    // on the data the run searches: divided by a power of two when its scale would overflow float
    const int e = float_safe_exponent(d.X);
    const MatrixD& X = e ? times_power_of_two(d.X, -e) : d.X;
    const KnnGraph gr = ref.knn(X, k), gd = dev.knn(X, k);
    // Sorted distances agree even where two near-equal ones swap their points.
    out.push_back({"knn", {{"squared distances of the k nearest", "knn.distances",
                            compare(gr.dist2, gd.dist2, tolerance("knn.distances"))}}});
  }
  AffinityResult aff;
  MatrixD metric;
  if (snerv) {
    // As fit_snerv does: the model and its distances on X / input_scale(X), so the device's float
    // arithmetic sees data of unit scale whatever the input's units.
    const double scale = input_scale(d.X);
    MatrixD U = d.X;
    for (double& v : U.data) v /= scale;
    ClassMixtureParams unit = cfg.input.metric;
    unit.width = std::ldexp(cfg.input.metric.width, -d.scale_exponent) / scale;  // given in input units; X is in 2^e's
    const ClassMixture model = fit_class_mixture(U, d.labels, unit, run.seed, ref.threads());
    metric = ref.learning_metric_distances(model, U, cfg.input.metric.pieces);
    out.push_back({"learning-metric distances",
                   {{"distances", "snerv.distances",
                     compare(metric.data, dev.learning_metric_distances(model, U, cfg.input.metric.pieces).data,
                             tolerance("snerv.distances"))}}});
    aff = snerv_affinities(metric, snerv_perplexity(cfg.input.perplexity, N, model.centres.rows), plan.sparse,
                           ref.threads());
  } else {
    aff = ne_affinities(cfg, d, plan, ref);
  }
  if (hssne) {
    // Where `auto` resolves differently on the two sides (a CPU's auto may take a tree the device
    // has not), both run what it gives the device.
    HssneParams p = cfg.hssne;
    const HssneRepulsionMode on_dev = auto_repulsion(p, N, dev.has_interpolated_repulsion(), dev.has_tree_repulsion());
    if (on_dev != auto_repulsion(p, N, ref.has_interpolated_repulsion(), ref.has_tree_repulsion())) p.repulsion = on_dev;
    const MatrixD Y = gaussian(N, p.dim, run.seed, p.init_scale);
    // The engines repel as the run's would (the grid where the config or `auto` gives it), so a
    // grid config compares the grid's sums engine against engine, not only through the fit's trace.
    const HssneRepulsion rep = resolve_repulsion(p, N, ref);
    if (plan.sparse)
      out.push_back({"hssne engine", compare_hssne_engines(*ref.make_hssne(aff.sparse, p.alpha, p.dim, rep),
                                                           *dev.make_hssne(aff.sparse, p.alpha, p.dim, rep), Y)});
    else
      out.push_back({"hssne engine", compare_hssne_engines(*ref.make_hssne(aff.dense, p.alpha, p.dim),
                                                           *dev.make_hssne(aff.dense, p.alpha, p.dim), Y)});
    HssneParams q = p;
    q.max_iter = iterations;
    q.tol = 0;
    const MatrixD first = fit_start(cfg, d, aff, plan.sparse, ref.threads());
    auto fit = [&](Backend& b) {
      const MatrixD* start = first.rows > 0 ? &first : nullptr;  // the run's params.init, on both sides
      return plan.sparse ? fit_hssne(aff.sparse, q, run.seed, b, {}, nullptr, start)
                         : fit_hssne(aff.dense, d.labels, q, run.seed, b, {}, nullptr, start);
    };
    out.push_back({"hssne fit", {compare_traces("KL per iteration", "hssne.trace", fit(ref).objective_trace,
                                                fit(dev).objective_trace)}});
  } else {
    const NervParams& p = cfg.nerv;
    std::vector<double> sorted = aff.beta;
    std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
    const bool approximate = nerv_approximate(p, N, plan.sparse);
    const MatrixD Y = gaussian(N, p.dim, run.seed,
                               nerv_start_scale(p, N, cfg.input.perplexity > 0 ? cfg.input.perplexity : 30.0, approximate) /
                                   std::sqrt(sorted[sorted.size() / 2]));
    const NervOptions ro{p.lambda, p.dim, NervPrecision::float64}, dopt{p.lambda, p.dim, p.precision};
    if (approximate)  // the truncated cost on both (float on both: the CPU scatters, the device gathers)
      out.push_back({"nerv engine (approximate pairs)",
                     compare_nerv_engines(
                         *ref.make_nerv(aff.sparse_conditional, aff.beta, NervOptions{p.lambda, p.dim, p.precision, p.cutoff}),
                         *dev.make_nerv(aff.sparse_conditional, aff.beta, NervOptions{p.lambda, p.dim, p.precision, p.cutoff}),
                         Y)});
    else if (plan.sparse)
      out.push_back({"nerv engine", compare_nerv_engines(*ref.make_nerv(aff.sparse_conditional, aff.beta, ro),
                                                         *dev.make_nerv(aff.sparse_conditional, aff.beta, dopt), Y)});
    else
      out.push_back({"nerv engine", compare_nerv_engines(*ref.make_nerv(aff.conditional, aff.beta, ro),
                                                         *dev.make_nerv(aff.conditional, aff.beta, dopt), Y)});
    NervParams q = p;
    q.max_iter = iterations;
    q.init = "random";
    auto fit = [&](Backend& b, NervPrecision prec) {
      q.precision = prec;
      return plan.sparse ? fit_nerv(aff.sparse_conditional, aff.beta, q, run.seed, b)
                         : fit_nerv(aff.conditional, aff.beta, q, run.seed, b);
    };
    const NervResult fr = fit(ref, NervPrecision::float64), fd = fit(dev, p.precision);
    Comparisons c;
    if (!fr.objective_trace.empty() && !fd.objective_trace.empty())
      c.push_back(compare_traces("first cost", "nerv.fit_first", {fr.objective_trace.front()},
                                 {fd.objective_trace.front()}));
    c.push_back(compare_traces("cost per iteration", "nerv.fit_last", fr.objective_trace, fd.objective_trace));
    out.push_back({"nerv fit", c});
  }
  if (!given_affinities(cfg.input)) {
    // The rank rows of the quality measures, against the input space the run would use.
    const MatrixD& input = snerv ? metric : d.X;
    const bool dm = snerv || !cfg.input.distances.empty();
    const int e = float_safe_exponent(input, dm);  // as evaluate_quality scales it for float ranks
    const MatrixD Xe = e ? times_power_of_two(input, -e) : input;
    const MatrixD X = inner ? inner_product_references(Xe) : Xe;
    const RankInput how = rank_input(dm, inner);
    const MatrixD Y = gaussian(N, 2, run.seed + 7, 1.0);
    const int kmax = static_cast<int>(std::min<index_t>(20, N - 1));
    const RankRows rr = ref.rank_rows(X, Y, kmax, how, {}), rd = dev.rank_rows(X, Y, kmax, how, {});
    auto as_double = [](const std::vector<std::int64_t>& v) { return std::vector<double>(v.begin(), v.end()); };
    out.push_back({"quality rank rows",
                   {{"map neighbors", "quality.rank_rows",
                     compare(as_double(rr.map_neighbors), as_double(rd.map_neighbors), tolerance("quality.rank_rows"))},
                    {"input ranks of map neighbors", "quality.rank_rows",
                     compare(as_double(rr.input_rank_of_map_nb), as_double(rd.input_rank_of_map_nb),
                             tolerance("quality.rank_rows"))}}});
  }
  return out;
}

Checks check_plsv_run(const RunConfig& run, Backend& ref, Backend& dev, int iterations) {
  const PlsvRunSetup s = read_plsv_setup(run);
  if (!s.model_dir.empty()) input_error("check: input.model (fold-in) is not checked; check the run that made the model");
  const Corpus& c = s.corpus;
  const PlsvParams& p = s.params;
  // A start both engines can hold exactly: float-representable documents, theta and topics.
  MatrixD X = gaussian(c.num_docs(), p.dim, run.seed, 1.0), theta(p.topics, c.num_words);
  std::mt19937_64 rng(run.seed + 3);
  std::uniform_real_distribution<double> u(0.5, 1.5);
  for (index_t z = 0; z < theta.rows; ++z) {
    double total = 0.0;
    for (index_t w = 0; w < theta.cols; ++w) total += (theta(z, w) = u(rng));
    for (index_t w = 0; w < theta.cols; ++w) theta(z, w) = static_cast<float>(theta(z, w) / total);
  }
  std::vector<double> phi = gaussian(p.topics, p.dim, run.seed + 5, p.init_scale).data;
  for (double& v : X.data) v = static_cast<float>(v);
  for (double& v : phi) v = static_cast<float>(v);
  Checks out;
  out.push_back({"plsv engine", compare_plsv_engines(*ref.make_plsv(c, p.topics, p.dim), *dev.make_plsv(c, p.topics, p.dim),
                                                     X, theta, phi, p.alpha, p.gamma_per_topic * p.topics)});
  PlsvParams q = p;
  q.max_iter = iterations;
  q.tol = 0;
  const PlsvResult rr = fit_plsv(ref, c, q, run.seed), rd = fit_plsv(dev, c, q, run.seed);
  std::vector<double> tr, td;
  for (const auto& e : rr.trace) tr.push_back(e.log_posterior);
  for (const auto& e : rd.trace) td.push_back(e.log_posterior);
  out.push_back({"plsv fit", {compare_traces("log posterior per EM iteration", "plsv.em_trace", tr, td)}});
  return out;
}

json check_group_json(const CheckGroup& g) {
  json rows = json::array();
  for (const Comparison& c : g.comparisons) {
    const Agreement& a = c.agreement;
    rows.push_back({{"output", c.output},
                    {"tolerance", c.tolerance},
                    {"entries", a.count},
                    {"failed", a.failed},
                    {"max_rel_error", std::isfinite(a.max_rel_error) ? json(a.max_rel_error) : json(nullptr)},
                    {"nmse", std::isfinite(a.nmse) ? json(a.nmse) : json(nullptr)},
                    {"agrees", a.ok()},
                    {"detail", a.describe(g.primitive + ": " + c.output)}});
  }
  return {{"primitive", g.primitive}, {"outputs", rows}};
}

}  // namespace orrery::pipeline
