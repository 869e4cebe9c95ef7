#include "run/nerv_place_run.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "run/quality_json.hpp"
#include "run/hssne_place_run.hpp"
#include "run/ne_config.hpp"
#include "run/run_common.hpp"
#include "io/writers.hpp"
#include "orrery/error.hpp"
#include "orrery/knn.hpp"
#include "orrery/memory_plan.hpp"
#include "orrery/nerv_place.hpp"
#include "orrery/quality.hpp"

namespace orrery::pipeline {
namespace {

namespace fs = std::filesystem;

struct Prepared {
  NeRunConfig cfg;
  PlacementFiles model;
  double lambda = NervParams{}.lambda, perplexity = 0.0;
  NeData d;  // the new points, projected as the model's were
  int k = 0;
  bool approximate = false;
  NervPlacementParams params;
};

// The keys of params a placement reads; the others shape a fit and are refused.
bool placement_param(const std::string& key) { return key == "dim" || key == "lambda" || key == "max_iter"; }

// The new points' neighbor lists and probabilities; on a device the map, the lists and each point's
// beta, place, cost and steps; the approximate search's index over the model's points.
MemoryPlan placement_plan(const Prepared& p, bool device) {
  const double N = static_cast<double>(p.model.reference.rows), M = static_cast<double>(p.d.X.rows);
  const double d = static_cast<double>(p.model.reference.cols), D = static_cast<double>(p.model.dim);
  MemoryPlan plan;
  plan.add({"the new points' neighbor lists and probabilities, M k (8 + 8 + 8) bytes", "input.vectors",
            "place fewer points at once", 24.0 * M * p.k, 0.0});
  if (device)
    plan.add({"the placement on the device: the map, the lists and probabilities, 8 N D + 16 M k bytes, and each "
              "point's state, M (8 D + 20) bytes",
              "input.vectors", "place fewer points at once", 0.0,
              8.0 * N * D + 16.0 * M * p.k + M * (8.0 * D + 20.0)});
  if (p.approximate)
    plan.add({"the approximate search's HNSW index over the model's points, about N (12 M + 4 d + 16) bytes",
              "input.neighbors", "use \"exact\" (slower, no index)",
              N * (12.0 * ApproxKnnParams{}.M + 4.0 * d + 16.0), 0.0});
  return plan;
}

Prepared prepare(const RunConfig& run) {
  Prepared p;
  p.cfg = read_ne_config(run);
  const NeInputSpec& in = p.cfg.input;
  const std::string& method = run.method;
  for (const auto& [key, value] : run.params.items())
    if (!placement_param(key))
      input_error("params." + key + ": does not apply to a placement into input.model (it reads params.dim, "
                  "params.lambda and params.max_iter; the map is the model's)");
  if (p.cfg.method == NeMethod::snerv && run.input.contains("metric"))
    input_error("input.metric: does not apply to a placement into input.model (new points are placed by their "
                "Euclidean neighbors among the model's points)");
  p.model = read_placement_files(in.model, method);
  const PlacementFiles& m = p.model;
  try {
    p.lambda = m.report.at("params").at("lambda").get<double>();
    p.perplexity = m.report.at("input").at("perplexity").get<double>();
  } catch (const json::exception&) {
    input_error("input.model: " + in.model + "/report.json: no params.lambda or input.perplexity");
  }
  if (!(p.lambda >= 0.0 && p.lambda <= 1.0) || !(p.perplexity > 1.0))
    input_error("input.model: " + in.model + "/report.json: params.lambda outside [0, 1] or input.perplexity <= 1");
  if (run.params.contains("dim") && p.cfg.nerv.dim != m.dim)
    input_error("params.dim: " + std::to_string(p.cfg.nerv.dim) + ", but the map in input.model " + in.model + " is " +
                std::to_string(m.dim) + "-D");
  if (run.params.contains("lambda") && p.cfg.nerv.lambda != p.lambda)
    input_error("params.lambda: " + detail::number_text(p.cfg.nerv.lambda) + ", but the map in input.model " +
                in.model + " was made with lambda " + detail::number_text(p.lambda));
  // the new point's beta is its scale in the map too: its perplexity must be the map's
  if (run.input.contains("perplexity") && in.perplexity != p.perplexity)
    input_error("input.perplexity: " + detail::number_text(in.perplexity) + ", but the map in input.model " + in.model +
                " was made with perplexity " + detail::number_text(p.perplexity) +
                " (a new point's bandwidth scales its map distances, so it is calibrated as the map's points were)");
  if (run.params.contains("max_iter")) p.params.max_iter = p.cfg.nerv.max_iter;
  p.d = placement_points(p.cfg, m.reference.cols, m.pca, m.scale_exponent, run.threads, m.metric);
  p.cfg.input.vector_metric = m.metric;  // the search and the quality measures compare as the model did
  p.k = sparse_neighbors(p.perplexity);
  if (p.k > m.reference.rows)
    input_error("input.model: its perplexity " + detail::number_text(p.perplexity) + " asks for k = ceil(3 perplexity) = " +
                std::to_string(p.k) + " neighbors among its " + std::to_string(m.reference.rows) + " points");
  p.approximate = approximate_placement(in, m.reference.rows, p.d.X.rows);
  check_memory_plan(placement_plan(p, false), MemoryInfo{available_host_memory(), 0.0}, false);
  return p;
}

}  // namespace

bool is_nerv_placement(const RunConfig& run) {
  return read_ne_config(run).method != NeMethod::hssne && run.input.contains("model");
}

std::string validate_nerv_placement(const RunConfig& run) {
  const Prepared p = prepare(run);
  return run.method + " placement, " + std::to_string(p.d.X.rows) + " points into the map of " +
         std::to_string(p.model.reference.rows) + " in " + p.cfg.input.model + ", k = " + std::to_string(p.k) + " " +
         (p.approximate ? "approximate" : "exact") + " neighbors";
}

json run_nerv_placement(const RunConfig& run, bool quiet) {
  const auto t0 = Clock::now();
  const Prepared p = prepare(run);
  const std::string& method = run.method;
  const PlacementFiles& m = p.model;
  const NeData& d = p.d;
  const index_t M = d.X.rows, N = m.reference.rows;
  auto backend = make_backend(run.device, run.threads);
  const MemoryInfo mem = backend->memory();
  if (mem.device_bytes > 0) check_memory_plan(placement_plan(p, true), mem, true);
  const int threads = backend->threads();
  if (!quiet)
    progress_line("[%s] placing %lld points into the %lld-point map of %s\n", method.c_str(),
                 static_cast<long long>(M), static_cast<long long>(N), p.cfg.input.model.c_str());
  const double t_read = seconds_since(t0);

  const auto t1 = Clock::now();
  const KnnGraph g = placement_neighbors(m.reference, d.X, p.k, p.approximate, p.cfg, threads, method.c_str(), quiet);
  const double t_knn = seconds_since(t1);

  const auto t2 = Clock::now();
  const NervPlacementResult r = place_nerv_points(g, p.perplexity, m.map, p.lambda, p.params, *backend);
  const double t_place = seconds_since(t2);
  for (index_t i = 0; i < M; ++i)
    for (index_t a = 0; a < r.coords.cols; ++a)
      if (!std::isfinite(r.coords(i, a)))
        internal_error("nerv placement: a non-finite place for new point " + std::to_string(i + 1));
  // the places in the model map's units; a NeRV map is at its input's length scale, so its run wrote
  // it in the input's units (ne_run.cpp), and so are the places
  const MatrixD places =
      p.cfg.method == NeMethod::nerv && d.scale_exponent != 0 ? times_power_of_two(r.coords, d.scale_exponent) : r.coords;

  const auto t3 = Clock::now();
  json quality;
  if (M >= 3) quality = quality_json(evaluate_quality(d.X, r.coords, d.labels, ne_quality_request(p.cfg, M, threads), *backend));
  const double t_eval = seconds_since(t3);

  io::OutputSet out;
  json outputs = json::object();
  add_coordinates(out, outputs, run, "embedding", places);
  const fs::path dir(run.output.dir);
  add_ne_map_svg(out, outputs, run, places, d,
                 std::string(ne_method_title(p.cfg.method)) + ": " + std::to_string(M) + " points placed into a map of " + std::to_string(N));
  double cost = 0, steps = 0;
  int most = 0;
  for (index_t i = 0; i < M; ++i) {
    const auto si = static_cast<size_t>(i);
    cost += r.cost[si], steps += r.steps[si], most = std::max(most, r.steps[si]);
  }
  json report = report_header(run, *backend);
  report["params"] = {{"lambda", p.lambda}, {"dim", m.dim}, {"max_iter", p.params.max_iter}, {"tol", p.params.tol}};
  report["input"] = fields_to_json(p.cfg.input, ne_input_fields(p.cfg.method));
  report["input"]["points"] = M;
  report["input"]["dims"] = d.X.cols;
  report["input"]["scale_exponent"] = d.scale_exponent;
  report["input"]["perplexity"] = p.perplexity;
  report["input"]["neighbors"] = p.approximate ? "approximate" : "exact";
  report["input"]["space"] = "euclidean";
  report["result"] = {{"placement", true},
                      {"reference_points", N},
                      {"mean_cost", M > 0 ? cost / static_cast<double>(M) : 0.0},
                      {"cost_note", "per new point, lambda KL(p_x || q_x) + (1 - lambda) KL(q_x || p_x) over the "
                                    "reference points, with NeRV's sparse-row floor outside its neighbors"},
                      {"mean_steps", M > 0 ? steps / static_cast<double>(M) : 0.0},
                      {"most_steps", most}};
  if (p.cfg.method == NeMethod::snerv)
    report["result"]["space_note"] = "new points' neighbors are Euclidean (after the model's PCA); the map's points "
                                     "were placed by the learning metric";
  report["quality"] = quality;
  report["timings"] = {{"read", t_read}, {"neighbors", t_knn}, {"placement", t_place}, {"evaluate", t_eval},
                       {"total", seconds_since(t0)}};
  outputs["report"] = (dir / "report.json").string();
  report["outputs"] = outputs;
  commit_run(out, report, run);
  if (!quiet)
    progress_line("[%s] placed %lld points (mean cost %.4g, at most %d Newton steps); wrote %s\n",
                 method.c_str(), static_cast<long long>(M), M > 0 ? cost / static_cast<double>(M) : 0.0, most,
                 run.output.dir.c_str());
  return report;
}

}  // namespace orrery::pipeline
