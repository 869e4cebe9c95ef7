// Where an interpolation grid goes and what it costs (orrery/interp.hpp): the host-side planning
// shared by the CPU grid (host/cpu/interp.cpp) and the CUDA grid (kernels/interp.cu), so that both
// choose the same boxes for the same map. Not a user-facing interface.
#pragma once
#include <vector>

#include "orrery/interp.hpp"
#include "orrery/types.hpp"

namespace orrery::interp {

// A box the grid covers: [lo_d, hi_d] per axis.
struct Bounds {
  double lo[3], hi[3];
};

// The grid over a box: box width w, origin and boxes needed per axis (before FFT-friendly rounding).
struct GridPlan {
  double w = 0;
  double origin[3] = {0, 0, 0};
  std::vector<int> need;  // empty: refused (plan_cells is infinite)
};

// The grid for box b in D dimensions: boxes of s.box_width / 2^k (k the least that gives
// s.min_boxes across the widest axis), aligned to multiples of the width. A span beyond
// s.max_nodes_per_axis is an input error if `refuse`, else a plan of no boxes.
GridPlan plan_grid(const Bounds& b, int D, const InterpSettings& s, bool refuse = true);

// The least n' >= n boxes whose padded axis 2 n' p is 2^a 3^b 5^c 7^d.
int friendly_boxes(int n, int p);

// Cells of the padded grid a plan transforms: prod_d 2 G_d (infinite for a refused plan).
double plan_cells(const GridPlan& g, int p);

// Costs in one unit: a grid of M padded cells transforms 2D + 3 times, M log2 M units each; one
// pair's terms summed exactly cost kPairUnits (on 2 cores, 100,000 points: 0.16-0.19 ns a unit for
// the transforms, 0.30-0.49 ns a pair for the far points and 0.28 for the all-pairs loop).
constexpr double kPairUnits = 2.0;
double grid_units(double cells, int D);

// The trims t (points left out at each end of each axis) worth trying for a map of N points whose
// full grid costs full_units: 1, 2, 4, ..., N / 128; none where the grid costs less than the
// points' own work (scatter, gather: hundreds of units a point) or N < 128.
std::vector<index_t> trims_to_try(index_t N, double full_units);

// The cheapest of the full box and the trimmed ones: candidates[q] is the box between the
// trims[q]-th smallest and largest coordinate of every axis (exact order statistics, counted from
// 0), which leaves out at most 2 D trims[q] points, each costing 2 N kPairUnits. Returns the box;
// cells gets its grid's padded cells. Ties keep the earlier (the full box first).
Bounds cheapest_bounds(const Bounds& full, const std::vector<Bounds>& candidates, const std::vector<index_t>& trims,
                       index_t N, int D, const InterpSettings& s, double& cells);

// Whether a grid of `cells` padded cells whose evaluation costs `units` (grid_units plus the far
// points' pairs) is cheaper than the exact sums over N^2 pairs, and at most 2^27 cells.
bool cheaper_than_pairs(double cells, double units, index_t N);

// The kernels H and HS at the (2p - 1)^D node offsets within a box, offset (o0, o1, o2) with o0
// fastest, for node spacing h: the tables math::grid_self_term reads.
void self_kernel_tables(int D, int p, double h, double alpha, std::vector<double>& self_h, std::vector<double>& self_hs);

}  // namespace orrery::interp
