#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "orrery/math/linalg.hpp"

using orrery::math::solve_spd;

namespace {

// Random SPD matrix A A^T + shift I, row-major.
template <int D>
void random_spd(std::mt19937_64& rng, double shift, double* H) {
  std::normal_distribution<double> z(0.0, 1.0);
  double A[D * D];
  for (double& a : A) a = z(rng);
  for (int i = 0; i < D; ++i)
    for (int j = 0; j < D; ++j) {
      double s = (i == j) ? shift : 0.0;
      for (int k = 0; k < D; ++k) s += A[i * D + k] * A[j * D + k];
      H[i * D + j] = s;
    }
}

double det3(const double* m) {
  return m[0] * (m[4] * m[8] - m[5] * m[7]) - m[1] * (m[3] * m[8] - m[5] * m[6]) + m[2] * (m[3] * m[7] - m[4] * m[6]);
}

}  // namespace

TEST(SolveSpd, TwoByTwoMatchesCramer) {
  std::mt19937_64 rng(1);
  for (int trial = 0; trial < 200; ++trial) {
    double H[4], b[2] = {std::sin(trial), std::cos(3.0 * trial)}, x[2];
    random_spd<2>(rng, 0.1, H);
    ASSERT_TRUE((solve_spd<double, 2>(H, b, x)));
    const double det = H[0] * H[3] - H[1] * H[2];
    EXPECT_NEAR(x[0], (b[0] * H[3] - H[1] * b[1]) / det, 1e-10 * (1 + std::abs(x[0]))) << "trial " << trial;
    EXPECT_NEAR(x[1], (H[0] * b[1] - b[0] * H[2]) / det, 1e-10 * (1 + std::abs(x[1]))) << "trial " << trial;
  }
}

TEST(SolveSpd, ThreeByThreeMatchesCramer) {
  std::mt19937_64 rng(2);
  for (int trial = 0; trial < 200; ++trial) {
    double H[9], b[3] = {1.0, -2.0 + trial * 0.01, 0.5}, x[3];
    random_spd<3>(rng, 0.1, H);
    ASSERT_TRUE((solve_spd<double, 3>(H, b, x)));
    const double det = det3(H);
    for (int c = 0; c < 3; ++c) {
      double M[9];
      for (int i = 0; i < 9; ++i) M[i] = H[i];
      for (int r = 0; r < 3; ++r) M[r * 3 + c] = b[r];
      EXPECT_NEAR(x[c], det3(M) / det, 1e-9 * (1 + std::abs(x[c]))) << "trial " << trial << " component " << c;
    }
  }
}

TEST(SolveSpd, FloatAgreesWithDouble) {
  std::mt19937_64 rng(3);
  double H[9], b[3] = {0.3, -1.0, 2.0}, x[3];
  random_spd<3>(rng, 1.0, H);
  float Hf[9], bf[3], xf[3];
  for (int i = 0; i < 9; ++i) Hf[i] = static_cast<float>(H[i]);
  for (int i = 0; i < 3; ++i) bf[i] = static_cast<float>(b[i]);
  ASSERT_TRUE((solve_spd<double, 3>(H, b, x)));
  ASSERT_TRUE((solve_spd<float, 3>(Hf, bf, xf)));
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(xf[i], x[i], 1e-4 * (1 + std::abs(x[i])));
}

TEST(SolveSpd, RejectsSingularAndIndefinite) {
  double x[3] = {7, 7, 7};
  const double b[3] = {1, 1, 1};
  const double singular2[4] = {1, 1, 1, 1};
  EXPECT_FALSE((solve_spd<double, 2>(singular2, b, x)));
  const double indefinite2[4] = {1, 2, 2, 1};
  EXPECT_FALSE((solve_spd<double, 2>(indefinite2, b, x)));
  const double rank2[9] = {1, 0, 1, 0, 1, 1, 1, 1, 2};  // third row = first + second
  EXPECT_FALSE((solve_spd<double, 3>(rank2, b, x)));
  const double zero[9] = {};
  EXPECT_FALSE((solve_spd<double, 3>(zero, b, x)));
  const double nan[4] = {std::numeric_limits<double>::quiet_NaN(), 0, 0, 1};
  EXPECT_FALSE((solve_spd<double, 2>(nan, b, x)));
  EXPECT_EQ(x[0], 7.0) << "a failed solve must leave x untouched";
}

TEST(SolveSpd, NearSingularButPositiveStillSolvesAccurately) {
  // eigenvalues 1 and 1e-8: condition 1e8, above the pivot tolerance, solvable in double
  const double e = 1e-8;
  const double c = std::cos(0.3), s = std::sin(0.3);
  const double H[4] = {c * c + e * s * s, c * s - e * c * s, c * s - e * c * s, s * s + e * c * c};
  const double b[2] = {c, s};  // along the large eigenvector: x = b
  double x[2];
  ASSERT_TRUE((solve_spd<double, 2>(H, b, x)));
  EXPECT_NEAR(x[0], c, 1e-6);
  EXPECT_NEAR(x[1], s, 1e-6);
}
