// The interpolation grid's per-point arithmetic (math/interp.hpp): which nodes a point uses and
// with what weights.
#include <gtest/gtest.h>

#include <cmath>

#include "orrery/math/interp.hpp"

namespace orrery {
namespace {

// A point's stencil is the p nodes nearest to it: inside the grid it lies in the middle node
// interval (even p) or within half a spacing of the middle node (odd p), and u puts it back where
// it is; at the grid's ends the stencil stays within the nodes.
TEST(InterpMath, StencilsAreCentredOnThePoint) {
  const double origin = -3.7, h = 0.3;
  const int G = 24;
  for (int p = 2; p <= math::kMaxInterpNodes; ++p)
    for (int step = 0; step <= 2000; ++step) {
      const double y = origin + G * h * step / 2000.0;
      double u;
      const int s = math::stencil_of(y, origin, h, G, p, u);
      ASSERT_GE(s, 0);
      ASSERT_LE(s, G - p);
      ASSERT_GE(u, 0.0);
      ASSERT_LE(u, 1.0);
      const double t = (y - origin) / h - 0.5;  // node k at t = k
      EXPECT_NEAR(s + p * u - 0.5, t, 1e-9) << "p " << p << " y " << y;
      const double middle = s + 0.5 * (p - 1);  // the stencil's centre in node units
      if (t >= 0.5 * (p - 1) && t < G - 0.5 * (p + 1)) {
        // inside, away from the ends: at most half a spacing from the centre (even p: within the
        // middle interval, whose centre is `middle`; odd p: around the middle node)
        EXPECT_LE(std::abs(t - middle), 0.5 + 1e-12) << "p " << p << " y " << y;
      }
    }
  double u;
  EXPECT_EQ(math::stencil_of(origin - 5.0, origin, h, G, 4, u), 0);
  EXPECT_EQ(u, 0.0);
  EXPECT_EQ(math::stencil_of(origin + 100.0, origin, h, G, 4, u), G - 4);
  EXPECT_EQ(u, 1.0);
}

// The weights at a point reproduce every polynomial of degree < p over its stencil's nodes.
TEST(InterpMath, StencilWeightsReproducePolynomials) {
  const double origin = 1.25, h = 0.25;
  const int G = 40;
  for (int p = 2; p <= math::kMaxInterpNodes; ++p)
    for (double y : {1.3, 2.0, 3.14159, 5.5, 10.9, 11.2}) {
      double u, w[math::kMaxInterpNodes];
      const int s = math::stencil_of(y, origin, h, G, p, u);
      math::lagrange_weights(u, p, w);
      for (int m = 0; m < p; ++m) {
        double sum = 0;
        for (int k = 0; k < p; ++k) sum += w[k] * std::pow(origin + (s + k + 0.5) * h, m);
        EXPECT_NEAR(sum, std::pow(y, m), 1e-9 * std::max(1.0, std::pow(std::abs(y), m))) << "p " << p << " m " << m;
      }
    }
}

}  // namespace
}  // namespace orrery
