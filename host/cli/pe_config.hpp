// The PE part of a run configuration: its "input", "params" and "output.prec_h", and the reading
// and validation of its input files (shapes, ranges, NaN/Inf with file and row).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "cli/run_config.hpp"
#include "orrery/config.hpp"
#include "orrery/pe.hpp"
#include "orrery/posterior_model.hpp"
#include "orrery/types.hpp"

namespace orrery::cli {

struct PeRunConfig {
  RunConfig run;
  // input
  std::string posteriors_path, vectors_path, vector_labels_path, labels_path, priors_path, class_names_path,
      class_coords_path;
  std::vector<double> priors_inline;
  std::vector<std::string> class_names_inline;
  bool normalize_rows = false;
  index_t limit = 0;
  bool use_posterior_model = false;
  PosteriorModelParams posterior_model;
  PeParams params;
  std::vector<index_t> prec_h = {10, 50, 100, 500};  // output.prec_h
};

// Reads the PE keys of a run (no input files are read).
PeRunConfig read_pe_config(const RunConfig& run);

// The inputs of a PE run, read and validated.
struct PeRunData {
  PeInput pe;
  std::vector<int> labels;  // empty when none
  std::vector<std::string> class_names;
  std::optional<PosteriorModelResult> posterior_model;
  double seconds_read = 0.0, seconds_posterior_model = 0.0;
};

PeRunData load_pe_data(const PeRunConfig& cfg);

// Checks posteriors in place: finite, non-negative, K >= 2, rows summing to 1 (or normalised
// when normalize_rows). `source` names the file in messages.
void validate_posteriors(MatrixD& P, bool normalize_rows, const std::string& source);

}  // namespace orrery::cli
