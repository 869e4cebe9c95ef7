// The neighbor-embedding methods' part of a run (hssne, nerv, snerv): their "input" and "params"
// keys parsed once into NeRunConfig, and the reading and checking of their input files. The input
// stage itself (field tables, plan, neighbor search, affinities) is orrery/ne_input.hpp's.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "run/run_config.hpp"
#include "io/writers.hpp"
#include "orrery/ne_input.hpp"

namespace orrery::pipeline {

// A neighbor-embedding run: the method's spec (orrery/ne_input.hpp) and the run's shared keys.
struct NeRunConfig : NeSpec {
  RunConfig run;
  // output.quality_sample: query points of the report's quality measures (QualityRequest::queries;
  // -1 when absent = the default rule, 0 = all points).
  index_t quality_sample = -1;
};

// Reads and checks every key of the method's input and params (no file is read).
NeRunConfig read_ne_config(const RunConfig& run);

// The labels of input.labels (io::read_categories, first input.limit) for n points, their class
// names and the legend (class c's name in the map); empty without labels. `source` names the points'
// file in messages.
struct NeLabels {
  std::vector<int> labels;
  std::vector<std::string> class_names, legend;
};
NeLabels read_ne_labels(const NeInputSpec& in, index_t n, const std::string& source);

// `model_exponent`: a placement's, the scale exponent its model's points were taken in (its new
// points are scaled by it, not by their own); absent: chosen from the data.
NeData load_ne_data(const NeRunConfig& cfg, std::optional<int> model_exponent = std::nullopt);
// input.metric cosine or correlation: each row scaled to unit length (correlation: centred first), in
// place; a zero (constant) or non-finite row is an input error naming `what` and the row.
void unit_rows(MatrixD& X, VectorMetric metric, const std::string& what);
// Whether a metric is unit_rows' (Euclidean on the scaled rows); euclidean and inner_product keep them.
inline bool scales_rows(VectorMetric metric) {
  return metric == VectorMetric::cosine || metric == VectorMetric::correlation;
}
// params.init (hssne) resolved before the affinities: pca of the vectors scaled to init_scale, or a
// file's N x dim array as given; input errors name params.init and the file.
MatrixD hssne_start(const HssneParams& p, const NeData& d, int threads);
// params.init = an array file (or in-memory array): N x dim finite values, as given.
MatrixD given_start(const std::string& init, index_t N, int dim);
// The start a hssne or nerv fit takes once its affinities `a` are made (spectral reads them; a
// dense run's from each row's ceil(3 perplexity) largest entries), or empty for the seeded
// Gaussian: hssne's pca and spectral starts scaled to init_scale; nerv's pca and spectral for
// fit_nerv to scale, its given array in the run's units (NeData::scale_exponent).
MatrixD fit_start(const NeRunConfig& cfg, const NeData& d, const AffinityResult& a, bool sparse, int threads);

// The quality measures a neighbor-embedding run adds to its report, for a map of N points: k in
// {1, 5, 10, 20} (at most N - 1), no curve, output.quality_sample query points, the run's seed, the
// input ranked by inner product under input.metric inner_product.
QualityRequest ne_quality_request(const NeRunConfig& cfg, index_t N, int threads);

// Adds output.dir/map.svg (when output.svg) drawing Y coloured by the data's labels, and records it.
void add_ne_map_svg(io::OutputSet& out, json& outputs, const RunConfig& run, const MatrixD& Y, const NeData& d,
                    const std::string& title);

}  // namespace orrery::pipeline
