// nerv or snerv with input.model: new points placed into an earlier run's map, which stays fixed
// (orrery::place_nerv_points). The run directory of a nerv or snerv run from vectors holds what this
// reads: report.json (params.lambda, params.dim, input.perplexity), model_reference.npy (its points as
// searched, after input.pca), model_map.npy (its map in full precision) and, after input.pca,
// model_pca_mean.npy and model_pca_components.npy.
// snerv: the new points' neighbors and probabilities come from the Euclidean input space (after the
// model's PCA), not from the learning metric, which the map's points were placed by; the class
// model behind the metric is not saved. Their calibration uses the model's perplexity.
#pragma once
#include <string>

#include "run/run_config.hpp"

namespace orrery::pipeline {

bool is_nerv_placement(const RunConfig& run);
std::string validate_nerv_placement(const RunConfig& run);
json run_nerv_placement(const RunConfig& run, bool quiet);

}  // namespace orrery::pipeline
