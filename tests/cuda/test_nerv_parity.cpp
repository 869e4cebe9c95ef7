// NeRV's objective on the GPU against the CPU: the pairs in float tiles, the tiles in double, so
// cost and gradient agree to float rounding; fits follow the CPU's for a few iterations and repeat
// bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "common/require_cuda.hpp"
#include "orrery/affinity.hpp"
#include "orrery/backend.hpp"
#include "orrery/nerv.hpp"

using namespace orrery;

namespace {

MatrixD points(index_t n, index_t d, unsigned seed, double scale) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0.0, scale);
  MatrixD M(n, d);
  for (double& v : M.data) v = z(rng);
  for (index_t i = 0; i < n; ++i) M(i, 0) += 5.0 * static_cast<double>(i % 3);
  return M;
}

}  // namespace

TEST(NervParity, CostAndGradientAgree) {
  ORRERY_REQUIRE_CUDA();
  const index_t n = 700;
  const AffinityResult aff = affinities_dense(points(n, 6, 1, 1.0), 20.0);
  for (int dim : {2, 3})
    for (double lambda : {0.0, 0.3, 1.0}) {
      SCOPED_TRACE("dim " + std::to_string(dim) + " lambda " + std::to_string(lambda));
      const MatrixD Y = points(n, dim, 2, 1.5);
      MatrixD gc, gg;
      const double ec = nerv_objective(aff.conditional, aff.beta, Y, lambda, &gc);
      auto engine = make_cuda_backend(0)->make_nerv(aff.conditional, aff.beta, NervOptions{lambda, dim});
      engine->set_coords(Y);
      const double eg = engine->evaluate(true);
      gg = engine->vector(NervVector::gradient);
      EXPECT_NEAR(eg, ec, 1e-4 * std::abs(ec));
      double scale = 0, worst = 0;
      for (size_t q = 0; q < gc.data.size(); ++q) {
        scale = std::max(scale, std::abs(gc.data[q]));
        worst = std::max(worst, std::abs(gc.data[q] - gg.data[q]));
      }
      EXPECT_LE(worst, 1e-3 * scale);
    }
}

TEST(NervParity, SparseFitsFollowTheCpuAndRepeat) {
  ORRERY_REQUIRE_CUDA();
  auto cpu = make_backend("cpu", 0), gpu = make_backend("cuda", 0);
  const AffinityResult aff = affinities_sparse(points(500, 5, 3, 1.0), 10.0);
  NervParams prm;
  prm.max_iter = 5;
  const NervResult c = fit_nerv(aff.sparse_conditional, aff.beta, prm, 4, *cpu);
  const NervResult g1 = fit_nerv(aff.sparse_conditional, aff.beta, prm, 4, *gpu);
  const NervResult g2 = fit_nerv(aff.sparse_conditional, aff.beta, prm, 4, *gpu);
  EXPECT_EQ(g1.coords.data, g2.coords.data);
  ASSERT_FALSE(c.objective_trace.empty());
  ASSERT_FALSE(g1.objective_trace.empty());
  EXPECT_NEAR(g1.objective_trace.front(), c.objective_trace.front(), 1e-4 * std::abs(c.objective_trace.front()));
  EXPECT_NEAR(g1.objective_trace.back(), c.objective_trace.back(), 1e-2 * std::abs(c.objective_trace.back()));
}
