#include "run/pe_config.hpp"

#include "orrery/comm.hpp"

#include <chrono>
#include <cmath>
#include <fstream>
#include <algorithm>

#include "run/run_common.hpp"
#include "io/readers.hpp"
#include "orrery/error.hpp"

namespace orrery::pipeline {

const std::vector<Field<PeInputSpec>>& pe_input_fields() {
  static const std::vector<Field<PeInputSpec>> fields = {
      {"posteriors", &PeInputSpec::posteriors,
       "N x K class posteriors p(c|x) (npy, csv/tsv/txt, IDX; rows summing to 1). Give this or vectors."},
      {"normalize_rows", &PeInputSpec::normalize_rows, "Rescale each posterior row to sum 1 instead of rejecting it."},
      {"vectors", &PeInputSpec::vectors,
       "N x d vectors instead of posteriors: a soft nearest-neighbor posterior model (posterior_model) is fitted "
       "to them and their vector_labels."},
      {"vector_labels", &PeInputSpec::vector_labels,
       "With vectors: the class of each vector (-1 unknown); defaults to labels."},
      {"posterior_model", sub_table(&PeInputSpec::posterior_model, "posterior_model", &posterior_model_fields),
       "With vectors: the posterior model's settings."},
      {"labels", &PeInputSpec::labels, "One integer label per object (-1 unknown): colours and label accuracies."},
      {"names", &PeInputSpec::names,
       "One name per object, a text file of one line each: the interactive map's tooltips and search "
       "(output.html, orrery view)."},
      {"priors", &PeInputSpec::priors, "K class priors pi_k summing to 1 (a list or a file); default uniform."},
      {"class_names", &PeInputSpec::class_names, "K class names (a list or a file); default class 0, class 1, ..."},
      {"class_coords", &PeInputSpec::class_coords,
       "K x D class coordinates: the start with params.class_init file, the fixed classes with params.fit_classes "
       "false. Map units (each class's Gaussian has width 1): each coordinate within [-1e6, 1e6]."},
      {"limit", &PeInputSpec::limit, "Use the first N objects only; 0 = all.", 0, 1e12},
  };
  return fields;
}

PeRunConfig read_pe_config(const RunConfig& run) {
  PeRunConfig cfg;
  cfg.run = run;
  PeInputSpec& in = cfg.input;
  read_fields(run.input, in, pe_input_fields(), "input");
  if (in.posteriors.empty() == in.vectors.empty())
    input_error("input: give exactly one of 'posteriors' (an N x K matrix of p(c|x)) or 'vectors' (with "
                "'vector_labels', to fit the soft nearest-neighbor posterior model)");
  if (in.use_posterior_model() && in.vector_labels.empty() && in.labels.empty())
    input_error("input.vector_labels: required with input.vectors (class of each vector, -1 when unknown)");
  if (!in.use_posterior_model() && (run.input.contains("vector_labels") || run.input.contains("posterior_model")))
    input_error("input: 'vector_labels' and 'posterior_model' go with 'vectors', not with 'posteriors'");

  read_fields(run.params, cfg.params, pe_fields(), "params");
  if ((cfg.params.class_init == PeClassInit::file || !cfg.params.fit_classes) && in.class_coords.empty())
    input_error("input.class_coords: required when params.class_init is \"file\" or params.fit_classes is false");

  check_keys(run.output_extra, "output", {"dir", "format", "svg", "html", "prec_h"});
  if (run.output_extra.contains("prec_h")) {
    const json& h = run.output_extra["prec_h"];
    cfg.prec_h.clear();
    if (!h.is_array()) input_error("output.prec_h: expected a list of positive integers");
    for (const auto& v : h) cfg.prec_h.push_back(count_value(v, "output.prec_h", 1, 1000000000000));
  }
  return cfg;
}

void validate_posteriors(MatrixD& P, bool normalize_rows, const std::string& source) {
  if (P.cols < 2)
    input_error(source + ": expected an N x K matrix of class posteriors with K >= 2, found " + std::to_string(P.cols) +
                " column(s)");
  // Rows written in float32 (softmax outputs saved by most frameworks) miss 1 by up to ~K float
  // round-offs, so the tolerance grows with K; accepted rows are rescaled to sum to 1 exactly.
  const double tolerance = 1e-6 + 1e-7 * static_cast<double>(P.cols);
  for (index_t n = 0; n < P.rows; ++n) {
    double s = 0.0;
    for (index_t k = 0; k < P.cols; ++k) {
      const double v = P(n, k);
      if (!std::isfinite(v) || v < 0.0)
        input_error(source + ": row " + std::to_string(n + 1) + ", column " + std::to_string(k + 1) +
                    ": expected a finite non-negative probability, found " + std::to_string(v));
      s += v;
    }
    if (normalize_rows) {
      if (!(s > 0.0)) input_error(source + ": row " + std::to_string(n + 1) + " sums to 0 and cannot be normalised");
    } else if (std::abs(s - 1.0) > tolerance) {
      input_error(source + ": row " + std::to_string(n + 1) + " sums to " + std::to_string(s) +
                  ", expected 1 (set input.normalize_rows to true to rescale rows)");
    }
    for (index_t k = 0; k < P.cols; ++k) P(n, k) /= s;
  }
}

namespace {

// PE's labels are class indices (a posterior column, or a class of the posterior model), not mere
// names: one at or beyond `classes` names no class, and would size class arrays and the legend by
// its value (2147483647 overflowed the class count); -1 is unknown, and one below names nothing
// either (the map's colours index by it).
void check_class_labels(const std::vector<int>& labels, index_t classes, const std::string& path, const std::string& why) {
  for (size_t i = 0; i < labels.size(); ++i)
    if (labels[i] >= classes || labels[i] < -1)
      input_error(path + ": label " + std::to_string(i + 1) + " is " + std::to_string(labels[i]) + ", " + why);
}

// The largest |class coordinate| input.class_coords may give. PE's map is in units of the classes'
// Gaussian width 1 and its GPU engine holds coordinates in float, whose spacing is 0.06 at 1e6 and
// exceeds the width itself from 1.7e7; far beyond, squared distances overflow (float near 1.8e19,
// double near 1.3e154) and the objective is not finite.
constexpr double kMaxClassCoordinate = 1e6;

}  // namespace

PeRunData load_pe_data(const PeRunConfig& cfg) {
  const PeInputSpec& in = cfg.input;
  PeRunData data;
  const auto t0 = std::chrono::steady_clock::now();
  if (!in.labels.empty()) data.labels = read_keyed("input.labels", [&] { return io::read_labels(in.labels, in.limit); });
  std::string p_src = in.posteriors;
  if (in.use_posterior_model()) {
    p_src = in.vectors;
    data.vectors = read_keyed("input.vectors", [&] { return io::read_matrix(in.vectors, in.limit); });
    const std::string lab_path = in.vector_labels.empty() ? in.labels : in.vector_labels;
    const std::string lab_key = in.vector_labels.empty() ? "input.labels" : "input.vector_labels";
    data.vector_labels = lab_path == in.labels && !data.labels.empty()
                             ? data.labels
                             : read_keyed(lab_key, [&] { return io::read_labels(lab_path, in.limit); });
    if (static_cast<index_t>(data.vector_labels.size()) != data.vectors.rows)
      input_error(lab_path + ": " + std::to_string(data.vector_labels.size()) + " labels for " +
                  std::to_string(data.vectors.rows) + " vectors in " + in.vectors);
    check_class_labels(data.vector_labels, data.vectors.rows, lab_path,
                       "but classes 0..K-1 each need a labelled vector, and there are only " +
                           std::to_string(data.vectors.rows) + " vectors");
    int max_label = -1;
    for (int l : data.vector_labels) max_label = std::max(max_label, l);
    data.objects = data.vectors.rows;
    data.classes = max_label + 1;  // the model's classes: labels 0 .. max
    if (data.classes < 2)
      input_error(lab_path + ": expected labelled vectors of at least 2 classes (labels 0..K-1), found " +
                  std::to_string(data.classes));
  } else {
    data.pe.posteriors = read_keyed("input.posteriors", [&] { return io::read_matrix(in.posteriors, in.limit); });
    validate_posteriors(data.pe.posteriors, in.normalize_rows, in.posteriors);
    data.objects = data.pe.posteriors.rows;
    data.classes = data.pe.posteriors.cols;
  }
  const index_t N = data.objects, K = data.classes;
  if (!data.labels.empty() && static_cast<index_t>(data.labels.size()) != N)
    input_error(in.labels + ": " + std::to_string(data.labels.size()) + " labels, but " + p_src + " has " +
                std::to_string(N) + " rows");
  check_class_labels(data.labels, K, in.labels,
                     "but PE's labels are class indices 0.." + std::to_string(K - 1) + " (-1 unknown)");
  read_keyed("input.names", [&] {  // checked now, read again by the map page
    return read_point_names(in.names, N, in.limit, "input.names", p_src);
  });

  std::vector<double> priors = in.priors.values;
  const std::string priors_src = in.priors.path.empty() ? std::string("input.priors") : in.priors.path;
  if (!in.priors.path.empty()) priors = read_keyed("input.priors", [&] { return io::read_matrix(in.priors.path); }).data;
  if (!priors.empty()) {
    if (static_cast<index_t>(priors.size()) != K)
      input_error(priors_src + ": expected " + std::to_string(K) + " class priors (one per column of " + p_src +
                  "), found " + std::to_string(priors.size()));
    double s = 0.0;
    for (size_t k = 0; k < priors.size(); ++k) {
      if (!std::isfinite(priors[k]) || !(priors[k] > 0.0))
        input_error(priors_src + ": prior " + std::to_string(k + 1) + " must be positive and finite, found " +
                    std::to_string(priors[k]));
      s += priors[k];
    }
    if (std::abs(s - 1.0) > 1e-6) input_error(priors_src + ": priors sum to " + std::to_string(s) + ", expected 1");
  }
  data.pe.priors = priors;

  data.class_names = in.class_names.values;
  if (!in.class_names.path.empty())
    data.class_names = read_keyed("input.class_names", [&] { return io::read_names(in.class_names.path); });
  if (!data.class_names.empty() && static_cast<index_t>(data.class_names.size()) != K)
    input_error((in.class_names.path.empty() ? std::string("input.class_names") : in.class_names.path) +
                ": expected " + std::to_string(K) + " class names, found " + std::to_string(data.class_names.size()));
  if (data.class_names.empty())
    for (index_t k = 0; k < K; ++k) data.class_names.push_back("class " + std::to_string(k));

  if (!in.class_coords.empty()) {
    data.pe.class_coords = read_keyed("input.class_coords", [&] { return io::read_matrix(in.class_coords); });
    if (data.pe.class_coords.rows != K || data.pe.class_coords.cols != cfg.params.dim)
      input_error(in.class_coords + ": expected " + std::to_string(K) + " x " + std::to_string(cfg.params.dim) +
                  " class coordinates, found " + std::to_string(data.pe.class_coords.rows) + " x " +
                  std::to_string(data.pe.class_coords.cols));
    const MatrixD& phi = data.pe.class_coords;
    for (index_t k = 0; k < phi.rows; ++k)
      for (index_t c = 0; c < phi.cols; ++c)
        if (!(std::abs(phi(k, c)) <= kMaxClassCoordinate))
          input_error("input.class_coords: " + in.class_coords + ", row " + std::to_string(k + 1) + ", column " +
                      std::to_string(c + 1) + ": expected a finite map coordinate within [-1e6, 1e6] (map units: each "
                      "class's Gaussian has width 1), found " + detail::number_text(phi(k, c)));
  }
  data.seconds_read = seconds_since(t0);
  return data;
}

PePrepared prepare_pe(const RunConfig& run) {
  PePrepared p;
  p.started = std::chrono::steady_clock::now();
  p.cfg = read_pe_config(run);
  p.data = load_pe_data(p.cfg);
  p.backend = make_backend(run.device, run.threads, run_comm(run));  // over several ranks, each its node's GPU in turn
  const MemoryInfo mem = p.backend->memory();
  p.plan = plan_pe(p.data.objects, p.data.classes, mem.device_bytes > 0);
  check_rank_memory(p.plan, mem, mem.device_bytes > 0, run);
  return p;
}

void fit_posterior_model_step(const PeRunConfig& cfg, PeRunData& data) {
  if (!cfg.input.use_posterior_model()) return;
  const auto t1 = std::chrono::steady_clock::now();
  data.posterior_model =
      fit_posterior_model(data.vectors, data.vector_labels, cfg.input.posterior_model, cfg.run.seed, cfg.run.threads);
  data.pe.posteriors = data.posterior_model->posteriors;
  data.seconds_posterior_model = seconds_since(t1);
}

}  // namespace orrery::pipeline
