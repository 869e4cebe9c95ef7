// The CUDA placement engine against the CPU's, through the parity harness: new points placed into a
// small frozen map, with the frozen grid and with the exact sums, 2-D and 3-D, several tails, and a
// case where points leave the grid (their sums then exact on both sides). The starts are the same
// reference coordinates picked by the same comparisons (identical); the steps follow the CPU's to the
// sums' rounding (place.* tolerances); the device repeats its own bits.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "common/require_cuda.hpp"
#include "orrery/affinity.hpp"
#include "orrery/backend.hpp"
#include "orrery/hssne.hpp"
#include "orrery/interp.hpp"
#include "orrery/knn.hpp"
#include "orrery/parity.hpp"
#include "large.hpp"
#include "parity.hpp"

using namespace orrery;

namespace {

// A reference map R of four Gaussian clusters (spread `sd`, centres `gap` apart along the diagonal)
// and M new points X_new drawn about the same centres, a little wider, in an input space X that is
// the map blurred by twice the spread: each new point's neighbors are then scattered over the map
// about its cluster, and it takes tens of steps from its start (up to ~100).
struct Placement {
  MatrixD R, X, Q;
  KnnGraph g;
  ConditionalRows rows;
};

Placement placement(index_t N, index_t M, int D, double sd, double gap, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0.0, 1.0);
  Placement s;
  s.R = MatrixD(N, D);
  s.Q = MatrixD(M, D);
  for (index_t i = 0; i < N; ++i)
    for (int d = 0; d < D; ++d) s.R(i, d) = gap * static_cast<double>(i % 4) + sd * z(rng);
  for (index_t i = 0; i < M; ++i)
    for (int d = 0; d < D; ++d) s.Q(i, d) = gap * static_cast<double>(i % 4) + 1.5 * sd * z(rng);
  s.X = s.R;
  for (double& v : s.X.data) v += 2.0 * sd * z(rng);
  return s;
}

void neighbors(Placement& s) {
  s.g = exact_knn_to(s.X, s.Q, 15, 0);
  s.rows = conditional_rows(s.g, 5.0, 0);
}

std::string tail(double alpha) { return "_alpha" + std::to_string(static_cast<int>(std::lround(alpha * 10))); }

// The placement run to the end on one backend.
PlacementResult run(Backend& b, const Placement& s, double alpha, const HssneRepulsion& rep,
                    const PlacementParams& prm) {
  auto e = b.make_placement(s.R, alpha, s.g, s.rows.p, rep);
  e->start();
  index_t moving = s.g.num_points;
  for (int it = 0; it < prm.max_iter && moving > 0; ++it) moving = e->step(prm.tol);
  return e->result();
}

// Both engines step by step, then the device's run again: the same bits.
void compare(Backend& cpu, Backend& gpu, test::ParityCheck& check, const Placement& s, double alpha,
             const HssneRepulsion& rep) {
  const PlacementParams prm;
  check.add(compare_placement_engines(*cpu.make_placement(s.R, alpha, s.g, s.rows.p, rep),
                                      *gpu.make_placement(s.R, alpha, s.g, s.rows.p, rep), prm));
  const PlacementResult a = run(gpu, s, alpha, rep, prm), b = run(gpu, s, alpha, rep, prm);
  check.same("device places, run twice", a.coords.data, b.coords.data);
  check.same("device costs, run twice", a.cost, b.cost);
  check.same("device steps, run twice", a.steps, b.steps);
}

}  // namespace

std::vector<test::ParityCase> test::place_parity_cases() {
  std::vector<test::ParityCase> out;
  // every tail kind (Gaussian 0, t-SNE's 1, the general path) on one side or the other; 2-D maps ~45
  // units across, 3-D ~10 (a 3-D grid grows with the cube of the width)
  struct Variant {
    int dim;
    bool grid;
    double alpha;
  };
  for (const Variant v : {Variant{2, false, 1.0}, Variant{2, false, 2.0}, Variant{2, true, 0.0}, Variant{2, true, 0.5},
                          Variant{2, true, 1.0}, Variant{3, false, 2.0}, Variant{3, true, 1.0}}) {
    const std::string name =
        std::string(v.grid ? "grid" : "exact") + "_N1501_M301_D" + std::to_string(v.dim) + tail(v.alpha);
    out.push_back({"place", name, [v](Backend& cpu, Backend& gpu, test::ParityCheck& check) {
                     Placement s = v.dim == 2 ? placement(1501, 301, 2, 1.5, 12.0, 21)
                                              : placement(1501, 301, 3, 0.6, 2.0, 22);
                     neighbors(s);
                     HssneRepulsion rep;
                     rep.interpolated = v.grid;
                     compare(cpu, gpu, check, s, v.alpha, rep);
                   }});
  }
  // Points whose first trial leaves the grid: two new points' neighbors are two of a group at (12, 0)
  // and two of a group at (0, 12), so each starts at the per-axis median (0, 0), on the flank of a
  // dense cluster at (-1.5, -1.5), with the long first step of a far attraction; the cluster's
  // repulsion throws the trial tens of units out, past the grid's margin, where both sides sum it
  // exactly (checked on the CPU's engine).
  out.push_back({"place", "grid_leaves_the_grid_N1040_M32_D2_alpha10",
                 [](Backend& cpu, Backend& gpu, test::ParityCheck& check) {
                   std::mt19937_64 rng(23);
                   std::normal_distribution<double> z(0.0, 1.0);
                   Placement s;
                   s.R = MatrixD(1040, 2);
                   for (index_t i = 0; i < s.R.rows; ++i) {
                     const bool cluster = i < 1000, x_group = i >= 1000 && i < 1020;
                     const double sd = cluster ? 1.0 : 0.2;
                     s.R(i, 0) = (cluster ? -1.5 : (x_group ? 12.0 : 0.0)) + sd * z(rng);
                     s.R(i, 1) = (cluster ? -1.5 : (x_group ? 0.0 : 12.0)) + sd * z(rng);
                   }
                   s.Q = MatrixD(32, 2);
                   for (double& v : s.Q.data) v = -1.5 + 1.2 * z(rng);
                   s.g = exact_knn_to(s.R, s.Q, 4, 0);
                   for (index_t i : {0, 1})
                     for (int l = 0; l < 4; ++l) {
                       s.g.index[static_cast<size_t>(i * 4 + l)] = (l < 2 ? 1000 : 1020) + 2 * (l % 2) + i;
                       s.g.dist2[static_cast<size_t>(i * 4 + l)] = 1.0;  // p = 1/4 each
                     }
                   s.rows = conditional_rows(s.g, 2.0, 0);
                   HssneRepulsion rep;
                   rep.interpolated = true;
                   const PlacementResult probe = run(cpu, s, 1.0, rep, PlacementParams{});
                   EXPECT_GE(probe.exact_points, 2) << "the case must send trials off the grid";
                   compare(cpu, gpu, check, s, 1.0, rep);
                 }});
  // Large: 301 points placed into a frozen map of 2^17 + 3 points on the grid (the map's grid made
  // once, O(N); each step O(M)).
  out.push_back({"place", "grid_N131075_M301_D2_alpha10", [](Backend& cpu, Backend& gpu, test::ParityCheck& check) {
                   Placement s = placement(test::kLargeN, 301, 2, 1.5, 12.0, 24);
                   neighbors(s);
                   HssneRepulsion rep;
                   rep.interpolated = true;
                   compare(cpu, gpu, check, s, 1.0, rep);
                 }});
  return out;
}

INSTANTIATE_PARITY(Place, test::place_parity_cases());

// The whole method on each backend: `auto` repulsion resolved once (the grid for many points, the
// exact sums for a few), the device following the CPU and repeating its bits.
TEST(PlaceParityRun, PlacePointsFollowsTheCpuAndRepeatsBitForBit) {
  ORRERY_REQUIRE_CUDA();
  auto cpu = make_backend("cpu", 0), gpu = make_backend("cuda", 0);
  const Placement s = placement(2000, 1000, 2, 1.5, 12.0, 31);
  HssneRepulsion automatic;
  automatic.interpolated = automatic.exact_when_cheaper = true;
  for (index_t M : {1000, 5}) {
    Placement t = s;
    t.Q.rows = M;
    t.Q.data.resize(static_cast<size_t>(M * 2));
    const KnnGraph g = exact_knn_to(t.X, t.Q, 15, 0);
    test::ParityCheck check("place/run M" + std::to_string(M));
    const PlacementResult c = place_points(g, 5.0, t.R, 1.0, automatic, PlacementParams{}, *cpu);
    const PlacementResult g1 = place_points(g, 5.0, t.R, 1.0, automatic, PlacementParams{}, *gpu);
    const PlacementResult g2 = place_points(g, 5.0, t.R, 1.0, automatic, PlacementParams{}, *gpu);
    EXPECT_EQ(g1.coords.data, g2.coords.data) << check.where();
    EXPECT_EQ(g1.steps, g2.steps) << check.where();
    EXPECT_EQ(c.interpolated, g1.interpolated) << check.where();
    EXPECT_EQ(c.interpolated, M == 1000) << check.where() << ": auto keeps the grid for many points only";
    check.agree("places", "place.map", c.coords.data, g1.coords.data);
    check.agree("costs", "place.end_cost", c.cost, g1.cost);
  }
}
