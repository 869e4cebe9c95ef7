// Interpolated repulsion for HSSNE (SCALE.md; the FIt-SNE / openTSNE scheme, extended to every tail
// alpha >= 0 and to 3-D): the per-point sums over all other points that the objective, gradient and
// fixed-point update need,
//   h_i   = sum_{j != i} H(|y_i - y_j|^2)                (row i's share of Z)
//   hs_i  = sum_{j != i} H S (|y_i - y_j|^2)             (= sum_j H_ij^(1 + alpha))
//   hsy_i = sum_{j != i} H S (|y_i - y_j|^2) y_j
// in O(N p^D + G log G) instead of O(N^2): charges {1, y} are interpolated onto a regular grid of
// nodes, `nodes` per box of width <= box_width and dimension, each point from the p^D nodes nearest
// to it (math/interp.hpp), the two kernels H and H S are convolved over the grid by FFT, and the
// potentials are interpolated back.
//
// The grid depends on the current map only: boxes of box_width / 2^k, aligned to multiples of it,
// as many per dimension as cover the map, rounded up to a size whose FFT is fast (2^a 3^b 5^c 7^d
// nodes x 2). So the same map gives the same grid and the same bits, whatever came before (a resumed
// run continues with the same bits), and the kernels' transforms are reused while the box counts do
// not change.
#pragma once
#include <limits>
#include <memory>
#include <vector>

#include "orrery/types.hpp"

namespace orrery {

class Comm;

struct InterpSettings {
  // Interpolation nodes per box and dimension (2..8): each point interpolates from this many nodes
  // per axis, the nearest ones; the error falls as (box_width / nodes)^nodes.
  int nodes = 4;
  // The largest box width in map units (the kernel's length scale is 1): node spacing box_width /
  // nodes. Halving it cuts the error ~16x at 4 nodes. 1.25 keeps the force's relative error within
  // about 6e-3 on Fashion-MNIST maps (orrery_bench hssne-interp).
  double box_width = 1.25;
  // At least this many boxes across the map's widest axis: a small map (early iterations, strong
  // exaggeration) gets boxes of box_width / 2^k, k the least that gives them, so its forces, which
  // are as small as its distances, keep the same relative accuracy. 0: 32 in 2-D, 12 in 3-D.
  int min_boxes = 0;
  // The grid's dimension in nodes is at most this per axis (memory guard: a map that would need more
  // is an error naming the span, rather than an allocation of gigabytes).
  int max_nodes_per_axis = 1 << 14;
};

// How an HSSNE engine sums its repulsion: over all pairs (exact), or on a grid with these settings.
struct HssneRepulsion {
  bool interpolated = false;
  // Use the exact loop at a map where the grid would cost more than the pairs (cheaper_than_exact):
  // `auto` repulsion does, an explicit `interpolated` does not.
  bool exact_when_cheaper = false;
  // Where the grid gives way (exact_when_cheaper), sum on a Barnes-Hut tree instead of over all
  // pairs (a backend with has_tree_repulsion; `auto` sets it there): a wide 3-D map's grid grows as
  // its extent cubed, a tree as N log N.
  bool tree_when_grid_dearer = false;
  // Sum on the tree at every map, without a grid (`repulsion: tree`, a backend with a tree).
  bool tree = false;
  // The tree's opening angle (HssneParams::tree_angle, which resolve_repulsion copies here).
  double tree_angle = 0.0;
  InterpSettings grid;
};

// The report's name for what sums an engine's repulsion: "tree", "interpolated" or "exact".
inline const char* repulsion_name(const HssneRepulsion& r) {
  return r.tree ? "tree" : r.interpolated ? "interpolated" : "exact";
}

struct RepulsionSums {
  std::vector<double> h, hs;  // N
  MatrixD hsy;                // N x D
  // Z = z_grid + sum_i h_i. 0 with every h_i whole; RepulsionGrid::sums with whole_h false puts
  // the share of Z that the grid sums over its own points here as one total (and h_i keeps only
  // what is point i's alone: minus its grid self term, plus its exact sums with the far points).
  double z_grid = 0;
};

// A reusable grid (FFT plans, kernel transforms) for maps of one dimension D (2 or 3) and one tail.
// threads > 0; the result does not depend on the thread count (sums in a fixed order; each FFT's
// lines go to the threads in chunks of a fixed size).
class RepulsionGrid {
 public:
  RepulsionGrid(int dim, double alpha, const InterpSettings& settings, int threads);
  ~RepulsionGrid();
  RepulsionGrid(const RepulsionGrid&) = delete;
  RepulsionGrid& operator=(const RepulsionGrid&) = delete;
  // The sums at Y (N x D), self excluded. The grid covers Y's box, or a smaller one where that
  // costs less counting the points it leaves out ("far" points, a few thrown far from the bulk):
  // their sums over every point, and every point's sums over them, are exact.
  // whole_h false: what an optimiser needs, Z as a total rather than every h_i (out.z_grid): the
  // grid's part of Z is then sum_n q_n (H * q)_n over its charges q, from their spectrum by
  // Parseval's theorem, which saves the H potential's inverse transform (one of 2D + 3).
  void sums(const MatrixD& Y, RepulsionSums& out, bool whole_h = true);
  // sums(Y, out, whole_h) where that costs less than the exact sums over all N^2 pairs (the cells
  // at most 2^27) and less than `other_units` (another scheme's cost in the cost model's units,
  // orrery/interp_plan.hpp: kPairUnits a pair); false, with out untouched, otherwise.
  bool sums_if_cheaper(const MatrixD& Y, RepulsionSums& out, bool whole_h = true,
                       double other_units = std::numeric_limits<double>::infinity());
  // A frozen field for placing new points into a fixed map: the reference points' charges and
  // potentials on a grid over their box widened by `margin` map units on every side, made once;
  // then sums_at(Q) gives each query point's sums over ALL reference points (none is excluded) by
  // interpolation alone, O(p^D) per point. inside[i] = 0 marks a query outside the grid, whose
  // sums are left 0 for the caller to compute exactly. sums() replaces the frozen field.
  void freeze(const MatrixD& reference, double margin);
  void sums_at(const MatrixD& Q, RepulsionSums& out, std::vector<unsigned char>& inside) const;
  // The number of cells of the padded grid that sums(Y) would transform (prod_d 2 G_d), without
  // making it: a wide map of few points (3-D above all) can need a grid dearer than all its pairs.
  double planned_cells(const MatrixD& Y, double margin = 0) const;  // margin: as freeze()'s
  // Whether sums(Y) costs less than the exact sums over N^2 pairs: (2D + 3) transforms of
  // M log2 M units and the far points' 2 N |far| pairs against N^2 pairs (interp.cpp's kPairUnits
  // per pair), and M <= 2^27 cells.
  bool cheaper_than_exact(const MatrixD& Y) const;
  // A shard of a map whose rows are split over comm's ranks (HssneEngine::shard): sums() from now on
  // scatters the charges of rows [first, first + count) only, sums the grid over the ranks (every
  // rank calls sums() at the same map), convolves it whole on every rank and gathers at those rows
  // only, leaving every other row's sums as they were. Each row's sums are the bits one process
  // gives: the charges are summed in fixed point. comm null or of one rank: nothing is summed across
  // (the rows outside then simply carry no charge).
  void only_rows(index_t first, index_t count, Comm* comm);
  // The last grid's boxes per axis (for reports and benchmarks).
  std::vector<int> boxes() const;
  // Seconds spent so far in each stage, over every call (benchmarks split an iteration with them).
  struct Timings {
    double grid = 0, scatter = 0, fft = 0, gather = 0, far = 0;
    int calls = 0;
    index_t far_points = 0;  // at the last call
  };
  Timings timings() const;

 private:
  struct Choice;
  void choose(const MatrixD& Y, Choice& c) const;
  bool cheaper(const MatrixD& Y, const Choice& c) const;
  void sums(const MatrixD& Y, const Choice& c, RepulsionSums& out, bool whole_h);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The same sums by the exact O(N^2 D) loop, in double (the reference of the tests and benchmarks).
void exact_repulsion(const MatrixD& Y, double alpha, RepulsionSums& out, int threads = 0);

// Relative L2 errors of approximate sums against exact ones at Y: of the repulsive force
// F_i = (hsy_i - y_i hs_i) / Z (each side with its own Z = z_grid + sum_i h_i) and of Z.
struct RepulsionErrors {
  double force = 0, z = 0;
};
RepulsionErrors repulsion_errors(const MatrixD& Y, const RepulsionSums& approx, const RepulsionSums& exact);

}  // namespace orrery
