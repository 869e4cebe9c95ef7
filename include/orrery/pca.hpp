// Principal component projection, used to reduce inputs before the O(N^2 d) neighbor searches,
// and the spectral start of a map; both are leading eigenvectors by subspace iteration.
#pragma once
#include "orrery/affinity.hpp"
#include "orrery/types.hpp"

namespace orrery {

// Projects the centred rows of X (N x d) onto the top `dims` eigenvectors of their covariance.
// The eigenvectors come from deterministic block power (subspace) iteration with Gram-Schmidt,
// each signed so its largest entry is positive: same input, same output. dims must be in
// [1, min(N, d)] (an input error naming input.pca otherwise).
MatrixD pca_project(const MatrixD& X, int dims, int threads = 0);
// pca_project in two steps, so that new points can be projected as the fitted ones were: the mean
// (1 x d) and the eigenvectors (d x dims, columns by decreasing variance), then any rows' projection.
struct PcaBasis {
  MatrixD mean, components;
};
PcaBasis pca_fit(MatrixViewD X, int dims, int threads = 0);
MatrixD pca_apply(const PcaBasis& basis, MatrixViewD X, int threads = 0);

// The spectral start (params.init = spectral; Laplacian eigenmaps): the generalised eigenvectors
// W y = mu D y of the `dims` largest mu after the trivial one, for W = (P + P') / 2 (P: affinities,
// joint or conditional rows) and D its degrees; N x dims, columns by decreasing mu, each signed so
// its largest-magnitude entry is positive, not scaled (the caller scales the start). Deterministic
// (a fixed start vector, fixed summation order). Errors (input, naming params.init): fewer than
// dims + 2 points, or a point without a positive affinity.
MatrixD spectral_start(const SparseAffinity& P, int dims, int threads = 0);
// Each row's k largest off-diagonal entries of a dense P (ties to the lower column) in CSR: the
// graph a dense run's spectral start reads, O(N k) instead of the N^2 pairs per iteration.
SparseAffinity largest_entries(const MatrixD& P, int k);

}  // namespace orrery
