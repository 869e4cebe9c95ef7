#include "cli/ne_run.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "cli/evaluate.hpp"
#include "cli/run_common.hpp"
#include "io/readers.hpp"
#include "io/writers.hpp"
#include "orrery/affinity.hpp"
#include "orrery/error.hpp"
#include "orrery/hssne.hpp"
#include "orrery/knn.hpp"
#include "orrery/nerv.hpp"
#include "orrery/pca.hpp"
#include "orrery/quality.hpp"
#include "report/svg_map.hpp"

namespace orrery::cli {
namespace {

struct NeInput {
  MatrixD X;
  std::vector<int> labels;
  std::vector<std::string> class_names;
  double perplexity = 30.0;
  bool sparse = false;
  bool distances = false;  // X is an N x N distance matrix
  int pca = 0;
};

NeInput load(const RunConfig& run, bool read_files) {
  const json& in = run.input;
  check_keys(in, "input", {"vectors", "distances", "pca", "labels", "class_names", "limit", "perplexity", "affinities"});
  const std::string vectors_path = get_path(in, "vectors", "input"), distances_path = get_path(in, "distances", "input");
  if (vectors_path.empty() == distances_path.empty())
    input_error("input: give exactly one of 'vectors' (N x d points: npy, csv/tsv/txt or IDX) or 'distances' "
                "(a symmetric N x N distance matrix)");
  const std::string vectors = vectors_path.empty() ? distances_path : vectors_path;
  NeInput d;
  d.distances = !distances_path.empty();
  d.pca = static_cast<int>(get_count(in, "pca", "input", 0));
  if (d.pca > 0 && d.distances) input_error("input.pca: applies to vectors, not to a distance matrix");
  if (in.contains("perplexity")) {
    if (!in["perplexity"].is_number() || !(in["perplexity"].get<double>() > 1.0))
      input_error("input.perplexity: expected a number > 1, found " + in["perplexity"].dump());
    d.perplexity = in["perplexity"].get<double>();
  }
  if (in.contains("affinities")) {
    const json& a = in["affinities"];
    if (!a.is_string() || (a != "dense" && a != "sparse"))
      input_error("input.affinities: expected dense | sparse, found " + a.dump());
    d.sparse = a == "sparse";
    if (d.sparse && !distances_path.empty())
      input_error("input.affinities: sparse affinities need vectors (their neighbour search), not distances");
    if (d.sparse && run.method == "nerv")
      input_error("input.affinities: nerv needs dense affinities (its cost uses every pair's input probability)");
  }
  if (in.contains("class_names")) {
    if (!in["class_names"].is_array()) input_error("input.class_names: expected a list of strings");
    for (const auto& v : in["class_names"]) {
      if (!v.is_string()) input_error("input.class_names: expected strings, found " + v.dump());
      d.class_names.push_back(v.get<std::string>());
    }
  }
  const index_t limit = get_count(in, "limit", "input", 0);
  const std::string labels = get_path(in, "labels", "input");
  if (run.method == "hssne") {
    HssneParams p;
    read_fields(run.params, p, hssne_fields(), "params");
    if (p.rho > 0 && labels.empty()) input_error("params.rho > 0 needs input.labels (-1 for unknown)");
  } else {
    NervParams p;
    read_fields(run.params, p, nerv_fields(), "params");
  }
  check_keys(run.output_extra, "output", {"dir", "format", "svg"});
  if (!read_files) return d;
  d.X = io::read_matrix(vectors, limit);
  if (d.distances && limit > 0 && d.X.cols > d.X.rows) {  // the first `limit` points: a square block
    MatrixD block(d.X.rows, d.X.rows);
    for (index_t i = 0; i < d.X.rows; ++i)
      for (index_t j = 0; j < d.X.rows; ++j) block(i, j) = d.X(i, j);
    d.X = std::move(block);
  }
  if (d.pca > 0) d.X = pca_project(d.X, d.pca);
  if (!labels.empty()) {
    d.labels = io::read_labels(labels, limit);
    if (static_cast<index_t>(d.labels.size()) != d.X.rows)
      input_error(labels + ": " + std::to_string(d.labels.size()) + " labels for " + std::to_string(d.X.rows) +
                  " vectors in " + vectors);
  }
  if (!(d.perplexity < static_cast<double>(d.X.rows - 1)))
    input_error("input.perplexity: expected < N - 1 = " + std::to_string(d.X.rows - 1) + " for the " +
                std::to_string(d.X.rows) + " vectors in " + vectors + ", found " + std::to_string(d.perplexity));
  return d;
}

}  // namespace

std::string validate_ne(const RunConfig& run) {
  const NeInput d = load(run, true);
  return run.method + ", " + std::to_string(d.X.rows) + " points" +
         (d.distances ? " (distance matrix)" : " of dimension " + std::to_string(d.X.cols));
}

json run_ne(const RunConfig& run, bool quiet) {
  const auto t0 = Clock::now();
  NeInput in = load(run, true);
  const index_t N = in.X.rows;
  // NeRV's pairs run on the CPU; "auto" then means the CPU for it, an explicit CUDA device is an error.
  const bool cpu_only = run.method == "nerv";
  auto backend = make_backend(cpu_only && run.device == "auto" ? "cpu" : run.device, run.threads);
  if (backend->is_cuda() && cpu_only)
    input_error("device: " + run.method + " runs on the CPU only so far; set \"device\": \"cpu\" or \"auto\"");
  const int threads = backend->threads();
  const double t_read = seconds_since(t0);
  const auto t1 = Clock::now();
  // Sparse affinities: the neighbour search on the backend's device, the rows on the host.
  const AffinityResult aff =
      in.distances ? affinities_from_distances(in.X, in.perplexity, threads)
      : in.sparse  ? (backend->is_cuda()
                          ? affinities_from_knn(exact_knn_cuda(in.X, static_cast<int>(std::ceil(3.0 * in.perplexity)),
                                                               backend->device_index()),
                                                in.perplexity, threads)
                          : affinities_sparse(in.X, in.perplexity, threads))
                   : affinities_dense(in.X, in.perplexity, threads);
  const double t_aff = seconds_since(t1);
  const auto t2 = Clock::now();
  auto progress = [&](int it, double J) {
    if (!quiet && (it % 50 == 0))
      std::fprintf(stderr, "[%s] iter %5d  cost %.8g  %s\n", run.method.c_str(), it, J,
                   format_seconds(seconds_since(t2)).c_str());
  };
  MatrixD Y;
  json params, result;
  std::vector<double> trace;
  if (run.method == "hssne") {
    HssneParams p;
    read_fields(run.params, p, hssne_fields(), "params");
    const HssneResult r = in.sparse ? fit_hssne(aff.sparse, p, run.seed, *backend, progress)
                                    : fit_hssne(aff.dense, in.labels, p, run.seed, *backend, progress);
    Y = r.coords;
    trace = r.objective_trace;
    params = fields_to_json(p, hssne_fields());
    result = {{"iterations", r.iterations}, {"stop_reason", r.stop_reason}, {"damped_steps", r.damped_steps},
              {"objective", trace.empty() ? 0.0 : trace.back()}};
  } else {
    NervParams p;
    read_fields(run.params, p, nerv_fields(), "params");
    const NervResult r = fit_nerv(aff.conditional, aff.beta, p, run.seed, threads, progress);
    Y = r.coords;
    trace = r.objective_trace;
    params = fields_to_json(p, nerv_fields());
    result = {{"iterations", r.iterations}, {"stop_reason", r.stop_reason},
              {"objective", trace.empty() ? 0.0 : trace.back()}};
  }
  const double t_fit = seconds_since(t2);
  if (!quiet)
    std::fprintf(stderr, "[%s] %lld points: %s after %d iterations, %s\n", run.method.c_str(),
                 static_cast<long long>(N), result["stop_reason"].get<std::string>().c_str(),
                 result["iterations"].get<int>(), format_seconds(t_fit).c_str());

  const auto t3 = Clock::now();
  QualityRequest req;
  req.ks = {1, 5, 10, 20};
  for (int& k : req.ks) k = static_cast<int>(std::min<index_t>(k, N - 1));
  req.curve = false;
  req.threads = threads;
  req.input_is_distance_matrix = in.distances;
  const json quality = quality_json(evaluate_quality(in.X, Y, in.labels, req, backend.get()));
  const double t_eval = seconds_since(t3);

  io::OutputSet out;
  json outputs = json::object();
  add_coordinates(out, outputs, run, "embedding", Y);
  namespace fs = std::filesystem;
  const fs::path dir(run.output.dir);
  if (run.output.svg) {
    report::MapPicture pic;
    pic.objects = Y;
    pic.colour_index = in.labels;
    int max_label = -1;
    for (int l : in.labels) max_label = std::max(max_label, l);
    for (int l = 0; l <= max_label; ++l)
      pic.legend.push_back(l < static_cast<int>(in.class_names.size()) ? in.class_names[static_cast<size_t>(l)]
                                                                        : "label " + std::to_string(l));
    pic.title = (run.method == "hssne" ? std::string("HSSNE") : std::string("NeRV")) + ": " + std::to_string(N) +
                " points";
    pic.subtitle = in.labels.empty() ? "no labels given" : "coloured by label";
    pic.seed = run.seed;
    const std::string p = (dir / "map.svg").string();
    out.add(p, report::render_map_svg(pic));
    outputs["map_svg"] = p;
  }
  json report = report_header(run, *backend);
  report["params"] = params;
  report["input"] = {{"points", N}, {"dims", in.X.cols}, {"perplexity", in.perplexity}, {"affinities", in.sparse ? "sparse" : "dense"},
                     {"source", in.distances ? "distances" : "vectors"}, {"pca", in.pca}};
  report["result"] = result;
  report["trace"] = trace;
  report["quality"] = quality;
  report["timings"] = {{"read", t_read}, {"affinities", t_aff}, {"fit", t_fit}, {"evaluate", t_eval},
                       {"total", seconds_since(t0)}};
  outputs["report"] = (dir / "report.json").string();
  report["outputs"] = outputs;
  out.add((dir / "report.json").string(), report.dump(2) + "\n");
  out.commit();
  if (!quiet) std::fprintf(stderr, "[%s] wrote %s\n", run.method.c_str(), run.output.dir.c_str());
  return report;
}

}  // namespace orrery::cli
