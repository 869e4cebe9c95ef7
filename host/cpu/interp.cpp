// The CPU's interpolated repulsion (orrery/interp.hpp; per-point and per-node arithmetic in
// math/interp.hpp). One evaluation:
//   1. the grid: boxes of width w aligned to multiples of w, covering the map, counts per axis
//      rounded up so that the padded FFT axis 2 p boxes is 2^a 3^b 5^c 7^d;
//   2. each point's stencil (the p^D nodes nearest to it, math::stencil_of: its first node per
//      axis, the point's "cell") and Lagrange weights; points ordered by their cell's row along
//      axis 0 (a stable counting sort over the rows, which are few: cells per axis 1 (x axis 2));
//   3. scatter: the charges {1, y - c} (c the grid's centre, which keeps the charges small), by
//      rows of nodes along axis 0, the rows in parallel: a row sums the points of the p (p^2 in
//      3-D) rows of cells whose stencils reach it, rows in order and each row's points in index
//      order, so no two threads write one node and every node's sum has a fixed order;
//   4. convolution (cpu::GridConvolution): each charge's grid zero-padded to 2G per axis,
//      transformed, multiplied by the kernels' transforms (made once per grid shape), transformed
//      back, each transform pruned and spread over the threads;
//   5. gather: each point's potentials from its stencil's nodes with the same weights; the self term,
//      as the grid computes it (math::self_overlap), taken out.
// The grid covers the map's box, or a smaller one where that is cheaper counting the few points it
// leaves out (choose_bounds); those far points' shares are summed exactly (cpu::add_far_repulsion).
// Cost per evaluation O(N p^D (2D + 3) + (D + 3) G^D log G), memory O(N p D + G^D) for G nodes per axis.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "cpu/engines.hpp"
#include "cpu/fft.hpp"
#include "orrery/backend.hpp"
#include "orrery/comm.hpp"
#include "orrery/error.hpp"
#include "orrery/interp.hpp"
#include "orrery/interp_plan.hpp"
#include "orrery/math/interp.hpp"
#include "orrery/math/neighbor.hpp"
#include "orrery/memory_plan.hpp"

namespace orrery {
namespace {

using interp::Bounds;
using interp::cheapest_bounds;
using interp::friendly_boxes;
using interp::GridPlan;
using interp::grid_units;
using interp::plan_cells;
using interp::plan_grid;
using interp::trims_to_try;

// Y's own box widened by `margin` on every side.
Bounds full_bounds(const MatrixD& Y, double margin) {
  const int D = static_cast<int>(Y.cols);
  Bounds b;
  for (int d = 0; d < D; ++d) {
    b.lo[d] = std::numeric_limits<double>::infinity();
    b.hi[d] = -b.lo[d];
  }
  for (index_t i = 0; i < Y.rows; ++i)
    for (int d = 0; d < D; ++d) {
      b.lo[d] = std::min(b.lo[d], Y(i, d));
      b.hi[d] = std::max(b.hi[d], Y(i, d));
    }
  for (int d = 0; d < D; ++d) {
    if (!std::isfinite(b.lo[d]) || !std::isfinite(b.hi[d])) internal_error("interpolated repulsion: the map is not finite");
    b.lo[d] -= margin, b.hi[d] += margin;
  }
  return b;
}

// Where the grid goes for the map Y: its whole box, or a smaller box that leaves out a few far
// points (far: each one's sums over all N points and every point's sums over it are then exact,
// 2 N pairs each). A handful of points thrown far out (early exaggeration with a large learning
// rate throws some hundreds of units from a bulk of a few units) would otherwise stretch the grid,
// whose cost grows with its area or volume, a hundredfold. Candidates leave out the t = 1, 2, 4,
// ..., N / 128 lowest and highest points of every axis (exact order statistics); the cheapest by
// grid_units + kPairUnits 2 N |far| (|far| <= 2 D t) wins. Returns the box; `far` lists the points
// outside it in index order, `cells` its grid's padded cells (plan_cells). Depends on Y alone.
Bounds choose_bounds(const MatrixD& Y, const InterpSettings& s, std::vector<index_t>& far, double& cells) {
  const index_t N = Y.rows;
  const int D = static_cast<int>(Y.cols);
  const Bounds full = full_bounds(Y, 0.0);
  far.clear();
  cells = plan_cells(plan_grid(full, D, s, false), s.nodes);
  const std::vector<index_t> trims = trims_to_try(N, grid_units(cells, D));
  if (trims.empty()) return full;
  // low[d][t]: axis d's t-th smallest coordinate (t from 0), high[d][t] its t-th largest
  const index_t t_max = trims.back();
  std::vector<std::vector<double>> low(static_cast<size_t>(D)), high(static_cast<size_t>(D));
  std::vector<double> col(static_cast<size_t>(N));
  const auto last = static_cast<std::ptrdiff_t>(t_max + 1);
  for (int d = 0; d < D; ++d) {
    for (index_t i = 0; i < N; ++i) col[static_cast<size_t>(i)] = Y(i, d);
    std::nth_element(col.begin(), col.begin() + t_max, col.end());
    std::sort(col.begin(), col.begin() + last);
    low[static_cast<size_t>(d)].assign(col.begin(), col.begin() + last);
    std::nth_element(col.begin() + last, col.end() - last, col.end());
    std::sort(col.end() - last, col.end(), std::greater<>());
    high[static_cast<size_t>(d)].assign(col.end() - last, col.end());
  }
  std::vector<Bounds> candidates(trims.size());
  for (size_t q = 0; q < trims.size(); ++q)
    for (int d = 0; d < D; ++d) {
      candidates[q].lo[d] = low[static_cast<size_t>(d)][static_cast<size_t>(trims[q])];
      candidates[q].hi[d] = high[static_cast<size_t>(d)][static_cast<size_t>(trims[q])];
    }
  const Bounds best = cheapest_bounds(full, candidates, trims, N, D, s, cells);
  for (index_t i = 0; i < N; ++i) {
    bool in = true;
    for (int d = 0; d < D; ++d) in = in && Y(i, d) >= best.lo[d] && Y(i, d) <= best.hi[d];
    if (!in) far.push_back(i);
  }
  return best;
}

}  // namespace

namespace {
// x (|x| < 2^51) rounded to the nearest integer (ties to even, the default rounding): adding
// 1.5 * 2^52 leaves the integer in the low bits of the double, which subtracting the constant's bits
// reads out. Unlike std::llrint (a libm call while errno is kept) or a conversion instruction (x86
// has no packed double to int64 before AVX-512) it vectorises: the scatter makes D + 1 of them per
// point and node.
constexpr double kRoundingShift = 6755399441055744.0;  // 1.5 * 2^52
std::int64_t fixed_point(double x) {
  const double shifted = x + kRoundingShift;
  std::int64_t bits, base;
  std::memcpy(&bits, &shifted, sizeof bits);
  std::memcpy(&base, &kRoundingShift, sizeof base);
  return bits - base;
}
}  // namespace

struct RepulsionGrid::Impl {
  int D;
  double alpha;
  InterpSettings s;
  int threads;
  // The current shape: boxes and nodes per axis, node strides, padded axes; cells (stencil
  // positions) per axis and their strides.
  std::vector<int> boxes, nodes, padded;
  long cells[3] = {1, 1, 1}, cell_stride[3] = {1, 0, 0}, num_cells = 1;
  double spacing = 0;  // node spacing h = w / p
  long node_stride[3] = {1, 0, 0};
  long num_nodes = 0;
  std::unique_ptr<cpu::GridConvolution> conv;
  std::vector<double> kernel_h, kernel_hs;  // the kernels' spectra (conv.kernel_spectrum)
  std::vector<double> self_h, self_hs;  // the kernels at the (2p - 1)^D node offsets within a stencil
  std::vector<double> charges;     // (D + 1) x num_nodes: {1, y_0 - c_0, ..., y_{D-1} - c_{D-1}}
  std::vector<double> potentials;  // (D + 2) x num_nodes: H * 1, HS * 1, HS * (y_d - c_d)
  std::vector<long> row_start;  // counting sort by cell row
  std::vector<index_t> order;
  std::vector<long> point_cell;  // linear cell index per point (-1: a far point)
  // per sorted position q (order[q], the points on the grid):
  std::vector<double> weights;    // D x p Lagrange weights
  std::vector<double> sorted_yc;  // D coordinates less the centre
  std::vector<long> sorted_cell;  // the cell
  // The current grid's placement: box width, first node's box edge, the charges' centre.
  double w = 0, origin[3] = {0, 0, 0}, centre[3] = {0, 0, 0};
  RepulsionGrid::Timings timings;
  // The rows whose charges field() scatters and whose sums run() gathers (RepulsionGrid::only_rows):
  // all of them unless sharded; a shard's grid is summed over `comm`'s ranks.
  index_t row_first = 0, row_end = std::numeric_limits<index_t>::max();
  Comm* comm = nullptr;
  std::vector<std::int64_t> fixed_charges;  // the charges in fixed point, (D + 1) x num_nodes

  Impl(int dim, double a, const InterpSettings& st, int t) : D(dim), alpha(a), s(st), threads(t) {}

  // The grid's arrays at the current shape: the convolution's (its spectra and buffers), the two
  // kernels' real spectra, the charges and potentials. Refused before any of it is allocated when
  // it exceeds the memory available: a map this wide needs wider boxes or the exact sums.
  void check_memory() const {
    const double spectrum_values = static_cast<double>(cpu::GridConvolution::spectrum_length(nodes));
    const double bytes = cpu::GridConvolution::bytes(nodes, threads, 2) + 2 * 8 * spectrum_values +
                         8.0 * (3 * D + 4) * static_cast<double>(num_nodes);
    const double available = available_host_memory();
    if (bytes > available) {
      std::string shape_text;
      for (int d = 0; d < D; ++d) shape_text += (d ? " x " : "") + std::to_string(padded[static_cast<size_t>(d)]);
      input_error("params.interp_box: the interpolation grid for this map (" + shape_text + " cells, box width " +
                  std::to_string(spacing * s.nodes) + ") needs " + format_bytes(bytes) + ", more than the " +
                  format_bytes(available) + " available; use a larger params.interp_box or params.repulsion \"exact\"");
    }
  }

  // Makes the grid for `needed` boxes per axis, reusing plans and kernels when nothing changed.
  void shape(const std::vector<int>& need, double h) {
    std::vector<int> b(need);
    for (int& n : b) n = friendly_boxes(n, s.nodes);
    if (b == boxes && h == spacing && conv) return;
    spacing = h;
    boxes = b;
    nodes.assign(static_cast<size_t>(D), 0);
    padded.assign(static_cast<size_t>(D), 0);
    num_nodes = 1;
    for (int d = 0; d < D; ++d) {
      nodes[static_cast<size_t>(d)] = boxes[static_cast<size_t>(d)] * s.nodes;
      padded[static_cast<size_t>(d)] = 2 * nodes[static_cast<size_t>(d)];
      if (d > 0) node_stride[d] = node_stride[d - 1] * nodes[static_cast<size_t>(d - 1)];
      num_nodes *= nodes[static_cast<size_t>(d)];
      cells[d] = nodes[static_cast<size_t>(d)] - s.nodes + 1;
      if (d > 0) cell_stride[d] = cell_stride[d - 1] * cells[d - 1];
    }
    num_cells = cell_stride[D - 1] * cells[D - 1];
    // The old grid goes first (the peak is one grid, not two), and no stale plan survives a refusal.
    conv.reset();
    std::vector<double>().swap(kernel_h);
    std::vector<double>().swap(kernel_hs);
    std::vector<double>().swap(charges);
    std::vector<std::int64_t>().swap(fixed_charges);
    std::vector<double>().swap(potentials);
    check_memory();
    conv = std::make_unique<cpu::GridConvolution>(nodes, threads);
    const double a = alpha;
    conv->kernel_spectrum(
        [h, a](int o0, int o1, int o2) {
          return math::tail_kernel_h(h * h * (double(o0) * o0 + double(o1) * o1 + double(o2) * o2), a);
        },
        kernel_h);
    conv->kernel_spectrum(
        [h, a](int o0, int o1, int o2) {
          return math::tail_kernel_hs(h * h * (double(o0) * o0 + double(o1) * o1 + double(o2) * o2), a);
        },
        kernel_hs);
    interp::self_kernel_tables(D, s.nodes, h, alpha, self_h, self_hs);
    charges.assign(static_cast<size_t>((D + 1) * num_nodes), 0.0);
    fixed_charges.assign(charges.size(), 0);
    potentials.assign(static_cast<size_t>((D + 2) * num_nodes), 0.0);
  }

  // The first node of cell c's stencil.
  template <int D_>
  long cell_base(long c) const {
    long base = 0;
    for (int d = 0; d < D_; ++d) base += (c / cell_stride[d]) % cells[d] * node_stride[d];
    return base;
  }

  // Steps 1-4: the grid over `box`, the charges of Y's points but the far ones, the potentials
  // (without whole_h, not H's: *z_grid gets sum_n q_n (H * q)_n instead).
  template <int D_>
  void field(const MatrixD& Y, const Bounds& box, const std::vector<index_t>& far, double& t, bool whole_h,
             double* z_grid);
  // Step 5 at Y's own points, each one's self term removed.
  template <int D_>
  void run(const MatrixD& Y, const Bounds& box, const std::vector<index_t>& far, RepulsionSums& out, bool whole_h);
  // Step 5 at other points Q: inside[i] = 0 for a point outside the grid (its sums are left 0).
  template <int D_>
  void gather_at(const MatrixD& Q, RepulsionSums& out, std::vector<unsigned char>& inside) const;
};

template <int D_>
void RepulsionGrid::Impl::field(const MatrixD& Y, const Bounds& box, const std::vector<index_t>& far, double& t,
                                bool whole_h, double* z_grid) {
  const index_t N = Y.rows;
  const int p = s.nodes;
  auto lap = [&t](double& into) {
    const double now = omp_get_wtime();
    into += now - t;
    t = now;
  };
  ++timings.calls;
  // 1. the grid
  const GridPlan plan = plan_grid(box, D_, s);
  w = plan.w;
  shape(plan.need, w / p);
  for (int d = 0; d < D_; ++d) {
    origin[d] = plan.origin[d];
    centre[d] = origin[d] + 0.5 * w * boxes[static_cast<size_t>(d)];
  }
  const double h = spacing;

  // 2. each point's cell, the points ordered by their cell's row, then their weights, centred
  // coordinates and cells in that order (the scatter visits each point p^(D-1) times and the
  // gather once: both then read memory in sequence)
  point_cell.resize(static_cast<size_t>(N));
  const index_t own_first = std::min(row_first, N), own_end = std::min(row_end, N);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (index_t i = 0; i < N; ++i) {
    if (i < own_first || i >= own_end) {  // another rank's point: scattered and gathered there
      point_cell[static_cast<size_t>(i)] = -1;
      continue;
    }
    long c = 0;
    for (int d = 0; d < D_; ++d) {
      double u;
      c += math::stencil_of(Y(i, d), origin[d], h, nodes[static_cast<size_t>(d)], p, u) * cell_stride[d];
    }
    point_cell[static_cast<size_t>(i)] = c;
  }
  for (index_t i : far) point_cell[static_cast<size_t>(i)] = -1;  // no charge on the grid
  const long num_rows = num_cells / cells[0];
  row_start.assign(static_cast<size_t>(num_rows + 1), 0);
  for (index_t i = 0; i < N; ++i)
    if (point_cell[static_cast<size_t>(i)] >= 0) ++row_start[static_cast<size_t>(point_cell[static_cast<size_t>(i)] / cells[0] + 1)];
  for (long r = 0; r < num_rows; ++r) row_start[static_cast<size_t>(r + 1)] += row_start[static_cast<size_t>(r)];
  order.resize(static_cast<size_t>(row_start.back()));
  {
    std::vector<long> fill(row_start.begin(), row_start.end() - 1);
    for (index_t i = 0; i < N; ++i) {
      const long c = point_cell[static_cast<size_t>(i)];
      if (c >= 0) order[static_cast<size_t>(fill[static_cast<size_t>(c / cells[0])]++)] = i;
    }
  }
  const auto inside = static_cast<index_t>(order.size());
  weights.resize(static_cast<size_t>(inside * D_ * p));
  sorted_yc.resize(static_cast<size_t>(inside * D_));
  sorted_cell.resize(static_cast<size_t>(inside));
#pragma omp parallel for schedule(static) num_threads(threads)
  for (index_t q = 0; q < inside; ++q) {
    const index_t i = order[static_cast<size_t>(q)];
    double* wq = weights.data() + static_cast<size_t>(q * D_ * p);
    for (int d = 0; d < D_; ++d) {
      double u;
      math::stencil_of(Y(i, d), origin[d], h, nodes[static_cast<size_t>(d)], p, u);
      math::lagrange_weights(u, p, wq + d * p);
      sorted_yc[static_cast<size_t>(q * D_ + d)] = Y(i, d) - centre[d];
    }
    sorted_cell[static_cast<size_t>(q)] = point_cell[static_cast<size_t>(i)];
  }

  lap(timings.grid);
  // 3. scatter, by rows of nodes along axis 0: row (n1, n2) takes the points of the cell rows
  // (s1, s2) with n_d - p < s_d <= n_d, each point's p nodes n0 = s0 .. s0 + p - 1 of the row.
  // Each point's charge at a node is rounded to a multiple of 1 / scale and summed as an integer:
  // integer sums do not depend on their order, so a grid summed over ranks, each scattering its own
  // points, has the bits of one process's. The scale leaves the largest possible sum (every point
  // at one node with weight magnitudes up to 2 per axis, at the grid's farthest coordinate) within
  // 2^62; at 10^6 points on a map 100 wide a unit is ~1e-10, against the grid's 1e-3 errors.
  std::fill(fixed_charges.begin(), fixed_charges.end(), 0);
  const long nn = num_nodes;
  double reach = 1.0;
  for (int d = 0; d < D_; ++d) reach = std::max(reach, 0.5 * w * boxes[static_cast<size_t>(d)] + w);
  const double one = std::ldexp(reach, D_), bound = static_cast<double>(std::max<index_t>(N, 1)) * one;
  // ... and each single charge within 2^50 (fixed_point's range)
  const double scale = std::ldexp(1.0, std::min(61 - std::ilogb(bound), 49 - std::ilogb(one))), unit = 1.0 / scale;
  const long G1 = nodes[1], rows = nn / nodes[0];
#pragma omp parallel for schedule(dynamic, 8) num_threads(threads)
  for (long r = 0; r < rows; ++r) {
    const long n1 = r % G1, n2 = r / G1;
    std::int64_t* row_charges = fixed_charges.data() + r * nodes[0];
    int lo1, hi1, lo2, hi2;
    math::stencils_reaching(static_cast<int>(n1), p, static_cast<int>(cells[1]), lo1, hi1);
    math::stencils_reaching(static_cast<int>(n2), p, static_cast<int>(cells[2]), lo2, hi2);
    for (long s2 = lo2; s2 <= hi2; ++s2)
      for (long s1 = lo1; s1 <= hi1; ++s1) {
        const int k1 = static_cast<int>(n1 - s1), k2 = static_cast<int>(n2 - s2);
        const long cell_row = s1 + s2 * cells[1];
        const long first = row_start[static_cast<size_t>(cell_row)];
        const long last = row_start[static_cast<size_t>(cell_row + 1)];
        for (long q = first; q < last; ++q) {
          const double* wi = weights.data() + static_cast<size_t>(q * D_ * p);
          const double* yc = sorted_yc.data() + static_cast<size_t>(q * D_);
          std::int64_t* at = row_charges + sorted_cell[static_cast<size_t>(q)] % cells[0];
          for (int k0 = 0; k0 < p; ++k0) {
            const double wt = math::stencil_node_weight<D_>(wi, p, k0, k1, k2) * scale;
            at[k0] += fixed_point(wt);
            for (int d = 0; d < D_; ++d) at[(d + 1) * nn + k0] += fixed_point(wt * yc[d]);
          }
        }
      }
  }

  if (comm) comm->allreduce(fixed_charges.data(), fixed_charges.size(), ReduceOp::sum);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (long n = 0; n < static_cast<long>(charges.size()); ++n)
    charges[static_cast<size_t>(n)] = static_cast<double>(fixed_charges[static_cast<size_t>(n)]) * unit;
  lap(timings.scatter);
  // 4. convolutions: charge 0 gives the H and HS potentials of charge 1 (or, without whole_h,
  // the HS potential and H's energy sum_n q_n (H * q)_n), charge d + 1 the HS potential of
  // y_d - c_d; each transform spread over the threads.
  for (int c = 0; c <= D_; ++c) {
    const double* q = charges.data() + static_cast<size_t>(c * nn);
    if (c == 0 && whole_h) conv->convolve(q, {&kernel_h, &kernel_hs}, {potentials.data(), potentials.data() + nn});
    else if (c == 0) conv->convolve(q, {&kernel_hs}, {potentials.data() + nn}, &kernel_h, z_grid);
    else conv->convolve(q, {&kernel_hs}, {potentials.data() + static_cast<size_t>((c + 1) * nn)});
  }

  lap(timings.fft);
}

template <int D_>
void RepulsionGrid::Impl::run(const MatrixD& Y, const Bounds& box, const std::vector<index_t>& far,
                              RepulsionSums& out, bool whole_h) {
  const index_t N = Y.rows;
  const int p = s.nodes;
  double t = omp_get_wtime();
  out.z_grid = 0;
  field<D_>(Y, box, far, t, whole_h, &out.z_grid);
  const long nn = num_nodes;  // the grid's, now that field() has shaped it
  // 5. gather
  out.h.resize(static_cast<size_t>(N));
  out.hs.resize(static_cast<size_t>(N));
  if (out.hsy.rows != N || out.hsy.cols != D_) out.hsy = MatrixD(N, D_);
  // points in row order: consecutive points read the same rows of nodes (cache hits), and each point's
  // sums are its own, so the order changes no bits
  const auto inside = static_cast<index_t>(order.size());
#pragma omp parallel for schedule(static) num_threads(threads)
  for (index_t at = 0; at < inside; ++at) {
    const index_t i = order[static_cast<size_t>(at)];
    if (i < row_first || i >= row_end) continue;
    const double* wi = weights.data() + static_cast<size_t>(at * D_ * p);
    double acc[D_ + 2], sh, shs, y[D_], hsy[D_];
    // without whole_h the H potential is not made: acc[0] = 0, and h is minus the self term
    math::gather_potentials<D_>(p, wi, node_stride, cell_base<D_>(sorted_cell[static_cast<size_t>(at)]), potentials.data(),
                                nn, acc, whole_h ? 0 : 1);
    math::grid_self_term<D_>(wi, p, self_h.data(), self_hs.data(), sh, shs);
    for (int d = 0; d < D_; ++d) y[d] = Y(i, d);
    math::grid_point_sums<D_>(acc, sh, shs, centre, y, out.h[static_cast<size_t>(i)], out.hs[static_cast<size_t>(i)], hsy);
    for (int d = 0; d < D_; ++d) out.hsy(i, d) = hsy[d];
  }
  timings.gather += omp_get_wtime() - t;
  t = omp_get_wtime();
  // the far points: their own sums, and everyone's sums over them, exactly
  cpu::add_far_repulsion(Y, far, alpha, out, threads, row_first, std::min(row_end, N));
  timings.far += omp_get_wtime() - t;
  timings.far_points = static_cast<index_t>(far.size());
}

template <int D_>
void RepulsionGrid::Impl::gather_at(const MatrixD& Q, RepulsionSums& out, std::vector<unsigned char>& inside) const {
  const index_t M = Q.rows;
  const int p = s.nodes;
  const long nn = num_nodes;
  out.h.assign(static_cast<size_t>(M), 0.0);
  out.hs.assign(static_cast<size_t>(M), 0.0);
  out.hsy = MatrixD(M, D_, 0.0);
  inside.assign(static_cast<size_t>(M), 0);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (index_t i = 0; i < M; ++i) {
    double wi[3 * math::kMaxInterpNodes];
    long base = 0;
    bool in = true;
    for (int d = 0; d < D_; ++d) {
      const double y = Q(i, d);
      in = in && y >= origin[d] && y <= origin[d] + w * boxes[static_cast<size_t>(d)];
      double u;
      base += math::stencil_of(y, origin[d], spacing, nodes[static_cast<size_t>(d)], p, u) * node_stride[d];
      math::lagrange_weights(u, p, wi + d * p);
    }
    if (!in) continue;
    double acc[D_ + 2];
    math::gather_potentials<D_>(p, wi, node_stride, base, potentials.data(), nn, acc);
    inside[static_cast<size_t>(i)] = 1;
    out.h[static_cast<size_t>(i)] = acc[0];
    out.hs[static_cast<size_t>(i)] = acc[1];
    for (int d = 0; d < D_; ++d) out.hsy(i, d) = acc[2 + d] + centre[d] * acc[1];
  }
}

RepulsionGrid::RepulsionGrid(int dim, double alpha, const InterpSettings& settings, int threads)
    : impl_(std::make_unique<Impl>(dim, alpha, settings, threads > 0 ? threads : omp_get_max_threads())) {
  if (dim != 2 && dim != 3) internal_error("RepulsionGrid: D must be 2 or 3");
  if (settings.nodes < 2 || settings.nodes > math::kMaxInterpNodes) internal_error("RepulsionGrid: nodes outside 2..8");
  if (!(settings.box_width > 0)) internal_error("RepulsionGrid: box width must be positive");
}

RepulsionGrid::~RepulsionGrid() = default;

// The box and far points sums() would use at Y, and whether that costs less than the exact sums.
struct RepulsionGrid::Choice {
  Bounds box;
  std::vector<index_t> far;
  double units = 0;  // grid_units + the far points' pairs
  double cells = 0;
};

void RepulsionGrid::only_rows(index_t first, index_t count, Comm* comm) {
  impl_->row_first = first;
  impl_->row_end = first + count;
  impl_->comm = comm && comm->size() > 1 ? comm : nullptr;
}

void RepulsionGrid::sums(const MatrixD& Y, RepulsionSums& out, bool whole_h) {
  if (Y.cols != impl_->D) internal_error("RepulsionGrid: Y has the wrong dimension");
  Choice c;
  choose(Y, c);
  sums(Y, c, out, whole_h);
}

bool RepulsionGrid::sums_if_cheaper(const MatrixD& Y, RepulsionSums& out, bool whole_h, double other_units) {
  if (Y.cols != impl_->D) internal_error("RepulsionGrid: Y has the wrong dimension");
  Choice c;
  choose(Y, c);
  if (!cheaper(Y, c) || !(c.units < other_units)) return false;
  sums(Y, c, out, whole_h);
  return true;
}

void RepulsionGrid::choose(const MatrixD& Y, Choice& c) const {
  c.box = choose_bounds(Y, impl_->s, c.far, c.cells);
  c.units = grid_units(c.cells, impl_->D) + interp::kPairUnits * 2.0 * static_cast<double>(c.far.size()) * Y.rows;
}

bool RepulsionGrid::cheaper(const MatrixD& Y, const Choice& c) const {
  return interp::cheaper_than_pairs(c.cells, c.units, Y.rows);
}

void RepulsionGrid::sums(const MatrixD& Y, const Choice& c, RepulsionSums& out, bool whole_h) {
  if (impl_->D == 2) impl_->run<2>(Y, c.box, c.far, out, whole_h);
  else impl_->run<3>(Y, c.box, c.far, out, whole_h);
}

void RepulsionGrid::freeze(const MatrixD& reference, double margin) {
  if (reference.cols != impl_->D) internal_error("RepulsionGrid: the reference has the wrong dimension");
  double t = omp_get_wtime();
  const Bounds box = full_bounds(reference, margin);
  if (impl_->D == 2) impl_->field<2>(reference, box, {}, t, true, nullptr);
  else impl_->field<3>(reference, box, {}, t, true, nullptr);
}

void RepulsionGrid::sums_at(const MatrixD& Q, RepulsionSums& out, std::vector<unsigned char>& inside) const {
  if (Q.cols != impl_->D || !impl_->conv) internal_error("RepulsionGrid::sums_at: no frozen reference of Q's dimension");
  if (impl_->D == 2) impl_->gather_at<2>(Q, out, inside);
  else impl_->gather_at<3>(Q, out, inside);
}

std::vector<int> RepulsionGrid::boxes() const { return impl_->boxes; }

double RepulsionGrid::planned_cells(const MatrixD& Y, double margin) const {
  return plan_cells(plan_grid(full_bounds(Y, margin), impl_->D, impl_->s), impl_->s.nodes);
}

bool RepulsionGrid::cheaper_than_exact(const MatrixD& Y) const {
  Choice c;
  choose(Y, c);
  return cheaper(Y, c);
}
RepulsionGrid::Timings RepulsionGrid::timings() const { return impl_->timings; }

RepulsionErrors repulsion_errors(const MatrixD& Y, const RepulsionSums& a, const RepulsionSums& e) {
  double za = a.z_grid, ze = e.z_grid;
  for (size_t i = 0; i < a.h.size(); ++i) za += a.h[i], ze += e.h[i];
  double num = 0, den = 0;
  for (index_t i = 0; i < Y.rows; ++i) {
    const auto k = static_cast<size_t>(i);
    for (index_t d = 0; d < Y.cols; ++d) {
      const double fa = (a.hsy(i, d) - Y(i, d) * a.hs[k]) / za, fe = (e.hsy(i, d) - Y(i, d) * e.hs[k]) / ze;
      num += (fa - fe) * (fa - fe);
      den += fe * fe;
    }
  }
  return {std::sqrt(num / den), std::abs(za - ze) / ze};
}

}  // namespace orrery
