// Seeded inputs of the HSSNE parity cases and fits: Gaussian maps, and clustered input vectors
// (four groups along the first axis) so that the affinities have structure.
#pragma once
#include <random>

#include "orrery/types.hpp"

namespace orrery::test {

inline MatrixD gaussian_points(index_t n, index_t d, unsigned seed, double scale) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0.0, scale);
  MatrixD M(n, d);
  for (double& v : M.data) v = z(rng);
  return M;
}

inline MatrixD clustered(index_t n, index_t d, unsigned seed) {
  MatrixD X = gaussian_points(n, d, seed, 1.0);
  for (index_t i = 0; i < n; ++i) X(i, 0) += 6.0 * static_cast<double>(i % 4);
  return X;
}

}  // namespace orrery::test
