// Out-of-sample placement into a frozen HSSNE map (place_points) and the pieces it rests on: the
// query neighbor searches, the frozen grid, PCA's basis.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "orrery/affinity.hpp"
#include "orrery/backend.hpp"
#include "orrery/hssne.hpp"
#include "orrery/interp.hpp"
#include "orrery/knn.hpp"
#include "orrery/math/neighbor.hpp"
#include "orrery/pca.hpp"

namespace orrery {
namespace {

// n points in four 5-D Gaussian classes (class i % 4), centres 6 apart.
MatrixD classes(index_t n, unsigned seed, std::vector<int>& labels) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0, 1);
  MatrixD X(n, 5);
  labels.assign(static_cast<size_t>(n), 0);
  for (index_t i = 0; i < n; ++i) {
    labels[static_cast<size_t>(i)] = static_cast<int>(i % 4);
    for (int d = 0; d < 5; ++d) X(i, d) = (d == labels[static_cast<size_t>(i)] ? 6.0 : 0.0) + z(rng);
  }
  return X;
}

// The cost's gradient against central differences of the cost, both dimensions, several tails,
// with the exact sums over the reference recomputed at each probe.
TEST(Placement, GradientMatchesFiniteDifferences) {
  std::mt19937_64 rng(4);
  std::normal_distribution<double> z(0, 1);
  for (int D : {2, 3})
    for (double alpha : {0.0, 0.5, 1.0, 2.0}) {
      MatrixD R(40, D);
      for (double& v : R.data) v = 2.0 * z(rng);
      const int k = 6;
      std::vector<index_t> nb = {3, 7, 11, 19, 23, 31};
      std::vector<double> p = {0.3, 0.25, 0.2, 0.1, 0.1, 0.05};
      auto cost = [&](const double* y, double* grad) {
        double h = 0, hs = 0, hsy[3] = {0, 0, 0};
        for (index_t j = 0; j < R.rows; ++j) {
          double tau = 0;
          for (int d = 0; d < D; ++d) tau += (y[d] - R(j, d)) * (y[d] - R(j, d));
          double hj, sj;
          math::heavy_tail_pair(tau, alpha, hj, sj);
          h += hj, hs += hj * sj;
          for (int d = 0; d < D; ++d) hsy[d] += hj * sj * R(j, d);
        }
        return placement_cost(y, D, nb.data(), p.data(), k, R, alpha, h, hs, hsy, grad);
      };
      double y[3] = {0.4, -0.7, 0.2}, g[3], scratch[3];
      cost(y, g);
      for (int d = 0; d < D; ++d) {
        const double e = 1e-5;
        double yp[3] = {y[0], y[1], y[2]}, ym[3] = {y[0], y[1], y[2]};
        yp[d] += e, ym[d] -= e;
        const double fd = (cost(yp, scratch) - cost(ym, scratch)) / (2 * e);
        EXPECT_NEAR(g[d], fd, 1e-6 * std::max(1.0, std::abs(fd))) << "D " << D << " alpha " << alpha << " axis " << d;
      }
    }
}

// The query searches: exact_knn_to equals a brute-force loop, and with the queries being the
// reference itself, its lists are exact_knn's with each point's own row (distance 0) in front.
TEST(Placement, QueryNeighborsAreTheNearestReferencePoints) {
  std::vector<int> labels;
  const MatrixD R = classes(300, 1, labels), Q = classes(40, 2, labels);
  const KnnGraph g = exact_knn_to(R, Q, 7, 2);
  for (index_t i = 0; i < Q.rows; ++i) {
    std::vector<std::pair<double, index_t>> all;
    for (index_t j = 0; j < R.rows; ++j) {
      double d2 = 0;
      for (index_t c = 0; c < R.cols; ++c) d2 += (Q(i, c) - R(j, c)) * (Q(i, c) - R(j, c));
      all.emplace_back(d2, j);
    }
    std::sort(all.begin(), all.end());
    for (int l = 0; l < 7; ++l) EXPECT_EQ(g.neighbors(i)[l], all[static_cast<size_t>(l)].second) << i << " " << l;
  }
  const KnnGraph self = exact_knn_to(R, R, 6, 2), ref = exact_knn(R, 5, 2);
  for (index_t i = 0; i < R.rows; ++i) {
    EXPECT_EQ(self.distances2(i)[0], 0.0);
    for (int l = 0; l < 5; ++l) EXPECT_EQ(self.neighbors(i)[l + 1], ref.neighbors(i)[l]) << i;
  }
  const KnnGraph approx = approximate_knn_to(R, Q, 7, 3, 2);
  int same = 0;
  for (size_t q = 0; q < g.index.size(); ++q) same += approx.index[q] == g.index[q];
  EXPECT_GE(same, static_cast<int>(0.95 * static_cast<double>(g.index.size())));
  EXPECT_EQ(approximate_knn_to(R, Q, 7, 3, 1).index, approx.index) << "any thread count, same lists";
}

// The frozen grid's sums at new points against the exact sums over the reference.
TEST(Placement, FrozenGridMatchesTheExactSumsAtNewPoints) {
  std::mt19937_64 rng(6);
  std::normal_distribution<double> z(0, 1);
  for (int D : {2, 3}) {
    MatrixD R(500, D), Q(60, D);
    for (index_t i = 0; i < R.rows; ++i)
      for (int d = 0; d < D; ++d) R(i, d) = (i % 3) * 6.0 + 1.5 * z(rng);
    for (double& v : Q.data) v = 6.0 + 4.0 * z(rng);
    Q(0, 0) = 1e3;  // far outside: left for the exact sums
    RepulsionGrid grid(D, 1.0, InterpSettings{}, 2);
    grid.freeze(R, 4.0);
    RepulsionSums s;
    std::vector<unsigned char> inside;
    grid.sums_at(Q, s, inside);
    EXPECT_EQ(inside[0], 0);
    for (index_t i = 1; i < Q.rows; ++i) {
      if (!inside[static_cast<size_t>(i)]) continue;
      double h = 0;
      for (index_t j = 0; j < R.rows; ++j) {
        double tau = 0;
        for (int d = 0; d < D; ++d) tau += (Q(i, d) - R(j, d)) * (Q(i, d) - R(j, d));
        double hj, sj;
        math::heavy_tail_pair(tau, 1.0, hj, sj);
        h += hj;
      }
      EXPECT_NEAR(s.h[static_cast<size_t>(i)], h, 2e-3 * h) << "D " << D << " point " << i;
    }
  }
}

// New points from the same classes land among their own class in a fitted map, grid and exact
// sums agree, no point's cost rises from its start, and the result has the same bits for 1 and 2
// threads.
TEST(Placement, NewPointsLandNearTheirNeighbors) {
  std::vector<int> labels, new_labels;
  const MatrixD X = classes(600, 1, labels), Xn = classes(80, 9, new_labels);
  HssneParams prm;
  prm.max_iter = 300;
  const MatrixD Y = fit_hssne(affinities_sparse(X, 20.0).sparse, prm, 1, *make_cpu_backend(2)).coords;
  const KnnGraph g = exact_knn_to(X, Xn, 60, 2);
  HssneRepulsion exact, interp;
  interp.interpolated = true;
  const PlacementResult a = place_points(g, 20.0, Y, 1.0, exact, PlacementParams{}, *make_cpu_backend(2));
  const PlacementResult b = place_points(g, 20.0, Y, 1.0, interp, PlacementParams{}, *make_cpu_backend(2));
  const PlacementResult c = place_points(g, 20.0, Y, 1.0, interp, PlacementParams{}, *make_cpu_backend(1));
  EXPECT_EQ(b.coords.data, c.coords.data);
  EXPECT_TRUE(b.interpolated);
  // the map's scale: the mean distance of a reference point to its class centre
  int right = 0;
  double moved = 0, spread = 0;
  for (index_t i = 0; i < Xn.rows; ++i) {
    index_t best = 0;
    double bd = 1e300;
    for (index_t j = 0; j < Y.rows; ++j) {
      const double d2 = (a.coords(i, 0) - Y(j, 0)) * (a.coords(i, 0) - Y(j, 0)) +
                        (a.coords(i, 1) - Y(j, 1)) * (a.coords(i, 1) - Y(j, 1));
      if (d2 < bd) bd = d2, best = j;
    }
    right += labels[static_cast<size_t>(best)] == new_labels[static_cast<size_t>(i)];
    moved += std::hypot(a.coords(i, 0) - b.coords(i, 0), a.coords(i, 1) - b.coords(i, 1));
    spread += std::hypot(a.coords(i, 0) - Y(0, 0), a.coords(i, 1) - Y(0, 1));
    EXPECT_GT(a.steps[static_cast<size_t>(i)], 0);
  }
  EXPECT_GE(right, 78) << "of 80 new points, nearest reference point of the same class";
  EXPECT_LT(moved / spread, 1e-2) << "grid and exact placements agree";
  // the cost at the start (the median of the neighbors) is not lower than at the end
  const PlacementResult start = place_points(g, 20.0, Y, 1.0, exact, PlacementParams{0, 1e-4}, *make_cpu_backend(2));
  for (index_t i = 0; i < Xn.rows; ++i) EXPECT_LE(a.cost[static_cast<size_t>(i)], start.cost[static_cast<size_t>(i)]);
}

// 3-D: new points land among their class; and `auto` repulsion (exact_when_cheaper) gives way to
// the exact sums for a few points, where the grid would cost more (the same bits as exact).
TEST(Placement, ThreeDimensionalMapsAndTheGridGivingWay) {
  std::vector<int> labels, new_labels;
  const MatrixD X = classes(600, 1, labels), Xn = classes(40, 9, new_labels);
  HssneParams prm;
  prm.dim = 3;
  prm.max_iter = 300;
  const MatrixD Y = fit_hssne(affinities_sparse(X, 20.0).sparse, prm, 1, *make_cpu_backend(2)).coords;
  const KnnGraph g = exact_knn_to(X, Xn, 15, 2);
  HssneRepulsion exact, automatic;
  automatic.interpolated = automatic.exact_when_cheaper = true;
  const PlacementResult a = place_points(g, 5.0, Y, 1.0, exact, PlacementParams{}, *make_cpu_backend(2));
  const PlacementResult b = place_points(g, 5.0, Y, 1.0, automatic, PlacementParams{}, *make_cpu_backend(2));
  EXPECT_EQ(a.coords.data, b.coords.data);
  EXPECT_EQ(b.exact_points, 40);
  EXPECT_FALSE(b.interpolated);
  int right = 0;
  for (index_t i = 0; i < Xn.rows; ++i) {
    index_t best = 0;
    double bd = 1e300;
    for (index_t j = 0; j < Y.rows; ++j) {
      double d2 = 0;
      for (int d = 0; d < 3; ++d) d2 += (a.coords(i, d) - Y(j, d)) * (a.coords(i, d) - Y(j, d));
      if (d2 < bd) bd = d2, best = j;
    }
    right += labels[static_cast<size_t>(best)] == new_labels[static_cast<size_t>(i)];
  }
  EXPECT_GE(right, 39) << "of 40 new points, nearest reference point of the same class";
}

// pca_fit + pca_apply is pca_project, and the basis projects new rows as it did the fitted ones.
TEST(Placement, PcaBasisProjectsLikeTheFit) {
  std::vector<int> labels;
  const MatrixD X = classes(200, 5, labels);
  const PcaBasis b = pca_fit(X, 3, 2);
  EXPECT_EQ(pca_apply(b, X, 2).data, pca_project(X, 3, 2).data);
  MatrixD one(1, 5);
  for (int d = 0; d < 5; ++d) one(0, d) = X(17, d);
  const MatrixD p = pca_apply(b, one, 1), all = pca_apply(b, X, 1);
  for (int k = 0; k < 3; ++k) EXPECT_EQ(p(0, k), all(17, k));
}

}  // namespace
}  // namespace orrery
