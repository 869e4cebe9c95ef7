// A run: one JSON file {"method", "input", "params", "output", "device", "threads", "seed"}.
// Reading it validates every key (unknown keys and bad values are errors naming the key) and
// every input file (shapes, ranges, NaN/Inf with file and row) before any work starts.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "orrery/config.hpp"
#include "orrery/pe.hpp"
#include "orrery/posterior_model.hpp"
#include "orrery/types.hpp"

namespace orrery::cli {

struct OutputSpec {
  std::string dir;                        // required
  std::string format = "npy";             // npy | csv | both
  bool svg = true;
  std::vector<index_t> prec_h = {10, 50, 100, 500};
};

struct PeRunConfig {
  std::string path;  // the config file
  json raw;          // the file as read, echoed into the report
  // input
  std::string posteriors_path, vectors_path, vector_labels_path, labels_path, priors_path, class_names_path,
      class_coords_path;
  std::vector<double> priors_inline;
  std::vector<std::string> class_names_inline;
  bool normalize_rows = false;
  index_t limit = 0;
  bool use_posterior_model = false;
  PosteriorModelParams posterior_model;
  // params, output, run
  PeParams params;
  OutputSpec output;
  std::string device = "auto";
  int threads = 0;
  unsigned long long seed = 0;
};

// Parses and checks the JSON (no input files are read).
PeRunConfig read_run_config(const std::string& path);

// The inputs of a PE run, read and validated.
struct PeRunData {
  PeInput pe;
  std::vector<int> labels;  // empty when none
  std::vector<std::string> class_names;
  std::optional<PosteriorModelResult> posterior_model;
  double seconds_read = 0.0, seconds_posterior_model = 0.0;
};

PeRunData load_run_data(const PeRunConfig& cfg);

// Checks posteriors in place: finite, non-negative, K >= 2, rows summing to 1 (or normalised
// when normalize_rows). `source` names the file in messages.
void validate_posteriors(MatrixD& P, bool normalize_rows, const std::string& source);

}  // namespace orrery::cli
