// Supervised NeRV (Peltonen, Aidos, Kaski; MATH.md §3): NeRV on learning-metric distances. A
// class-posterior model p(c|x), the discriminative mixture of labelled Gaussians
//   p(c|x) = sum_k beta_ck exp(-|x - m_k|^2 / 2s^2) / sum_k exp(-|x - m_k|^2 / 2s^2),
// is fitted to the labelled points by conjugate gradient on the conditional class log-likelihood
// (beta_.k = softmax(theta_.k), so it stays on the simplex); K and s are chosen by internal k-fold
// validation of that likelihood unless given. The Fisher information of the model defines a local
// metric; distances are integrated along straight paths in T pieces (math/fisher.hpp).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "orrery/affinity.hpp"
#include "orrery/config.hpp"
#include "orrery/engines.hpp"
#include "orrery/knn.hpp"
#include "orrery/nerv.hpp"
#include "orrery/types.hpp"

namespace orrery {

class Backend;
class Comm;

struct ClassMixtureParams {
  // K, the number of Gaussian components; 0 chooses it from {C, 2C, 4C} (C classes, at most a
  // quarter of the labelled points) by validation.
  int components = 0;
  // s, the shared width; 0 chooses it from {1/2, 1, 2} x the root median squared distance of a
  // labelled point to its nearest initial centre, by validation.
  double width = 0.0;
  // Folds of the internal validation (over the labelled points) that choose K and s.
  int folds = 5;
  // Conjugate-gradient iterations of the final fit (validation fits use at most 100).
  int max_iter = 200;
  // Pieces T of the straight-path distance.
  int pieces = 10;
  // eta: weight of the isotropic term eta |dx|^2 / s^2 added to the Fisher metric (math/fisher.hpp),
  // so that distances within a class, where the posterior is flat, stay positive; 0 = pure Fisher.
  double euclidean = 0.2;
  // Labelled points the model is fitted on: at most this many, drawn by the seed (and the first of
  // any class the draw missed, so every class keeps a point); 0 = all labelled points. The fit and
  // its validation cost O(n K d) per CG step over the 3 x 3 candidate (K, s) x folds fits, so on
  // 10^5 points they would dominate the run; a 10,000-point sample estimates K C + K d parameters
  // (K <= 4 C) with plenty of points per component. Only the model sees the sample; every point is
  // mapped. Deterministic: the same seed draws the same sample.
  index_t fit_sample = 10000;
  // Candidates per point of the scalable path (SnervParams::neighbors = candidates): each point's
  // this many nearest Euclidean neighbors, of which the ceil(3 perplexity) nearest in the metric
  // are kept. 0 = 3 ceil(3 perplexity) (at most N - 1). A metric neighbor outside the Euclidean
  // candidates is missed, so more candidates come closer to the exact path (N - 1 equals it) at a
  // cost proportional to their number (each costs one straight-path integral, O(T K C)).
  int candidates = 0;
};

const std::vector<Field<ClassMixtureParams>>& class_mixture_fields();

// Fits on the rows with labels >= 0 (labels -1 are ignored); C = max label + 1. Errors (input):
// length mismatch, fewer than two classes, a class without labelled points, non-finite X.
ClassMixture fit_class_mixture(const MatrixD& X, const std::vector<int>& labels, const ClassMixtureParams& params,
                               unsigned long long seed, int threads = 0);

// p(c | x) for every row (N x C).
MatrixD class_mixture_posteriors(const ClassMixture& model, const MatrixD& X);

// The fit's objective for fixed width and class count: the mean negative log-likelihood of the
// labelled rows at parameters z = [centres (K x d, row-major), theta (K x C)], and its gradient.
double class_mixture_loss(const MatrixD& X, const std::vector<int>& labels, int num_classes, double width, int K,
                          const std::vector<double>& z, std::vector<double>* grad, int threads = 0);

// v' J(x) v for the model's Fisher information at x (tests; the distances use the shared math).
double class_mixture_fisher(const ClassMixture& model, const double* x, const double* v);

// The rows the model is fitted on (ClassMixtureParams::fit_sample): every labelled row when there
// are at most `sample` (or sample is 0), else `sample` of them drawn by the seed plus the first drawn
// row of any class the draw missed; ascending. Input errors as fit_class_mixture's.
std::vector<index_t> class_mixture_sample(const MatrixD& X, const std::vector<int>& labels, index_t sample,
                                          unsigned long long seed);

// Learning-metric distances between all rows (N x N, symmetric, zero diagonal), straight paths of
// `pieces` pieces, on the CPU (rows of pairs in parallel): the reference of
// Backend::learning_metric_distances (CUDA: a thread per pair, kernels/snerv.cu).
MatrixD learning_metric_distances(const ClassMixture& model, const MatrixD& X, int pieces, int threads = 0);

// The learning-metric distance of every listed pair (i, graph.index[i k + q]), in the graph's layout
// (num_points x k), on the CPU: the reference of Backend::learning_metric_pairs. Each pair is
// integrated from its lower-index end, as learning_metric_distances does, so an entry equals the
// N x N matrix's bit for bit. graph.num_points must be X's rows.
std::vector<double> learning_metric_pairs(const ClassMixture& model, const MatrixD& X, const KnnGraph& graph,
                                          int pieces, int threads = 0);

// Each point's k nearest in the metric among its candidates: every row of `candidates` re-ranked by
// its metric distances (`metric`, the graph's layout), the k first by (distance, index) kept, dist2
// holding the squared metric distances (knn_from_distance_matrix's order, ties and convention, so
// with all N - 1 points as candidates the two graphs are equal). Requires 1 <= k <= candidates.k.
KnnGraph rerank_candidates(const KnnGraph& candidates, const std::vector<double>& metric, int k, int threads = 0);

// How supervised NeRV finds each point's neighbors in the metric.
//   exact: the N x N learning-metric distances (Backend::learning_metric_distances), every pair's
//     path integral: O(N^2 T K C) time and N^2 doubles; the reference.
//   candidates: each point's ClassMixtureParams::candidates nearest Euclidean neighbors (exact
//     search on the backend, or the approximate HNSW search), their metric distances only
//     (Backend::learning_metric_pairs), the ceil(3 perplexity) nearest by the metric kept: O(N c)
//     integrals and memory, no N x N matrix. Sparse affinities only.
//   automatic: exact up to kSnervExactMaxPoints points (and always with dense affinities),
//     candidates above.
enum class SnervNeighbors { automatic, exact, candidates };

// Where automatic switches to candidates. Measured on 2 cores, Fashion-MNIST PCA-50 (bench/README.md,
// `orrery_bench snerv-paths`): the candidate path is already faster at 1,000 points; up to this size
// the exact path costs at most a few seconds, so small runs keep the reference.
inline constexpr index_t kSnervExactMaxPoints = 2000;

// The default perplexity (SnervParams::perplexity = 0) is at most this: the paper's 0.5 N / K grows
// with N (875 for 70,000 points and K = 40), and each point's ceil(3 perplexity) neighbors with it.
inline constexpr double kSnervMaxDefaultPerplexity = 50.0;

// Whether a run of N points takes the candidate path (see SnervNeighbors).
bool snerv_uses_candidates(SnervNeighbors mode, index_t points, bool sparse);

// The candidates per point for k kept neighbors among N points: `given` when > 0, else
// min(N - 1, 3 k). Input error (naming input.metric.candidates) when a given value is not in [k, N - 1].
int snerv_candidates(int given, int k, index_t points);

// Supervised NeRV as one method: class model -> learning-metric distances -> affinities -> NeRV.
struct SnervParams {
  ClassMixtureParams metric;  // the class-posterior model behind the metric
  NervParams nerv;            // the map (params.init = pca starts from the vectors' principal components)
  // The affinities' perplexity; 0 takes the paper's effective number of neighbors, 0.5 N / K
  // (K the model's components), clamped to [2, min((N - 1) / 3, kSnervMaxDefaultPerplexity)].
  double perplexity = 0.0;
  // true: each point's ceil(3 perplexity) nearest in the metric, with NeRV's row floor elsewhere
  // (sparse rows); false: every pair's probability (dense rows).
  bool sparse = true;
  // The metric neighbors' search (SnervNeighbors); automatic chooses by size.
  SnervNeighbors neighbors = SnervNeighbors::automatic;
  // The candidate path's Euclidean search: false = exact (Backend::knn), true = approximate
  // (approximate_knn with candidate_search, seeded by the run's seed; reproducible for any thread
  // count). The CLI takes the approximate search where nerv would (input.neighbors).
  bool approximate_candidates = false;
  ApproxKnnParams candidate_search;
};

// The perplexity SnervParams::perplexity = 0 stands for: 0.5 N / K for N points and K components,
// clamped to [2, min((N - 1) / 3, kSnervMaxDefaultPerplexity)]; a given perplexity (> 0) is
// returned as it is.
double snerv_perplexity(double given, index_t points, index_t components);

// Supervised NeRV's affinities from the metric distances (N x N): each point's ceil(3 perplexity)
// nearest with NeRV's row floor elsewhere (sparse), or every pair.
AffinityResult snerv_affinities(const MatrixD& metric_distances, double perplexity, bool sparse, int threads);

// The metric k-NN graph by candidate re-ranking (SnervNeighbors::candidates): the `candidates`
// nearest Euclidean neighbors of every row of X (Backend::knn, or approximate_knn when
// `approximate`), their learning-metric distances on the backend (T = pieces), the k nearest by the
// metric kept (rerank_candidates). X in the units the model was fitted in.
KnnGraph metric_knn(const ClassMixture& model, const MatrixD& X, int k, int candidates, int pieces, bool approximate,
                    const ApproxKnnParams& search, unsigned long long seed, Backend& backend);

struct SnervResult {
  ClassMixture model;
  // N x N: the map's input space, for the quality measures; empty on the candidate path, which
  // never forms it.
  MatrixD metric_distances;
  double perplexity = 0.0;   // the one used
  bool candidates = false;   // the candidate path ran (SnervNeighbors)
  int candidate_k = 0;       // its candidates per point
  bool approximate_candidates = false;  // its Euclidean search was approximate
  NervResult nerv;
};

// X: N x d vectors, labels: N entries (-1 unknown; at least two classes labelled). The distances
// and the map run on `backend`; the class model on the host with the backend's threads. A control
// (orrery/run_control.hpp) reaches the map's iterations only: a resumed fit recomputes the class
// model and the distances (deterministic, and short next to the map), then continues the map.
// The map starts as params.nerv.init says (pca of X, spectral of the metric's affinities, random),
// or from `given` (N x D, taken as it is) when params.nerv.init names an array.
// With `shards` (several ranks, each calling with the same data) the class model, the distances
// and the affinities are computed alike on every rank and the map's fit is split over them
// (fit_nerv): every rank returns the one-process result.
SnervResult fit_snerv(const MatrixD& X, const std::vector<int>& labels, const SnervParams& params,
                      unsigned long long seed, Backend& backend, const std::function<void(int, double)>& progress = {},
                      RunControl* control = nullptr, const MatrixD* given = nullptr, Comm* shards = nullptr);

}  // namespace orrery
