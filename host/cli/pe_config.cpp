#include "cli/pe_config.hpp"

#include <chrono>
#include <cmath>
#include <fstream>

#include "io/readers.hpp"
#include "orrery/error.hpp"

namespace orrery::cli {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

PeRunConfig read_pe_config(const RunConfig& run) {
  PeRunConfig cfg;
  cfg.run = run;
  const json& inp = run.input;
  check_keys(inp, "input", {"posteriors", "normalize_rows", "vectors", "vector_labels", "posterior_model", "labels",
                            "priors", "class_names", "class_coords", "limit"});
  cfg.posteriors_path = get_path(inp, "posteriors", "input");
  cfg.vectors_path = get_path(inp, "vectors", "input");
  cfg.vector_labels_path = get_path(inp, "vector_labels", "input");
  cfg.labels_path = get_path(inp, "labels", "input");
  cfg.class_coords_path = get_path(inp, "class_coords", "input");
  if (cfg.posteriors_path.empty() == cfg.vectors_path.empty())
    input_error("input: give exactly one of 'posteriors' (an N x K matrix of p(c|x)) or 'vectors' (with "
                "'vector_labels', to fit the soft nearest-neighbour posterior model)");
  cfg.use_posterior_model = !cfg.vectors_path.empty();
  if (cfg.use_posterior_model && cfg.vector_labels_path.empty() && cfg.labels_path.empty())
    input_error("input.vector_labels: required with input.vectors (class of each vector, -1 when unknown)");
  if (!cfg.use_posterior_model && (inp.contains("vector_labels") || inp.contains("posterior_model")))
    input_error("input: 'vector_labels' and 'posterior_model' go with 'vectors', not with 'posteriors'");
  if (inp.contains("posterior_model"))
    read_fields(inp["posterior_model"], cfg.posterior_model, posterior_model_fields(), "input.posterior_model");
  cfg.normalize_rows = get_bool(inp, "normalize_rows", "input", false);
  cfg.limit = get_count(inp, "limit", "input", 0);
  if (inp.contains("priors")) {
    const json& p = inp["priors"];
    if (p.is_string()) {
      cfg.priors_path = p.get<std::string>();
    } else if (p.is_array()) {
      for (const auto& v : p) {
        if (!v.is_number()) input_error("input.priors: expected numbers, found " + v.dump());
        cfg.priors_inline.push_back(v.get<double>());
      }
    } else {
      input_error("input.priors: expected a file path or a list of numbers, found " + p.dump());
    }
  }
  if (inp.contains("class_names")) {
    const json& p = inp["class_names"];
    if (p.is_string()) {
      cfg.class_names_path = p.get<std::string>();
    } else if (p.is_array()) {
      for (const auto& v : p) {
        if (!v.is_string()) input_error("input.class_names: expected strings, found " + v.dump());
        cfg.class_names_inline.push_back(v.get<std::string>());
      }
    } else {
      input_error("input.class_names: expected a file path or a list of strings, found " + p.dump());
    }
  }

  read_fields(run.params, cfg.params, pe_fields(), "params");
  if ((cfg.params.class_init == PeClassInit::file || !cfg.params.fit_classes) && cfg.class_coords_path.empty())
    input_error("input.class_coords: required when params.class_init is \"file\" or params.fit_classes is false");

  check_keys(run.output_extra, "output", {"dir", "format", "svg", "prec_h"});
  if (run.output_extra.contains("prec_h")) {
    const json& h = run.output_extra["prec_h"];
    cfg.prec_h.clear();
    if (!h.is_array()) input_error("output.prec_h: expected a list of positive integers");
    for (const auto& v : h) {
      if (!v.is_number_integer() || v.get<long long>() < 1)
        input_error("output.prec_h: expected positive integers, found " + v.dump());
      cfg.prec_h.push_back(v.get<long long>());
    }
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

PeRunData load_pe_data(const PeRunConfig& cfg) {
  PeRunData data;
  const auto t0 = std::chrono::steady_clock::now();
  if (!cfg.labels_path.empty()) data.labels = io::read_labels(cfg.labels_path, cfg.limit);
  if (cfg.use_posterior_model) {
    const MatrixD X = io::read_matrix(cfg.vectors_path, cfg.limit);
    const std::string lab_path = cfg.vector_labels_path.empty() ? cfg.labels_path : cfg.vector_labels_path;
    const std::vector<int> vlab = lab_path == cfg.labels_path && !data.labels.empty()
                                      ? data.labels
                                      : io::read_labels(lab_path, cfg.limit);
    if (static_cast<index_t>(vlab.size()) != X.rows)
      input_error(lab_path + ": " + std::to_string(vlab.size()) + " labels for " + std::to_string(X.rows) +
                  " vectors in " + cfg.vectors_path);
    data.seconds_read = seconds_since(t0);
    const auto t1 = std::chrono::steady_clock::now();
    data.posterior_model = fit_posterior_model(X, vlab, cfg.posterior_model, cfg.run.seed, cfg.run.threads);
    data.pe.posteriors = data.posterior_model->posteriors;
    data.seconds_posterior_model = seconds_since(t1);
  } else {
    data.pe.posteriors = io::read_matrix(cfg.posteriors_path, cfg.limit);
    validate_posteriors(data.pe.posteriors, cfg.normalize_rows, cfg.posteriors_path);
  }
  const index_t N = data.pe.posteriors.rows, K = data.pe.posteriors.cols;
  const std::string p_src = cfg.use_posterior_model ? cfg.vectors_path : cfg.posteriors_path;
  if (!data.labels.empty() && static_cast<index_t>(data.labels.size()) != N)
    input_error(cfg.labels_path + ": " + std::to_string(data.labels.size()) + " labels, but " + p_src + " has " +
                std::to_string(N) + " rows");

  std::vector<double> priors = cfg.priors_inline;
  std::string priors_src = "input.priors";
  if (!cfg.priors_path.empty()) {
    priors = io::read_matrix(cfg.priors_path).data;
    priors_src = cfg.priors_path;
  }
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

  data.class_names = cfg.class_names_inline;
  if (!cfg.class_names_path.empty()) data.class_names = io::read_names(cfg.class_names_path);
  if (!data.class_names.empty() && static_cast<index_t>(data.class_names.size()) != K)
    input_error((cfg.class_names_path.empty() ? std::string("input.class_names") : cfg.class_names_path) +
                ": expected " + std::to_string(K) + " class names, found " + std::to_string(data.class_names.size()));
  if (data.class_names.empty())
    for (index_t k = 0; k < K; ++k) data.class_names.push_back("class " + std::to_string(k));

  if (!cfg.class_coords_path.empty()) {
    data.pe.class_coords = io::read_matrix(cfg.class_coords_path);
    if (data.pe.class_coords.rows != K || data.pe.class_coords.cols != cfg.params.dim)
      input_error(cfg.class_coords_path + ": expected " + std::to_string(K) + " x " + std::to_string(cfg.params.dim) +
                  " class coordinates, found " + std::to_string(data.pe.class_coords.rows) + " x " +
                  std::to_string(data.pe.class_coords.cols));
    for (double v : data.pe.class_coords.data)
      if (!std::isfinite(v)) input_error(cfg.class_coords_path + ": class coordinates must be finite");
  }
  if (data.seconds_read == 0.0) data.seconds_read = seconds_since(t0);
  return data;
}

}  // namespace orrery::cli
