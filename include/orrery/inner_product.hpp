// input.metric inner_product: points compared by their inner product <x, y>, a similarity (larger
// is nearer), not a distance. Every search reduces to a Euclidean one, as in maximum inner product
// search: with M the largest norm among the reference rows, reference x_j becomes
// r_j = [x_j, sqrt(M^2 - |x_j|^2)] and query x_i becomes q_i = [x_i, 0], so that
//
//     |q_i - r_j|^2 = |x_i|^2 + M^2 - 2 <x_i, x_j>,
//
// a constant of the query minus twice the inner product: each query's Euclidean order is its order
// by decreasing inner product (ties by lower index, as everywhere). These squared distances are the
// ones the affinities calibrate: a constant per row cancels in the Gaussian p_{j|i}, so
// p_{j|i} = exp(2 beta_i <x_i, x_j>) / sum_l exp(2 beta_i <x_i, x_l>), the perplexity setting beta_i.
// They are in the input's units squared (no division by M), like the other metrics' distances.
//
// The form is asymmetric, so a set searched against itself is searched in pairs (query i against
// every reference but r_i: exact_knn_paired and approximate_knn_paired in orrery/knn.hpp), and a
// point is excluded from its own list by index: it need not be its own nearest (|x_i| < M).
#pragma once
#include <string>

#include "orrery/types.hpp"

namespace orrery {

// The references [x_j, sqrt(M^2 - |x_j|^2)] (N x (d + 1)), M the largest row norm of X. An input
// error naming `key` (the setting that chose the metric) when every row is zero (every inner product
// is then 0: no row is nearer than another) or a value is not finite.
MatrixD inner_product_references(const MatrixD& X, const std::string& key = "input.metric");
// The queries [x_i, 0] (M x (d + 1)): any norm, the query's constant does not change its order.
MatrixD inner_product_queries(const MatrixD& X);

}  // namespace orrery
