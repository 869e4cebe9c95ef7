// The CUDA NeRV placement (kernels/nerv_place.cu) against the CPU's (host/cpu/nerv_place_engine.cpp):
// new points placed into a frozen map of four clusters, 2-D and 3-D, recall only, precision only and
// between. Both run math/nerv_place.hpp from the same start; their sums differ in order and exp
// (~1e-13 relative), so each point's Newton path follows the CPU's to round-off and both stop at the
// same minimum to within the stopping tolerance: places within kPlaceTol bandwidths, costs within
// kCostTol relative. The device repeats its own bits.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "common/require_cuda.hpp"
#include "orrery/affinity.hpp"
#include "orrery/backend.hpp"
#include "orrery/knn.hpp"
#include "orrery/nerv_place.hpp"

using namespace orrery;

namespace {

// Places: a converged Newton iterate moves by less than tol (1e-7) bandwidths per step, but on a
// shallow minimum the steps shrink slowly, so paths whose sums differ by round-off stop a few steps
// apart (measured on an H200: 20 and 22 steps, 1.2e-6 bandwidths apart); 1e-5 bandwidths.
constexpr double kPlaceTol = 1e-5;
// Costs at two places 1e-5 bandwidths apart near a minimum differ in the second order.
constexpr double kCostTol = 1e-9;
// A point that reaches the step cap on either device has not converged: it creeps along a flat valley
// where round-off steers the path (measured: 0.02 bandwidths apart, costs 2.5e-9 relative apart
// after 100 steps). Only its cost is compared, and such points must stay rare.
constexpr double kUnconvergedCostTol = 1e-7;
constexpr double kUnconvergedShare = 0.02;

struct Problem {
  MatrixD R;  // the map, N x D
  KnnGraph g;
  ConditionalRows rows;
};

// N reference points in four clusters of the map, their inputs the map blurred; M new points about the
// same centres, their neighbors among the inputs.
Problem problem(index_t N, index_t M, int D, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0.0, 1.0);
  Problem s;
  s.R = MatrixD(N, D);
  MatrixD X(N, D), Q(M, D);
  for (index_t i = 0; i < N; ++i)
    for (int d = 0; d < D; ++d) s.R(i, d) = 6.0 * static_cast<double>(i % 4) + z(rng);
  for (index_t i = 0; i < N; ++i)
    for (int d = 0; d < D; ++d) X(i, d) = s.R(i, d) + 0.5 * z(rng);
  for (index_t i = 0; i < M; ++i)
    for (int d = 0; d < D; ++d) Q(i, d) = 6.0 * static_cast<double>(i % 4) + 1.5 * z(rng);
  s.g = exact_knn_to(X, Q, 30, 0);
  s.rows = conditional_rows(s.g, 10.0, 0);
  return s;
}

TEST(NervPlaceParity, DeviceFollowsTheCpuAndRepeatsItsOwnBits) {
  ORRERY_REQUIRE_CUDA();
  auto cpu = make_cpu_backend(0);
  auto gpu = make_cuda_backend(0);
  for (const int D : {2, 3})
    for (const double lambda : {0.0, 0.3, 1.0}) {
      const Problem s = problem(1001, 203, D, 31u + static_cast<unsigned>(D));
      const std::string name = "D" + std::to_string(D) + " lambda " + std::to_string(lambda);
      const NervPlacementParams prm;
      const NervPlacementResult a = cpu->place_nerv(s.R, s.g, s.rows.p, s.rows.beta, lambda, prm);
      const NervPlacementResult b = gpu->place_nerv(s.R, s.g, s.rows.p, s.rows.beta, lambda, prm);
      const NervPlacementResult c = gpu->place_nerv(s.R, s.g, s.rows.p, s.rows.beta, lambda, prm);
      ASSERT_EQ(b.coords.rows, a.coords.rows) << name;
      int bad = 0, unconverged = 0;
      for (index_t i = 0; i < a.coords.rows; ++i) {
        const auto si = static_cast<size_t>(i);
        double d2 = 0;
        for (int d = 0; d < D; ++d) d2 += (a.coords(i, d) - b.coords(i, d)) * (a.coords(i, d) - b.coords(i, d));
        const double bw = std::sqrt(d2 * s.rows.beta[si]);  // in the point's bandwidths
        const double cost_gap = std::abs(a.cost[si] - b.cost[si]) / (1 + std::abs(a.cost[si]));
        const bool capped = a.steps[si] >= prm.max_iter || b.steps[si] >= prm.max_iter;
        unconverged += capped;
        const bool ok = std::isfinite(b.cost[si]) &&
                        (capped ? cost_gap <= kUnconvergedCostTol : bw <= kPlaceTol && cost_gap <= kCostTol);
        if (!ok && bad++ < 5)
          ADD_FAILURE() << "nerv place " << name << " seed " << 31 + D << ", point " << i << ": cpu ("
                        << a.coords(i, 0) << ", " << a.coords(i, 1) << ") cost " << a.cost[si] << " steps "
                        << a.steps[si] << ", cuda (" << b.coords(i, 0) << ", " << b.coords(i, 1) << ") cost "
                        << b.cost[si] << " steps " << b.steps[si] << ", apart " << bw << " bandwidths";
      }
      EXPECT_EQ(bad, 0) << name;
      EXPECT_LE(unconverged, kUnconvergedShare * static_cast<double>(a.coords.rows))
          << name << ": points at the step cap of " << prm.max_iter;
      EXPECT_EQ(b.coords.data, c.coords.data) << name << ": device places, run twice";
      EXPECT_EQ(b.cost, c.cost) << name << ": device costs, run twice";
      EXPECT_EQ(b.steps, c.steps) << name << ": device steps, run twice";
    }
}

}  // namespace
