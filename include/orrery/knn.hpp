// Exact k nearest neighbors (Euclidean), shared by the neighbor-embedding methods (sparse
// affinities) and the quality measures (ranks in input and output space).
//
// Conventions, relied on by every caller and by the tests:
// - A point is never its own neighbor (self is excluded by index, so duplicates of a point are
//   neighbors at distance 0).
// - Neighbors are sorted by increasing squared distance; equal distances are ordered by the lower
//   index first ("ties broken by index").
// - Squared distances are computed as sum_d (x_d - y_d)^2 in double, in a fixed order, so the result
//   is identical for any thread count and equals a brute-force loop bit for bit.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "orrery/error.hpp"
#include "orrery/types.hpp"

namespace orrery {

struct KnnGraph {
  index_t num_points = 0;
  int k = 0;
  std::vector<index_t> index;  // num_points x k, row-major
  std::vector<double> dist2;   // num_points x k, squared Euclidean distances
  const index_t* neighbors(index_t i) const { return index.data() + i * k; }
  const double* distances2(index_t i) const { return dist2.data() + i * k; }
};

// A graph of `rows` lists of k neighbors, to be filled.
inline KnnGraph sized_graph(index_t rows, int k) {
  KnnGraph g;
  g.num_points = rows;
  g.k = k;
  g.index.resize(static_cast<size_t>(rows * k));
  g.dist2.resize(static_cast<size_t>(rows * k));
  return g;
}

// Every search's precondition, as an input error naming k and N.
inline void check_knn_k(index_t N, int k) {
  if (k < 1 || k > N - 1)
    input_error("k: expected 1 <= k <= N - 1 = " + std::to_string(N - 1) + " neighbors, found " + std::to_string(k));
}

// Progress of a long search: called now and then from one thread with the units done so far and
// the total (both grow monotonically to `total`); the caller decides what to print and when.
using KnnProgress = std::function<void(index_t done, index_t total)>;

// X: N x d points. Requires 1 <= k <= N - 1 (an input error otherwise, naming k and N).
// threads <= 0: the OpenMP default. progress: rows done out of N.
KnnGraph exact_knn(const MatrixD& X, int k, int threads = 0, const KnnProgress& progress = {});

// The k nearest reference rows (R, N x d) of every query row (Q, M x d): a graph of M rows whose
// indices are R's rows, with exact_knn's order and ties (no row is excluded: the sets differ).
// Requires 1 <= k <= N (an input error naming k otherwise). progress: queries done out of M.
KnnGraph exact_knn_to(const MatrixD& R, const MatrixD& Q, int k, int threads = 0, const KnnProgress& progress = {});
// The paired search: query row i and reference row i are one point seen two ways (Q and R both
// N x d), and query i never lists reference row i, as exact_knn excludes self; otherwise
// exact_knn_to's order and ties. With Q = R it is exact_knn. input.metric inner_product searches
// so (orrery/inner_product.hpp), where a point is not its own nearest. Requires 1 <= k <= N - 1.
KnnGraph exact_knn_paired(const MatrixD& R, const MatrixD& Q, int k, int threads = 0,
                          const KnnProgress& progress = {});
// The k nearest of every row of a symmetric N x N distance matrix (dist2 holds squared distances),
// in the same order and with the same ties as exact_knn.
KnnGraph knn_from_distance_matrix(const MatrixD& D, int k, int threads = 0);

// Settings of the approximate search (an HNSW graph, hnswlib). Defaults chosen on all 70,000
// Fashion-MNIST images (PCA-50, k = 90): recall@90 >= 0.97 (bench/README.md, `orrery_bench knn`).
struct ApproxKnnParams {
  // Links per point in the graph (hnswlib M; layer 0 keeps 2 M). More: higher recall, more memory
  // (about 8 M + 4 d bytes per point) and a slower build.
  int M = 16;
  // Candidate list while inserting (hnswlib ef_construction): the graph's quality. Larger is slower
  // to build and gives higher recall at the same ef_search.
  int ef_construction = 100;
  // Candidate list while querying (hnswlib ef); at least k + 1 is used. The main recall/time knob.
  int ef_search = 150;
  // Insert points with hnswlib's concurrent insertion: the graph then depends on thread timing, so
  // the result is no longer reproducible, and it is no faster than the default's batches (bench).
  // Off by default.
  bool parallel_build = false;
  // The paired searches only: with target_recall > 0 the recall is first estimated on recall_sample
  // seeded query points (estimate_knn_recall_paired's sample and count) at ef_search, and ef doubled,
  // up to 16 ef_search, until the estimate reaches target_recall; every query then runs at that ef.
  // The estimate is what estimate_knn_recall_paired would give for the finished graph (each query is
  // answered on its own, the same at the same ef). Every rank of a sharded search picks the same ef.
  double target_recall = 0.0;
  index_t recall_sample = 1000;
};

// What a paired search with ApproxKnnParams::target_recall chose: the ef it ran at and the recall
// estimated there (sample 0: no target, nothing estimated).
struct ApproxKnnTuning {
  int ef = 0;
  double recall = 0.0;
  index_t sample = 0;
};

// Approximate k nearest neighbors of every row of X with exact_knn's conventions: self excluded,
// each list sorted by (squared distance, index), squared distances recomputed exactly in double
// for the neighbors found (the index itself compares float distances). The index holds a float
// copy of X: scale X so that its squared coordinates fit a float (cli::float_safe_exponent).
// Deterministic: the first 2,048 points are inserted one by one in index order with hnswlib's level
// generator seeded by `seed`, the rest in batches of fixed sizes (1/32 of the graph so far, at most
// 4,096), each batch's points searched in parallel against the graph before it and then linked in
// index order as hnswlib links them; then queried independently in parallel. So the same X, k, seed
// and params give the same graph for ANY thread count (unless params.parallel_build). Requires
// 1 <= k <= N - 1.
// Memory: the index, about N (8 M + 4 d + 16) bytes, plus the graph's N k (8 + 8) bytes.
KnnGraph approximate_knn(const MatrixD& X, int k, unsigned long long seed, int threads,
                         const ApproxKnnParams& params = {}, const KnnProgress& progress = {});

// approximate_knn's search for query rows Q among the reference rows R (exact_knn_to's result up to
// the lists' membership): R's graph built as there (seeded batches), the queries in parallel.
KnnGraph approximate_knn_to(const MatrixD& R, const MatrixD& Q, int k, unsigned long long seed, int threads,
                            const ApproxKnnParams& params = {}, const KnnProgress& progress = {});
// approximate_knn's search in the paired form of exact_knn_paired: the graph over R built as
// there, query i (of Q) never listing reference row i. Requires 1 <= k <= N - 1.
KnnGraph approximate_knn_paired(const MatrixD& R, const MatrixD& Q, int k, unsigned long long seed, int threads,
                                const ApproxKnnParams& params = {}, const KnnProgress& progress = {},
                                ApproxKnnTuning* tuning = nullptr);
// Rows [first, first + count) of exact_knn_paired(R, Q, k) and approximate_knn_paired(R, Q, k, seed)
// (Q = R: exact_knn's and approximate_knn's), the same bits, as every row is searched on its own
// (the approximate graph over all of R is built alike): a rank's share of a sharded search, a graph
// of `count` rows whose indices are R's rows.
KnnGraph exact_knn_paired_rows(const MatrixD& R, const MatrixD& Q, int k, index_t first, index_t count,
                               int threads = 0, const KnnProgress& progress = {});
KnnGraph approximate_knn_paired_rows(const MatrixD& R, const MatrixD& Q, int k, index_t first, index_t count,
                                     unsigned long long seed, int threads, const ApproxKnnParams& params = {},
                                     const KnnProgress& progress = {}, ApproxKnnTuning* tuning = nullptr);
// The recall of a k-NN graph of X, estimated on `sample` query points drawn by `seed` (all of them
// when sample >= N): each sampled point's exact k nearest are found by brute force against all N,
// and a listed neighbor counts as found when its squared distance is at most the exact k-th one
// (so ties at the k-th distance do not count as misses). Returns found / (sample k), in [0, 1].
// O(sample N d) time.
struct KnnRecall {
  double recall = 0;
  index_t sample = 0;  // query points used
};
KnnRecall estimate_knn_recall(const MatrixD& X, const KnnGraph& g, index_t sample, unsigned long long seed,
                              int threads = 0);
// The same estimate for a paired graph (approximate_knn_paired's): the exact lists are
// exact_knn_paired's rows.
KnnRecall estimate_knn_recall_paired(const MatrixD& R, const MatrixD& Q, const KnnGraph& g, index_t sample,
                                     unsigned long long seed, int threads = 0);

// Backend::knn runs this search on its device: on CUDA (kernels/knn.cu) a tiled distance GEMM keeps
// k + max(8, k / 4) candidates per point, re-ranked by the same double distances and bounded heap,
// so the graph equals exact_knn's wherever the GEMM's rounding keeps the k nearest among those and
// the distances agree to the last bit (always for integer-valued inputs; otherwise up to order
// among near-ties).

}  // namespace orrery
