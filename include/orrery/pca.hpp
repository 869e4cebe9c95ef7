// Principal component projection, used to reduce inputs before the O(N^2 d) neighbour searches.
#pragma once
#include "orrery/types.hpp"

namespace orrery {

// Projects the centred rows of X (N x d) onto the top `dims` eigenvectors of their covariance.
// The eigenvectors come from deterministic block power (subspace) iteration with Gram-Schmidt,
// each signed so its largest entry is positive: same input, same output. dims must be in
// [1, min(N, d)] (an input error naming input.pca otherwise).
MatrixD pca_project(const MatrixD& X, int dims, int threads = 0);

}  // namespace orrery
