// Runs of the neighbor-embedding methods (hssne, nerv): vectors -> perplexity-calibrated dense
// affinities -> map, with the same outputs as every run (coordinates, report, SVG).
#pragma once
#include <string>

#include "run/run_config.hpp"
#include "orrery/run_control.hpp"

namespace orrery::pipeline {

std::string validate_ne(const RunConfig& run);
json run_ne(const RunConfig& run, bool quiet, RunControl* control = nullptr);

// A snerv run's input.cv_folds alone: the report's "cross_validation" and "device", from the same
// checks, data, plan and folds as run_ne, without the run's own map from every label (which the
// folds do not score) and without outputs.
json cross_validate_snerv(const RunConfig& run, bool quiet);

}  // namespace orrery::pipeline
