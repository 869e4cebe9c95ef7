// Interpolated repulsion on the device (interp.cuh). One evaluation, as on the CPU
// (host/cpu/interp.cpp), every step deterministic (no atomics; every sum in a fixed order):
//   1. plan: the map's box (per-block min/max, folded on the host), and where the full grid is
//      dear, exact order statistics per axis (a radix sort of each coordinate column) for the
//      trimmed boxes; the host picks the cheapest box (interp::cheapest_bounds) and the points
//      outside it are listed in index order (a flag scan);
//   2. each point's stencil (math::stencil_of: its first node per axis, the point's stencil
//      position) and Lagrange weights; points sorted by stencil position with a stable radix sort,
//      so the points of one position keep index order; each position's first point by binary search;
//   3. scatter: one thread per node sums the charges {1, y - c} of the points whose stencils reach
//      it (the p^D stencil positions n - p < s <= n), positions in order, and writes them into the
//      zero-padded grid: no two threads write one node, and each node's sum has a fixed order;
//   4. convolution: the D + 1 charge grids transformed by one batched cuFFT D2Z plan, multiplied
//      by the kernels' real spectra (made once per grid shape, scaled by 1/M), the D + 2 products
//      transformed back by one Z2D plan; the grid's share of Z from the unit charges' spectrum by
//      Parseval (energy_kernel; its block sums added on the host in order), as on the CPU. (The
//      H product and its transform are still made: a frozen field needs them, and a fit could
//      leave them out, as the CPU does);
//   5. gather: one thread per point reads its stencil's nodes (math::gather_potentials) and removes its
//      self term (math::grid_self_term); far points get their sums over all points exactly (a block
//      each, a fixed-shape reduction), and every other point adds its sums over the far points
//      (exact_sums.cuh).
// A frozen field (freeze, for placing new points) is steps 1-4 over a fixed map, kept; sums_at
// gathers at other points (no self term), flagging those outside the grid for exact sums.
// Grid arrays are double: the sums agree with the CPU's to the transforms' rounding (~1e-13
// relative), and the force's difference hsy - y hs keeps its digits on wide maps.
#include <cufft.h>

#include <cub/block/block_reduce.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "check.cuh"
#include "exact_sums.cuh"
#include "interp.cuh"
#include "orrery/error.hpp"
#include "orrery/interp_plan.hpp"
#include "orrery/math/interp.hpp"
#include "orrery/math/neighbor.hpp"
#include "orrery/memory_plan.hpp"

namespace orrery::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kBoundsBlocks = 512;  // the box's partial min/max, folded on the host

void check_cufft(cufftResult r, const char* call, const char* file, int line) {
  if (r != CUFFT_SUCCESS)
    throw Error(ErrorKind::cuda, std::string(call) + ": cuFFT error " + std::to_string(static_cast<int>(r)) + " at " +
                                     file + ":" + std::to_string(line));
}
#define ORRERY_CUFFT_CHECK(call) check_cufft((call), #call, __FILE__, __LINE__)

int blocks_for(long long n) { return static_cast<int>(std::max(1LL, (n + kThreads - 1) / kThreads)); }

// The grid's placement as the kernels read it (by value).
struct Shape {
  int p = 0;
  int boxes[3] = {1, 1, 1};
  long node_stride[3] = {1, 0, 0};  // in the padded grid: 2 G_d nodes per axis
  int nodes[3] = {1, 1, 1};         // G_d
  double origin[3] = {0, 0, 0}, centre[3] = {0, 0, 0};
  double w = 0, h = 0;  // box width, node spacing
  long num_nodes = 0, cells = 0, spectrum = 0;  // spectrum: complex values per grid
  long sten[3] = {1, 1, 1}, sten_stride[3] = {1, 0, 0};  // stencil positions per axis (G_d - p + 1)
  long num_sten = 0;
};

// --- 1. plan

// Block b's min and max of each axis over its strided points: out[b 2D + 2d + {0, 1}]. NaN
// coordinates are skipped as the CPU's std::min/max skip them.
template <int D>
__global__ void __launch_bounds__(kThreads) bounds_kernel(const double* __restrict__ y, long long N, double* out) {
  using Reduce = cub::BlockReduce<double, kThreads>;
  __shared__ typename Reduce::TempStorage tmp;
  double lo[D], hi[D];
  for (int d = 0; d < D; ++d) lo[d] = INFINITY, hi[d] = -INFINITY;
  for (long long i = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x; i < N;
       i += static_cast<long long>(gridDim.x) * kThreads)
    for (int d = 0; d < D; ++d) {
      const double v = y[i * D + d];
      lo[d] = v < lo[d] ? v : lo[d];
      hi[d] = v > hi[d] ? v : hi[d];
    }
  for (int d = 0; d < D; ++d) {
    const double l = Reduce(tmp).Reduce(lo[d], [](double a, double b) { return a < b ? a : b; });
    __syncthreads();
    const double h = Reduce(tmp).Reduce(hi[d], [](double a, double b) { return a > b ? a : b; });
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x * 2 * D + 2 * d] = l, out[blockIdx.x * 2 * D + 2 * d + 1] = h;
  }
}

__global__ void column_kernel(const double* __restrict__ y, long long N, int D, int d, double* __restrict__ col) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < N) col[i] = y[i * D + d];
}

// out[2q], out[2q + 1]: the trims[q]-th smallest and largest of the sorted column.
__global__ void pick_kernel(const double* __restrict__ sorted, long long N, const long long* __restrict__ trims, int count,
                            double* __restrict__ out) {
  const int q = blockIdx.x * blockDim.x + threadIdx.x;
  if (q >= count) return;
  out[2 * q] = sorted[trims[q]];
  out[2 * q + 1] = sorted[N - 1 - trims[q]];
}

// flag[i] = 1 for a point outside the box [lo, hi] (a far point).
template <int D>
__global__ void far_flag_kernel(const double* __restrict__ y, long long N, double3 lo, double3 hi, int* __restrict__ flag) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= N) return;
  const double l[3] = {lo.x, lo.y, lo.z}, h[3] = {hi.x, hi.y, hi.z};
  bool in = true;
  for (int d = 0; d < D; ++d) in = in && y[i * D + d] >= l[d] && y[i * D + d] <= h[d];
  flag[i] = in ? 0 : 1;
}

// far[pos[i]] = i for the flagged points (pos: the flags' exclusive prefix sum): index order.
__global__ void far_list_kernel(const int* __restrict__ flag, const int* __restrict__ pos, long long N,
                                index_t* __restrict__ far) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < N && flag[i]) far[pos[i]] = i;
}

// --- 2. stencils and weights

// Point i's stencil position (key; far points get num_sten, after every position) and its weights (D x p).
template <int D>
__global__ void point_kernel(const double* __restrict__ y, long long N, Shape g, const int* __restrict__ far_flag,
                             unsigned* __restrict__ key, index_t* __restrict__ index, double* __restrict__ weights) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= N) return;
  long b = 0;
  double* wi = weights + i * D * g.p;
  for (int d = 0; d < D; ++d) {
    double u;
    const int sd = math::stencil_of(y[i * D + d], g.origin[d], g.h, g.nodes[d], g.p, u);
    math::lagrange_weights(u, g.p, wi + d * g.p);
    b += sd * g.sten_stride[d];
  }
  key[i] = static_cast<unsigned>(far_flag && far_flag[i] ? g.num_sten : b);
  index[i] = i;
}

// start[b] = the first sorted position whose key is >= b, for b in [0, num_keys].
__global__ void key_start_kernel(const unsigned* __restrict__ sorted_key, long long N, long num_keys,
                                 long long* __restrict__ start) {
  const long long b = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b > num_keys) return;
  long long lo = 0, hi = N;
  while (lo < hi) {
    const long long mid = lo + (hi - lo) / 2;
    if (static_cast<long long>(sorted_key[mid]) < b) lo = mid + 1;
    else hi = mid;
  }
  start[b] = lo;
}

// --- 3. scatter

// Node n of the unpadded grid (axis 0 fastest) sums the charges of the points whose stencils reach
// it: stencil positions s with n_d - p < s_d <= n_d, in their linear order, each position's points
// in sorted (index) order, each weighted as math::for_stencil_nodes weights it on the CPU.
template <int D>
__global__ void scatter_kernel(const double* __restrict__ y, Shape g, const long long* __restrict__ start,
                               const index_t* __restrict__ order, const double* __restrict__ weights,
                               double* __restrict__ charges) {
  const long long n = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (n >= g.num_nodes) return;
  int nd[3] = {0, 0, 0}, lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
  long node = 0;
  long long rest = n;
  for (int d = 0; d < D; ++d) {
    nd[d] = static_cast<int>(rest % g.nodes[d]);
    rest /= g.nodes[d];
    node += nd[d] * g.node_stride[d];
    math::stencils_reaching(nd[d], g.p, static_cast<int>(g.sten[d]), lo[d], hi[d]);
  }
  double c[D + 1] = {};
  for (int s2 = lo[2]; s2 <= hi[2]; ++s2)
    for (int s1 = lo[1]; s1 <= hi[1]; ++s1)
      for (int s0 = lo[0]; s0 <= hi[0]; ++s0) {
        const long b = s0 + s1 * g.sten_stride[1] + (D == 3 ? s2 * g.sten_stride[2] : 0);
        for (long long q = start[b]; q < start[b + 1]; ++q) {
          const index_t i = order[q];
          const double wt = math::stencil_node_weight<D>(weights + i * D * g.p, g.p, nd[0] - s0, nd[1] - s1, nd[2] - s2);
          c[0] += wt;
          for (int d = 0; d < D; ++d) c[d + 1] += wt * (y[i * D + d] - g.centre[d]);
        }
      }
  for (int q = 0; q <= D; ++q) charges[q * g.cells + node] = c[q];
}

// --- 4. convolution

// The two kernels on the padded grid at their circular offsets (math::circular_offset), into grids
// 0 (H) and 1 (HS) of `out`.
template <int D>
__global__ void kernel_grid_kernel(Shape g, double h, double alpha, double* __restrict__ out) {
  const long long c = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= g.cells) return;
  long long rest = c;
  bool used = true;
  double tau = 0;
  for (int d = 0; d < D; ++d) {
    const int j = static_cast<int>(rest % (2 * g.nodes[d]));
    rest /= 2 * g.nodes[d];
    int o;
    used = math::circular_offset(j, g.nodes[d], o) && used;
    tau += h * h * (static_cast<double>(o) * o);
  }
  out[c] = used ? math::tail_kernel_h(tau, alpha) : 0.0;
  out[g.cells + c] = used ? math::tail_kernel_hs(tau, alpha) : 0.0;
}

// The kernels' spectra: real (the kernels are even), scaled by 1 / M for cuFFT's unnormalised inverse.
__global__ void kernel_spectra_kernel(const cufftDoubleComplex* __restrict__ s, long n, double scale,
                                      double* __restrict__ kh, double* __restrict__ khs) {
  const long long q = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (q >= n) return;
  kh[q] = s[q].x * scale;
  khs[q] = s[n + q].x * scale;
}

// Products: H and HS times charge 1, HS times each y_d - c_d.
template <int D>
__global__ void multiply_kernel(const cufftDoubleComplex* __restrict__ s, long n, const double* __restrict__ kh,
                                const double* __restrict__ khs, cufftDoubleComplex* __restrict__ out) {
  const long long q = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (q >= n) return;
  const cufftDoubleComplex s0 = s[q];
  out[q] = make_cuDoubleComplex(s0.x * kh[q], s0.y * kh[q]);
  out[n + q] = make_cuDoubleComplex(s0.x * khs[q], s0.y * khs[q]);
  for (int d = 0; d < D; ++d) {
    const cufftDoubleComplex sd = s[(1 + d) * n + q];
    out[(2 + d) * n + q] = make_cuDoubleComplex(sd.x * khs[q], sd.y * khs[q]);
  }
}

// Block b's part of sum_q twice(q) |s_q|^2 kh_q over the charges' spectrum (Parseval: the grid's
// share of Z; kh is scaled by 1 / M already), into part[b]; the host adds the parts in order. Axis
// 0, the fastest, is halved to G_0 + 1 coefficients: those but 0 and G_0 stand for two.
__global__ void __launch_bounds__(kThreads) energy_kernel(const cufftDoubleComplex* __restrict__ s, Shape g,
                                                          const double* __restrict__ kh, double* __restrict__ part) {
  using Reduce = cub::BlockReduce<double, kThreads>;
  __shared__ typename Reduce::TempStorage tmp;
  double e = 0;
  for (long long q = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x; q < g.spectrum;
       q += static_cast<long long>(gridDim.x) * kThreads) {
    e += math::parseval_term(s[q].x, s[q].y, kh[q], static_cast<long>(q % (g.nodes[0] + 1)), g.nodes[0]);
  }
  const double total = Reduce(tmp).Sum(e);
  if (threadIdx.x == 0) part[blockIdx.x] = total;
}

// --- 5. gather

// The first node of stencil position b in the padded grid.
template <int D>
__device__ __forceinline__ long stencil_base(const Shape& g, long b) {
  long base = 0;
  for (int d = 0; d < D; ++d) base += (b / g.sten_stride[d]) % g.sten[d] * g.node_stride[d];
  return base;
}

// The point at sorted position q (inside the grid) reads its sums: out rows h (minus its self term
// only: the grid's share of Z is a total, energy_kernel), hs, hsy_d.
template <int D>
__global__ void gather_kernel(const double* __restrict__ y, long long N, long long inside, Shape g,
                              const unsigned* __restrict__ sorted_key, const index_t* __restrict__ order,
                              const double* __restrict__ weights, const double* __restrict__ potentials,
                              const double* __restrict__ self_h, const double* __restrict__ self_hs,
                              double* __restrict__ out) {
  const long long q = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (q >= inside) return;
  const index_t i = order[q];
  const double* wi = weights + i * D * g.p;
  double acc[D + 2], sh, shs, yi[D], h, hs, hsy[D];
  math::gather_potentials<D>(g.p, wi, g.node_stride, stencil_base<D>(g, static_cast<long>(sorted_key[q])), potentials,
                             g.cells, acc, 1);
  math::grid_self_term<D>(wi, g.p, self_h, self_hs, sh, shs);
  for (int d = 0; d < D; ++d) yi[d] = y[i * D + d];
  math::grid_point_sums<D>(acc, sh, shs, g.centre, yi, h, hs, hsy);
  out[i] = h;
  out[N + i] = hs;
  for (int d = 0; d < D; ++d) out[(2 + d) * N + i] = hsy[d];
}

// Query point a of a frozen field (freeze) reads its sums over every charge on the grid (no self
// term: it is none of them), its weights made here as the scatter made the charges'; inside[a] = 0
// and sums 0 for a point outside the grid. The inside test is the CPU's (RepulsionGrid::sums_at).
template <int D>
__global__ void gather_at_kernel(const double* __restrict__ q, long long count, Shape g,
                                 const double* __restrict__ potentials, double* __restrict__ out,
                                 unsigned char* __restrict__ inside) {
  const long long a = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (a >= count) return;
  double wi[D * math::kMaxInterpNodes], ya[D];
  long base = 0;
  bool in = true;
  for (int d = 0; d < D; ++d) {
    ya[d] = q[a * D + d];
    in = in && ya[d] >= g.origin[d] && ya[d] <= g.origin[d] + g.w * g.boxes[d];
    double u;
    base += math::stencil_of(ya[d], g.origin[d], g.h, g.nodes[d], g.p, u) * g.node_stride[d];
    math::lagrange_weights(u, g.p, wi + d * g.p);
  }
  inside[a] = in ? 1 : 0;
  double acc[D + 2] = {}, h = 0, hs = 0, hsy[D] = {};
  if (in) {
    math::gather_potentials<D>(g.p, wi, g.node_stride, base, potentials, g.cells, acc);
    math::grid_point_sums<D>(acc, 0.0, 0.0, g.centre, ya, h, hs, hsy);  // no self term
  }
  out[a] = h;
  out[count + a] = hs;
  for (int d = 0; d < D; ++d) out[(2 + d) * count + a] = hsy[d];
}

double seconds_since(std::chrono::steady_clock::time_point& t) {
  const auto now = std::chrono::steady_clock::now();
  const double s = std::chrono::duration<double>(now - t).count();
  t = now;
  return s;
}

}  // namespace

struct DeviceGrid::Impl {
  int device = current_device();  // the plans' and buffers' device, where ~DeviceGrid frees them
  int D;
  double alpha;
  InterpSettings s;
  long long N;
  Shape g;
  std::vector<int> boxes;  // the current shape's boxes per axis (empty: none yet)
  double spacing = 0;
  cufftHandle forward = 0, inverse = 0;
  bool plans = false;
  std::vector<long long> all_trims;  // 1, 2, 4, ..., N / 128
  DeviceBuffer<long long> trims_dev, start;
  DeviceBuffer<double> bounds_part, col, sorted_col, picks, weights, charges, potentials, kernel_h, kernel_hs, self_h,
      self_hs;
  DeviceBuffer<cufftDoubleComplex> spectra, products;
  DeviceBuffer<int> far_flag, far_pos;
  DeviceBuffer<index_t> far, index, order;
  DeviceBuffer<unsigned> key, sorted_key;
  CubScratch scratch;
  Timings timings;
  bool frozen = false;  // the potentials are a frozen reference's (freeze), for sums_at

  Impl(int dim, double a, const InterpSettings& st, long long n) : D(dim), alpha(a), s(st), N(n) {
    for (long long t = 1; t <= N / 128; t *= 2) all_trims.push_back(t);
    if (!all_trims.empty()) trims_dev.upload(all_trims.data(), all_trims.size());
    const size_t un = static_cast<size_t>(N);
    bounds_part.resize(static_cast<size_t>(kBoundsBlocks) * 2 * D);
    weights.resize(un * D * s.nodes);
    far_flag.resize(un);
    far_pos.resize(un);
    far.resize(un);
    index.resize(un);
    order.resize(un);
    key.resize(un);
    sorted_key.resize(un);
    g.p = s.nodes;
  }
  ~Impl() { release_plans(); }

  void release_plans() {
    if (plans) {
      cufftDestroy(forward);
      cufftDestroy(inverse);
    }
    plans = false;
  }

  interp::Bounds full_box(const double* y) {
    if (D == 2) bounds_kernel<2><<<kBoundsBlocks, kThreads>>>(y, N, bounds_part.get());
    else bounds_kernel<3><<<kBoundsBlocks, kThreads>>>(y, N, bounds_part.get());
    ORRERY_CUDA_LAUNCHED("bounds_kernel");
    std::vector<double> part(bounds_part.size());
    bounds_part.download(part.data(), part.size());
    interp::Bounds b;
    for (int d = 0; d < D; ++d) {
      b.lo[d] = std::numeric_limits<double>::infinity();
      b.hi[d] = -b.lo[d];
      for (int k = 0; k < kBoundsBlocks; ++k) {
        b.lo[d] = std::min(b.lo[d], part[static_cast<size_t>(k * 2 * D + 2 * d)]);
        b.hi[d] = std::max(b.hi[d], part[static_cast<size_t>(k * 2 * D + 2 * d + 1)]);
      }
      if (!std::isfinite(b.lo[d]) || !std::isfinite(b.hi[d])) internal_error("interpolated repulsion: the map is not finite");
    }
    return b;
  }

  // The box to grid (interp::cheapest_bounds over the trims worth trying), its padded cells, and
  // the far points' flags and list; returns the far count.
  long long choose(const double* y, interp::Bounds& box, double& cells) {
    const interp::Bounds full = full_box(y);
    box = full;
    cells = interp::plan_cells(interp::plan_grid(full, D, s, false), s.nodes);
    const std::vector<index_t> trims = interp::trims_to_try(N, interp::grid_units(cells, D));
    if (trims.empty()) return 0;
    const int T = static_cast<int>(trims.size());
    col.resize(static_cast<size_t>(N));
    sorted_col.resize(static_cast<size_t>(N));
    picks.resize(static_cast<size_t>(2 * T * D));
    for (int d = 0; d < D; ++d) {
      column_kernel<<<blocks_for(N), kThreads>>>(y, N, D, d, col.get());
      ORRERY_CUDA_LAUNCHED("column_kernel");
      scratch.run([&](void* tmp, size_t& bytes) {
        return cub::DeviceRadixSort::SortKeys(tmp, bytes, col.get(), sorted_col.get(), static_cast<int>(N));
      });
      pick_kernel<<<1, 64>>>(sorted_col.get(), N, trims_dev.get(), T, picks.get() + 2 * T * d);
      ORRERY_CUDA_LAUNCHED("pick_kernel");
    }
    std::vector<double> pk(picks.size());
    picks.download(pk.data(), pk.size());
    std::vector<interp::Bounds> candidates(static_cast<size_t>(T));
    for (int q = 0; q < T; ++q)
      for (int d = 0; d < D; ++d) {
        candidates[static_cast<size_t>(q)].lo[d] = pk[static_cast<size_t>(2 * T * d + 2 * q)];
        candidates[static_cast<size_t>(q)].hi[d] = pk[static_cast<size_t>(2 * T * d + 2 * q + 1)];
      }
    box = interp::cheapest_bounds(full, candidates, trims, N, D, s, cells);
    bool same = true;
    for (int d = 0; d < D; ++d) same = same && box.lo[d] == full.lo[d] && box.hi[d] == full.hi[d];
    if (same) return 0;
    const double3 lo = make_double3(box.lo[0], box.lo[1], D == 3 ? box.lo[2] : 0.0);
    const double3 hi = make_double3(box.hi[0], box.hi[1], D == 3 ? box.hi[2] : 0.0);
    if (D == 2) far_flag_kernel<2><<<blocks_for(N), kThreads>>>(y, N, lo, hi, far_flag.get());
    else far_flag_kernel<3><<<blocks_for(N), kThreads>>>(y, N, lo, hi, far_flag.get());
    ORRERY_CUDA_LAUNCHED("far_flag_kernel");
    scratch.run([&](void* tmp, size_t& bytes) {
      return cub::DeviceScan::ExclusiveSum(tmp, bytes, far_flag.get(), far_pos.get(), static_cast<int>(N));
    });
    far_list_kernel<<<blocks_for(N), kThreads>>>(far_flag.get(), far_pos.get(), N, far.get());
    ORRERY_CUDA_LAUNCHED("far_list_kernel");
    int last_pos = 0, last_flag = 0;
    ORRERY_CUDA_CHECK(cudaMemcpy(&last_pos, far_pos.get() + N - 1, sizeof(int), cudaMemcpyDeviceToHost));
    ORRERY_CUDA_CHECK(cudaMemcpy(&last_flag, far_flag.get() + N - 1, sizeof(int), cudaMemcpyDeviceToHost));
    return static_cast<long long>(last_pos) + last_flag;
  }

  // The grid's arrays for `need` boxes per axis and node spacing h; reused while neither changes.
  void shape(const std::vector<int>& need, double h) {
    std::vector<int> b(need);
    for (int& n : b) n = interp::friendly_boxes(n, s.nodes);
    if (b == boxes && h == spacing && plans) return;
    release_plans();
    for (auto* buf : {&charges, &potentials, &kernel_h, &kernel_hs}) buf->resize(0);
    spectra.resize(0);
    products.resize(0);
    boxes = b;
    spacing = h;
    const int p = s.nodes;
    g.cells = 1;
    g.num_nodes = 1;
    g.num_sten = 1;
    for (int d = 0; d < D; ++d) {
      g.boxes[d] = boxes[static_cast<size_t>(d)];
      g.nodes[d] = g.boxes[d] * p;
      g.node_stride[d] = d == 0 ? 1 : g.node_stride[d - 1] * 2 * g.nodes[d - 1];
      g.cells *= 2L * g.nodes[d];
      g.num_nodes *= g.nodes[d];
      g.sten[d] = g.nodes[d] - p + 1;
      g.sten_stride[d] = d == 0 ? 1 : g.sten_stride[d - 1] * g.sten[d - 1];
      g.num_sten *= g.sten[d];
    }
    g.spectrum = g.cells / (2L * g.nodes[0]) * (g.nodes[0] + 1);
    // cuFFT's axes are row-major (the last fastest): ours reversed.
    int n[3];
    for (int d = 0; d < D; ++d) n[D - 1 - d] = 2 * g.nodes[d];
    // Refused before anything is allocated: the grids, spectra, kernels and cuFFT's work areas.
    size_t free_bytes = 0, total = 0;
    ORRERY_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
    auto refuse = [&](double bytes) {
      std::string shape_text;
      for (int d = 0; d < D; ++d) shape_text += (d ? " x " : "") + std::to_string(2 * g.nodes[d]);
      input_error("params.interp_box: the interpolation grid for this map (" + shape_text + " cells, box width " +
                  std::to_string(h * p) + ") needs " + format_bytes(bytes) + " of device memory, more than the " +
                  format_bytes(static_cast<double>(free_bytes)) +
                  " free; use a larger params.interp_box or params.repulsion \"exact\"");
    };
    double bytes = 8.0 * (2 * D + 3) * static_cast<double>(g.cells) +
                   16.0 * (2 * D + 4) * static_cast<double>(g.spectrum) + 8.0 * static_cast<double>(g.num_sten + 1);
    if (bytes > static_cast<double>(free_bytes) || (D + 2) * g.cells > std::numeric_limits<int>::max()) refuse(bytes);
    size_t work_forward = 0, work_inverse = 0;
    ORRERY_CUFFT_CHECK(cufftEstimateMany(D, n, nullptr, 1, static_cast<int>(g.cells), nullptr, 1,
                                         static_cast<int>(g.spectrum), CUFFT_D2Z, D + 1, &work_forward));
    ORRERY_CUFFT_CHECK(cufftEstimateMany(D, n, nullptr, 1, static_cast<int>(g.spectrum), nullptr, 1,
                                         static_cast<int>(g.cells), CUFFT_Z2D, D + 2, &work_inverse));
    bytes += static_cast<double>(work_forward + work_inverse);
    if (bytes > static_cast<double>(free_bytes)) refuse(bytes);
    ORRERY_CUFFT_CHECK(cufftPlanMany(&forward, D, n, nullptr, 1, static_cast<int>(g.cells), nullptr, 1,
                                     static_cast<int>(g.spectrum), CUFFT_D2Z, D + 1));
    const cufftResult r = cufftPlanMany(&inverse, D, n, nullptr, 1, static_cast<int>(g.spectrum), nullptr, 1,
                                        static_cast<int>(g.cells), CUFFT_Z2D, D + 2);
    if (r != CUFFT_SUCCESS) cufftDestroy(forward);
    ORRERY_CUFFT_CHECK(r);
    plans = true;
    charges.resize(static_cast<size_t>((D + 1) * g.cells));
    potentials.resize(static_cast<size_t>((D + 2) * g.cells));
    spectra.resize(static_cast<size_t>((D + 1) * g.spectrum));
    products.resize(static_cast<size_t>((D + 2) * g.spectrum));
    kernel_h.resize(static_cast<size_t>(g.spectrum));
    kernel_hs.resize(static_cast<size_t>(g.spectrum));
    // the kernels through the charges' own plan: grids 0 and 1 hold H and HS, the rest zeros
    ORRERY_CUDA_CHECK(cudaMemset(charges.get(), 0, charges.size() * sizeof(double)));
    if (D == 2) kernel_grid_kernel<2><<<blocks_for(g.cells), kThreads>>>(g, h, alpha, charges.get());
    else kernel_grid_kernel<3><<<blocks_for(g.cells), kThreads>>>(g, h, alpha, charges.get());
    ORRERY_CUDA_LAUNCHED("kernel_grid_kernel");
    ORRERY_CUFFT_CHECK(cufftExecD2Z(forward, charges.get(), spectra.get()));
    kernel_spectra_kernel<<<blocks_for(g.spectrum), kThreads>>>(spectra.get(), g.spectrum,
                                                                1.0 / static_cast<double>(g.cells), kernel_h.get(),
                                                                kernel_hs.get());
    ORRERY_CUDA_LAUNCHED("kernel_spectra_kernel");
    std::vector<double> th, ths;
    interp::self_kernel_tables(D, p, h, alpha, th, ths);
    self_h.upload(th.data(), th.size());
    self_hs.upload(ths.data(), ths.size());
  }

  // Steps 2-4 over `box`: the grid, the charges of y's points but the far ones, the potentials.
  template <int D_>
  void field(const double* y, const interp::Bounds& box, long long far_count,
             std::chrono::steady_clock::time_point& t) {
    const interp::GridPlan plan = interp::plan_grid(box, D_, s);
    shape(plan.need, plan.w / s.nodes);
    g.w = plan.w;
    g.h = spacing;
    for (int d = 0; d < D_; ++d) {
      g.origin[d] = plan.origin[d];
      g.centre[d] = g.origin[d] + 0.5 * g.w * g.boxes[d];
    }
    // 2. stencils, weights, the points sorted by stencil position
    point_kernel<D_><<<blocks_for(N), kThreads>>>(y, N, g, far_count ? far_flag.get() : nullptr, key.get(), index.get(),
                                                   weights.get());
    ORRERY_CUDA_LAUNCHED("point_kernel");
    int end_bit = 1;
    while ((1L << end_bit) <= g.num_sten) ++end_bit;
    scratch.run([&](void* tmp, size_t& bytes) {
      return cub::DeviceRadixSort::SortPairs(tmp, bytes, key.get(), sorted_key.get(), index.get(), order.get(),
                                             static_cast<int>(N), 0, end_bit);
    });
    start.resize(static_cast<size_t>(g.num_sten + 1));
    key_start_kernel<<<blocks_for(g.num_sten + 1), kThreads>>>(sorted_key.get(), N, g.num_sten, start.get());
    ORRERY_CUDA_LAUNCHED("key_start_kernel");
    ORRERY_CUDA_CHECK(cudaDeviceSynchronize());
    timings.grid += seconds_since(t);
    // 3. scatter into the zero-padded grids
    ORRERY_CUDA_CHECK(cudaMemset(charges.get(), 0, charges.size() * sizeof(double)));
    scatter_kernel<D_><<<blocks_for(g.num_nodes), kThreads>>>(y, g, start.get(), order.get(), weights.get(),
                                                              charges.get());
    ORRERY_CUDA_LAUNCHED("scatter_kernel");
    ORRERY_CUDA_CHECK(cudaDeviceSynchronize());
    timings.scatter += seconds_since(t);
    // 4. convolutions
    ORRERY_CUFFT_CHECK(cufftExecD2Z(forward, charges.get(), spectra.get()));
    multiply_kernel<D_><<<blocks_for(g.spectrum), kThreads>>>(spectra.get(), g.spectrum, kernel_h.get(), kernel_hs.get(),
                                                              products.get());
    ORRERY_CUDA_LAUNCHED("multiply_kernel");
    ORRERY_CUFFT_CHECK(cufftExecZ2D(inverse, products.get(), potentials.get()));
    ORRERY_CUDA_CHECK(cudaDeviceSynchronize());
    timings.fft += seconds_since(t);
  }

  template <int D_>
  void run(const double* y, const interp::Bounds& box, long long far_count, double* out, double* z_grid) {
    auto t = std::chrono::steady_clock::now();
    field<D_>(y, box, far_count, t);
    frozen = false;
    energy_kernel<<<kBoundsBlocks, kThreads>>>(spectra.get(), g, kernel_h.get(), bounds_part.get());
    ORRERY_CUDA_LAUNCHED("energy_kernel");
    std::vector<double> part(kBoundsBlocks);
    bounds_part.download(part.data(), part.size());
    *z_grid = 0;
    for (double e : part) *z_grid += e;
    timings.fft += seconds_since(t);
    // 5. gather, then the far points exactly
    const long long inside = N - far_count;
    gather_kernel<D_><<<blocks_for(inside), kThreads>>>(y, N, inside, g, sorted_key.get(), order.get(), weights.get(),
                                                        potentials.get(), self_h.get(), self_hs.get(), out);
    ORRERY_CUDA_LAUNCHED("gather_kernel");
    ORRERY_CUDA_CHECK(cudaDeviceSynchronize());
    timings.gather += seconds_since(t);
    if (far_count) {
      far_own_kernel<D_, kThreads><<<static_cast<int>(far_count), kThreads>>>(y, N, alpha, far.get(), out);
      ORRERY_CUDA_LAUNCHED("far_own_kernel");
      far_share_kernel<D_><<<blocks_for(N), kThreads>>>(y, N, alpha, far.get(), far_count, far_flag.get(), out);
      ORRERY_CUDA_LAUNCHED("far_share_kernel");
      ORRERY_CUDA_CHECK(cudaDeviceSynchronize());
    }
    timings.far += seconds_since(t);
    timings.far_points = far_count;
    ++timings.calls;
  }
};

DeviceGrid::DeviceGrid(int dim, double alpha, const InterpSettings& settings, long long N)
    : impl_(std::make_unique<Impl>(dim, alpha, settings, N)) {
  if (dim != 2 && dim != 3) internal_error("DeviceGrid: D must be 2 or 3");
  if (settings.nodes < 2 || settings.nodes > math::kMaxInterpNodes) internal_error("DeviceGrid: nodes outside 2..8");
  if (!(settings.box_width > 0)) internal_error("DeviceGrid: box width must be positive");
  if (N < 2 || N > std::numeric_limits<int>::max()) internal_error("DeviceGrid: N outside 2..2^31 - 1");
}

// The cuFFT plans (and the buffers) are freed on the device that made them, whichever device is
// current now; the previous device is restored.
DeviceGrid::~DeviceGrid() {
  const ScopedDevice on(impl_->device);
  impl_.reset();
}

bool DeviceGrid::sums(const double* y, double* out, bool only_if_cheaper, double* z_grid) {
  Impl& I = *impl_;
  auto t = std::chrono::steady_clock::now();
  interp::Bounds box;
  double cells = 0;
  const long long far_count = I.choose(y, box, cells);
  I.timings.grid += seconds_since(t);
  if (only_if_cheaper) {
    const double units = interp::grid_units(cells, I.D) +
                         interp::kPairUnits * 2.0 * static_cast<double>(far_count) * static_cast<double>(I.N);
    if (!interp::cheaper_than_pairs(cells, units, I.N)) return false;
  }
  if (I.D == 2) I.run<2>(y, box, far_count, out, z_grid);
  else I.run<3>(y, box, far_count, out, z_grid);
  return true;
}

void DeviceGrid::freeze(const double* reference, double margin) {
  Impl& I = *impl_;
  auto t = std::chrono::steady_clock::now();
  interp::Bounds box = I.full_box(reference);
  for (int d = 0; d < I.D; ++d) box.lo[d] -= margin, box.hi[d] += margin;
  I.timings.grid += seconds_since(t);
  if (I.D == 2) I.field<2>(reference, box, 0, t);
  else I.field<3>(reference, box, 0, t);
  I.frozen = true;
  ++I.timings.calls;
}

void DeviceGrid::sums_at(const double* q, long long count, double* out, unsigned char* inside) const {
  const Impl& I = *impl_;
  if (!I.frozen) internal_error("DeviceGrid::sums_at: no frozen reference");
  if (count <= 0) return;
  if (I.D == 2) gather_at_kernel<2><<<blocks_for(count), kThreads>>>(q, count, I.g, I.potentials.get(), out, inside);
  else gather_at_kernel<3><<<blocks_for(count), kThreads>>>(q, count, I.g, I.potentials.get(), out, inside);
  ORRERY_CUDA_LAUNCHED("gather_at_kernel");
}

DeviceGrid::Timings DeviceGrid::timings() const { return impl_->timings; }

}  // namespace orrery::cuda
