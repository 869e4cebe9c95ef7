// Learning-metric distances on the GPU against the CPU: the same double arithmetic per pair.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "common/require_cuda.hpp"
#include "orrery/backend.hpp"
#include "orrery/snerv.hpp"

using namespace orrery;

TEST(SnervParity, DistancesAgree) {
  ORRERY_REQUIRE_CUDA();
  std::mt19937_64 rng(3);
  std::normal_distribution<double> z(0.0, 1.0);
  MatrixD X(413, 12);
  std::vector<int> y(413);
  for (index_t n = 0; n < X.rows; ++n) {
    y[static_cast<size_t>(n)] = static_cast<int>(n % 4);
    for (index_t j = 0; j < X.cols; ++j) X(n, j) = z(rng) + (j == n % 4 ? 3.0 : 0.0);
  }
  ClassMixtureParams prm;
  prm.components = 8;
  prm.width = 1.5;
  prm.max_iter = 50;
  const ClassMixture m = fit_class_mixture(X, y, prm, 1);
  const MatrixD c = learning_metric_distances(m, X, 10), g = make_cuda_backend(0)->learning_metric_distances(m, X, 10);
  ASSERT_EQ(c.data.size(), g.data.size());
  for (size_t q = 0; q < c.data.size(); ++q) EXPECT_NEAR(c.data[q], g.data[q], 1e-10 * std::max(1.0, c.data[q]));
}
