// Barnes-Hut repulsion for HSSNE on the host: h_i, hs_i and hsy_i (orrery/interp.hpp's
// RepulsionSums) from a quadtree (2-D) or octree (3-D) of the map, a cell of n points standing for
// them at its centre of mass c where it is far enough from the point,
//   h_i += n H(|y_i - c|^2),  hs_i += n H S(|y_i - c|^2),  hsy_i += n H S(|y_i - c|^2) c,
// "far enough" meaning r < angle |y_i - c|, r the distance from c to the farthest corner of the
// box around the cell's points (a bound on every point's distance from c). The points of one leaf
// (at most kLeafPoints) walk the tree together, testing the distance from c to their box, so the
// cells' tests are made once a leaf; the walk lists its sources (a cell taken whole, each point of a
// leaf opened), and each of the leaf's points sums the list in vectors over it, t-SNE's tail in
// float relative to the leaf's centre; cells that fail the test are opened, point i's own term left
// out. Leaves of 32 points: on a 2-D map of 10,000 points
// 3.9 ms an evaluation (2 cores), against 4.0 ms for leaves of 16 and 4.3 ms for 64; on a 3-D map of
// 20,000 points 16 ms, against 21 ms for 16 and 18 ms for 64.
//
// For the maps of 5,000 to 200,000 points, where the tree costs less than the pairs (O(N^2)) and
// the grid (sized by the map's extent, not by N; hssne.hpp's kTreeRepulsionMaxPoints), and for the
// maps the grid cannot afford: a grid's nodes grow as the map's extent to the power D, and 3-D maps
// of clustered data span ~150 units at 20,000 points (a grid of ~6 10^8 nodes at the default box
// width). A tree costs O(N log N) per evaluation whatever the extent. Each point's sums run in a
// fixed order over a tree that depends on the map alone, so they are the same bits for any number
// of threads.
#pragma once
#include <limits>
#include <vector>

#include "orrery/interp.hpp"
#include "orrery/types.hpp"

namespace orrery::cpu {

class RepulsionTree {
 public:
  static constexpr int kLeafPoints = 32;
  // The points of a cell of at most kWalkPoints walk the tree together and share what they meet:
  // a cell taken whole must be far enough from the box around all of them, so a larger group meets
  // more sources (more accurate sums) from fewer walks. On the final map of 70,000 Fashion-MNIST
  // images at angle 0.4 (2 threads): 32 points 26 ms a pass, force error 4.9e-3; 256: 16 ms, 2.9e-3.
  static constexpr int kWalkPoints = 256;
  // dim 2 or 3; alpha the tail; angle >= 0 the opening angle (0: every cell opened, the exact sums).
  RepulsionTree(int dim, double alpha, double angle, int threads);

  // The sums for every point of Y (N x dim), whole (out.z_grid = 0).
  void sums(const MatrixD& Y, RepulsionSums& out);

  // The tree of Y and the cost of its sums in the grid's cost model (orrery/interp_plan.hpp), from
  // the map alone (so a resumed run chooses as the uninterrupted one did): the walk is made once
  // without sums to count the interactions (cells taken whole plus points summed one by one), each
  // costing about two exact pairs (a leaf's points walk together and sum leaves in vectors;
  // measured on a 3-D map of 20,000 points: 0.77 ns an interaction, 0.35 ns a pair, 2 threads).
  double plan(const MatrixD& Y);
  // sums(Y, out) for the Y of the last plan, on its tree.
  void sums_of_plan(RepulsionSums& out);

  // sums() and sums_of_plan() from now on write the sums of points [first, first + count) only (a
  // rank's share of a sharded map), walking only the leaves that hold one of them; a walk and its
  // sums do not depend on which points are written, so they are the bits of the whole sums. plan()
  // still counts every leaf's interactions (every rank makes the same choice).
  void only_rows(index_t first, index_t count) {
    row_first_ = first;
    row_end_ = first + count;
  }

  // Of the last plan or sums: the interactions, over all points (the work).
  double interactions() const { return interactions_; }

  // A cell (public for the walk's helpers in repulsion_tree.cpp).
  struct Node {
    double com[3] = {0, 0, 0};
    double radius2 = 0;     // squared bound on a point's distance from com
    index_t begin = 0, end = 0;  // the cell's points: order_[begin, end)
    index_t first_child = -1;    // children are contiguous; -1 for a leaf
    int children = 0;
  };

 private:
  template <int D>
  void build(const MatrixD& Y);
  // The walks of every leaf: sums into *out, or (out null) the interactions counted only.
  template <int D>
  void sum_points(RepulsionSums* out);
  template <int D, bool kTsne, bool kSum>
  void sum_points(RepulsionSums* out);

  int dim_;
  double alpha_, angle_;
  int threads_;
  double interactions_ = 0;
  index_t planned_ = -1;  // the points of the plan that sums_of_plan may use (-1: none)
  index_t row_first_ = 0, row_end_ = std::numeric_limits<index_t>::max();  // only_rows
  std::vector<Node> nodes_;
  std::vector<index_t> order_, scratch_;
  std::vector<double> sorted_;  // the points in order_, by dimension: sorted_[d N + r]
};

}  // namespace orrery::cpu
