// params.init resolved to HSSNE's start: the vectors' principal components scaled so that the first
// has standard deviation init_scale (their shape and directions kept), and refusals by the key.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "orrery/error.hpp"
#include "orrery/pca.hpp"
#include "run/ne_config.hpp"

using namespace orrery;

TEST(HssneStart, PcaIsTheProjectionScaledToInitScale) {
  std::mt19937_64 rng(9);
  std::normal_distribution<double> z(0.0, 1.0);
  NeData d;
  d.X = MatrixD(200, 5);
  for (index_t i = 0; i < 200; ++i)
    for (index_t c = 0; c < 5; ++c) d.X(i, c) = z(rng) * (5.0 - static_cast<double>(c));
  HssneParams p;
  p.init = "pca";
  p.init_scale = 0.25;
  for (int dim : {2, 3}) {
    p.dim = dim;
    const MatrixD Y = pipeline::hssne_start(p, d, 2);
    const MatrixD ref = pca_project(d.X, dim, 2);
    ASSERT_EQ(Y.rows, 200);
    ASSERT_EQ(Y.cols, dim);
    double mean = 0, ss = 0;
    for (index_t i = 0; i < 200; ++i) mean += Y(i, 0) / 200.0;
    for (index_t i = 0; i < 200; ++i) ss += (Y(i, 0) - mean) * (Y(i, 0) - mean);
    EXPECT_NEAR(std::sqrt(ss / 200.0), 0.25, 1e-12);
    const double f = Y(0, 0) / ref(0, 0);  // one factor for every entry: the shape is kept
    for (index_t i = 0; i < 200; ++i)
      for (index_t c = 0; c < dim; ++c) EXPECT_NEAR(Y(i, c), f * ref(i, c), 1e-12 * std::abs(f) * 40);
  }
  NeData flat;
  flat.X = MatrixD(10, 3, 1.0);
  try {
    pipeline::hssne_start(p, flat, 1);
    ADD_FAILURE() << "constant vectors gave a pca start";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("params.init"), std::string::npos) << e.what();
  }
}
