// HSSNE: the heavy-tail family, gradients by finite differences, the fixed-point update's
// stationary points, monotone guarded descent with and without acceleration, the paper's plain
// schedule, and map quality on clustered data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "methods/random.hpp"
#include "common/gradient_check.hpp"
#include "orrery/affinity.hpp"
#include "orrery/backend.hpp"
#include "orrery/config.hpp"
#include "orrery/error.hpp"
#include "orrery/hssne.hpp"
#include "orrery/math/neighbor.hpp"
#include "orrery/quality.hpp"
#include "orrery/run_control.hpp"

using namespace orrery;

namespace {

// Three 4-D Gaussian classes of 50 points, two of them close (iris-like).
MatrixD clusters(std::vector<int>& labels, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0, 1);
  const double centre[3][4] = {{0, 0, 0, 0}, {4, 1, 0, 0}, {5.5, 2.5, 1, 0}};
  MatrixD X(150, 4);
  labels.assign(150, 0);
  for (index_t i = 0; i < 150; ++i) {
    labels[i] = static_cast<int>(i / 50);
    for (int d = 0; d < 4; ++d) X(i, d) = centre[labels[i]][d] + 0.6 * z(rng);
  }
  return X;
}

// Dense affinities of clusters(labels, seed) at the given perplexity.
MatrixD cluster_affinities(std::vector<int>& labels, unsigned seed, double perplexity) {
  return affinities_dense(clusters(labels, seed), perplexity).dense;
}

MatrixD random_coords(index_t n, int d, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0, 1);
  MatrixD Y(n, d);
  for (double& v : Y.data) v = z(rng);
  return Y;
}

double homogeneity(const MatrixD& Y, const std::vector<int>& labels) {
  QualityRequest req;
  req.ks = {1};
  req.curve = false;
  return evaluate_quality(Y, Y, labels, req, *make_cpu_backend(0)).homogeneity_1nn;
}

}  // namespace

TEST(HeavyTail, FamilyAndSlope) {
  for (double tau : {0.0, 0.3, 2.0, 40.0}) {
    EXPECT_NEAR(math::heavy_tail(tau, 1.0), 1.0 / (1.0 + tau), 1e-15);
    EXPECT_NEAR(math::heavy_tail(tau, 0.0), std::exp(-tau), 1e-15);
    EXPECT_NEAR(math::heavy_tail(tau, 1e-9), std::exp(-tau), 1e-7 * (1 + tau * tau)) << "continuous at alpha = 0";
    for (double alpha : {0.0, 0.5, 1.0, 3.0}) {
      const double h = 1e-6;
      const double fd2 =
          -(math::heavy_tail_log(tau + h, alpha) - math::heavy_tail_log(tau - (tau > h ? h : 0), alpha)) /
          (tau > h ? 2 * h : h);
      EXPECT_NEAR(math::heavy_tail_slope(tau, alpha), fd2, 1e-5) << "S = -d log H / d tau, alpha " << alpha;
      EXPECT_NEAR(math::heavy_tail_log(tau, alpha), std::log(math::heavy_tail(tau, alpha)), 1e-12);
    }
  }
}

TEST(Hssne, GradientMatchesFiniteDifferences) {
  std::vector<int> labels;
  const MatrixD X = clusters(labels, 1);
  MatrixD Xs(30, 4);
  for (index_t i = 0; i < 30; ++i)
    for (int d = 0; d < 4; ++d) Xs(i, d) = X(i * 5, d);
  const MatrixD P = affinities_dense(Xs, 8.0).dense;
  for (int D : {2, 3})
    for (double alpha : {0.0, 0.5, 1.0, 2.5}) {
      MatrixD Y = random_coords(30, D, 3 + D), g;
      hssne_objective(P, Y, alpha, &g, *make_cpu_backend(2));
      MatrixD at = Y;
      EXPECT_TRUE(test::gradient_matches(
          [&](const std::vector<double>& y) {
            at.data = y;
            return hssne_objective(P, at, alpha, nullptr, *make_cpu_backend(0));
          },
          Y.data, g.data, {1e-6, 1e-6, 7, "alpha " + std::to_string(alpha) + " D " + std::to_string(D)}));
    }
}

TEST(Hssne, SparseObjectiveEqualsDenseWhenListsCoverAllPoints) {
  std::vector<int> labels;
  const MatrixD X = clusters(labels, 2);
  MatrixD Xs(31, 4);
  for (index_t i = 0; i < 31; ++i)
    for (int d = 0; d < 4; ++d) Xs(i, d) = X(i * 4, d);
  const AffinityResult dense = affinities_dense(Xs, 10.0), sparse = affinities_sparse(Xs, 10.0);
  // alpha = 1 takes the vectorised sparse loops (division only, math::log_positive); other tails the
  // per-pair functions; the dense rows always the per-pair functions.
  for (double alpha : {1.0, 0.5})
    for (int D : {2, 3}) {
      const MatrixD Y = random_coords(31, D, 5);
      MatrixD gd, gs;
      const double jd = hssne_objective(dense.dense, Y, alpha, &gd, *make_cpu_backend(0)), js = hssne_objective(sparse.sparse, Y, alpha, &gs, *make_cpu_backend(0));
      EXPECT_NEAR(jd, js, 1e-10) << "alpha " << alpha << " D " << D;
      for (size_t q = 0; q < gd.data.size(); ++q) EXPECT_NEAR(gd.data[q], gs.data[q], 1e-10) << alpha << " " << D;
    }
}

TEST(Hssne, FixedPointIsAPreconditionedGradientStep) {
  // y_new = (y_i B_i + sum_j (A_ij - B_ij) y_j) / A_i = y_i - grad_i / (4 A_i) with A_i = sum_j P_ij S_ij,
  // taken as y_i - grad_i / (4 max(A_i, B_i)), B_i = sum_j Q_ij S_ij, where the repulsion outweighs the
  // attraction: so Y is a fixed point exactly when the gradient vanishes, i.e. a stationary point is
  // left unchanged.
  std::vector<int> labels;
  const MatrixD X = clusters(labels, 3);
  MatrixD Xs(40, 4);
  for (index_t i = 0; i < 40; ++i)
    for (int d = 0; d < 4; ++d) Xs(i, d) = X(i * 3, d);
  const MatrixD P = affinities_dense(Xs, 8.0).dense;
  for (double alpha : {0.0, 1.0, 2.0}) {
    const MatrixD Y0 = random_coords(40, 2, 11);
    MatrixD g, Y = Y0;
    hssne_objective(P, Y0, alpha, &g, *make_cpu_backend(0));
    hssne_fixed_point_step(P, alpha, Y, *make_cpu_backend(0));
    const auto tau = [&](index_t i, index_t j) {
      return std::pow(Y0(i, 0) - Y0(j, 0), 2) + std::pow(Y0(i, 1) - Y0(j, 1), 2);
    };
    double Z = 0;
    for (index_t i = 0; i < 40; ++i)
      for (index_t j = 0; j < 40; ++j)
        if (j != i) Z += math::heavy_tail(tau(i, j), alpha);
    int repulsion_wins = 0;
    for (index_t i = 0; i < 40; ++i) {
      double A = 0, B = 0;
      for (index_t j = 0; j < 40; ++j) {
        if (j == i) continue;
        A += P(i, j) * math::heavy_tail_slope(tau(i, j), alpha);
        B += math::heavy_tail(tau(i, j), alpha) * math::heavy_tail_slope(tau(i, j), alpha) / Z;
      }
      repulsion_wins += B > A;
      for (int d = 0; d < 2; ++d)
        EXPECT_NEAR(Y(i, d), Y0(i, d) - g(i, d) / (4 * std::max(A, B)), 1e-10) << "alpha " << alpha;
    }
    if (alpha == 1.0) {
      EXPECT_GT(repulsion_wins, 0) << "the random start has points of both kinds";
    }
  }
}

TEST(Hssne, FixedPointDescendsAndSeparatesClasses) {
  std::vector<int> labels;
  const MatrixD P = cluster_affinities(labels, 4, 20.0);
  HssneParams prm;
  prm.max_iter = 400;
  prm.exaggeration_iter = 100;
  const HssneResult fit = fit_hssne(P, labels, prm, 1, *make_cpu_backend(2));
  // KL never rises once the exaggeration is over (before, the steps descend KL(cP || Q)).
  for (size_t i = prm.exaggeration_iter + 1; i < fit.objective_trace.size(); ++i)
    EXPECT_LE(fit.objective_trace[i], fit.objective_trace[i - 1]) << "iteration " << i;
  EXPECT_GE(homogeneity(fit.coords, labels), 0.9) << "the paper reports 0.95-0.97 on iris/wine-like data";
  const HssneResult again = fit_hssne(P, labels, prm, 1, *make_cpu_backend(1));
  EXPECT_EQ(again.coords.data, fit.coords.data) << "same seed: same bits, any thread count";
}

// A control that asks the fit to stop (RunControl::stop_requested, as Python's callbacks do) ends it
// as a finished fit: the map and trace of a fit run for that many iterations, stop_reason "callback";
// a given start replaces the seeded one.
TEST(Hssne, AStopRequestEndsTheFitAsAShorterOne) {
  struct StopAt : RunControl {
    int at, last = 0;
    explicit StopAt(int a) : at(a) {}
    const RunState* resume() const override { return nullptr; }
    void safe_point(int iteration, const std::function<RunState()>&) override { last = iteration; }
    bool stop_requested() const override { return last >= at; }
  };
  std::vector<int> labels;
  const MatrixD P = cluster_affinities(labels, 4, 20.0);
  for (const HssneOptimizer opt : {HssneOptimizer::fixed_point, HssneOptimizer::gradient}) {
    HssneParams prm;
    prm.optimizer = opt;
    prm.max_iter = 200;
    prm.tol = 0;
    StopAt stop(70);
    const HssneResult cut = fit_hssne(P, labels, prm, 1, *make_cpu_backend(2), {}, &stop);
    prm.max_iter = 70;
    const HssneResult ref = fit_hssne(P, labels, prm, 1, *make_cpu_backend(2));
    EXPECT_EQ(cut.stop_reason, "callback");
    EXPECT_EQ(cut.iterations, 70);
    EXPECT_EQ(cut.coords.data, ref.coords.data);
    EXPECT_EQ(cut.objective_trace, ref.objective_trace);
    // a given start: the seed no longer matters
    const MatrixD start = random_coords(P.rows, 2, 5);
    const HssneResult a = fit_hssne(P, labels, prm, 1, *make_cpu_backend(2), {}, nullptr, &start);
    const HssneResult b = fit_hssne(P, labels, prm, 2, *make_cpu_backend(2), {}, nullptr, &start);
    EXPECT_EQ(a.coords.data, b.coords.data);
    EXPECT_NE(a.coords.data, ref.coords.data);
  }
}

TEST(Hssne, AcceleratedFixedPointNeverRaisesTheObjective) {
  std::vector<int> labels;
  const MatrixD P = cluster_affinities(labels, 8, 15.0);
  HssneParams prm;
  prm.max_iter = 300;
  prm.tol = 0;
  prm.exaggeration = 1;  // one objective throughout
  const HssneResult fit = fit_hssne(P, labels, prm, 3, *make_cpu_backend(2));
  for (size_t i = 1; i < fit.objective_trace.size(); ++i)
    EXPECT_LE(fit.objective_trace[i], fit.objective_trace[i - 1]) << "iteration " << i;
  EXPECT_GT(fit.restarts, 0) << "the momentum overshoots at some point and the guard restarts it";
  EXPECT_EQ(fit.evaluations, 1 + fit.iterations + fit.restarts + fit.damped_steps)
      << "one pass per step, one per restart, and (here) one halving per damped step";
}

TEST(Hssne, PaperScheduleIsThePlainFixedPointUpdate) {
  std::vector<int> labels;
  const MatrixD P = cluster_affinities(labels, 9, 15.0);
  HssneParams prm;
  prm.max_iter = 12;
  prm.tol = 0;
  prm.acceleration = 0;
  prm.exaggeration = 1;
  const HssneResult fit = fit_hssne(P, labels, prm, 4, *make_cpu_backend(1));
  ASSERT_EQ(fit.damped_steps, 0);
  EXPECT_EQ(fit.restarts, 0);
  MatrixD Y(P.rows, 2);
  Y.data = seeded_gaussian(Y.data.size(), 4, prm.init_scale);
  for (int it = 0; it < prm.max_iter; ++it) {
    const double j = hssne_fixed_point_step(P, prm.alpha, Y, *make_cpu_backend(1));
    if (it > 0) {
      EXPECT_EQ(j, fit.objective_trace[static_cast<size_t>(it - 1)]) << "iteration " << it;
    }
  }
  EXPECT_EQ(Y.data, fit.coords.data) << "the same arithmetic, step for step";
}

TEST(Hssne, AccelerationAndExaggerationFindALowerObjective) {
  // Six 10-D classes; the same start and iteration budget for the paper's plain schedule and the
  // default one (accelerated, with early exaggeration).
  std::mt19937_64 rng(12);
  std::normal_distribution<double> z(0, 1);
  MatrixD X(600, 10);
  for (index_t i = 0; i < X.rows; ++i)
    for (index_t d = 0; d < X.cols; ++d) X(i, d) = (d == i % 6 ? 5.0 : 0.0) + z(rng);
  const SparseAffinity P = affinities_sparse(X, 20.0).sparse;
  HssneParams fast, plain;
  fast.max_iter = plain.max_iter = 300;
  fast.exaggeration_iter = 100;
  plain.acceleration = 0;
  plain.exaggeration = 1;
  const double j_fast = fit_hssne(P, fast, 5, *make_cpu_backend(2)).objective_trace.back();
  const double j_plain = fit_hssne(P, plain, 5, *make_cpu_backend(2)).objective_trace.back();
  EXPECT_LT(j_fast, 0.9 * j_plain) << "default " << j_fast << ", plain " << j_plain;
}

TEST(Hssne, GradientDescentAlternativeAlsoSeparatesClasses) {
  std::vector<int> labels;
  const MatrixD P = cluster_affinities(labels, 5, 20.0);
  HssneParams prm;
  prm.optimizer = HssneOptimizer::gradient;
  prm.max_iter = 500;
  const HssneResult fit = fit_hssne(P, labels, prm, 2, *make_cpu_backend(2));
  const auto at = std::find(fit.objective_iterations.begin(), fit.objective_iterations.end(), prm.exaggeration_iter);
  ASSERT_NE(at, fit.objective_iterations.end());
  const auto entry = static_cast<size_t>(at - fit.objective_iterations.begin());
  EXPECT_LT(fit.objective_trace.back(), fit.objective_trace[entry]);
  EXPECT_GE(homogeneity(fit.coords, labels), 0.9);
}

// The gradient method's steps need no objective: evaluated only every objective_every-th map and at
// the last, the trace holds the values an every-iteration trace holds there, the maps are the same
// bits, and the last value is the final map's KL.
TEST(Hssne, GradientObjectiveEveryFewMapsLeavesTheMapsAsTheyAre) {
  std::vector<int> labels;
  const SparseAffinity S = affinities_sparse(clusters(labels, 6), 10.0).sparse;
  for (const HssneRepulsionMode repulsion : {HssneRepulsionMode::exact, HssneRepulsionMode::tree}) {
    HssneParams prm;
    prm.optimizer = HssneOptimizer::gradient;
    prm.repulsion = repulsion;
    prm.max_iter = 37;
    prm.exaggeration_iter = 12;
    prm.objective_every = 1;
    const HssneResult all = fit_hssne(S, prm, 3, *make_cpu_backend(2));
    prm.objective_every = 10;
    const HssneResult few = fit_hssne(S, prm, 3, *make_cpu_backend(2));
    const std::string what = enum_name(repulsion);
    EXPECT_EQ(few.coords.data, all.coords.data) << what;
    EXPECT_EQ(few.iterations, 37) << what;
    EXPECT_EQ(few.objective_iterations, (std::vector<int>{0, 10, 20, 30, 37})) << what;
    ASSERT_EQ(all.objective_iterations.size(), 38u) << what;
    for (size_t e = 0; e < few.objective_trace.size(); ++e) {
      const auto it = static_cast<size_t>(few.objective_iterations[e]);
      EXPECT_EQ(all.objective_iterations[it], static_cast<int>(it)) << what;
      EXPECT_EQ(few.objective_trace[e], all.objective_trace[it]) << what << ", iteration " << it;
    }
    if (repulsion == HssneRepulsionMode::exact) {
      const double kl = hssne_objective(S, few.coords, prm.alpha, nullptr, *make_cpu_backend(2));
      EXPECT_NEAR(few.objective_trace.back(), kl, 1e-12 * kl) << "the last value is the final map's";
    }
  }
}

TEST(Hssne, SemiSupervisedMixing) {
  MatrixD P(4, 4, 0.0);
  for (index_t i = 0; i < 4; ++i)
    for (index_t j = 0; j < 4; ++j)
      if (i != j) P(i, j) = 1.0 / 12.0;
  const MatrixD M = mix_same_class_pairs(P, {0, 0, 1, -1}, 0.5);
  double total = 0, same = 0;
  for (index_t i = 0; i < 4; ++i)
    for (index_t j = 0; j < 4; ++j) total += M(i, j);
  same = M(0, 1) + M(1, 0);
  EXPECT_NEAR(total, 1.0, 1e-15);
  EXPECT_NEAR(same, 0.5 * (2.0 / 12.0) + 0.5, 1e-15) << "the only known same-class pair gets all of rho";
  EXPECT_NEAR(M(2, 3), 0.5 / 12.0, 1e-15);
}

// The CUDA kernels accumulate pairs with math::hssne_accumulate; the CPU runs its own vectorised
// row loops. The objective assembled from hssne_accumulate (J = sum P log P - sum P log H +
// (sum P) log Z) equals the CPU's, for every kind of tail, so the CPU tests cover the kernels'
// per-pair arithmetic.
TEST(Hssne, PerPairAccumulationMatchesTheCpuRowLoops) {
  std::vector<int> labels;
  const MatrixD P = cluster_affinities(labels, 7, 10.0);
  const index_t N = P.rows;
  for (double alpha : {0.0, 0.5, 1.0, 2.5})
    for (int D : {2, 3}) {
      const MatrixD Y = random_coords(N, D, 8);
      double z = 0.0, plh = 0.0, plp = 0.0, psum = 0.0;
      for (index_t i = 0; i < N; ++i) {
        math::HssneRow<double, 3> acc3;
        math::HssneRow<double, 2> acc2;
        for (index_t j = 0; j < N; ++j) {
          if (j == i) continue;
          if (D == 2) math::hssne_accumulate<double, 2>(Y.row(i), Y.row(j), P(i, j), alpha, true, acc2);
          else math::hssne_accumulate<double, 3>(Y.row(i), Y.row(j), P(i, j), alpha, true, acc3);
          if (P(i, j) > 0) plp += P(i, j) * std::log(P(i, j));
          psum += P(i, j);
        }
        z += D == 2 ? acc2.h_sum : acc3.h_sum;
        plh += D == 2 ? acc2.p_log_h : acc3.p_log_h;
      }
      const double j_pairs = plp - plh + psum * std::log(z);
      const double j_cpu = hssne_objective(P, Y, alpha, nullptr, *make_cpu_backend(0));
      EXPECT_NEAR(j_cpu, j_pairs, 1e-10 * std::abs(j_pairs)) << "alpha " << alpha << " D " << D;
    }
}

TEST(Hssne, SparseFitEqualsDenseFitWhenListsCoverAllPoints) {
  std::vector<int> labels;
  const MatrixD X = clusters(labels, 6);
  MatrixD Xs(31, 4);
  for (index_t i = 0; i < 31; ++i)
    for (int d = 0; d < 4; ++d) Xs(i, d) = X(i * 4, d);
  HssneParams prm;
  prm.max_iter = 50;
  const HssneResult d = fit_hssne(affinities_dense(Xs, 10.0).dense, {}, prm, 3, *make_cpu_backend(0));
  const HssneResult s = fit_hssne(affinities_sparse(Xs, 10.0).sparse, prm, 3, *make_cpu_backend(0));
  ASSERT_EQ(d.iterations, s.iterations);
  for (size_t q = 0; q < d.coords.data.size(); ++q) EXPECT_NEAR(d.coords.data[q], s.coords.data[q], 1e-9);
  prm.rho = 0.2;
  EXPECT_THROW(fit_hssne(affinities_sparse(Xs, 10.0).sparse, prm, 3, *make_cpu_backend(0)), Error);
}
