// Input affinities of the neighbor-embedding methods (MATH.md §3-4): per-point Gaussian
// conditionals p_{j|i} = exp(-beta_i d_ij^2) / sum_{l != i} exp(-beta_i d_il^2) with beta_i set so
// that the entropy of p_{.|i} is log(perplexity) (math/affinity.hpp), symmetrised as
// P_ij = (p_{j|i} + p_{i|j}) / 2N so that P is symmetric, P_ii = 0 and sum P = 1.
//
// Dense mode uses all N - 1 other points per row (exact, O(N^2) memory); sparse mode only each
// point's k = min(N - 1, ceil(3 perplexity)) exact nearest neighbors (orrery::exact_knn), the
// usual truncation; when k = N - 1 both modes give the same P.
#pragma once
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "orrery/types.hpp"

namespace orrery {

// Neighbors per point of sparse affinities: k = ceil(3 perplexity), the usual truncation.
inline int sparse_neighbors(double perplexity) { return static_cast<int>(std::ceil(3.0 * perplexity)); }

// Symmetric sparse matrix in CSR form; columns ascending within a row, no diagonal entries.
struct SparseAffinity {
  index_t num_points = 0;
  std::vector<index_t> row_ptr;  // num_points + 1
  std::vector<index_t> col;
  std::vector<double> val;
  double at(index_t i, index_t j) const;  // 0 when absent
};

struct AffinityResult {
  std::vector<double> beta;  // per point precision 1 / sigma_i^2 of its conditional
  MatrixD dense;             // N x N (dense mode), else empty
  MatrixD conditional;       // N x N rows p_{j|i} (dense mode; NeRV uses them unsymmetrised)
  SparseAffinity sparse;     // sparse mode, else empty
  SparseAffinity sparse_conditional;  // sparse mode: rows p_{j|i} on the k neighbors (NeRV)
};

// X: N x d points. Duplicate points (identical rows) are legal: their distance-0 neighbors get
// the largest probabilities, and a point with at least `perplexity` copies puts its whole row on
// them. Errors (input): perplexity outside (1, N - 1) for dense or > (N - 1) / 3 for sparse is
// named with N; a point whose every candidate neighbor (all others for dense, its k nearest for
// sparse) is identical to it, by its row; non-finite coordinates by row and column.
// The affinities depend on the points only up to scale: X times c gives the same P and beta / c^2.
AffinityResult affinities_dense(const MatrixD& X, double perplexity, int threads = 0);
AffinityResult affinities_sparse(const MatrixD& X, double perplexity, int threads = 0);
// Dense affinities whose row i calibrates the squared distances from query row Q_i to every
// reference row R_l (l != i): Q_i and R_i are one point seen two ways (orrery/knn.hpp's paired
// search; input.metric inner_product, orrery/inner_product.hpp). With Q = R it is affinities_dense.
AffinityResult affinities_dense_paired(const MatrixD& R, const MatrixD& Q, double perplexity, int threads = 0);

// Sparse affinities from a precomputed kNN graph (any backend's; k >= ceil(3 perplexity), all k
// neighbors are used): the same result as affinities_sparse when the graph is exact_knn's.
struct KnnGraph;

// A precomputed sparse affinity matrix (N x N entries (row, col, value), 0-based, any order,
// repeated entries summed): made symmetric as (A + A') / 2 and scaled to sum 1, the joint P of
// HSSNE. Errors (input, naming `what`): not square, a negative value, a diagonal entry, all zero.
SparseAffinity affinities_from_entries(index_t N, index_t cols, const std::vector<index_t>& row,
                                       const std::vector<index_t>& col, const std::vector<double>& val,
                                       const std::string& what, int threads = 0);
// A kNN graph of distances (not squared) given as N x N entries (row, col, distance), 0-based, any
// order, rows of any length (scikit-learn's kneighbors_graph(mode="distance"), Scanpy's
// obsp["distances"]): each row's listed neighbors calibrated to the perplexity as p_{j|i} (Gaussian in
// the distance, as affinities_sparse does on its searched lists), then symmetrised and scaled to sum
// 1 as affinities_from_entries does. A row of m <= perplexity neighbors cannot reach the perplexity
// (its largest entropy is log m, at uniform probabilities): it gets uniform probabilities, and the
// summary counts such rows. Diagonal entries are left out (a point is not its own neighbor); a
// distance of 0 is a duplicate point. Errors (input, naming `what` and the 1-based row/column): not
// square, a negative or non-finite distance, a pair listed twice, a row with no neighbor, a row whose
// neighbors are all at distance 0, and what affinities_from_entries refuses.
struct NeighborGraphSummary {
  index_t entries = 0;            // neighbor pairs used (diagonal entries left out)
  index_t min_neighbors = 0, max_neighbors = 0;  // per row
  index_t short_rows = 0;         // rows of at most `perplexity` neighbors (uniform probabilities)
  double reachable_perplexity = 0;  // the largest perplexity every row reaches: min(perplexity, min_neighbors)
};
SparseAffinity affinities_from_neighbor_graph(index_t N, index_t cols, const std::vector<index_t>& row,
                                              const std::vector<index_t>& col, const std::vector<double>& dist,
                                              double perplexity, const std::string& what, int threads = 0,
                                              NeighborGraphSummary* summary = nullptr);
// Each row's conditional probabilities p_{j|i} over its k listed neighbors, calibrated to the
// perplexity (1 < perplexity < k), in the list's order (num_points x k), with each row's beta. The
// rows of affinities_from_knn, and of new points placed into a map (their neighbors among the
// reference points). A row whose neighbors all lie at one distance gets uniform probabilities.
struct ConditionalRows {
  std::vector<double> p, beta;
};
ConditionalRows conditional_rows(const KnnGraph& g, double perplexity, int threads = 0,
                                 const std::function<void(index_t, index_t)>& progress = {});
// progress: rows done out of N (called from one thread), for a long run's ETA.
AffinityResult affinities_from_knn(const KnnGraph& g, double perplexity, int threads = 0,
                                   const std::function<void(index_t, index_t)>& progress = {});
// Dense affinities from a precomputed symmetric N x N distance matrix (zero diagonal); zero
// off-diagonal distances are duplicate points, legal as above.
AffinityResult affinities_from_distances(const MatrixD& D, double perplexity, int threads = 0);

// A length scale of the input, computed in double without overflow or underflow whatever the
// magnitude of the numbers: the root mean square deviation of the entries of X from their column
// means (vectors), or of the off-diagonal distances (distance_matrix); 1 when that is zero.
// Proportional to the input: input_scale(c X) = |c| input_scale(X) up to rounding, so dividing by
// it puts data given in any units into the same units (supervised NeRV fits its class model and
// metric so, whose conjugate gradient's first steps and tolerances are in the data's units).
double input_scale(MatrixViewD X, bool distance_matrix = false);

// For a backend that squares coordinates or distances in float (1e30 squared overflows, 1e-30
// squared underflows to 0 and every pair ties): e = ilogb(input_scale(X)) when |e| > 16, else 0
// (float is safe, no copy needed), and X 2^-e. Scaling by a power of two is exact, so neighbor
// ranks and ties are unchanged, squared distances scale by exactly 4^-e, and so does beta the other way.
int float_safe_exponent(MatrixViewD X, bool distance_matrix = false);
MatrixD times_power_of_two(MatrixViewD X, int e);  // X 2^e

// The same for double, whose squares overflow near 1e154 and underflow (to subnormals, then 0)
// near 1e-154: e = ilogb(input_scale(X)) when |e| > kDoubleSafeExponent, else 0. Data of an
// ordinary scale (2^-64 to 2^65) gives 0 and is left as it is, so its results do not change by a
// bit; data beyond is worked on as X 2^-e (exact, input scale in [1, 2)), where every method's
// squared distances, bandwidths and sums are far from both ends of double's range.
inline constexpr int kDoubleSafeExponent = 64;
int double_safe_exponent(MatrixViewD X, bool distance_matrix = false);

// Points identical to an earlier one: their number and the first such pair (0-based, first < second;
// -1 when there is none). For a distance matrix, a zero off-diagonal distance.
struct DuplicatePoints {
  index_t count = 0;
  index_t first = -1, second = -1;
};
DuplicatePoints find_duplicates(MatrixViewD X, bool distance_matrix = false);

}  // namespace orrery
