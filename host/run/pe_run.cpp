#include "run/pe_run.hpp"

#include "run/quality_json.hpp"
#include "run/run_common.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <filesystem>

#include "io/writers.hpp"
#include "orrery/memory_plan.hpp"
#include "orrery/quality.hpp"
#include "report/svg_map.hpp"

namespace orrery::pipeline {
namespace {

constexpr index_t kQualityMaxPoints = 20000;

// Progress lines on stderr, at most one a second. The ETA extrapolates the recent decay rate of
// log |dJ/dPhi|^2 towards eps_phi (capped by max_iter); it is an estimate, shown as such.
class Progress {
 public:
  Progress(const PeParams& prm, bool quiet) : prm_(prm), quiet_(quiet) {}
  void operator()(const PeTraceEntry& e) {
    history_.push_back(e);
    if (history_.size() > 10) history_.pop_front();
    if (quiet_) return;
    const bool first = e.iteration == 0;
    if (!first && e.seconds - last_print_ < 1.0) return;
    last_print_ = e.seconds;
    print(e);
  }
  void final_line(const PeResult& r) {
    if (quiet_ || r.trace.empty()) return;
    print(r.trace.back());
    progress_line("[pe] stopped: %s after %d iterations, %d evaluations, %s\n", r.stop_reason.c_str(),
                 r.iterations, r.evaluations, format_seconds(r.seconds_fit).c_str());
  }

 private:
  void print(const PeTraceEntry& e) {
    std::string eta = "?";
    if (history_.size() >= 3 && e.class_grad_sq > 0) {
      const auto& a = history_.front();
      const double iters = e.iteration - a.iteration;
      const double rate = (std::log(a.class_grad_sq) - std::log(e.class_grad_sq)) / iters;  // per iteration
      const double per_iter = (e.seconds - a.seconds) / iters;
      double left = prm_.max_iter - e.iteration;
      if (rate > 0) left = std::min(left, std::max(0.0, (std::log(e.class_grad_sq) - std::log(prm_.eps_phi)) / rate));
      eta = "<= " + format_seconds(left * per_iter);
    }
    progress_line("[pe] iter %4d  J %.8g  |dJ/dPhi|^2 %.3g  max|dJ/dr|^2 %.2g  evals %d  %s  ETA %s\n",
                 e.iteration, e.objective, e.class_grad_sq, e.max_object_grad_sq, e.evaluations,
                 format_seconds(e.seconds).c_str(), eta.c_str());
  }
  const PeParams& prm_;
  bool quiet_;
  double last_print_ = -1.0;
  std::deque<PeTraceEntry> history_;
};

double agreement(const std::vector<int>& a, const std::vector<int>& labels) {
  index_t hit = 0, known = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (labels[i] < 0) continue;
    ++known;
    hit += a[i] == labels[i];
  }
  return known ? static_cast<double>(hit) / static_cast<double>(known) : std::nan("");
}

}  // namespace

json run_pe(PePrepared prepared, bool quiet, RunControl* control) {
  const auto t0 = prepared.started;
  const PeRunConfig& cfg = prepared.cfg;
  PeRunData& data = prepared.data;
  Comm& comm = run_comm(cfg.run);
  // Rank 0 speaks for the run: the others fit their rows and stay silent.
  const bool lead = comm.rank() == 0;
  quiet = quiet || !lead;
  on_every_rank(cfg.run, [&] { fit_posterior_model_step(cfg, data); });
  const index_t N = data.pe.posteriors.rows, K = data.pe.posteriors.cols;
  const std::unique_ptr<Backend>& backend = prepared.backend;
  if (!quiet)
    progress_line("[pe] %lld objects, %lld classes, D = %d on %s\n", static_cast<long long>(N),
                 static_cast<long long>(K), cfg.params.dim, backend->name().c_str());
  Progress progress(cfg.params, quiet);
  PeResult res;
  fit_on_every_rank(comm, [&] {
    res = fit_pe(*backend, data.pe, cfg.params, cfg.run.seed, std::ref(progress), control, &comm);
  });
  progress.final_line(res);
  const auto t_eval = Clock::now();
  json map_vs_posteriors;  // every rank holds the whole map: the ranks share its query points
  // Rank-based measures of the map against the posteriors as input vectors (and k-NN accuracy
  // with labels) cost O(N^2 K): computed up to kQualityMaxPoints objects, reported as skipped beyond.
  if (N <= kQualityMaxPoints && N > 20) {
    QualityRequest req;
    req.ks = {5, 10, 20};
    req.curve = false;
    req.threads = cfg.run.threads;
    req.seed = cfg.run.seed;  // of the query subsample above kQualitySampleAbove objects
    map_vs_posteriors = quality_json(evaluate_quality(data.pe.posteriors, res.object_coords, data.labels, req, *backend,
                                                       comm.size() > 1 ? &comm : nullptr));
  } else {
    map_vs_posteriors = "skipped: " + std::to_string(N) + " objects (computed for 21 to " +
                        std::to_string(kQualityMaxPoints) + "; use orrery evaluate)";
  }
  // rank 0 has the whole map and writes it; in process (Python) every rank keeps the map and the
  // report (no files), since each holds the estimator its script fitted
  if (!lead && !cfg.run.result) return json::object();

  json quality = json::object();
  json prec = json::object();
  for (index_t h : cfg.prec_h)
    if (h <= N) prec[std::to_string(h)] = pe_precision_at(data.pe.posteriors, res.object_coords, res.class_coords, h);
  quality["prec_h"] = prec;
  const MatrixD Q = pe_map_posteriors(res.object_coords, res.class_coords, data.pe.priors);
  const std::vector<int> map_class = argmax_rows(Q), input_class = argmax_rows(data.pe.posteriors);
  quality["argmax_agreement_map_vs_input"] = agreement(map_class, input_class);
  if (!data.labels.empty()) {
    quality["label_accuracy_of_input_argmax"] = agreement(input_class, data.labels);
    quality["label_accuracy_of_map_argmax"] = agreement(map_class, data.labels);
    // PE paper, Table 1: how well the map's arg-max class recovers each labelled class.
    const ClassScores cs = class_scores(map_class, data.labels, static_cast<int>(K));
    json per_class = json::object();
    for (index_t k = 0; k < K; ++k)
      per_class[data.class_names[static_cast<size_t>(k)]] = {
          {"precision", cs.precision[k]}, {"recall", cs.recall[k]}, {"f_measure", cs.f_measure[k]}};
    quality["map_argmax_class_scores"] = per_class;
  }
  quality["map_vs_posteriors"] = map_vs_posteriors;
  const double seconds_eval = seconds_since(t_eval);

  const auto t_write = Clock::now();
  namespace fs = std::filesystem;
  const fs::path dir(cfg.run.output.dir);
  io::OutputSet out;
  json outputs = json::object();
  auto add = [&](const std::string& key, const std::string& name, std::string bytes) {
    const std::string p = (dir / name).string();
    out.add(p, std::move(bytes));
    outputs[key] = p;
  };
  add_coordinates(out, outputs, cfg.run, "objects", res.object_coords);
  add_coordinates(out, outputs, cfg.run, "classes", res.class_coords);
  if (cfg.run.output.svg) {
    report::MapPicture pic;
    pic.objects = res.object_coords;
    const bool by_label = !data.labels.empty();
    pic.colour_index = by_label ? data.labels : input_class;
    int max_label = 0;
    for (int l : pic.colour_index) max_label = std::max(max_label, l);
    for (int l = 0; l <= max_label; ++l)
      pic.legend.push_back(l < K ? data.class_names[static_cast<size_t>(l)] : "label " + std::to_string(l));
    pic.classes = res.class_coords;
    pic.class_names = data.class_names;
    pic.title = "Parametric Embedding: " + std::to_string(N) + " objects, " + std::to_string(K) + " classes";
    pic.subtitle = std::string("coloured by ") + (by_label ? "label" : "arg-max class");
    if (cfg.params.dim == 3) pic.subtitle += "; first two of three coordinates";
    pic.seed = cfg.run.seed;
    add("map_svg", "map.svg", report::render_map_svg(pic));
  }

  json report = report_header(cfg.run, *backend);
  report["params"] = fields_to_json(cfg.params, pe_fields());
  report["input"] = {{"objects", N}, {"classes", K}, {"dim", cfg.params.dim},
                     {"posteriors", cfg.input.use_posterior_model() ? "posterior_model" : cfg.input.posteriors},
                     {"labels", cfg.input.labels}, {"class_names", data.class_names}};
  if (data.posterior_model) {
    const auto& pm = *data.posterior_model;
    json trace = json::array();
    for (const auto& [w, ll] : pm.width_trace) trace.push_back({{"width", w}, {"heldout_loglik", ll}});
    report["posterior_model"] = {{"params", fields_to_json(cfg.input.posterior_model, posterior_model_fields())},
                                 {"vectors", cfg.input.vectors},
                                 {"width", pm.width},
                                 {"heldout_loglik", pm.heldout_loglik},
                                 {"centres", pm.centres.size()},
                                 {"width_search", trace}};
  }
  json trace = json::array();
  for (const auto& e : res.trace)
    trace.push_back({{"iteration", e.iteration}, {"objective", e.objective}, {"class_grad_sq", e.class_grad_sq},
                     {"max_object_grad_sq", e.max_object_grad_sq}, {"newton_steps", e.newton_steps},
                     {"evaluations", e.evaluations}, {"seconds", e.seconds}});
  report["result"] = {{"objective", res.objective},      {"stop_reason", res.stop_reason},
                      {"iterations", res.iterations},    {"evaluations", res.evaluations},
                      {"objects_converged", res.objects_converged}};
  report["trace"] = trace;
  report["quality"] = quality;
  report["outputs"] = outputs;
  report["outputs"]["report"] = (dir / "report.json").string();
  report["comm"]["rows"] = res.rank_objects;
  report["comm"]["fit_seconds"] = res.rank_seconds_fit;
  report["timings"] = {{"read", data.seconds_read},     {"posterior_model", data.seconds_posterior_model},
                       {"init", res.seconds_init},      {"fit", res.seconds_fit},
                       {"evaluate", seconds_eval},      {"write", seconds_since(t_write)},
                       {"total", seconds_since(t0)}};
  commit_run(out, report, cfg.run);
  if (!quiet) {
    progress_line("[pe] wrote %s (", cfg.run.output.dir.c_str());
    bool first = true;
    for (auto it = outputs.begin(); it != outputs.end(); ++it) {
      progress_line("%s%s", first ? "" : ", ", fs::path(it.value().get<std::string>()).filename().c_str());
      first = false;
    }
    progress_line(", report.json)\n");
    if (cfg.run.output.svg) progress_line("[pe] map: %s\n", (dir / "map.svg").c_str());
  }
  return report;
}

}  // namespace orrery::pipeline
