// Barnes-Hut repulsion (host/cpu/repulsion_tree.hpp) against the exact sums, and the engine's use
// of it where the grid gives way.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "cpu/repulsion_tree.hpp"
#include "orrery/affinity.hpp"
#include "orrery/backend.hpp"
#include "orrery/hssne.hpp"
#include "orrery/interp.hpp"

namespace orrery {
namespace {

// Clusters of unit width spread over `span` (a t-SNE map), the first `copies` points repeated at
// the end (coincident points, which no cell can split).
MatrixD clustered(index_t N, int D, double span, unsigned seed, index_t copies = 0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0.0, 1.0);
  std::uniform_real_distribution<double> u(-span / 2, span / 2);
  std::vector<double> centres(static_cast<size_t>(12 * D));
  for (double& c : centres) c = u(rng);
  MatrixD Y(N + copies, D);
  for (index_t i = 0; i < N; ++i)
    for (int d = 0; d < D; ++d) Y(i, d) = centres[static_cast<size_t>((i % 12) * D + d)] + g(rng);
  for (index_t c = 0; c < copies; ++c)
    for (int d = 0; d < D; ++d) Y(N + c, d) = Y(0, d);
  return Y;
}

double relative(double a, double b) { return std::abs(a - b) / std::max(std::abs(b), 1e-300); }

// Opening every cell (angle 0) is the exact sum in another order (in float for t-SNE's tail);
// coincident points included.
TEST(RepulsionTree, AngleZeroIsTheExactSum) {
  for (int D : {2, 3})
    for (double alpha : {0.0, 0.5, 1.0, 2.0}) {
      const MatrixD Y = clustered(700, D, 40.0, 1, 20);
      RepulsionSums ex, tr;
      exact_repulsion(Y, alpha, ex, 2);
      cpu::RepulsionTree tree(D, alpha, 0.0, 2);
      tree.sums(Y, tr);
      EXPECT_EQ(tr.z_grid, 0.0);
      // t-SNE's tail sums in float (offsets from the walking leaf's centre): a sum of m positive
      // terms is within m 2^-24 of itself, 4e-5 for these 700 points summed one after another (an
      // unvectorised build; eight running sums in a vector round less); the other tails sum in
      // double
      const double tol = alpha == 1.0 ? 1e-4 : 1e-11;
      for (index_t i = 0; i < Y.rows; ++i) {
        const auto k = static_cast<size_t>(i);
        ASSERT_LT(relative(tr.h[k], ex.h[k]), tol) << "D " << D << " alpha " << alpha << " point " << i;
        ASSERT_LT(relative(tr.hs[k], ex.hs[k]), tol) << "D " << D << " alpha " << alpha << " point " << i;
        for (int d = 0; d < D; ++d)
          ASSERT_NEAR(tr.hsy(i, d), ex.hsy(i, d), tol * ex.hs[k] * 40) << "D " << D << " point " << i;
      }
      EXPECT_DOUBLE_EQ(tree.interactions(), static_cast<double>(Y.rows) * (Y.rows - 1)) << "every pair, once";
    }
}

// The default angle: the force's relative L2 error (repulsion_errors) within 5e-3 and Z's within
// 2e-3 on wide clustered maps, 2-D and 3-D, for every tail (measured at 4,000 points: force at most
// 3.6e-3 in 2-D and 1.1e-3 in 3-D, t-SNE's 3.0e-3 and 2.6e-4, under the grid's default 6e-3); under
// a quarter of the pairs' interactions (leaves of 32 points: 10% in 2-D, 9% in 3-D).
TEST(RepulsionTree, DefaultAngleIsAccurateAndCheap) {
  for (int D : {2, 3})
    for (double alpha : {0.0, 0.5, 1.0, 2.0}) {
      const MatrixD Y = clustered(4000, D, 80.0, 2);
      RepulsionSums ex, tr;
      exact_repulsion(Y, alpha, ex, 2);
      cpu::RepulsionTree tree(D, alpha, HssneParams{}.tree_angle, 2);
      tree.sums(Y, tr);
      const RepulsionErrors e = repulsion_errors(Y, tr, ex);
      EXPECT_LT(e.force, 5e-3) << "D " << D << " alpha " << alpha;
      EXPECT_LT(e.z, 2e-3) << "D " << D << " alpha " << alpha;
      EXPECT_LT(tree.interactions(), 0.25 * 4000.0 * 3999.0) << "D " << D << " alpha " << alpha;
    }
}

// Each point's sums run in a fixed order over a tree of the map alone: the same bits for any number
// of threads and for a tree used before on another map.
TEST(RepulsionTree, SameBitsForAnyThreadCountAndHistory) {
  const MatrixD Y = clustered(3000, 3, 60.0, 3, 5), other = clustered(2000, 3, 10.0, 4);
  RepulsionSums one, three, reused, scratch;
  cpu::RepulsionTree(3, 1.0, 0.5, 1).sums(Y, one);
  cpu::RepulsionTree(3, 1.0, 0.5, 3).sums(Y, three);
  cpu::RepulsionTree tree(3, 1.0, 0.5, 2);
  tree.sums(other, scratch);
  tree.sums(Y, reused);
  for (const RepulsionSums* s : {&three, &reused}) {
    EXPECT_EQ(s->h, one.h);
    EXPECT_EQ(s->hs, one.hs);
    EXPECT_EQ(s->hsy.data, one.hsy.data);
  }
}

// Sparse affinities of N points in four 5-D Gaussian classes.
SparseAffinity four_classes(index_t N, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0, 1);
  MatrixD X(N, 5);
  for (index_t i = 0; i < N; ++i)
    for (int d = 0; d < 5; ++d) X(i, d) = (d == i % 4 ? 6.0 : 0.0) + z(rng);
  return affinities_sparse(X, 20.0).sparse;
}

// `auto` on the CPU: a 3-D map too wide for the grid (its nodes would pass the grid's cap) is summed
// on the tree, not over all pairs; the engine's sums agree with the exact engine's to the tree's
// accuracy and its stages say where the time went.
TEST(RepulsionTree, AutoUsesTheTreeWhereTheGridGivesWay) {
  const SparseAffinity P = four_classes(12000, 5);
  auto cpu = make_backend("cpu", 2);
  HssneParams prm;
  HssneRepulsion rep = resolve_repulsion(prm, kTreeRepulsionMaxPoints, *cpu);
  ASSERT_TRUE(rep.interpolated && rep.exact_when_cheaper && rep.tree_when_grid_dearer && !rep.tree);
  auto exact = cpu->make_hssne(P, 1.0, 3), approx = cpu->make_hssne(P, 1.0, 3, rep);
  const MatrixD wide = clustered(12000, 3, 400.0, 6);
  const HssneTotals te = exact->start(wide), ta = approx->start(wide);
  EXPECT_LT(relative(ta.z, te.z), 5e-3);
  HssneSums se, sa;
  exact->current_sums(se);
  approx->current_sums(sa);
  double num = 0, den = 0;
  for (index_t i = 0; i < wide.rows; ++i)
    for (int d = 0; d < 3; ++d) {
      const auto k = static_cast<size_t>(i);
      const double fe = se.hsy(i, d) - wide(i, d) * se.hs[k], fa = sa.hsy(i, d) - wide(i, d) * sa.hs[k];
      num += (fa - fe) * (fa - fe);
      den += fe * fe;
    }
  EXPECT_LT(std::sqrt(num / den), 2e-2);
  const HssneStageTimes t = approx->stage_times();
  EXPECT_GT(t.tree, 0.0);
  EXPECT_EQ(t.pairs + t.fft, 0.0) << "neither the pairs nor the grid";

  // Without the tree, the same wide map falls back to the exact loop; on a backend without a tree
  // `auto` does not ask for one.
  rep.tree_when_grid_dearer = false;
  auto plain = cpu->make_hssne(P, 1.0, 3, rep);
  plain->start(wide);
  EXPECT_GT(plain->stage_times().pairs, 0.0);
  EXPECT_EQ(plain->stage_times().tree, 0.0);
}

// `repulsion: tree` fits on the tree at every map: its KL within 2% of the exact fit's, the same
// bits for any number of threads, and refused for dense affinities.
TEST(RepulsionTree, TreeRepulsionFitsAsTheExactOne) {
  const SparseAffinity P = four_classes(1500, 7);
  for (int D : {2, 3}) {
    HssneParams prm;
    prm.dim = D;
    prm.max_iter = 300;
    prm.optimizer = HssneOptimizer::gradient;
    prm.repulsion = HssneRepulsionMode::tree;
    auto two = make_backend("cpu", 2);
    const HssneResult fit = fit_hssne(P, prm, 1, *two);
    EXPECT_TRUE(fit.repulsion.tree && !fit.repulsion.interpolated);
    prm.repulsion = HssneRepulsionMode::exact;
    const double exact_kl = fit_hssne(P, prm, 1, *two).objective_trace.back();
    EXPECT_NEAR(fit.objective_trace.back(), exact_kl, 0.02 * exact_kl) << "D " << D;
    prm.repulsion = HssneRepulsionMode::tree;
    EXPECT_EQ(fit_hssne(P, prm, 1, *make_backend("cpu", 1)).coords.data, fit.coords.data) << "D " << D;
  }
  HssneParams prm;
  prm.repulsion = HssneRepulsionMode::tree;
  const MatrixD dense(4, 4, 1.0 / 12);
  try {
    fit_hssne(dense, {}, prm, 1, *make_backend("cpu", 1));
    ADD_FAILURE() << "tree repulsion of dense affinities ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_NE(std::string(e.what()).find("params.repulsion: tree"), std::string::npos) << e.what();
  }
}

// What auto means on a CPU: the exact fixed point below kTreeRepulsionMinPoints, the tree with the
// gradient method up to kTreeRepulsionMaxPoints, the grid from there; without a tree, the grid from
// kInterpolatedRepulsionMinPoints.
TEST(RepulsionTree, AutoChoosesTheTreeBetweenItsBounds) {
  auto cpu = make_backend("cpu", 1);
  HssneParams prm;
  const HssneRepulsion below = resolve_repulsion(prm, kTreeRepulsionMinPoints - 1, *cpu);
  const HssneRepulsion from = resolve_repulsion(prm, kTreeRepulsionMinPoints, *cpu);
  const HssneRepulsion last = resolve_repulsion(prm, kTreeRepulsionMaxPoints - 1, *cpu);
  const HssneRepulsion above = resolve_repulsion(prm, kTreeRepulsionMaxPoints, *cpu);
  EXPECT_FALSE(below.tree || below.interpolated);
  EXPECT_TRUE(from.tree && !from.interpolated && last.tree);
  EXPECT_TRUE(above.interpolated && !above.tree);
  EXPECT_EQ(resolve_optimizer(prm, 4000, below).optimizer, HssneOptimizer::fixed_point);
  EXPECT_EQ(resolve_optimizer(prm, 10000, from).optimizer, HssneOptimizer::gradient);
  EXPECT_EQ(auto_repulsion(prm, 10000, true, false), HssneRepulsionMode::exact);
  EXPECT_EQ(auto_repulsion(prm, kInterpolatedRepulsionMinPoints, true, false), HssneRepulsionMode::interpolated);
  EXPECT_EQ(auto_repulsion(prm, kInterpolatedRepulsionMinPoints, false, false), HssneRepulsionMode::exact);
  // An explicit fixed point keeps auto off the tree (its stepped cost reads as rises), and an
  // explicit tree with the fixed point is refused naming params.optimizer.
  prm.optimizer = HssneOptimizer::fixed_point;
  EXPECT_EQ(auto_repulsion(prm, 10000, true, true), HssneRepulsionMode::exact);
  EXPECT_EQ(auto_repulsion(prm, 20000, true, true), HssneRepulsionMode::interpolated);
  prm.repulsion = HssneRepulsionMode::tree;
  try {
    resolve_repulsion(prm, 10000, *cpu);
    ADD_FAILURE() << "tree with the fixed point resolved";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_NE(std::string(e.what()).find("params.optimizer"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace orrery
