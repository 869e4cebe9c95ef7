// Principal component projection, used to reduce inputs before the O(N^2 d) neighbor searches.
#pragma once
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

}  // namespace orrery
