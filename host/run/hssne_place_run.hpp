// hssne with input.model: new points placed into an earlier hssne run's map, which stays fixed
// (orrery::place_points). The run directory of an hssne run from vectors holds what this reads:
// report.json (alpha, dim, perplexity), model_reference.npy (its points as searched, after
// input.pca), model_map.npy (its map in full precision) and, after input.pca, model_pca_mean.npy
// and model_pca_components.npy.
#pragma once
#include <string>

#include "run/ne_config.hpp"
#include "run/run_config.hpp"

namespace orrery::pipeline {

// hssne, nerv or snerv with input.model (nerv and snerv: run/nerv_place_run.hpp).
bool is_placement(const RunConfig& run);
std::string validate_placement(const RunConfig& run);
json run_placement(const RunConfig& run, bool quiet);

// What every placement reads from the model's directory: its report, model_reference.npy and
// model_map.npy (checked against each other and the report's params.dim) and the PCA files when
// present. Input errors name input.model and the file; a run of another method is refused naming it.
struct PlacementFiles {
  json report;
  MatrixD reference, map;
  PcaBasis pca;  // 0 x 0 when the run projected nothing
  int dim = 2;
  int scale_exponent = 0;  // the report's input.scale_exponent: the model files are in units of 2^e of the input
  VectorMetric metric = VectorMetric::euclidean;  // the report's input.metric: new rows are scaled as its were
};
PlacementFiles read_placement_files(const std::string& dir, const std::string& method);

// The new points (input.vectors) read, scaled and projected as the model's were (the model's metric,
// 2^-scale_exponent, then pca; the model's points have reference_cols columns), their column count checked.
NeData placement_points(const NeRunConfig& cfg, index_t reference_cols, const PcaBasis& pca, int scale_exponent,
                        int threads, VectorMetric metric = VectorMetric::euclidean);

// Whether input.neighbors (auto: approximate above kExactNeighborsMaxPoints reference points when
// M N exceeds ~1e9 pairs) searches approximately; and the search (the new points' k nearest, by
// inner product under cfg.input.metric inner_product).
bool approximate_placement(const NeInputSpec& in, index_t N, index_t M);
KnnGraph placement_neighbors(const MatrixD& reference, const MatrixD& X, int k, bool approximate,
                              const NeRunConfig& cfg, int threads, const char* tag, bool quiet);

}  // namespace orrery::pipeline
