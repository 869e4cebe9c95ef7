// The neighbor-embedding methods' input stage (hssne, nerv, snerv): their "input" keys (one
// struct, a field table per method listing the keys that method takes, with its defaults), the plan
// that resolves input.affinities and input.neighbors for N points on a backend, the neighbor search
// and the affinities. Reading the input files is the run layer's (run/ne_config.hpp): this stage
// takes the data as arrays.
#pragma once
#include <array>
#include <functional>
#include <string>
#include <vector>

#include "orrery/affinity.hpp"
#include "orrery/backend.hpp"
#include "orrery/config.hpp"
#include "orrery/hssne.hpp"
#include "orrery/knn.hpp"
#include "orrery/memory_plan.hpp"
#include "orrery/nerv.hpp"
#include "orrery/pca.hpp"
#include "orrery/quality.hpp"
#include "orrery/snerv.hpp"

namespace orrery {

// input.affinities.
enum class AffinityMode { automatic, dense, sparse };
// input.duplicates: identical points are data (accept) or an input error (refuse).
enum class DuplicatesMode { accept, refuse };
// input.neighbors: the sparse affinities' neighbor search.
enum class NeighborsMode { automatic, exact, approximate };

template <>
struct EnumNames<AffinityMode> {
  static constexpr std::array<const char*, 3> names = {"auto", "dense", "sparse"};
};
template <>
struct EnumNames<DuplicatesMode> {
  static constexpr std::array<const char*, 2> names = {"accept", "refuse"};
};
template <>
struct EnumNames<NeighborsMode> {
  static constexpr std::array<const char*, 3> names = {"auto", "exact", "approximate"};
};
// input.metric (hssne, nerv): how vectors are compared. cosine and correlation are the Euclidean
// distance between rows scaled to unit length (correlation: centred first), a monotone function of
// the cosine distance (|u - v|^2 = 2 (1 - cos)), so every neighbor list and rank (the search, HNSW and
// its recall, the quality measures) is the metric's, and the affinities equal scikit-learn's
// (which calibrates cosine distances unsquared) up to the bandwidth, which the perplexity sets.
// inner_product is a similarity, not a distance: its searches are Euclidean ones between queries
// [x, 0] and references [x, sqrt(M^2 - |x|^2)] (orrery/inner_product.hpp), whose squared distances
// the affinities calibrate; the rows are kept as they are (no input.pca, which centres them).
enum class VectorMetric { euclidean, cosine, correlation, inner_product };
template <>
struct EnumNames<VectorMetric> {
  static constexpr std::array<const char*, 4> names = {"euclidean", "cosine", "correlation", "inner_product"};
};

// input.affinities = "auto" for NeRV takes dense affinities up to this many points (when their
// memory plan fits in half of what is available), sparse above; supervised NeRV takes sparse.
inline constexpr index_t kDenseAutoMaxPoints = 10000;
// For HSSNE `auto` takes dense affinities only where the sparse lists would hold every pair anyway
// (N - 1 <= ceil(3 perplexity)): measured on 2 cores, 1,000 iterations, exact repulsion, the first N
// pooled Fashion-MNIST test images (bench/README.md, `orrery_bench hssne --data pooled`), the
// sparse fit is faster at every size from 1,000 points (1,000: 0.75 s against 1.71 s; 2,000: 1.82
// against 5.90; 5,000: 8.77 against 36.5) with the same 5-NN accuracy (0.698/0.692, 0.756/0.759,
// 0.776/0.779), and dense P needs N^2 doubles (800 MB at 10,000).
// input.neighbors = "auto" searches exactly up to this many points on the CPU and approximately
// above (bench/README.md, `orrery_bench knn`: where the HNSW search with its recall estimate
// becomes faster than the exact one); on a GPU backend the device's exact search runs.
inline constexpr index_t kExactNeighborsMaxPoints = 5000;
// Query points of the approximate search's recall estimate (orrery::estimate_knn_recall).
inline constexpr index_t kNeighborRecallSample = 1000;
// The affinities' HNSW graph is built with this candidate list (hnswlib ef_construction): half the
// default's build time; the query list then rises until input.neighbor_recall_target is reached
// (2 cores, 70,000 Fashion-MNIST PCA-50, k = 90: build 2.5 s against 4.4 s at 100, recall 0.998 at
// ef 150; bench/README.md `orrery_bench knn`).
inline constexpr int kAffinityEfConstruction = 50;
// ... with this many links per point (hnswlib M; 2 M on the bottom layer), and queried first at
// kAffinityEf (input.neighbor_ef's default for HSSNE and NeRV). More links make each step of a query
// dearer but the graph far better connected on data of high intrinsic dimension, so the recall
// target is met at a shorter list (2 cores, k = 90, one invocation, search s with the build:
// 70,000 Fashion-MNIST PCA-50 M 16 ef 150 4.61 s recall 0.9985, M 48 ef 100 3.96 s 0.9959; 200,000
// points of the 50-D mixture M 16 ef 300 37.7 s 0.954, M 48 ef 100 28.9 s 0.9515;
// bench/README.md `orrery_bench knn`). The index costs about 12 M + 4 d + 16 bytes a point.
inline constexpr int kAffinityLinks = 48;
inline constexpr int kAffinityEf = 100;

struct NeInputSpec {
  std::string vectors, distances, affinity_matrix, labels;
  std::string neighbor_graph;  // hssne: a sparse kNN distance graph, calibrated to the perplexity
  std::string names;  // one name per point, for the interactive map
  std::string model;  // hssne: an earlier run's directory to place the vectors into
  ListInput<std::string> class_names;
  index_t limit = 0;
  int pca = 0;
  double perplexity = 30.0;  // snerv: 0 = the paper's 0.5 N / K
  AffinityMode affinities = AffinityMode::automatic;
  DuplicatesMode duplicates = DuplicatesMode::accept;
  NeighborsMode neighbors = NeighborsMode::automatic;  // hssne, nerv
  int neighbor_ef = kAffinityEf;       // the approximate search's candidate list
  double neighbor_recall_target = 0.95;                 // hssne, nerv: the affinities' search raises ef to it
  ClassMixtureParams metric;  // snerv
  VectorMetric vector_metric = VectorMetric::euclidean;  // hssne, nerv: input.metric
  int cv_folds = 0;
};

// The method's input table and its defaults (snerv's perplexity default is 0: the paper's rule).
const std::vector<Field<NeInputSpec>>& ne_input_fields(NeMethod method);
const NeInputSpec& ne_input_defaults(NeMethod method);
const char* ne_method_name(NeMethod method);   // "hssne", "nerv", "snerv"
const char* ne_method_title(NeMethod method);  // "HSSNE", "NeRV", "Supervised NeRV": maps' titles

// What the input stage and the fit of a neighbor-embedding run need to know, read and checked.
struct NeSpec {
  NeMethod method = NeMethod::hssne;
  NeInputSpec input;
  HssneParams hssne;  // method hssne
  NervParams nerv;    // methods nerv and snerv
  unsigned long long seed = 0;
};

// perplexity's bound for N points read from `source`: input.perplexity < N - 1 (a perplexity of
// 0, snerv's "choose", passes). The one place that says so for every neighbor method.
void check_perplexity_bound(double perplexity, index_t N, const std::string& source);

// The affinities' approximate search as a run makes it from `in`: kAffinityLinks and
// kAffinityEfConstruction's graph, neighbor_ef's first query list, raised to neighbor_recall_target on kNeighborRecallSample points.
inline ApproxKnnParams affinity_search_params(const NeInputSpec& in) {
  ApproxKnnParams prm;
  prm.ef_search = in.neighbor_ef;
  prm.ef_construction = kAffinityEfConstruction;
  prm.M = kAffinityLinks;
  prm.target_recall = in.neighbor_recall_target;
  prm.recall_sample = kNeighborRecallSample;
  return prm;
}

// Whether P comes finished from the input (affinity_matrix) or from a given neighbor graph: either
// way there are no vectors, no neighbor search and no input space for the quality measures.
inline bool given_affinities(const NeInputSpec& in) { return !in.affinity_matrix.empty() || !in.neighbor_graph.empty(); }
// The file (or in-memory name) the points come from, for messages.
inline const std::string& ne_input_source(const NeInputSpec& in) {
  return !in.vectors.empty() ? in.vectors : !in.distances.empty() ? in.distances
                                            : !in.neighbor_graph.empty() ? in.neighbor_graph : in.affinity_matrix;
}

// The input files, read and checked.
struct NeData {
  MatrixD X;               // N x d vectors, or the N x N distance matrix; N x 0 with given affinities
  std::vector<int> labels;  // empty, or N entries: classes 0..C-1 (io::read_categories), -1 unknown
  std::vector<std::string> class_names;
  std::vector<std::string> legend;  // C entries: class c's name in the map (class_names by value)
  SparseAffinity given;    // hssne: input.affinity_matrix, or made from input.neighbor_graph
  NeighborGraphSummary graph;  // input.neighbor_graph: its rows' lengths and the perplexity they reach
  MatrixD start;           // params.init before the affinities: hssne pca or a file, nerv/snerv a file; else empty
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
// What input.affinities and input.neighbors resolve to for N points of `dims` dimensions on a backend
// with `available` memory (`device`: its engines live on a GPU), and the run's memory plan with it.
struct NePlan {
  bool sparse = false;
  bool automatic = false;  // chosen by "auto"
  bool approximate = false;  // sparse affinities from the approximate neighbor search
  bool metric_candidates = false;  // snerv: the metric's candidate re-ranking (SnervNeighbors::candidates)
  MemoryPlan memory;
};
NePlan plan_ne_run(const NeSpec& spec, index_t N, const MemoryInfo& available, bool device, index_t dims = 0,
                   int ranks = 1);

// What the sparse affinities' neighbor search did, for the run report.
struct NeighborSearch {
  bool approximate = false;
  double recall = 0.0;         // approximate: estimated on recall_sample points
  index_t recall_sample = 0;
  int ef = 0;                  // approximate: the query list the search ran at
  double seconds = 0.0;        // the search, with the recall estimate
};

// The affinities of hssne and nerv: given (`given`, input.affinity_matrix), from a distance matrix,
// sparse (neighbors at unit scale on the backend's device, or approximate on the host, or on the
// host for input.metric inner_product; rows on the host) or dense from vectors. `progress(what)` (may be empty) gives the progress callback of a long
// stage ("exact neighbors", "approximate neighbors", "affinity rows"); `search` (optional) gets
// what the neighbor search did. `comm` (optional, a CPU run of several ranks): each rank searches the
// neighbors of its block of points (hssne_rank_block) and the lists are all-gathered, the same bits as
// one process's search; every rank then makes the same P.
using NeStageProgress = std::function<std::function<void(index_t, index_t)>(const char* what)>;
AffinityResult ne_affinities(const NeSpec& spec, const NeData& d, const NePlan& plan, Backend& backend,
                             const NeStageProgress& progress = {}, NeighborSearch* search = nullptr,
                             Comm* comm = nullptr);

// Supervised NeRV's settings from the run's input, params and plan; input.neighbors in snerv's terms
// (exact: N x N metric distances; approximate: candidate re-ranking). `scale_exponent`: the data's
// (NeData::scale_exponent), into whose units a given input.metric.width is taken.
SnervNeighbors snerv_neighbors(NeighborsMode mode);
SnervParams snerv_params(const NeSpec& spec, const NePlan& plan, int scale_exponent = 0);

}  // namespace orrery
