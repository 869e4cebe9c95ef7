// PE as a whole: recovery of its own model, monotone objective, determinism, out-of-sample mode.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "orrery/backend.hpp"
#include "orrery/pe.hpp"

using namespace orrery;

namespace {

struct Planted {
  MatrixD P, R, Phi;
};

// Posteriors sampled from PE's own model: classes at Gaussian positions (not on a ring: equal
// class norms make the model nearly invariant to scaling), objects around them.
Planted planted(index_t N, int K, int D, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0.0, 1.0);
  Planted p{MatrixD(N, K), MatrixD(N, D), MatrixD(K, D)};
  for (int k = 0; k < K; ++k) {
    for (int d = 0; d < D; ++d) p.Phi(k, d) = 2.5 * z(rng);
  }
  for (index_t n = 0; n < N; ++n) {
    const int k = static_cast<int>(rng() % K);
    for (int d = 0; d < D; ++d) p.R(n, d) = 0.7 * p.Phi(k, d) + 1.2 * z(rng);
  }
  p.P = pe_map_posteriors(p.R, p.Phi, {});
  return p;
}

double mean_kl(const MatrixD& P, const MatrixD& Q) {
  double s = 0;
  for (index_t n = 0; n < P.rows; ++n)
    for (index_t k = 0; k < P.cols; ++k)
      if (P(n, k) > 0) s += P(n, k) * std::log(P(n, k) / Q(n, k));
  return s / P.rows;
}

// RMS distance between B and A after the best rotation/reflection and translation of B
// (orthogonal Procrustes in 2-D, closed form).
double procrustes_rms_2d(const MatrixD& A, const MatrixD& B) {
  const index_t K = A.rows;
  double ma[2] = {0, 0}, mb[2] = {0, 0};
  for (index_t k = 0; k < K; ++k)
    for (int d = 0; d < 2; ++d) {
      ma[d] += A(k, d) / K;
      mb[d] += B(k, d) / K;
    }
  double best = 1e300;
  for (int reflect = 0; reflect < 2; ++reflect) {
    const double sgn = reflect ? -1.0 : 1.0;
    double sxx = 0, sxy = 0;
    for (index_t k = 0; k < K; ++k) {
      const double ax = A(k, 0) - ma[0], ay = A(k, 1) - ma[1];
      const double bx = B(k, 0) - mb[0], by = sgn * (B(k, 1) - mb[1]);
      sxx += ax * bx + ay * by;
      sxy += ay * bx - ax * by;
    }
    const double t = std::atan2(sxy, sxx), c = std::cos(t), s = std::sin(t);
    double ss = 0;
    for (index_t k = 0; k < K; ++k) {
      const double bx = B(k, 0) - mb[0], by = sgn * (B(k, 1) - mb[1]);
      const double rx = c * bx - s * by, ry = s * bx + c * by;
      ss += std::pow(rx - (A(k, 0) - ma[0]), 2) + std::pow(ry - (A(k, 1) - ma[1]), 2);
    }
    best = std::min(best, std::sqrt(ss / K));
  }
  return best;
}

PeParams weak_priors() {
  PeParams prm;
  prm.eta_r = 1e-4;  // near-zero priors: the model's own posteriors are then reproducible exactly
  prm.eta_phi = 1e-4;
  prm.eps_phi = 1e-10;
  prm.eps_r = 1e-12;
  prm.ftol = 0.0;
  prm.max_iter = 5000;
  return prm;
}

}  // namespace

TEST(PeFit, RecoversPlantedGeometryWithNearZeroKl) {
  const auto pl = planted(1500, 8, 2, 11);
  auto cpu = make_cpu_backend(0);
  // MDS start: PE is not convex in Phi, and a random start can stop in a local minimum with
  // two classes swapped (seen with this data), so recovery is asserted from the MDS start.
  for (const PeClassInit init : {PeClassInit::mds}) {
    PeParams prm = weak_priors();
    prm.class_init = init;
    PeInput in{pl.P, {}, {}};
    const auto res = fit_pe(*cpu, in, prm, 5);
    const MatrixD Q = pe_map_posteriors(res.object_coords, res.class_coords, {});
    EXPECT_LT(mean_kl(pl.P, Q), 1e-3) << enum_name(init) << " stop " << res.stop_reason;
    EXPECT_LT(procrustes_rms_2d(pl.Phi, res.class_coords), 0.1) << enum_name(init);
    EXPECT_TRUE(res.objects_converged) << enum_name(init);
  }
}

TEST(PeFit, ObjectiveNeverIncreasesAndMatchesIndependentRecomputation) {
  const auto pl = planted(800, 6, 3, 12);
  auto cpu = make_cpu_backend(0);
  PeParams prm;
  prm.dim = 3;
  const auto res = fit_pe(*cpu, PeInput{pl.P, {}, {}}, prm, 3);
  ASSERT_GE(res.trace.size(), 3u);
  for (size_t i = 1; i < res.trace.size(); ++i)
    EXPECT_LE(res.trace[i].objective, res.trace[i - 1].objective + 1e-9 * std::abs(res.trace[i - 1].objective))
        << "iteration " << i;
  // J recomputed from the definition with the returned coordinates.
  const MatrixD Q = pe_map_posteriors(res.object_coords, res.class_coords, {});
  double J = 0;
  for (index_t n = 0; n < pl.P.rows; ++n) {
    for (int k = 0; k < 6; ++k) J -= pl.P(n, k) * std::log(Q(n, k));
    for (int d = 0; d < 3; ++d) J += prm.eta_r * res.object_coords(n, d) * res.object_coords(n, d);
  }
  for (double v : res.class_coords.data) J += prm.eta_phi * v * v;
  EXPECT_NEAR(res.objective, J, 1e-8 * std::abs(J));
  EXPECT_TRUE(res.stop_reason == "eps_phi" || res.stop_reason == "ftol") << res.stop_reason;
}

TEST(PeFit, SameSeedSameBitsAndThreadCountDoesNotMatter) {
  const auto pl = planted(3000, 10, 2, 13);
  PeParams prm;
  prm.class_init = PeClassInit::random;
  auto one = make_cpu_backend(1), many = make_cpu_backend(4);
  const auto a = fit_pe(*one, PeInput{pl.P, {}, {}}, prm, 99);
  const auto b = fit_pe(*many, PeInput{pl.P, {}, {}}, prm, 99);
  const auto c = fit_pe(*many, PeInput{pl.P, {}, {}}, prm, 99);
  EXPECT_EQ(a.object_coords.data, b.object_coords.data);
  EXPECT_EQ(a.class_coords.data, b.class_coords.data);
  EXPECT_EQ(b.object_coords.data, c.object_coords.data);
  EXPECT_EQ(a.objective, c.objective);
  const auto d = fit_pe(*many, PeInput{pl.P, {}, {}}, prm, 100);
  EXPECT_NE(a.class_coords.data, d.class_coords.data) << "the seed must matter for random init";
}

TEST(PeFit, OutOfSamplePlacementKeepsClassesAndMatchesFullFit) {
  const auto pl = planted(1000, 7, 2, 14);
  auto cpu = make_cpu_backend(0);
  PeParams prm;
  prm.eps_r = 1e-14;  // objects solved to near round-off, so the two runs can be compared tightly
  const auto full = fit_pe(*cpu, PeInput{pl.P, {}, {}}, prm, 1);
  PeParams fixed = prm;
  fixed.fit_classes = false;
  PeInput in{pl.P, {}, full.class_coords};
  const auto placed = fit_pe(*cpu, in, fixed, 12345);
  EXPECT_EQ(placed.stop_reason, "classes_fixed");
  EXPECT_EQ(placed.class_coords.data, full.class_coords.data);
  EXPECT_TRUE(placed.objects_converged);
  double worst = 0;
  for (size_t i = 0; i < placed.object_coords.data.size(); ++i)
    worst = std::max(worst, std::abs(placed.object_coords.data[i] - full.object_coords.data[i]));
  EXPECT_LT(worst, 1e-6) << "objects placed on the fitted classes land where the fit put them";
}

TEST(PeFit, ClassCoordsOfWrongShapeAreAnInputError) {
  const auto pl = planted(50, 4, 2, 15);
  auto cpu = make_cpu_backend(1);
  PeParams prm;
  prm.class_init = PeClassInit::file;
  PeInput in{pl.P, {}, MatrixD(3, 2)};
  try {
    fit_pe(*cpu, in, prm, 1);
    FAIL() << "expected an input error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_NE(std::string(e.what()).find("input.class_coords"), std::string::npos) << e.what();
  }
}

TEST(PeFit, PriorsShiftTheMapAndAreUsed) {
  const auto pl = planted(600, 5, 2, 16);
  auto cpu = make_cpu_backend(0);
  PeParams prm;
  const auto uniform = fit_pe(*cpu, PeInput{pl.P, {}, {}}, prm, 2);
  const auto skewed = fit_pe(*cpu, PeInput{pl.P, {0.6, 0.1, 0.1, 0.1, 0.1}, {}}, prm, 2);
  EXPECT_NE(uniform.class_coords.data, skewed.class_coords.data);
  EXPECT_TRUE(std::isfinite(skewed.objective));
}

TEST(PePrecision, MatchesHandCountedExample) {
  // Class 0: top-2 by P = {0, 1}; the 2 objects nearest phi_0 = {0, 2} -> 1/2.
  // Class 1: top-2 by P = {2, 3}; nearest phi_1 = {3, 2} -> 1. prec(2) = 3/4.
  MatrixD P(4, 2), R(4, 2, 0.0), Phi(2, 2, 0.0);
  // objects at (0,0), (5,8), (4,0), (10,0); classes at (0,0) and (10,0)
  const double p0[4] = {0.9, 0.8, 0.3, 0.1};
  for (int n = 0; n < 4; ++n) {
    P(n, 0) = p0[n];
    P(n, 1) = 1 - p0[n];
  }
  Phi(1, 0) = 10.0;
  const double x[4] = {0.0, 5.0, 4.0, 10.0};
  for (int n = 0; n < 4; ++n) R(n, 0) = x[n];
  R(1, 1) = 8.0;
  EXPECT_DOUBLE_EQ(pe_precision_at(P, R, Phi, 2), 0.75);
  EXPECT_DOUBLE_EQ(pe_precision_at(P, R, Phi, 4), 1.0);
}

TEST(PePrecision, FittedMapBeatsShuffledMap) {
  const auto pl = planted(2000, 6, 2, 17);
  auto cpu = make_cpu_backend(0);
  const auto res = fit_pe(*cpu, PeInput{pl.P, {}, {}}, weak_priors(), 3);
  MatrixD shuffled = res.object_coords;
  std::mt19937_64 rng(1);
  for (index_t n = shuffled.rows - 1; n > 0; --n) {
    const index_t m = static_cast<index_t>(rng() % (n + 1));
    std::swap(shuffled(n, 0), shuffled(m, 0));
    std::swap(shuffled(n, 1), shuffled(m, 1));
  }
  const double good = pe_precision_at(pl.P, res.object_coords, res.class_coords, 50);
  const double bad = pe_precision_at(pl.P, shuffled, res.class_coords, 50);
  // The planted map itself scores what a perfect fit can reach on this data.
  const double truth = pe_precision_at(pl.P, pl.R, pl.Phi, 50);
  EXPECT_GT(good, 0.8 * truth);
  EXPECT_LT(bad, 0.5 * truth) << "chance level is h / N = 0.025";
}
