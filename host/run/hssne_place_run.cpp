#include "run/hssne_place_run.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "run/quality_json.hpp"
#include "run/nerv_place_run.hpp"
#include "run/ne_config.hpp"
#include "run/run_common.hpp"
#include "io/memory_inputs.hpp"
#include "io/readers.hpp"
#include "io/writers.hpp"
#include "orrery/error.hpp"
#include "orrery/hssne.hpp"
#include "orrery/inner_product.hpp"
#include "orrery/knn.hpp"
#include "orrery/memory_plan.hpp"
#include "orrery/quality.hpp"

namespace orrery::pipeline {

namespace fs = std::filesystem;

namespace {

// A finite double's binary exponent lies in [-1074, 1023]: a recorded scale exponent beyond is no run's.
constexpr long long kMaxScaleExponent = 1100;

}  // namespace

PlacementFiles read_placement_files(const std::string& dir, const std::string& method) {
  const fs::path d(dir);
  const std::string where = "input.model: " + dir;
  const std::string give = "give a " + method + " run's output.dir";
  // the directory may be a memory scope's (io/memory_inputs.hpp: a model handed over in process)
  if (!io::input_is_directory(dir)) input_error(where + ": not a directory (" + give + ")");
  if (!io::input_exists((d / "report.json").string())) input_error(where + ": no report.json (" + give + ")");
  PlacementFiles m;
  try {
    m.report = json::parse(io::read_input_bytes((d / "report.json").string()));
  } catch (const json::exception& e) {
    input_error(where + "/report.json: not valid JSON: " + e.what());
  }
  const std::string found = m.report.is_object() ? m.report.value("method", std::string("?")) : std::string("?");
  if (found != method)
    input_error(where + " holds a " + found + " run; method " + method + " places points into " + method +
                " maps only");
  try {
    m.dim = m.report.at("params").at("dim").get<int>();
  } catch (const json::exception&) {
    input_error(where + "/report.json: no params.dim");
  }
  // absent before runs recorded it: those took every input in its own units
  const json* e = m.report.contains("input") && m.report["input"].is_object() && m.report["input"].contains("scale_exponent")
                      ? &m.report["input"]["scale_exponent"]
                      : nullptr;
  if (e) {
    if (!e->is_number_integer() || std::abs(e->get<long long>()) > kMaxScaleExponent)
      input_error(where + "/report.json: input.scale_exponent is " + detail::shown(*e) + ", expected an integer in [-" +
                  std::to_string(kMaxScaleExponent) + ", " + std::to_string(kMaxScaleExponent) + "]");
    m.scale_exponent = static_cast<int>(e->get<long long>());
  }
  // absent before runs recorded it (and in nerv's reports before input.metric): Euclidean
  if (m.report.contains("input") && m.report["input"].is_object() && m.report["input"].contains("metric") &&
      m.report["input"]["metric"].is_string())
    m.metric = parse_enum<VectorMetric>(m.report["input"]["metric"].get<std::string>(), where + "/report.json: input.metric");
  for (const char* f : {"model_reference.npy", "model_map.npy"})
    if (!io::input_exists((d / f).string()))
      input_error(where + ": no " + f + " (" + method + " runs from input.vectors write it; a run from distances or "
                  "affinities cannot place new points)");
  m.reference = io::read_matrix((d / "model_reference.npy").string());
  m.map = io::read_matrix((d / "model_map.npy").string());
  if (m.map.rows != m.reference.rows || m.map.cols != m.dim || (m.dim != 2 && m.dim != 3))
    input_error(where + ": model_map.npy is " + std::to_string(m.map.rows) + " x " + std::to_string(m.map.cols) +
                ", expected " + std::to_string(m.reference.rows) + " x " + std::to_string(m.dim));
  if (io::input_exists((d / "model_pca_mean.npy").string())) {
    if (!io::input_exists((d / "model_pca_components.npy").string()))
      input_error(where + ": model_pca_mean.npy without model_pca_components.npy");
    m.pca.mean = io::read_matrix((d / "model_pca_mean.npy").string());
    m.pca.components = io::read_matrix((d / "model_pca_components.npy").string());
    if (m.pca.mean.rows != 1 || m.pca.components.rows != m.pca.mean.cols || m.pca.components.cols != m.reference.cols)
      input_error(where + ": model_pca_mean.npy and model_pca_components.npy do not match model_reference.npy");
  }
  return m;
}

NeData placement_points(const NeRunConfig& cfg, index_t reference_cols, const PcaBasis& pca, int scale_exponent,
                        int threads, VectorMetric metric) {
  NeRunConfig as_model = cfg;
  as_model.input.vector_metric = metric;
  NeData d = load_ne_data(as_model, scale_exponent);
  const index_t expect = pca.mean.cols > 0 ? pca.mean.cols : reference_cols;
  if (d.X.cols != expect)
    input_error("input.vectors: " + cfg.input.vectors + " has " + std::to_string(d.X.cols) +
                " columns, but the points of " + cfg.input.model + " had " + std::to_string(expect));
  if (pca.mean.cols > 0) d.X = pca_apply(pca, d.X, threads);
  return d;
}

namespace {

// New points x reference points up to which input.neighbors auto searches exactly (the exact
// search then costs about as much as building the approximate search's graph over the reference).
constexpr double kExactPlacementPairs = 1e9;

}  // namespace

bool approximate_placement(const NeInputSpec& in, index_t N, index_t M) {
  const double pairs = static_cast<double>(M) * static_cast<double>(N);
  return in.neighbors == NeighborsMode::approximate ||
         (in.neighbors == NeighborsMode::automatic && N > kExactNeighborsMaxPoints && pairs > kExactPlacementPairs);
}

KnnGraph placement_neighbors(const MatrixD& reference, const MatrixD& points, int k, bool approximate,
                              const NeRunConfig& cfg, int threads, const char* tag, bool quiet) {
  // inner_product (the model's metric): the new points [x, 0] among the model's points
  // [y, sqrt(M^2 - |y|^2)], M the largest norm among the model's (orrery/inner_product.hpp)
  const bool inner = cfg.input.vector_metric == VectorMetric::inner_product;
  const MatrixD Ri = inner ? inner_product_references(reference) : MatrixD(),
                Xi = inner ? inner_product_queries(points) : MatrixD();
  const MatrixD& R = inner ? Ri : reference;
  const MatrixD& X = inner ? Xi : points;
  if (!approximate) return exact_knn_to(R, X, k, threads, StageProgress{tag, "exact neighbors", quiet});
  // the approximate search compares float distances: both sets at the reference's unit scale
  const int e = float_safe_exponent(R);
  const MatrixD Rs = e ? times_power_of_two(R, -e) : R, Q = e ? times_power_of_two(X, -e) : X;
  ApproxKnnParams prm;
  prm.M = kAffinityLinks;  // the affinities' graph, queried at neighbor_ef
  prm.ef_search = cfg.input.neighbor_ef;
  return approximate_knn_to(Rs, Q, k, cfg.run.seed, threads, prm, StageProgress{tag, "approximate neighbors", quiet});
}

namespace {

// What an hssne placement needs from the model's directory.
struct PlacementModel {
  MatrixD reference, map;
  PcaBasis pca;  // 0 x 0 when the run projected nothing
  double alpha = 1.0;
  int dim = 2;
  int scale_exponent = 0;  // PlacementFiles::scale_exponent
  VectorMetric metric = VectorMetric::euclidean;  // PlacementFiles::metric
};

PlacementModel load_model(const std::string& dir) {
  PlacementFiles f = read_placement_files(dir, "hssne");
  PlacementModel m;
  try {
    m.alpha = f.report.at("params").at("alpha").get<double>();
  } catch (const json::exception&) {
    input_error("input.model: " + dir + "/report.json: no params.alpha");
  }
  m.dim = f.dim;
  m.reference = std::move(f.reference);
  m.map = std::move(f.map);
  m.pca = std::move(f.pca);
  m.scale_exponent = f.scale_exponent;
  m.metric = f.metric;
  return m;
}

struct Prepared {
  NeRunConfig cfg;
  PlacementModel model;
  NeData d;  // the new points, projected as the model's were
  double perplexity = 0;
  int k = 0;
  bool approximate = false;
};

// The new points' perplexity unless input.perplexity is given: openTSNE's for its transform, and
// the better of those measured (10,000 Fashion-MNIST images placed into a map of 60,000, 5-NN
// accuracy among the map's: 0.832 at 5, 0.829 at 10, 0.826 at the map's 30; bench hssne-place).
constexpr double kPlacementPerplexity = 5.0;

// What a placement holds beyond the model and the new points, read already: their neighbor lists
// and conditional rows, the HNSW index over the model's points (approximate), on a device the
// engine's copies of the lists and the map with each point's state, and the frozen grid (checked by
// the grid itself when it is made, as every grid is).
MemoryPlan placement_plan(const Prepared& p, bool device) {
  const double N = static_cast<double>(p.model.reference.rows), M = static_cast<double>(p.d.X.rows);
  const double d = static_cast<double>(p.model.reference.cols);
  const double D = static_cast<double>(p.model.map.cols);
  MemoryPlan plan;
  plan.add({"the new points' neighbor lists and probabilities, M k (8 + 8 + 8) bytes", "input.perplexity",
            "place fewer points at once, or lower the perplexity", 24.0 * M * p.k, 0.0});
  if (device)
    plan.add({"the placement engine: the lists, probabilities and map, M k (8 + 8) + 8 N D bytes, and each point's "
              "state, M (32 D + 55) bytes",
              "input.perplexity", "place fewer points at once, or lower the perplexity", 0.0,
              16.0 * M * p.k + 8.0 * N * D + M * (32.0 * D + 55.0)});
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
  if (p.cfg.hssne.rho > 0) input_error("params.rho: does not apply to a placement into input.model");
  p.model = load_model(in.model);
  const PlacementModel& m = p.model;
  if (run.params.contains("dim") && p.cfg.hssne.dim != m.dim)
    input_error("params.dim: " + std::to_string(p.cfg.hssne.dim) + ", but the map in input.model " + in.model + " is " +
                std::to_string(m.dim) + "-D");
  if (run.params.contains("alpha") && p.cfg.hssne.alpha != m.alpha)
    input_error("params.alpha: " + detail::number_text(p.cfg.hssne.alpha) + ", but the map in input.model " + in.model +
                " was made with alpha " + detail::number_text(m.alpha));
  p.d = placement_points(p.cfg, m.reference.cols, m.pca, m.scale_exponent, run.threads, m.metric);
  p.cfg.input.vector_metric = m.metric;  // the search and the quality measures compare as the model did
  p.perplexity = run.input.contains("perplexity") ? in.perplexity : kPlacementPerplexity;
  p.k = sparse_neighbors(p.perplexity);
  if (p.k > m.reference.rows)
    input_error("input.perplexity: " + detail::number_text(p.perplexity) + " asks for k = ceil(3 perplexity) = " +
                std::to_string(p.k) + " neighbors among the " + std::to_string(m.reference.rows) + " points of " +
                in.model);
  p.approximate = approximate_placement(in, m.reference.rows, p.d.X.rows);
  check_memory_plan(placement_plan(p, false), MemoryInfo{available_host_memory(), 0.0}, false);
  return p;
}

}  // namespace

bool is_placement(const RunConfig& run) {
  return run.input.contains("model");  // the neighbor methods' entries (run/methods.cpp) call it
}

std::string validate_placement(const RunConfig& run) {
  if (is_nerv_placement(run)) return validate_nerv_placement(run);
  const Prepared p = prepare(run);
  return "hssne placement, " + std::to_string(p.d.X.rows) + " points into the map of " +
         std::to_string(p.model.reference.rows) + " in " + p.cfg.input.model + ", k = " + std::to_string(p.k) + " " +
         (p.approximate ? "approximate" : "exact") + " neighbors";
}

json run_placement(const RunConfig& run, bool quiet) {
  if (is_nerv_placement(run)) return run_nerv_placement(run, quiet);
  const auto t0 = Clock::now();
  const Prepared p = prepare(run);
  const PlacementModel& m = p.model;
  const NeData& d = p.d;
  const index_t M = d.X.rows, N = m.reference.rows;
  auto backend = make_backend(run.device, run.threads);
  const MemoryInfo mem = backend->memory();
  if (mem.device_bytes > 0) check_memory_plan(placement_plan(p, true), mem, true);
  const int threads = backend->threads();
  if (!quiet)
    progress_line("[hssne] placing %lld points into the %lld-point map of %s\n", static_cast<long long>(M),
                 static_cast<long long>(N), p.cfg.input.model.c_str());
  const double t_read = seconds_since(t0);

  const auto t1 = Clock::now();
  const KnnGraph g = placement_neighbors(m.reference, d.X, p.k, p.approximate, p.cfg, threads, "hssne", quiet);
  const double t_knn = seconds_since(t1);

  const auto t2 = Clock::now();
  const HssneRepulsion rep = resolve_repulsion(p.cfg.hssne, N, *backend);
  PlacementParams prm;
  prm.max_iter = p.cfg.hssne.max_iter;
  const auto moving = [&](int it, index_t left) {
    if (!quiet && (it % 50 == 0 || left == 0))
      progress_line("[hssne] placement step %4d: %lld points still moving, %s\n", it,
                   static_cast<long long>(left), format_seconds(seconds_since(t2)).c_str());
  };
  const PlacementResult r = place_points(g, p.perplexity, m.map, m.alpha, rep, prm, *backend, moving);
  const double t_place = seconds_since(t2);

  const auto t3 = Clock::now();
  json quality;
  if (M >= 3) quality = quality_json(evaluate_quality(d.X, r.coords, d.labels, ne_quality_request(p.cfg, M, threads), *backend));
  const double t_eval = seconds_since(t3);

  io::OutputSet out;
  json outputs = json::object();
  add_coordinates(out, outputs, run, "embedding", r.coords);
  const fs::path dir(run.output.dir);
  add_ne_map_svg(out, outputs, run, r.coords, d,
                 "HSSNE: " + std::to_string(M) + " points placed into a map of " + std::to_string(N));
  double cost = 0;
  int most = 0;
  for (index_t i = 0; i < M; ++i) cost += r.cost[static_cast<size_t>(i)], most = std::max(most, r.steps[static_cast<size_t>(i)]);
  json report = report_header(run, *backend);
  report["params"] = {{"alpha", m.alpha}, {"dim", m.dim}, {"max_iter", prm.max_iter}, {"tol", prm.tol},
                      {"repulsion", enum_name(p.cfg.hssne.repulsion)}};
  report["input"] = fields_to_json(p.cfg.input, ne_input_fields(NeMethod::hssne));
  report["input"]["points"] = M;
  report["input"]["dims"] = d.X.cols;
  report["input"]["scale_exponent"] = d.scale_exponent;
  report["input"]["perplexity"] = p.perplexity;
  report["input"]["neighbors"] = p.approximate ? "approximate" : "exact";
  report["result"] = {{"placement", true},
                      {"reference_points", N},
                      {"repulsion", r.interpolated ? "interpolated" : "exact"},
                      {"points_summed_exactly", r.exact_points},
                      {"mean_cost", M > 0 ? cost / static_cast<double>(M) : 0.0},
                      {"cost_note", "per new point, KL(p_i || q_i) over the reference points"},
                      {"most_steps", most}};
  report["quality"] = quality;
  report["timings"] = {{"read", t_read}, {"neighbors", t_knn}, {"placement", t_place}, {"evaluate", t_eval},
                       {"total", seconds_since(t0)}};
  outputs["report"] = (dir / "report.json").string();
  report["outputs"] = outputs;
  commit_run(out, report, run);
  if (!quiet)
    progress_line("[hssne] placed %lld points (mean cost %.4g, at most %d steps); wrote %s\n",
                 static_cast<long long>(M), M > 0 ? cost / static_cast<double>(M) : 0.0, most, run.output.dir.c_str());
  return report;
}

}  // namespace orrery::pipeline
