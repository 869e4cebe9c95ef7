// hssne with input.model: new points placed into an earlier hssne run's map, which stays fixed
// (orrery::place_points). The run directory of an hssne run from vectors holds what this reads:
// report.json (alpha, dim, perplexity), model_reference.npy (its points as searched, after
// input.pca), model_map.npy (its map in full precision) and, after input.pca, model_pca_mean.npy
// and model_pca_components.npy.
#pragma once
#include <string>

#include "cli/run_config.hpp"

namespace orrery::cli {

bool is_placement(const RunConfig& run);
std::string validate_placement(const RunConfig& run);
json run_placement(const RunConfig& run, bool quiet);

}  // namespace orrery::cli
