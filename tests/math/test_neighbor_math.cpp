// The HSSNE optimisers' per-coordinate updates (math/neighbor.hpp), which the CPU engine and the
// CUDA step kernels both call: the exaggerated gradient against finite differences of the
// objective it descends, the fixed-point map as a preconditioned gradient step with its step
// fraction and heavy-ball term, and the gains rule of the gradient method.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "common/gradient_check.hpp"
#include "orrery/math/neighbor.hpp"

using namespace orrery;

namespace {

constexpr int kN = 9, kD = 2;

struct Problem {
  std::vector<double> P;  // kN x kN, symmetric, zero diagonal, sums to 1
  std::vector<double> Y;  // kN x kD
};

Problem make_problem(unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.1, 1.0);
  std::normal_distribution<double> z(0.0, 1.5);
  Problem p;
  p.P.assign(kN * kN, 0.0);
  double total = 0;
  for (int i = 0; i < kN; ++i)
    for (int j = i + 1; j < kN; ++j) total += 2 * (p.P[i * kN + j] = p.P[j * kN + i] = u(rng));
  for (double& v : p.P) v /= total;
  p.Y.resize(kN * kD);
  for (double& v : p.Y) v = z(rng);
  return p;
}

// Every point's sums at Y, from the per-pair accumulation the engines use.
std::vector<math::HssneRow<double, kD>> row_sums(const Problem& p, const std::vector<double>& Y, double alpha) {
  std::vector<math::HssneRow<double, kD>> rows(kN);
  for (int i = 0; i < kN; ++i)
    for (int j = 0; j < kN; ++j)
      if (j != i) math::hssne_accumulate<double, kD>(&Y[i * kD], &Y[j * kD], p.P[i * kN + j], alpha, true, rows[i]);
  return rows;
}

// J_c = c sum P log(cP / H) + log Z, written out pair by pair.
double exaggerated_objective(const Problem& p, const std::vector<double>& Y, double alpha, double c) {
  double z = 0, j = 0;
  for (int i = 0; i < kN; ++i)
    for (int k = 0; k < kN; ++k) {
      if (k == i) continue;
      double tau = 0;
      for (int d = 0; d < kD; ++d) tau += (Y[i * kD + d] - Y[k * kD + d]) * (Y[i * kD + d] - Y[k * kD + d]);
      z += math::heavy_tail(tau, alpha);
      const double pik = p.P[i * kN + k];
      j += c * pik * (std::log(c * pik) - math::heavy_tail_log(tau, alpha));
    }
  return j + std::log(z);
}

double gradient(const std::vector<math::HssneRow<double, kD>>& rows, const std::vector<double>& Y, int i, int d,
                double c) {
  double z = 0;
  for (const auto& r : rows) z += r.h_sum;
  const auto& r = rows[i];
  return math::hssne_gradient_coord(Y[i * kD + d], r.a_sum, r.hs_sum, r.ay[d], r.hsy[d], c, 1.0 / z);
}

}  // namespace

TEST(HssneSteps, ExaggeratedGradientMatchesFiniteDifferences) {
  const Problem p = make_problem(1);
  for (double alpha : {0.0, 0.5, 1.0, 2.0})
    for (double c : {1.0, 4.0, 12.0}) {
      const auto rows = row_sums(p, p.Y, alpha);
      std::vector<double> g(kN * kD);
      for (int i = 0; i < kN; ++i)
        for (int d = 0; d < kD; ++d) g[i * kD + d] = gradient(rows, p.Y, i, d, c);
      EXPECT_TRUE(test::gradient_matches([&](const std::vector<double>& Y) { return exaggerated_objective(p, Y, alpha, c); },
                                         p.Y, g,
                                         {1e-6, 1e-6, 1, "alpha " + std::to_string(alpha) + " c " + std::to_string(c)}));
    }
}

TEST(HssneSteps, FixedPointIsAScaledGradientStepPlusHeavyBall) {
  const Problem p = make_problem(2);
  std::vector<double> prev = p.Y;
  for (double& v : prev) v += 0.3;
  for (double c : {1.0, 12.0})
    for (double step : {1.0, 0.25})
    for (double beta : {0.0, 0.7}) {
      const auto rows = row_sums(p, p.Y, 1.0);
      double z = 0;
      for (const auto& r : rows) z += r.h_sum;
      for (int i = 0; i < kN; ++i)
        for (int d = 0; d < kD; ++d) {
          const auto& r = rows[i];
          const double y = p.Y[i * kD + d];
          const double got = math::hssne_fixed_point_coord(y, prev[i * kD + d], r.a_sum, r.hs_sum, r.ay[d], r.hsy[d], c,
                                                           1.0 / z, step, beta);
          const double length = 1.0 / (4 * std::max(c * r.a_sum, r.hs_sum / z));
          const double want = y - step * gradient(rows, p.Y, i, d, c) * length + beta * (y - prev[i * kD + d]);
          EXPECT_NEAR(got, want, 1e-12 * (1 + std::abs(want))) << "c " << c << " step " << step << " beta " << beta;
        }
    }
  // A point without affinity stays where it is (plus its momentum).
  EXPECT_EQ(math::hssne_fixed_point_coord(2.0, 1.0, 0.0, 3.0, 0.0, 1.0, 1.0, 0.5, 1.0, 0.5), 2.5);
  // A point whose repulsion outweighs its attraction (B = hs / Z = 1.5 > c A = 0.5) moves by
  // grad / (4 B), not grad / (4 c A), which would be three times as far.
  // grad = 4 (y (cA - B) - (c ay - hsy / Z)) = 4 (2 (0.5 - 1.5) - (0.5 - 0.5)) = -8; move 8 / 6.
  EXPECT_DOUBLE_EQ(math::hssne_fixed_point_coord(2.0, 2.0, 0.5, 3.0, 0.5, 1.0, 1.0, 0.5, 1.0, 0.0), 2.0 + 8.0 / 6.0);
  EXPECT_EQ(math::hssne_damp_coord(3.0, 1.0), 2.0);
}

TEST(HssneSteps, GainsGrowWhileTheGradientOpposesTheLastMove) {
  double velocity = 0.0, gain = 1.0;
  // From rest, a positive gradient counts as opposing the move (velocity <= 0): the gain grows.
  EXPECT_DOUBLE_EQ(math::tsne_momentum_step(2.0, velocity, gain, 0.5, 10.0), -24.0);
  EXPECT_DOUBLE_EQ(gain, 1.2);
  // The gradient keeps its sign, the velocity went against it: the gain grows again.
  EXPECT_DOUBLE_EQ(math::tsne_momentum_step(1.0, velocity, gain, 0.5, 10.0), 0.5 * -24.0 - 10.0 * 1.4 * 1.0);
  EXPECT_DOUBLE_EQ(gain, 1.4);
  // The gradient turns negative while the velocity is negative: overshoot, the gain shrinks.
  const double v0 = velocity;
  EXPECT_NEAR(math::tsne_momentum_step(-1.0, velocity, gain, 0.5, 10.0), 0.5 * v0 + 10.0 * 1.4 * 0.8, 1e-14);
  EXPECT_DOUBLE_EQ(gain, 1.4 * 0.8);
  // Never below 0.01.
  gain = 0.011;
  velocity = -1.0;
  math::tsne_momentum_step(-1.0, velocity, gain, 0.0, 1.0);
  EXPECT_DOUBLE_EQ(gain, 0.01);
}
