// The PE part of a run configuration: its "input", "params" and "output.prec_h", and the reading
// and validation of its input files (shapes, ranges, NaN/Inf with file and row).
#pragma once
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "run/run_config.hpp"
#include "orrery/backend.hpp"
#include "orrery/config.hpp"
#include "orrery/memory_plan.hpp"
#include "orrery/pe.hpp"
#include "orrery/posterior_model.hpp"
#include "orrery/types.hpp"

namespace orrery::pipeline {

// The "input" keys of a PE run (pe_input_fields()).
struct PeInputSpec {
  std::string posteriors;  // N x K p(c|x), or:
  std::string vectors, vector_labels;  // vectors and their classes, for the posterior model
  PosteriorModelParams posterior_model;
  bool normalize_rows = false;
  std::string labels;
  std::string names;  // one name per object, for the interactive map
  ListInput<double> priors;
  ListInput<std::string> class_names;
  std::string class_coords;
  index_t limit = 0;
  bool use_posterior_model() const { return !vectors.empty(); }
};

const std::vector<Field<PeInputSpec>>& pe_input_fields();

struct PeRunConfig {
  RunConfig run;
  PeInputSpec input;
  PeParams params;
  std::vector<index_t> prec_h = {10, 50, 100, 500};  // output.prec_h
};

// Reads and checks the PE keys of a run (no input files are read).
PeRunConfig read_pe_config(const RunConfig& run);

// The inputs of a PE run, read and validated. With input.vectors, pe.posteriors is empty until
// fit_posterior_model_step; `vectors` and `vector_labels` hold what it fits.
struct PeRunData {
  PeInput pe;
  index_t objects = 0, classes = 0;
  MatrixD vectors;
  std::vector<int> vector_labels;
  std::vector<int> labels;  // empty when none
  std::vector<std::string> class_names;
  std::optional<PosteriorModelResult> posterior_model;
  double seconds_read = 0.0, seconds_posterior_model = 0.0;
};

// Reads and checks every input file; fits nothing.
PeRunData load_pe_data(const PeRunConfig& cfg);
// With input.vectors: fits the posterior model and sets pe.posteriors from it.
void fit_posterior_model_step(const PeRunConfig& cfg, PeRunData& data);

// Everything a PE run checks before it fits (keys, input files, memory plan): `orrery validate` is
// this and nothing more, so it refuses what a run would refuse before fitting.
struct PePrepared {
  std::chrono::steady_clock::time_point started;
  PeRunConfig cfg;
  PeRunData data;
  std::unique_ptr<Backend> backend;
  MemoryPlan plan;
};
PePrepared prepare_pe(const RunConfig& run);

// Checks posteriors in place: finite, non-negative, K >= 2, rows summing to 1 (or normalised
// when normalize_rows). `source` names the file in messages.
void validate_posteriors(MatrixD& P, bool normalize_rows, const std::string& source);

}  // namespace orrery::pipeline
