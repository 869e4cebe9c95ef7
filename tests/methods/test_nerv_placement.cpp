// place_nerv_points on the CPU: the thread count changes no bits, a point's place does not depend on
// which others are placed with it, and every place ends where its cost's gradient vanishes
// (checked with nerv_placement_cost, independently of the minimisation's own sums).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "orrery/affinity.hpp"
#include "orrery/backend.hpp"
#include "orrery/knn.hpp"
#include "orrery/nerv_place.hpp"

using namespace orrery;

namespace {

struct Problem {
  MatrixD R, X, Q;  // the map, its inputs, the new points' inputs
};

Problem problem(index_t N, index_t M, int D, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0.0, 1.0);
  Problem s;
  s.R = MatrixD(N, D);
  s.X = MatrixD(N, 5);
  s.Q = MatrixD(M, 5);
  for (index_t i = 0; i < N; ++i) {
    for (int d = 0; d < D; ++d) s.R(i, d) = 5.0 * static_cast<double>(i % 3) + z(rng);
    for (int d = 0; d < 5; ++d) s.X(i, d) = (d == i % 3 ? 6.0 : 0.0) + z(rng);
  }
  for (index_t i = 0; i < M; ++i)
    for (int d = 0; d < 5; ++d) s.Q(i, d) = (d == i % 3 ? 6.0 : 0.0) + z(rng);
  return s;
}

TEST(NervPlacement, ThreadsAndCompanyChangeNoBitsAndEveryPlaceIsStationary) {
  for (const int D : {2, 3}) {
    const Problem s = problem(400, 60, D, 7);
    const KnnGraph g = exact_knn_to(s.X, s.Q, 24, 0);
    auto one = make_cpu_backend(1), many = make_cpu_backend(4);
    const NervPlacementParams prm;
    const NervPlacementResult a = place_nerv_points(g, 8.0, s.R, 0.3, prm, *one);
    const NervPlacementResult b = place_nerv_points(g, 8.0, s.R, 0.3, prm, *many);
    EXPECT_EQ(a.coords.data, b.coords.data) << "D " << D;
    EXPECT_EQ(a.cost, b.cost);
    EXPECT_EQ(a.steps, b.steps);
    // the last 10 points alone
    KnnGraph tail = g;
    tail.num_points = 10;
    tail.index.erase(tail.index.begin(), tail.index.begin() + 50 * g.k);
    tail.dist2.erase(tail.dist2.begin(), tail.dist2.begin() + 50 * g.k);
    const NervPlacementResult t = place_nerv_points(tail, 8.0, s.R, 0.3, prm, *many);
    for (index_t i = 0; i < 10; ++i)
      for (int d = 0; d < D; ++d) EXPECT_EQ(t.coords(i, d), a.coords(50 + i, d)) << "point " << 50 + i;
    const ConditionalRows rows = conditional_rows(g, 8.0, 0);
    int near_class = 0;
    for (index_t i = 0; i < g.num_points; ++i) {
      double grad[3] = {0, 0, 0};
      const auto si = static_cast<size_t>(i);
      const double c = nerv_placement_cost(a.coords.row(i), s.R, g.neighbors(i), rows.p.data() + i * g.k, g.k,
                                           rows.beta[si], 0.3, grad);
      EXPECT_DOUBLE_EQ(c, a.cost[si]) << "point " << i;
      // |grad| in cost per bandwidth
      const double gn = std::sqrt(grad[0] * grad[0] + grad[1] * grad[1] + grad[2] * grad[2]) / std::sqrt(rows.beta[si]);
      EXPECT_LT(gn, 1e-6) << "point " << i << ", D " << D;
      EXPECT_LT(a.steps[si], prm.max_iter) << "point " << i;
      near_class += std::abs(a.coords(i, 0) - 5.0 * static_cast<double>(i % 3)) < 2.5;
    }
    EXPECT_GE(near_class, 57) << "of 60 new points placed within their class's band of the map, D " << D;
  }
}

}  // namespace
