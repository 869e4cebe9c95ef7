// Barnes-Hut repulsion on the host (repulsion_tree.hpp).
#include "cpu/repulsion_tree.hpp"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <type_traits>

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
// The cells of one depth are split in parallel (each sorts its own range of the points); their
// children are numbered after, in the cells' order, so the threads change no node's number.
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
  // A split cell's children: [start[c], start[c + 1]); all zero for a cell not split.
  using Starts = std::array<index_t, kChildren + 1>;
  std::vector<Starts> starts;
  for (size_t level = 0; level < nodes_.size();) {
    const size_t level_end = nodes_.size(), count = level_end - level;
    starts.assign(count, Starts{});
#pragma omp parallel for schedule(dynamic, 1) num_threads(nthreads(threads_)) if (count > 1)
    for (size_t q = level; q < level_end; ++q) {
      Node& node = nodes_[q];
      const index_t b = node.begin, e = node.end;
      const Cube& cube = cubes[q];
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
        node.com[d] = com[d] / static_cast<double>(e - b);
        const double reach = std::max(bhi[d] - node.com[d], node.com[d] - blo[d]);
        r2 += reach * reach;
      }
      node.radius2 = r2;
      if (e - b <= kLeafPoints || cube.depth >= kMaxDepth || r2 == 0) continue;
      // Counting sort of the cell's points into its children.
      Starts& start = starts[q - level];
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
    }
    for (size_t q = level; q < level_end; ++q) {
      const Starts& start = starts[q - level];
      if (start[kChildren] == 0) continue;  // not split
      const index_t b = nodes_[q].begin;
      const Cube cube = cubes[q];
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
    level = level_end;
  }
  sorted_.resize(static_cast<size_t>(N * D));
#pragma omp parallel for schedule(static) num_threads(nthreads(threads_))
  for (index_t r = 0; r < N; ++r)
    for (int d = 0; d < D; ++d) sorted_[static_cast<size_t>(d * N + r)] = Y(order_[static_cast<size_t>(r)], d);
}

namespace {

// H and H S at squared distance tau: math/interp.hpp's kernels, with alpha a constant 1 for
// t-SNE's tail so that its branch folds away and the loops vectorise (one division a pair).
template <bool kTsne, class R>
ORRERY_ALWAYS_INLINE void kernels(R tau, R alpha, R& kh, R& khs) {
  const R a = kTsne ? R(1) : alpha;
  kh = math::tail_kernel_h(tau, a);
  khs = math::tail_kernel_hs(tau, a);
}

// The walk's arithmetic type: t-SNE's tail (a division a pair) runs in float, eight to an AVX2
// vector, with the coordinates taken relative to the walking group's centre so that nearby points'
// offsets keep their digits; its rounding (a sum of m sources within m 2^-24 of itself, 9e-5 of
// a point's sums at the 1,500 sources a point meets in a map of 70,000, a few 1e-6 typically) is
// far below the tree's (about 3e-3). Other tails (an exp and a log1p a pair) stay in double.
template <bool kTsne>
using WalkReal = std::conditional_t<kTsne, float, double>;

// What a group's walk meets: masses (a cell's point count, or 1 for a point of a leaf opened) at
// offsets from the walking group's centre, by quantity, in the walk's type.
template <class R>
struct Sources {
  std::vector<R> c[3], mass;
  void clear() {
    for (auto& v : c) v.clear();
    mass.clear();
  }
  void add(const R* x, int dims, R m) {
    for (int d = 0; d < dims; ++d) c[d].push_back(x[d]);
    mass.push_back(m);
  }
};

// One point's sums over one source (offsets o, mass mass), added to h, hs, g[].
template <int D, bool kTsne, class R>
ORRERY_ALWAYS_INLINE void add_pair(R y0, R y1, R y2, R s0, R s1, R s2, R mass, R alpha, R& h, R& hs, R& g0, R& g1,
                                   R& g2) {
  // In 2-D no third term: adding o2 * o2 = +0 changes no bit but costs a vector add a pair.
  const R o0 = y0 - s0, o1 = y1 - s1;
  R tau = o0 * o0 + o1 * o1;
  if constexpr (D > 2) tau += (y2 - s2) * (y2 - s2);
  R kh, khs;
  kernels<kTsne>(tau, alpha, kh, khs);
  const R mhs = mass * khs;
  h += mass * kh;
  hs += mhs;
  g0 += mhs * s0;
  g1 += mhs * s1;
  if constexpr (D > 2) g2 += mhs * s2;
}

// Each of the walking group's n points (offsets ys[d n + k]) sums H, H S and H S y over the
// sources, in their order, vectorised over the sources: four points at a time, so that each
// source loaded serves four, with the points' sums in registers. acc gets, by quantity n apart:
// h, hs, hsy[D] (offsets). A point's sums are the same whichever block it falls in.
template <int D, bool kTsne, class R>
ORRERY_CLONES void sum_sources(const R* ys, index_t n, const Sources<R>& s, R alpha, R* acc) {
  const auto m = static_cast<index_t>(s.mass.size());
  const R *s0 = s.c[0].data(), *s1 = s.c[1].data(), *s2 = D > 2 ? s.c[2].data() : nullptr, *sm = s.mass.data();
  const auto coord = [&](index_t k, int d) { return D > d ? ys[d * n + k] : R(0); };
  const auto store = [&](index_t k, R h, R hs, R g0, R g1, R g2) {
    const R g[3] = {g0, g1, g2};
    acc[k] = h;
    acc[n + k] = hs;
    for (int d = 0; d < D; ++d) acc[(2 + d) * n + k] = g[d];
  };
  index_t k = 0;
  for (; k + 4 <= n; k += 4) {
    const R a0 = coord(k, 0), a1 = coord(k, 1), a2 = coord(k, 2), b0 = coord(k + 1, 0), b1 = coord(k + 1, 1),
            b2 = coord(k + 1, 2), c0 = coord(k + 2, 0), c1 = coord(k + 2, 1), c2 = coord(k + 2, 2),
            e0 = coord(k + 3, 0), e1 = coord(k + 3, 1), e2 = coord(k + 3, 2);
    R ha = 0, hsa = 0, ga0 = 0, ga1 = 0, ga2 = 0, hb = 0, hsb = 0, gb0 = 0, gb1 = 0, gb2 = 0;
    R hc = 0, hsc = 0, gc0 = 0, gc1 = 0, gc2 = 0, he = 0, hse = 0, ge0 = 0, ge1 = 0, ge2 = 0;
#pragma omp simd reduction(+ : ha, hsa, ga0, ga1, ga2, hb, hsb, gb0, gb1, gb2, hc, hsc, gc0, gc1, gc2, he, hse, ge0, \
                               ge1, ge2)
    for (index_t q = 0; q < m; ++q) {
      const R x0 = s0[q], x1 = s1[q], x2 = D > 2 ? s2[q] : R(0), w = sm[q];
      add_pair<D, kTsne>(a0, a1, a2, x0, x1, x2, w, alpha, ha, hsa, ga0, ga1, ga2);
      add_pair<D, kTsne>(b0, b1, b2, x0, x1, x2, w, alpha, hb, hsb, gb0, gb1, gb2);
      add_pair<D, kTsne>(c0, c1, c2, x0, x1, x2, w, alpha, hc, hsc, gc0, gc1, gc2);
      add_pair<D, kTsne>(e0, e1, e2, x0, x1, x2, w, alpha, he, hse, ge0, ge1, ge2);
    }
    store(k, ha, hsa, ga0, ga1, ga2);
    store(k + 1, hb, hsb, gb0, gb1, gb2);
    store(k + 2, hc, hsc, gc0, gc1, gc2);
    store(k + 3, he, hse, ge0, ge1, ge2);
  }
  for (; k < n; ++k) {
    const R y0 = coord(k, 0), y1 = coord(k, 1), y2 = coord(k, 2);
    R h = 0, hs = 0, g0 = 0, g1 = 0, g2 = 0;
#pragma omp simd reduction(+ : h, hs, g0, g1, g2)
    for (index_t q = 0; q < m; ++q)
      add_pair<D, kTsne>(y0, y1, y2, s0[q], s1[q], D > 2 ? s2[q] : R(0), sm[q], alpha, h, hs, g0, g1, g2);
    store(k, h, hs, g0, g1, g2);
  }
}

// The points xs[.][b, b + n) of one group walk the tree together: a cell is taken whole when it is
// far enough from the box around them (so from each of them), as one mass at its centre; a leaf
// opened gives its points, the walking group's own among them (each point meets itself at distance
// 0, H = H S = 1 for every tail, taken out after). acc then gets each point's h, hs and hsy[D]
// relative to the group's centre (centre[]), in the walk's type R; ys is room for n D offsets.
// Returns the interactions. Without kSum the walk only counts them.
template <int D, bool kTsne, bool kSum, class R>
double walk_group(const RepulsionTree::Node* nodes, const double* xs, index_t N, index_t b, index_t n, double angle2,
                  double alpha, std::vector<index_t>& stack, Sources<R>& sources, R* ys, double* centre, R* acc) {
  double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
  for (int d = 0; d < D; ++d) {
    lo[d] = hi[d] = xs[d * N + b];
    for (index_t r = b; r < b + n; ++r) lo[d] = std::min(lo[d], xs[d * N + r]), hi[d] = std::max(hi[d], xs[d * N + r]);
  }
  const auto offset = [&](double v, int d) { return static_cast<R>(v - centre[d]); };
  const auto add_source = [&](auto coord, R mass) {  // coord(d): the source's coordinate d
    R x[3] = {0, 0, 0};
    for (int d = 0; d < D; ++d) x[d] = offset(coord(d), d);
    sources.add(x, D, mass);
  };
  for (int d = 0; d < D && kSum; ++d) {
    centre[d] = 0.5 * (lo[d] + hi[d]);
    for (index_t k = 0; k < n; ++k) ys[d * n + k] = offset(xs[d * N + b + k], d);
  }
  sources.clear();
  double visits = 0;
  stack.assign(1, 0);
  while (!stack.empty()) {
    const RepulsionTree::Node& node = nodes[stack.back()];
    stack.pop_back();
    if (node.first_child < 0) {
      const index_t size = node.end - node.begin;
      const bool own = node.begin >= b && node.end <= b + n;  // a leaf of the walking group
      for (index_t s = node.begin; s < node.end && kSum; ++s) add_source([&](int d) { return xs[d * N + s]; }, R(1));
      visits += static_cast<double>(n) * static_cast<double>(size) - (own ? size : 0);
      continue;
    }
    double gap = 0;  // squared distance from the cell's centre to the group's box
    for (int d = 0; d < D; ++d) {
      const double c = node.com[d], o = c < lo[d] ? lo[d] - c : (c > hi[d] ? c - hi[d] : 0.0);
      gap += o * o;
    }
    if (node.radius2 < angle2 * gap) {
      if (kSum) add_source([&](int d) { return node.com[d]; }, static_cast<R>(node.end - node.begin));
      visits += static_cast<double>(n);
      continue;
    }
    for (int c = node.children - 1; c >= 0; --c) stack.push_back(node.first_child + c);
  }
  if (!kSum) return visits;
  sum_sources<D, kTsne>(ys, n, sources, static_cast<R>(alpha), acc);
  for (index_t k = 0; k < n; ++k) {  // each of the group's points met itself
    acc[k] -= R(1);
    acc[n + k] -= R(1);
    for (int d = 0; d < D; ++d) acc[(2 + d) * n + k] -= ys[d * n + k];
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
  // The walking groups: the largest cells of at most kWalkPoints points (or leaves), found top
  // down; a group's points are contiguous in the tree's order.
  std::vector<index_t> groups;
  {
    std::vector<index_t> todo{0};
    while (!todo.empty() && !nodes_.empty()) {
      const index_t q = todo.back();
      todo.pop_back();
      const Node& node = nodes_[static_cast<size_t>(q)];
      if (node.first_child < 0 || node.end - node.begin <= kWalkPoints) {
        groups.push_back(q);
        continue;
      }
      for (int c = node.children - 1; c >= 0; --c) todo.push_back(node.first_child + c);
    }
  }
  const auto L = static_cast<index_t>(groups.size());
  double interactions = 0;
  using R = WalkReal<kTsne>;
  // Each point's sums are its own and run in the tree's order, so the schedule changes no bits.
#pragma omp parallel num_threads(nthreads(threads_)) reduction(+ : interactions)
  {
    std::vector<index_t> stack;
    std::vector<R> acc, ys;
    Sources<R> sources;
    double centre[3] = {0, 0, 0};
#pragma omp for schedule(dynamic, 1)
    for (index_t l = 0; l < L; ++l) {
      const Node& group = nodes_[static_cast<size_t>(groups[static_cast<size_t>(l)])];
      const index_t b = group.begin, n = group.end - group.begin;
      const auto own = [&](index_t k) {
        const index_t i = order_[static_cast<size_t>(b + k)];
        return i >= row_first_ && i < row_end_;
      };
      if (kSum) {
        index_t k = 0;
        while (k < n && !own(k)) ++k;
        if (k == n) continue;  // another rank's points only
      }
      if (kSum) acc.resize(static_cast<size_t>(n * (D + 2))), ys.resize(static_cast<size_t>(n * D));
      interactions += walk_group<D, kTsne, kSum>(nodes_.data(), sorted_.data(), N, b, n, angle2, alpha_, stack,
                                                sources, ys.data(), centre, acc.data());
      for (index_t k = 0; k < n && kSum; ++k) {
        if (!own(k)) continue;
        const index_t i = order_[static_cast<size_t>(b + k)];
        const R* a = acc.data() + k;
        const double hs = a[n];
        out->h[static_cast<size_t>(i)] = a[0];
        out->hs[static_cast<size_t>(i)] = hs;
        for (int d = 0; d < D; ++d) out->hsy(i, d) = static_cast<double>(a[(2 + d) * n]) + centre[d] * hs;
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
  // Every owned point's sums are written; the others (another rank's) stay zero, so sums of the
  // right size are not cleared again.
  const auto n = static_cast<size_t>(planned_);
  if (out.h.size() != n || out.hs.size() != n || out.hsy.rows != planned_ || out.hsy.cols != dim_) {
    out.h.assign(n, 0.0);
    out.hs.assign(n, 0.0);
    out.hsy = MatrixD(planned_, dim_, 0.0);
  }
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
