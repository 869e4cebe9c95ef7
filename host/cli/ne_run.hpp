// Runs of the neighbour-embedding methods (hssne, nerv): vectors -> perplexity-calibrated dense
// affinities -> map, with the same outputs as every run (coordinates, report, SVG).
#pragma once
#include <string>

#include "cli/run_config.hpp"
#include "orrery/run_control.hpp"

namespace orrery::cli {

std::string validate_ne(const RunConfig& run);
json run_ne(const RunConfig& run, bool quiet, RunControl* control = nullptr);

}  // namespace orrery::cli
