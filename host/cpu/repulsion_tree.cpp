// Barnes-Hut repulsion on the host (repulsion_tree.hpp).
#include "cpu/repulsion_tree.hpp"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "orrery/error.hpp"
#include "orrery/interp_plan.hpp"
#include "orrery/math/interp.hpp"
#include "prep/clones.hpp"

namespace orrery::cpu {
namespace {

int nthreads(int t) { return t > 0 ? t : omp_get_max_threads(); }

}  // namespace

RepulsionTree::RepulsionTree(int dim, double alpha, double angle, int threads)
    : dim_(dim), alpha_(alpha), angle_(angle), threads_(threads) {
  if (dim != 2 && dim != 3) internal_error("RepulsionTree: D must be 2 or 3");
  if (!(angle >= 0)) internal_error("RepulsionTree: the opening angle must be >= 0");
}

// Cells split at their cube's middle into 2^D children (the non-empty ones kept, contiguous, in
// child-number order), breadth first, so the tree and the points' order depend on the map alone.
// A cell of at most kLeafPoints points, or at depth kMaxDepth (coincident points), is a leaf.
template <int D>
void RepulsionTree::build(const MatrixD& Y) {
  constexpr int kMaxDepth = 48, kChildren = 1 << D;
  const index_t N = Y.rows;
  order_.resize(static_cast<size_t>(N));
  scratch_.resize(static_cast<size_t>(N));
  for (index_t i = 0; i < N; ++i) order_[static_cast<size_t>(i)] = i;
  struct Cube {
    double mid[3];
    double half;
    int depth;
  };
  double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
  for (int d = 0; d < D; ++d) lo[d] = hi[d] = N > 0 ? Y(0, d) : 0.0;
  for (index_t i = 0; i < N; ++i)
    for (int d = 0; d < D; ++d) lo[d] = std::min(lo[d], Y(i, d)), hi[d] = std::max(hi[d], Y(i, d));
  Cube root{{0, 0, 0}, 0, 0};
  for (int d = 0; d < D; ++d) {
    root.mid[d] = 0.5 * (lo[d] + hi[d]);
    root.half = std::max(root.half, 0.5 * (hi[d] - lo[d]));
  }
  nodes_.assign(1, Node{});
  nodes_[0].begin = 0;
  nodes_[0].end = N;
  std::vector<Cube> cubes{root};
  for (size_t q = 0; q < nodes_.size(); ++q) {
    const index_t b = nodes_[q].begin, e = nodes_[q].end;
    const Cube cube = cubes[q];
    double com[3] = {0, 0, 0}, blo[3], bhi[3];
    for (int d = 0; d < D; ++d) blo[d] = bhi[d] = Y(order_[static_cast<size_t>(b)], d);
    for (index_t s = b; s < e; ++s) {
      const index_t i = order_[static_cast<size_t>(s)];
      for (int d = 0; d < D; ++d) {
        const double v = Y(i, d);
        com[d] += v;
        blo[d] = std::min(blo[d], v);
        bhi[d] = std::max(bhi[d], v);
      }
    }
    double r2 = 0;
    for (int d = 0; d < D; ++d) {
      nodes_[q].com[d] = com[d] / static_cast<double>(e - b);
      const double reach = std::max(bhi[d] - nodes_[q].com[d], nodes_[q].com[d] - blo[d]);
      r2 += reach * reach;
    }
    nodes_[q].radius2 = r2;
    if (e - b <= kLeafPoints || cube.depth >= kMaxDepth || r2 == 0) continue;
    // Counting sort of the cell's points into its children.
    std::array<index_t, kChildren + 1> start{};
    auto child_of = [&](index_t i) {
      int c = 0;
      for (int d = 0; d < D; ++d) c |= (Y(i, d) >= cube.mid[d] ? 1 : 0) << d;
      return c;
    };
    for (index_t s = b; s < e; ++s) ++start[static_cast<size_t>(child_of(order_[static_cast<size_t>(s)]) + 1)];
    for (int c = 0; c < kChildren; ++c) start[static_cast<size_t>(c + 1)] += start[static_cast<size_t>(c)];
    std::array<index_t, kChildren> fill{};
    for (int c = 0; c < kChildren; ++c) fill[static_cast<size_t>(c)] = b + start[static_cast<size_t>(c)];
    for (index_t s = b; s < e; ++s) {
      const index_t i = order_[static_cast<size_t>(s)];
      scratch_[static_cast<size_t>(fill[static_cast<size_t>(child_of(i))]++)] = i;
    }
    std::copy(scratch_.begin() + b, scratch_.begin() + e, order_.begin() + b);
    nodes_[q].first_child = static_cast<index_t>(nodes_.size());
    for (int c = 0; c < kChildren; ++c) {
      const index_t cb = b + start[static_cast<size_t>(c)], ce = b + start[static_cast<size_t>(c + 1)];
      if (cb == ce) continue;
      Node child;
      child.begin = cb;
      child.end = ce;
      Cube sub{{0, 0, 0}, 0.5 * cube.half, cube.depth + 1};
      for (int d = 0; d < D; ++d) sub.mid[d] = cube.mid[d] + ((c >> d) & 1 ? sub.half : -sub.half);
      nodes_.push_back(child);
      cubes.push_back(sub);
      ++nodes_[q].children;
    }
  }
  sorted_.resize(static_cast<size_t>(N * D));
  for (index_t r = 0; r < N; ++r)
    for (int d = 0; d < D; ++d) sorted_[static_cast<size_t>(d * N + r)] = Y(order_[static_cast<size_t>(r)], d);
}

namespace {

// H and H S at squared distance tau: math/interp.hpp's kernels, with alpha a constant 1 for
// t-SNE's tail so that its branch folds away and the loops vectorise (one division a pair).
template <bool kTsne>
ORRERY_ALWAYS_INLINE void kernels(double tau, double alpha, double& kh, double& khs) {
  const double a = kTsne ? 1.0 : alpha;
  kh = math::tail_kernel_h(tau, a);
  khs = math::tail_kernel_hs(tau, a);
}

// The walking leaf's points xs[.][b, b + n) gain the sums of a mass m at c, vectorised over them
// (their sums stay in acc, by quantity: h, hs, hsy[D], n apart); kUnit: m is 1 (a point), whose
// products fold away.
template <int D, bool kTsne, bool kUnit = false>
ORRERY_ALWAYS_INLINE void add_mass(const double* xs, index_t N, index_t b, index_t n, double c0, double c1,
                                   double c2, double mass, double alpha, double* acc) {
  const double m = kUnit ? 1.0 : mass;
  const double *y0 = xs + b, *y1 = xs + N + b, *y2 = xs + (D > 2 ? 2 * N : 0) + b;
  double *ah = acc, *ahs = acc + n, *a0 = acc + 2 * n, *a1 = acc + 3 * n, *a2 = acc + (D > 2 ? 4 * n : 0);
#pragma omp simd
  for (index_t k = 0; k < n; ++k) {
    const double o0 = y0[k] - c0, o1 = y1[k] - c1, o2 = D > 2 ? y2[k] - c2 : 0.0;
    const double tau = o0 * o0 + o1 * o1 + o2 * o2;
    double kh, khs;
    kernels<kTsne>(tau, alpha, kh, khs);
    ah[k] += m * kh;
    ahs[k] += m * khs;
    a0[k] += m * khs * c0;
    a1[k] += m * khs * c1;
    if constexpr (D > 2) a2[k] += m * khs * c2;
  }
}

// The sums of the walking leaf's points over the points xs[.][lo, hi), one source point at a time
// (add_mass with m = 1). With own (the leaf itself) each point meets itself at distance 0 (H = H S
// = 1 for every tail), taken out after.
template <int D, bool kTsne>
ORRERY_ALWAYS_INLINE void add_leaf(const double* xs, index_t N, index_t lo, index_t hi, index_t b, index_t n,
                                   double alpha, bool own, double* acc) {
  for (index_t s = lo; s < hi; ++s)
    add_mass<D, kTsne, true>(xs, N, b, n, xs[s], xs[N + s], D > 2 ? xs[2 * N + s] : 0.0, 1.0, alpha, acc);
  if (!own) return;
  const double *y0 = xs + b, *y1 = xs + N + b, *y2 = xs + (D > 2 ? 2 * N : 0) + b;
  double *ah = acc, *ahs = acc + n, *a0 = acc + 2 * n, *a1 = acc + 3 * n, *a2 = acc + (D > 2 ? 4 * n : 0);
  for (index_t k = 0; k < n; ++k) {
    ah[k] -= 1.0;
    ahs[k] -= 1.0;
    a0[k] -= y0[k];
    a1[k] -= y1[k];
    if constexpr (D > 2) a2[k] -= y2[k];
  }
}

// The points xs[.][b, b + n) of one leaf walk the tree together: a cell is taken whole when it is
// far enough from the box around them (so from each of them), its sums then taken at each point's
// own distance from its centre; leaves opened are summed point by point (add_leaf). acc gets each
// point's h, hs, hsy[D]; returns the interactions. Without kSum the walk only counts them.
template <int D, bool kTsne, bool kSum>
ORRERY_CLONES double walk_leaf(const RepulsionTree::Node* nodes, const double* xs, index_t N, index_t b, index_t n,
                               double angle2, double alpha, std::vector<index_t>& stack, double* acc) {
  double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
  for (int d = 0; d < D; ++d) {
    lo[d] = hi[d] = xs[d * N + b];
    for (index_t r = b; r < b + n; ++r) lo[d] = std::min(lo[d], xs[d * N + r]), hi[d] = std::max(hi[d], xs[d * N + r]);
  }
  double visits = 0;
  stack.assign(1, 0);
  while (!stack.empty()) {
    const RepulsionTree::Node& node = nodes[stack.back()];
    stack.pop_back();
    if (node.first_child < 0) {
      const bool own = node.begin == b;
      if (kSum) add_leaf<D, kTsne>(xs, N, node.begin, node.end, b, n, alpha, own, acc);
      visits += static_cast<double>(n) * static_cast<double>(node.end - node.begin) - (own ? n : 0);
      continue;
    }
    double gap = 0;  // squared distance from the cell's centre to the leaf's box
    for (int d = 0; d < D; ++d) {
      const double c = node.com[d], o = c < lo[d] ? lo[d] - c : (c > hi[d] ? c - hi[d] : 0.0);
      gap += o * o;
    }
    if (node.radius2 < angle2 * gap && !kSum) {
      visits += static_cast<double>(n);
      continue;
    }
    if (node.radius2 < angle2 * gap) {
      add_mass<D, kTsne>(xs, N, b, n, node.com[0], node.com[1], D > 2 ? node.com[2] : 0.0,
                         static_cast<double>(node.end - node.begin), alpha, acc);
      visits += static_cast<double>(n);
      continue;
    }
    for (int c = node.children - 1; c >= 0; --c) stack.push_back(node.first_child + c);
  }
  return visits;
}

}  // namespace

template <int D>
void RepulsionTree::sum_points(RepulsionSums* out) {
  if (!out) sum_points<D, true, false>(out);
  else if (alpha_ == 1.0) sum_points<D, true, true>(out);
  else sum_points<D, false, true>(out);
}

template <int D, bool kTsne, bool kSum>
void RepulsionTree::sum_points(RepulsionSums* out) {
  const double angle2 = angle_ * angle_;
  const auto N = static_cast<index_t>(order_.size());
  std::vector<index_t> leaves;
  for (size_t q = 0; q < nodes_.size(); ++q)
    if (nodes_[q].first_child < 0) leaves.push_back(static_cast<index_t>(q));
  const auto L = static_cast<index_t>(leaves.size());
  double interactions = 0;
  // Each point's sums are its own and run in the tree's order, so the schedule changes no bits.
#pragma omp parallel num_threads(nthreads(threads_)) reduction(+ : interactions)
  {
    std::vector<index_t> stack;
    std::vector<double> acc;
#pragma omp for schedule(dynamic, 64)
    for (index_t l = 0; l < L; ++l) {
      const Node& leaf = nodes_[static_cast<size_t>(leaves[static_cast<size_t>(l)])];
      const index_t b = leaf.begin, n = leaf.end - leaf.begin;
      if (kSum) acc.assign(static_cast<size_t>(n * (D + 2)), 0.0);
      interactions +=
          walk_leaf<D, kTsne, kSum>(nodes_.data(), sorted_.data(), N, b, n, angle2, alpha_, stack, acc.data());
      for (index_t k = 0; k < n && kSum; ++k) {
        const index_t i = order_[static_cast<size_t>(b + k)];
        const double* a = acc.data() + k;
        out->h[static_cast<size_t>(i)] = a[0];
        out->hs[static_cast<size_t>(i)] = a[n];
        for (int d = 0; d < D; ++d) out->hsy(i, d) = a[(2 + d) * n];
      }
    }
  }
  interactions_ = interactions;
}

double RepulsionTree::plan(const MatrixD& Y) {
  if (Y.cols != dim_) internal_error("RepulsionTree: the map has the wrong dimension");
  if (dim_ == 2) {
    build<2>(Y);
    sum_points<2>(nullptr);
  } else {
    build<3>(Y);
    sum_points<3>(nullptr);
  }
  planned_ = Y.rows;
  return 2.0 * interp::kPairUnits * interactions_;
}

void RepulsionTree::sums_of_plan(RepulsionSums& out) {
  if (planned_ < 0) internal_error("RepulsionTree: sums_of_plan without a plan");
  const auto n = static_cast<size_t>(planned_);
  out.h.assign(n, 0.0);
  out.hs.assign(n, 0.0);
  out.hsy = MatrixD(planned_, dim_, 0.0);
  out.z_grid = 0;
  if (dim_ == 2) sum_points<2>(&out);
  else sum_points<3>(&out);
  planned_ = -1;
}

void RepulsionTree::sums(const MatrixD& Y, RepulsionSums& out) {
  if (Y.cols != dim_) internal_error("RepulsionTree: the map has the wrong dimension");
  if (dim_ == 2) build<2>(Y);
  else build<3>(Y);
  planned_ = Y.rows;
  sums_of_plan(out);
}

}  // namespace orrery::cpu
