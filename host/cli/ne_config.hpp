// The neighbour-embedding methods' part of a run (hssne, nerv, snerv): their "input" keys (one
// struct, a field table per method listing the keys that method takes, with its defaults), their
// "params", parsed once into NeRunConfig, and the reading and checking of their input files.
#pragma once
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "cli/run_config.hpp"
#include "orrery/affinity.hpp"
#include "orrery/config.hpp"
#include "orrery/hssne.hpp"
#include "orrery/knn.hpp"
#include "orrery/memory_plan.hpp"
#include "orrery/nerv.hpp"
#include "orrery/pca.hpp"
#include "orrery/quality.hpp"
#include "io/writers.hpp"
#include "orrery/snerv.hpp"

namespace orrery::cli {

// input.affinities.
enum class AffinityMode { automatic, dense, sparse };
// input.duplicates: identical points are data (accept) or an input error (refuse).
enum class DuplicatesMode { accept, refuse };
// input.neighbors: the sparse affinities' neighbour search.
enum class NeighborsMode { automatic, exact, approximate };

}  // namespace orrery::cli

namespace orrery {
template <>
struct EnumNames<cli::AffinityMode> {
  static constexpr std::array<const char*, 3> names = {"auto", "dense", "sparse"};
};
template <>
struct EnumNames<cli::DuplicatesMode> {
  static constexpr std::array<const char*, 2> names = {"accept", "refuse"};
};
template <>
struct EnumNames<cli::NeighborsMode> {
  static constexpr std::array<const char*, 3> names = {"auto", "exact", "approximate"};
};
}  // namespace orrery

namespace orrery::cli {

// input.affinities = "auto" takes dense affinities up to this many points (when their memory plan
// fits in half of what is available), sparse above; supervised NeRV takes sparse.
inline constexpr index_t kDenseAutoMaxPoints = 10000;
// input.neighbors = "auto" searches exactly up to this many points on the CPU and approximately
// above (bench/README.md, `orrery_bench knn`: where the HNSW search with its recall estimate
// becomes faster than the exact one); on a GPU backend the device's exact search runs.
inline constexpr index_t kExactNeighborsMaxPoints = 5000;
// Query points of the approximate search's recall estimate (orrery::estimate_knn_recall).
inline constexpr index_t kNeighborRecallSample = 1000;

struct NeInputSpec {
  std::string vectors, distances, affinity_matrix, labels;
  std::string names;  // one name per point, for the interactive map
  std::string model;  // hssne: an earlier run's directory to place the vectors into
  ListInput<std::string> class_names;
  index_t limit = 0;
  int pca = 0;
  double perplexity = 30.0;  // snerv: 0 = the paper's 0.5 N / K
  AffinityMode affinities = AffinityMode::automatic;
  DuplicatesMode duplicates = DuplicatesMode::accept;
  NeighborsMode neighbors = NeighborsMode::automatic;  // hssne, nerv
  int neighbor_ef = ApproxKnnParams{}.ef_search;       // the approximate search's candidate list
  ClassMixtureParams metric;  // snerv
  int cv_folds = 0;
};

// The method's input table ("hssne", "nerv" or "snerv") and its defaults.
const std::vector<Field<NeInputSpec>>& ne_input_fields(const std::string& method);
const NeInputSpec& ne_input_defaults(const std::string& method);

struct NeRunConfig {
  RunConfig run;
  NeInputSpec input;
  HssneParams hssne;  // method hssne
  NervParams nerv;    // methods nerv and snerv
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

// The input files, read and checked.
struct NeData {
  MatrixD X;               // N x d vectors, or the N x N distance matrix; N x 0 with given affinities
  std::vector<int> labels;  // empty, or N entries: classes 0..C-1 (io::read_categories), -1 unknown
  std::vector<std::string> class_names;
  std::vector<std::string> legend;  // C entries: class c's name in the map (class_names by value)
  SparseAffinity given;    // hssne: input.affinity_matrix
  PcaBasis pca;            // input.pca > 0: the projection applied to the vectors
  DuplicatePoints duplicates;  // among the vectors or in the distance matrix (none with given affinities)
  // X holds the input times 2^-scale_exponent (before input.pca): 0 for data of an ordinary scale,
  // else the exponent that brings data whose squares would overflow or underflow in double (input
  // scales beyond 2^+-64, orrery::double_safe_exponent) to unit scale. Every step after the reading
  // (duplicates, PCA, affinities, fit, quality ranks, the model files) works in these units, which
  // change no map (the methods depend on the input only up to scale); the report records it as
  // input.scale_exponent, and a placement scales its new points by its model's.
  int scale_exponent = 0;
  index_t points() const { return X.rows; }
};
// `model_exponent`: a placement's, the scale exponent its model's points were taken in (its new
// points are scaled by it, not by their own); absent: chosen from the data.
NeData load_ne_data(const NeRunConfig& cfg, std::optional<int> model_exponent = std::nullopt);

// What input.affinities and input.neighbors resolve to for N points of `dims` dimensions on a backend
// with `available` memory (`device`: its engines live on a GPU), and the run's memory plan with it.
struct NePlan {
  bool sparse = false;
  bool automatic = false;  // chosen by "auto"
  bool approximate = false;  // sparse affinities from the approximate neighbour search
  bool metric_candidates = false;  // snerv: the metric's candidate re-ranking (SnervNeighbors::candidates)
  MemoryPlan memory;
};
NePlan plan_ne_run(const NeRunConfig& cfg, index_t N, const MemoryInfo& available, bool device, index_t dims = 0);

// What the sparse affinities' neighbour search did, for the run report.
struct NeighbourSearch {
  bool approximate = false;
  double recall = 0.0;         // approximate: estimated on recall_sample points
  index_t recall_sample = 0;
  double seconds = 0.0;        // the search, with the recall estimate
};

// The affinities of hssne and nerv: given, from a distance matrix, sparse (neighbours at unit scale
// on the backend's device, or approximate on the host; rows on the host) or dense from vectors.
// Long searches and row passes print progress with `tag` unless quiet; `search` (optional) gets
// what the neighbour search did.
AffinityResult ne_affinities(const NeRunConfig& cfg, const NeData& d, const NePlan& plan, Backend& backend,
                             bool quiet = true, NeighbourSearch* search = nullptr);

// The quality measures a neighbour-embedding run adds to its report, for a map of N points: k in
// {1, 5, 10, 20} (at most N - 1), no curve, output.quality_sample query points, the run's seed.
QualityRequest ne_quality_request(const NeRunConfig& cfg, index_t N, int threads);

// Adds output.dir/map.svg (when output.svg) drawing Y coloured by the data's labels, and records it.
void add_ne_map_svg(io::OutputSet& out, json& outputs, const RunConfig& run, const MatrixD& Y, const NeData& d,
                    const std::string& title);

// Supervised NeRV's settings from the run's input, params and plan; input.neighbors in snerv's terms
// (exact: N x N metric distances; approximate: candidate re-ranking). `scale_exponent`: the data's
// (NeData::scale_exponent), into whose units a given input.metric.width is taken.
SnervNeighbors snerv_neighbors(NeighborsMode mode);
SnervParams snerv_params(const NeRunConfig& cfg, const NePlan& plan, int scale_exponent = 0);

}  // namespace orrery::cli
