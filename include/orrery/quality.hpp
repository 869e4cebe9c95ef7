// Quality of a map against its input (MATH.md §5; Venna & Kaski; Lee & Verleysen; Venna et al.
// 2010 for NeRV's smoothed precision and recall).
//
// Conventions, relied on by the tests:
// - rho_ij is the rank of j among i's neighbors in the input, r_ij in the map (1 = nearest);
//   a point is not its own neighbor; equal distances are ranked by the lower index.
// - Only each point's K_max nearest in each space are kept (memory O(N K_max)); a rank beyond
//   K_max that a measure needs is obtained by counting the points before it in that row.
// - Integer quantities (rank sums, overlaps, co-ranking counts) are summed exactly in 64-bit
//   integers; real-valued ones per point and then in point order, so results do not depend on
//   the number of threads.
// - Above a size (QualityRequest::sample_above) the measures are estimated from a seeded uniform
//   subsample of query points: each query's ranks are still against all N points in both spaces,
//   so its per-point terms are exactly those of the full computation, and every measure (a mean
//   over points of per-point terms) is estimated by the mean over the queries: the normalisers'
//   factor N that counts points becomes the number of queries, the ones that bound ranks stay N.
//   The estimate is unbiased (k-NN accuracy with unlabelled points is a ratio of two such means);
//   its standard error is reported. The co-ranking counts are then those of the query rows.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "orrery/types.hpp"

namespace orrery {

class Comm;  // orrery/comm.hpp

// The default subsample rule, chosen by measurement (`orrery_bench quality --scale`, table in
// bench/README.md): a query costs ~12 ns x N on 2 CPU cores and a run ~0.6 ms per point at the
// interpolated engine's target, so Q queries cost ~Q x 2e-5 of a run at any N: 4,000 keep the
// measures under 10% (3.3 s instead of 61 s at 70,000 points), with standard errors up to 0.002
// (rank measures) and 0.008 (k-NN accuracy). Up to 10,000 points all of them cost ~1.2 s at most.
inline constexpr index_t kQualitySampleAbove = 10000;
inline constexpr index_t kQualityQueries = 4000;

struct QualityRequest {
  std::vector<int> ks = {5, 10, 20};  // neighborhood sizes K to report (also k of k-NN accuracy)
  int kmax = 0;                       // size of the co-ranking matrix; 0 = max(ks)
  bool curve = true;                  // also a grid of K in [1, kmax] for plots
  double perplexity = 0.0;            // > 0: NeRV's mean smoothed precision/recall at this perplexity
  bool input_is_distance_matrix = false;  // input is an N x N matrix of distances, not vectors
  // input vectors ranked by inner product, largest first (input.metric inner_product): each point's
  // ranks are those of the query [x_i, 0] among the references [x_j, sqrt(M^2 - |x_j|^2)]
  // (orrery/inner_product.hpp), itself excluded, and the smoothed measures calibrate those squared distances
  bool inner_product = false;
  int threads = 0;                    // 0 = OpenMP default
  // Query points: -1 = the default rule (all points up to sample_above, else sample_queries),
  // 0 = all points, n > 0 = n seeded query points (all when n >= N).
  index_t queries = -1;
  index_t sample_above = kQualitySampleAbove;  // the default rule's size threshold
  index_t sample_queries = kQualityQueries;    // and its number of query points
  unsigned long long seed = 0;                 // of the subsample
};

struct QualityAtK {
  int k = 0;
  double trustworthiness = 0, continuity = 0;  // M_T(K), M_C(K): 1 is perfect
  double mrre_neighborhood = 0, mrre_visual = 0;  // W_n(K), W_v(K): errors, 0 is perfect
  double lcmc = 0;                              // U(K)
  double knn_accuracy = 0;                      // leave-one-out k-NN accuracy in the map (NaN without labels)
};

struct QualityReport {
  index_t num_points = 0;
  index_t queries = 0;                // query points the measures average over (num_points: all)
  unsigned long long seed = 0;        // of the subsample (meaningful when queries < num_points)
  std::vector<QualityAtK> at_k_se;    // standard errors of at_k's estimates (empty when all points)
  int kmax = 0;
  std::vector<QualityAtK> at_k;       // one per requested K, in request order
  std::vector<QualityAtK> curve;      // K on a grid in [1, kmax] (empty unless requested)
  std::vector<std::int64_t> coranking;  // kmax x kmax: entry (k-1, l-1) counts pairs (i, j) with rho = k, r = l, i a query
  double homogeneity_1nn = 0;         // fraction whose nearest map neighbor shares its label (NaN without labels)
  double smoothed_precision = 0;      // -mean_i KL(q_i || p_i) (NaN unless perplexity > 0); 0 is perfect
  double smoothed_recall = 0;         // -mean_i KL(p_i || q_i)
};

class Backend;

// What Backend::rank_rows reads as the input space: vectors (point i's distances are from row i to
// every row), an N x N distance matrix, or inner-product references (orrery/inner_product.hpp; N x
// (d + 1)), point i's distances being from its query, row i with the last coordinate 0, to every row.
enum class RankInput { vectors, distance_matrix, inner_product };
// The input space a run's quality ranks read: a distance matrix, inner-product references, or vectors.
inline RankInput rank_input(bool distance_matrix, bool inner_product) {
  return distance_matrix ? RankInput::distance_matrix : inner_product ? RankInput::inner_product : RankInput::vectors;
}

// Per query point: its kmax nearest in the map and the ranks that link the two spaces, against all
// points. Every rank-based measure is a sum over these (rows x kmax each, row-major).
struct RankRows {
  index_t num_points = 0;
  int kmax = 0;
  std::vector<index_t> queries;  // row r is point queries[r]; empty: one row per point, in order
  std::vector<std::int64_t> map_neighbors;         // n_i, nearest first
  std::vector<std::int64_t> input_rank_of_map_nb;   // rho(i, n_i[l])
  std::vector<std::int64_t> map_rank_of_input_nb;   // r(i, v_i[l]), v_i the input neighbors
};

// Backend::rank_rows computes them: on the CPU OpenMP over points, on CUDA a thread per point; both
// run the selection and counting of include/orrery/math/select.hpp and give identical integers
// whenever the distances are identical (e.g. integer-valued data).

// X: N x d vectors (or N x N distances), Y: N x D map, labels: empty or N entries (-1 unknown).
// The neighbor searches and rank counting run on `backend` (make_cpu_backend(request.threads) for
// the CPU); the sums over the rank rows and the smoothed precision/recall on the host with
// request.threads. Errors (orrery::Error, input) for mismatched N, K outside [1, N - 1], non-finite
// values.
// With a communicator of several ranks every rank calls it alike (a collective): each computes the
// rank rows, and the smoothed precision/recall terms, of its block of whole chunks of the query
// points, the blocks are all-gathered, and every rank gets the one-process report bit for bit (each
// query's row is computed on its own; the real sums run per chunk in chunk order either way).
QualityReport evaluate_quality(const MatrixD& X, const MatrixD& Y, const std::vector<int>& labels,
                               const QualityRequest& request, const Backend& backend, Comm* comm = nullptr);

// The query points evaluate_quality uses for N points: empty when it takes all of them, else a
// sorted seeded uniform sample without replacement (the same for a seed on every platform).
std::vector<index_t> quality_queries(index_t N, const QualityRequest& request);

// Leave-one-out k-NN classification of a map from its neighbor lists: majority vote of the k
// nearest labelled neighbors; a tie goes to the label whose nearest member ranks first.
// With `queries`, neighbor row r belongs to point queries[r] and only those points are scored.
double knn_vote_accuracy(const std::vector<index_t>& neighbors, int stride, const std::vector<int>& labels, int k,
                         const std::vector<index_t>& queries = {});

// k-NN classification of held-out points in a map: each point of `test` gets the majority label of
// its k nearest points among those labelled in train_labels (a tie goes to the label met first,
// i.e. nearest); returns the fraction whose vote differs from truth. Exact (all points scanned).
double knn_test_error(const MatrixD& Y, const std::vector<int>& train_labels, const std::vector<index_t>& test,
                      const std::vector<int>& truth, int k = 5);

// The supervised-NeRV paper's protocol: the labelled points (labels >= 0) are split into `folds`
// seeded folds; for each, its labels are hidden (-1), map_without(train_labels) makes the map
// without them, and the fold's points are classified by 5-NN among the other labelled points of
// that map (knn_test_error). Errors (input): fewer labelled points than folds.
struct CrossValidation {
  std::vector<double> errors;  // per fold
  double mean = 0.0;
};
CrossValidation cross_validate_knn(const std::vector<int>& labels, int folds, unsigned long long seed,
                                   const std::function<MatrixD(const std::vector<int>& train_labels)>& map_without,
                                   const std::function<void(int fold, double error)>& progress = {});

// Per-class precision, recall and F-measure of a predicted class against labels (PE paper,
// Table 1): precision_k = |pred = k and label = k| / |pred = k|, recall_k = ... / |label = k|.
struct ClassScores {
  std::vector<double> precision, recall, f_measure;  // NaN where undefined (empty class)
};
ClassScores class_scores(const std::vector<int>& predicted, const std::vector<int>& labels, int num_classes);

}  // namespace orrery
