#include "run/ne_run.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <stdexcept>

#include "run/quality_json.hpp"
#include "run/hssne_place_run.hpp"
#include "run/ne_config.hpp"
#include "run/run_common.hpp"
#include "io/writers.hpp"
#include "orrery/affinity.hpp"
#include "orrery/comm.hpp"
#include "orrery/engines.hpp"
#include "orrery/error.hpp"
#include "orrery/hssne.hpp"
#include "orrery/knn.hpp"
#include "orrery/memory_plan.hpp"
#include "orrery/nerv.hpp"
#include "orrery/pca.hpp"
#include "orrery/quality.hpp"
#include "orrery/snerv.hpp"
#include "report/svg_map.hpp"

namespace orrery::pipeline {
namespace {

std::string affinity_text(const NePlan& plan) {
  return std::string(plan.sparse ? "sparse" : "dense") + (plan.automatic ? " (auto)" : "");
}

json plan_json(const NePlan& plan, const MemoryInfo& available) {
  json items = json::array();
  for (const auto& i : plan.memory.items)
    items.push_back({{"what", i.what}, {"host_bytes", i.host_bytes}, {"device_bytes", i.device_bytes}});
  return {{"host_peak_bytes", plan.memory.host_peak()}, {"device_peak_bytes", plan.memory.device_peak()},
          {"host_available_bytes", available.host_bytes}, {"device_available_bytes", available.device_bytes},
          {"items", items}};
}

std::string describe(const NeRunConfig& cfg, const NeData& d) {
  const NeInputSpec& in = cfg.input;
  return cfg.run.method + ", " + std::to_string(d.points()) + " points" +
         (!in.affinity_matrix.empty()  ? " (precomputed affinities)"
          : !in.neighbor_graph.empty() ? " (neighbor graph)"
          : !in.distances.empty()      ? " (distance matrix)"
                                      : " of dimension " + std::to_string(d.X.cols));
}

// NeRV from its params.init (fit_start): pca and spectral scaled by the fit, an array as given.
NervResult fit_nerv_run(const NeRunConfig& cfg, const NeData& d, const AffinityResult& a, bool sparse,
                        Backend& backend, const std::function<void(int, double)>& progress, RunControl* control,
                        Comm* shards) {
  const NervParams& p = cfg.nerv;
  const MatrixD start = fit_start(cfg, d, a, sparse, backend.threads());
  const MatrixD* s = start.rows > 0 ? &start : nullptr;
  const bool as_given = p.init != "auto" && map_start(p.init) == MapStart::given;
  return sparse ? fit_nerv(a.sparse_conditional, a.beta, p, cfg.run.seed, backend, progress, s, control, as_given, shards)
                : fit_nerv(a.conditional, a.beta, p, cfg.run.seed, backend, progress, s, control, as_given, shards);
}

// Which pairs NeRV summed, its start, and on the approximate path the check at the final map.
void add_pairs_json(json& result, const NervResult& r, const NervParams& p) {
  result["pairs"] = r.approximate ? "approximate" : "exact";
  result["init_scale"] = r.init_scale;
  if (!r.approximate) return;
  result["cutoff"] = p.cutoff;
  result["pairs_per_row"] = r.truncation.mean_row_pairs;
  result["truncation"] = {{"estimated_relative_error", r.truncation.relative_error},
                          {"rows_checked", r.truncation.rows},
                          {"estimated_exact_cost", r.truncation.estimated_exact},
                          {"note", "the truncated cost against the exact one on rows drawn with the seed, each "
                                   "summed over all points in double, scaled to all rows"}};
}

// Everything a run checks before it fits (keys, input files, memory plan): `orrery validate` is
// this and nothing more, so it refuses what a run would refuse before fitting.
struct NePrepared {
  NeRunConfig cfg;
  NeData d;
  std::unique_ptr<Backend> backend;
  MemoryInfo mem;
  NePlan plan;
  bool device() const { return mem.device_bytes > 0; }
};

NePrepared prepare_ne(const RunConfig& run) {
  NePrepared p;
  p.cfg = read_ne_config(run);
  p.d = load_ne_data(p.cfg);
  p.backend = make_backend(run.device, run.threads, run_comm(run));
  p.mem = p.backend->memory();
  p.plan = plan_ne_run(p.cfg, p.d.points(), p.mem, p.device(), p.d.X.cols, run_comm(run).size());
  check_rank_memory(p.plan.memory, p.mem, p.device(), run);
  return p;
}

// input.cv_folds: snerv learns its metric from the labels, so each fold's map is made without
// them; hssne and nerv do not use labels, so their map is the run's own map Y. `fit_progress`
// reports each snerv fold fit's iterations.
json cross_validation(const NePrepared& p, const std::string& method, const MatrixD& Y, bool quiet,
                      const std::function<void(int, double)>& fit_progress = {}) {
  const int folds = p.cfg.input.cv_folds;
  const CrossValidation r = cross_validate_knn(
      p.d.labels, folds, p.cfg.run.seed,
      [&](const std::vector<int>& train) {
        if (p.cfg.method != NeMethod::snerv) return Y;
        const SnervParams prm = snerv_params(p.cfg, p.plan, p.d.scale_exponent);
        return fit_snerv(p.d.X, train, prm, p.cfg.run.seed, *p.backend, fit_progress).nerv.coords;
      },
      [&](int fold, double e) {
        if (!quiet) progress_line("[%s] fold %d/%d: 5-NN test error %.4f\n", method.c_str(), fold + 1, folds, e);
      });
  return {{"folds", folds}, {"knn5_test_error", r.errors}, {"mean_knn5_test_error", r.mean}};
}

}  // namespace

std::string validate_ne(const RunConfig& run) {
  if (is_placement(run)) return validate_placement(run);
  const NePrepared p = prepare_ne(run);
  return describe(p.cfg, p.d) + ", " + affinity_text(p.plan) + " affinities" +
         (p.plan.approximate ? " (approximate neighbors)" : "") + ", planned peak " +
         format_bytes(p.plan.memory.host_peak()) + " host" +
         (p.device() ? " + " + format_bytes(p.plan.memory.device_peak()) + " GPU" : "");
}

json cross_validate_snerv(const RunConfig& run, bool quiet) {
  const NePrepared p = prepare_ne(run);
  if (p.cfg.method != NeMethod::snerv || p.cfg.input.cv_folds <= 0)
    throw std::invalid_argument("cross_validate_snerv: a snerv run with input.cv_folds");
  const auto t0 = Clock::now();
  int fold = 0;
  const json cv = cross_validation(p, run.method, MatrixD(), quiet, [&](int it, double J) {
    if (it == 0) ++fold;
    if (!quiet && it % 50 == 0)
      progress_line("[snerv] fold %d iter %5d  cost %.8g  %s\n", fold, it, J,
                   format_seconds(seconds_since(t0)).c_str());
  });
  return {{"cross_validation", cv}, {"device", p.backend->name()}};
}

json run_ne(const RunConfig& run, bool quiet, RunControl* control) {
  Comm& comm = run_comm(run);
  if (is_placement(run)) {
    if (comm.size() > 1)
      input_error("comm: this run has " + std::to_string(comm.size()) +
                  " ranks, but placing points into a map (input.model) runs in one process");
    return run_placement(run, quiet);
  }
  // hssne shards its rows over the ranks (HssneEngine::shard), nerv and snerv their evaluations
  // (NervEngine::shard); every rank reads the input and makes P and the start alike, and rank 0
  // speaks for the run and writes it.
  const bool lead = comm.rank() == 0;
  quiet = quiet || !lead;
  const auto t0 = Clock::now();
  NePrepared prep;
  on_every_rank(run, [&] { prep = prepare_ne(run); });
  const NeRunConfig& cfg = prep.cfg;
  const std::string& method = run.method;
  const NeData& d = prep.d;
  const index_t N = d.points();
  const std::unique_ptr<Backend>& backend = prep.backend;
  const MemoryInfo& mem = prep.mem;
  const bool device = prep.device();
  const NePlan& plan = prep.plan;
  if (!quiet)
    progress_line("[%s] %s, %s affinities on %s; planned peak %s host%s\n", method.c_str(),
                 describe(cfg, d).c_str(), affinity_text(plan).c_str(), backend->name().c_str(),
                 format_bytes(plan.memory.host_peak()).c_str(),
                 device ? (" + " + format_bytes(plan.memory.device_peak()) + " GPU").c_str() : "");
  if (!quiet && cfg.method == NeMethod::hssne && cfg.hssne.exaggeration != 1.0 && cfg.hssne.exaggeration_iter >= cfg.hssne.max_iter)
    progress_line(
                 "[hssne] WARNING: params.exaggeration_iter (%d) >= params.max_iter (%d): every iteration runs with "
                 "P exaggerated, so the map does not minimise KL(P || Q); lower exaggeration_iter or set "
                 "exaggeration to 1\n",
                 cfg.hssne.exaggeration_iter, cfg.hssne.max_iter);
  if (!quiet && d.duplicates.count > 0)
    progress_line("[%s] duplicate points: %lld (the first: row %lld repeats row %lld); mapped as data\n",
                 method.c_str(), static_cast<long long>(d.duplicates.count),
                 static_cast<long long>(d.duplicates.second + 1), static_cast<long long>(d.duplicates.first + 1));
  const double t_read = seconds_since(t0);

  const auto t1 = Clock::now();
  double t_aff = 0.0;
  auto progress = [&](int it, double J) {
    if (!quiet && (it % 50 == 0))
      progress_line("[%s] iter %5d  cost %.8g  %s\n", method.c_str(), it, J,
                   format_seconds(seconds_since(t1)).c_str());
  };
  MatrixD Y;
  json params, result;
  std::vector<double> trace;
  std::vector<int> trace_iterations;  // hssne: the iterations the trace's values were taken after
  double perplexity = cfg.input.perplexity;
  MatrixD metric_distances;  // snerv: the map's input space (empty on the candidate path)
  NeighborSearch search;
  Comm* shards = comm.size() > 1 ? &comm : nullptr;
  if (cfg.method == NeMethod::snerv) {
    SnervResult r;
    fit_on_every_rank(comm, [&] {
      r = fit_snerv(d.X, d.labels, snerv_params(cfg, plan, d.scale_exponent), run.seed, *backend, progress, control,
                    d.start.rows > 0 ? &d.start : nullptr, shards);
    });
    if (!quiet)
      progress_line("[snerv] class model: K = %lld, s = %.4g, training log-likelihood %.4f; perplexity %.4g\n",
                   static_cast<long long>(r.model.centres.rows), r.model.width, r.model.train_loglik, r.perplexity);
    Y = r.nerv.coords;
    trace = r.nerv.objective_trace;
    perplexity = r.perplexity;
    metric_distances = r.metric_distances;
    params = fields_to_json(cfg.nerv, nerv_fields());
    // the model's widths in the input's units (the run took them as 2^e)
    const auto width = [&](double w) { return std::ldexp(w, d.scale_exponent); };
    json sel = json::array();
    for (const auto& v : r.model.selection)
      sel.push_back({{"components", v.components}, {"width", width(v.width)}, {"validation_loglik", v.loglik}});
    result = {{"iterations", r.nerv.iterations}, {"evaluations", r.nerv.evaluations},
              {"stop_reason", r.nerv.stop_reason}, {"objective", trace.empty() ? 0.0 : trace.back()},
              {"metric",
               {{"components", r.model.centres.rows}, {"width", width(r.model.width)}, {"train_loglik", r.model.train_loglik},
                {"iterations", r.model.iterations}, {"perplexity", r.perplexity}, {"selection", sel},
                {"neighbors", r.candidates ? "candidates" : "exact"},
                {"params", fields_to_json(cfg.input.metric, class_mixture_fields())}}}};
    add_pairs_json(result, r.nerv, cfg.nerv);
    if (r.candidates) {
      result["metric"]["candidates"] = r.candidate_k;
      result["metric"]["candidate_search"] = r.approximate_candidates ? "approximate" : "exact";
    }
  } else fit_on_every_rank(comm, [&] {
    const AffinityResult a = ne_affinities(
        cfg, d, plan, *backend,
        [&](const char* what) { return std::function<void(index_t, index_t)>(StageProgress{method, what, quiet}); },
        &search, shards);
    if (!quiet && plan.sparse && !given_affinities(cfg.input) && cfg.input.distances.empty())
      progress_line("[%s] %s neighbors (k = %d): %s%s\n", method.c_str(), search.approximate ? "approximate" : "exact",
                   sparse_neighbors(cfg.input.perplexity), format_seconds(search.seconds).c_str(),
                   search.approximate ? (", estimated recall " + detail::number_text(search.recall)).c_str() : "");
    if (!quiet && !cfg.input.neighbor_graph.empty() && d.graph.short_rows > 0)
      progress_line(
                   "[%s] neighbor graph: %lld of its rows list at most perplexity %s neighbors (the shortest %lld) and "
                   "get uniform probabilities; every row reaches perplexity %s\n",
                   method.c_str(), static_cast<long long>(d.graph.short_rows),
                   detail::number_text(cfg.input.perplexity).c_str(), static_cast<long long>(d.graph.min_neighbors),
                   detail::number_text(d.graph.reachable_perplexity).c_str());
    t_aff = seconds_since(t1);
    if (cfg.method == NeMethod::hssne) {
      const MatrixD first = fit_start(cfg, d, a, plan.sparse, backend->threads());
      const MatrixD* start = first.rows > 0 ? &first : nullptr;
      const HssneResult r =
          plan.sparse ? fit_hssne(a.sparse, cfg.hssne, run.seed, *backend, progress, control, start, shards)
                      : fit_hssne(a.dense, d.labels, cfg.hssne, run.seed, *backend, progress, control, start, shards);
      Y = r.coords;
      trace = r.objective_trace;
      trace_iterations = r.objective_iterations;
      params = fields_to_json(cfg.hssne, hssne_fields());
      result = {{"iterations", r.iterations}, {"evaluations", r.evaluations}, {"stop_reason", r.stop_reason},
                {"restarts", r.restarts}, {"damped_steps", r.damped_steps},
                {"objective", trace.empty() ? 0.0 : trace.back()}};
      const HssneRepulsion& rep = r.repulsion;  // what ran, `auto` resolved (hssne.hpp)
      const HssneParams& used = r.used;
      result["repulsion"] = repulsion_name(rep);
      if (rep.tree) result["tree_angle"] = rep.tree_angle;
      result["optimizer"] = enum_name(used.optimizer);
      if (used.optimizer == HssneOptimizer::gradient) result["learning_rate"] = used.learning_rate;
      if (rep.interpolated)
        result["interpolation"] = {{"nodes", rep.grid.nodes}, {"box_width", rep.grid.box_width},
                                   {"exact_where_cheaper", rep.exact_when_cheaper},
                                   {"tree_where_grid_dearer", rep.tree_when_grid_dearer},
                                   {"objective_note", "J and its trace use the interpolated normaliser Z"}};
    } else {
      const NervResult r = fit_nerv_run(cfg, d, a, plan.sparse, *backend, progress, control, shards);
      Y = r.coords;
      trace = r.objective_trace;
      params = fields_to_json(cfg.nerv, nerv_fields());
      result = {{"iterations", r.iterations}, {"evaluations", r.evaluations}, {"stop_reason", r.stop_reason},
                {"objective", trace.empty() ? 0.0 : trace.back()}, {"arithmetic", r.arithmetic}};
      add_pairs_json(result, r, cfg.nerv);
    }
  });
  const double t_fit = seconds_since(t1) - t_aff;
  std::vector<double> rank_fit(static_cast<size_t>(comm.size()), t_fit);
  if (comm.size() > 1) comm.allgatherv(&t_fit, 1, rank_fit.data(), std::vector<std::size_t>(rank_fit.size(), 1));
  if (!quiet)
    progress_line("[%s] %lld points: %s after %d iterations, %s\n", method.c_str(), static_cast<long long>(N),
                 result["stop_reason"].get<std::string>().c_str(), result["iterations"].get<int>(),
                 format_seconds(t_fit).c_str());

  // NeRV's map lives at the input's length scale (nerv.hpp): in the input's units when the run took
  // them as 2^e (NeData::scale_exponent). HSSNE's and supervised NeRV's maps have no input units.
  // The model files keep the run's own units, in which a placement meets them.
  const MatrixD Y_input_units =
      cfg.method == NeMethod::nerv && d.scale_exponent != 0 ? times_power_of_two(Y, d.scale_exponent) : MatrixD();
  const MatrixD& Y_out = Y_input_units.empty() ? Y : Y_input_units;

  const auto t3 = Clock::now();
  QualityRequest req = ne_quality_request(cfg, N, backend->threads());
  const bool metric_input = cfg.method == NeMethod::snerv && !metric_distances.empty();
  req.input_is_distance_matrix = !cfg.input.distances.empty() || metric_input;
  // with precomputed affinities there is no input space to compare the map with
  // every rank holds the whole map: the ranks share the quality measures' query points
  const json quality = given_affinities(cfg.input)
                           ? json()
                           : quality_json(evaluate_quality(metric_input ? metric_distances : d.X, Y, d.labels, req,
                                                           *backend, comm.size() > 1 ? &comm : nullptr));
  // rank 0 has the whole map and writes it
  if (!lead && !run.result) return json::object();
  const json cv = cfg.input.cv_folds > 0 ? cross_validation(prep, method, Y, quiet) : json();
  const double t_eval = seconds_since(t3);

  io::OutputSet out;
  json outputs = json::object();
  add_coordinates(out, outputs, run, "embedding", Y_out);
  namespace fs = std::filesystem;
  const fs::path dir(run.output.dir);
  if (!cfg.input.vectors.empty()) {
    // what a later run needs to place new points into this map (input.model; hssne_place_run.hpp,
    // nerv_place_run.hpp): the points as searched and the map
    // (nerv and snerv read their lambda, dim and perplexity from the report)
    auto add = [&](const char* name, const MatrixD& M) {
      const std::string p = (dir / name).string();
      out.add(p, io::npy_bytes(M));
      outputs[std::string(name).substr(0, std::string(name).size() - 4)] = p;
    };
    add("model_reference.npy", d.X);
    add("model_map.npy", Y);
    if (cfg.input.pca > 0) {
      add("model_pca_mean.npy", d.pca.mean);
      add("model_pca_components.npy", d.pca.components);
    }
  }
  add_ne_map_svg(out, outputs, run, Y_out, d,
                 std::string(ne_method_title(cfg.method)) + ": " +
                     std::to_string(N) + " points");
  json report = report_header(run, *backend);
  report["params"] = params;
  report["input"] = fields_to_json(cfg.input, ne_input_fields(cfg.method));
  report["input"]["points"] = N;
  report["input"]["dims"] = d.X.cols;
  report["input"]["scale_exponent"] = d.scale_exponent;
  if (!given_affinities(cfg.input)) report["input"]["duplicate_points"] = d.duplicates.count;
  if (!cfg.input.neighbor_graph.empty())
    report["input"]["neighbor_graph"] = {{"pairs", d.graph.entries},
                                         {"min_neighbors", d.graph.min_neighbors},
                                         {"max_neighbors", d.graph.max_neighbors},
                                         {"rows_below_perplexity", d.graph.short_rows},
                                         {"reachable_perplexity", d.graph.reachable_perplexity}};
  report["input"]["perplexity"] = perplexity;
  report["input"]["affinities_requested"] = enum_name(cfg.input.affinities);
  report["input"]["affinities"] = plan.sparse ? "sparse" : "dense";
  if (cfg.method == NeMethod::snerv) {
    report["input"]["neighbors_requested"] = enum_name(cfg.input.neighbors);
    report["input"]["neighbors"] = plan.metric_candidates ? "approximate" : "exact";
  } else {
    const bool searched = plan.sparse && cfg.input.vectors.size() > 0;
    report["input"]["neighbors_requested"] = enum_name(cfg.input.neighbors);
    report["input"]["neighbors"] = !searched ? "none" : search.approximate ? "approximate" : "exact";
    if (searched) report["input"]["neighbor_seconds"] = search.seconds;
    if (search.approximate) {
      report["input"]["neighbor_recall"] = search.recall;
      report["input"]["neighbor_recall_sample"] = search.recall_sample;
      report["input"]["neighbor_ef_used"] = search.ef;
    }
  }
  report["input"]["source"] = !cfg.input.affinity_matrix.empty()  ? "affinity_matrix"
                              : !cfg.input.neighbor_graph.empty() ? "neighbor_graph"
                              : !cfg.input.distances.empty()     ? "distances"
                                                                 : "vectors";
  report["memory"] = plan_json(plan, mem);
  json rows = json::array();
  for (int r = 0; r < comm.size(); ++r) rows.push_back(hssne_rank_block(N, r, comm.size()).count);
  if (cfg.method == NeMethod::hssne) report["comm"]["rows"] = rows;
  report["comm"]["fit_seconds"] = rank_fit;
  report["result"] = result;
  report["trace"] = trace;
  if (!trace_iterations.empty()) report["trace_iterations"] = trace_iterations;
  report["quality"] = quality;
  if (cfg.method == NeMethod::snerv)  // what the quality measures compared the map with
    report["quality_input"] = metric_input ? "the learning metric's N x N distances"
                                           : "euclidean vectors (the metric's N x N distances were not formed)";
  if (!cv.is_null()) report["cross_validation"] = cv;
  report["timings"] = {{"read", t_read}, {"affinities", t_aff}, {"fit", t_fit}, {"evaluate", t_eval},
                       {"total", seconds_since(t0)}};
  outputs["report"] = (dir / "report.json").string();
  report["outputs"] = outputs;
  commit_run(out, report, run);
  if (!quiet) progress_line("[%s] wrote %s\n", method.c_str(), run.output.dir.c_str());
  return report;
}

}  // namespace orrery::pipeline
