// Inputs of the neighbor-search tests: n x d points, either integers 0 .. levels - 1 (exact
// distances, many ties) or standard normal reals (levels 0), each plus `offset` (points far from
// the origin).
#pragma once
#include <random>

#include "orrery/types.hpp"

namespace orrery::test {

inline MatrixD knn_points(index_t n, index_t d, unsigned seed, int levels, double offset = 0.0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0.0, 1.0);
  MatrixD X(n, d);
  for (double& v : X.data)
    v = offset + (levels > 0 ? static_cast<double>(rng() % static_cast<unsigned>(levels)) : z(rng));
  return X;
}

}  // namespace orrery::test
