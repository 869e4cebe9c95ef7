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
//      by the kernels' real spectra (made once per grid shape and spacing, scaled by 1/M), the D + 1
//      HS products transformed back by one Z2D plan; the grid's share of Z from the unit charges'
//      spectrum by Parseval (energy_kernel; its block sums added on the host in order), as on the
//      CPU. The H product and its transform only a frozen field reads (a fit's h rows hold no grid
//      term): made there alone, as the CPU does without whole_h;
//   5. gather: one thread per point reads its stencil's nodes (math::gather_potentials) and removes its
//      self term (math::grid_self_term); far points get their sums over all points exactly (a block
//      each, a fixed-shape reduction), and every other point adds its sums over the far points
//      (exact_sums.cuh).
// Arrays are kept by capacity and plans by shape, so a growing map re-plans only when its padded
// shape changes. Stages are timed by events on the stream (StageClock): the only waits are for the
// values the host needs (the box, the order statistics, the far count, the energy).
// A frozen field (freeze, for placing new points) is steps 1-4 over a fixed map, kept; sums_at
// gathers at other points (no self term), flagging those outside the grid for exact sums.
// Grid arrays are double: the sums agree with the CPU's to the transforms' rounding (~1e-13
// relative), and the force's difference hsy - y hs keeps its digits on wide maps.
#include <cufft.h>

#include <cub/block/block_reduce.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
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
#include "orrery/math/launch.hpp"
#include "orrery/math/neighbor.hpp"
#include "orrery/memory_plan.hpp"
#include "stage_clock.cuh"

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

// Products: HS times charge 1, HS times each y_d - c_d, and with_h, H times charge 1 (product 0:
// only a frozen field reads its potential; a fit takes H's share from the energy instead).
template <int D>
__global__ void multiply_kernel(const cufftDoubleComplex* __restrict__ s, long n, const double* __restrict__ kh,
                                const double* __restrict__ khs, bool with_h, cufftDoubleComplex* __restrict__ out) {
  const long long q = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (q >= n) return;
  const cufftDoubleComplex s0 = s[q];
  if (with_h) out[q] = make_cuDoubleComplex(s0.x * kh[q], s0.y * kh[q]);
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

// Grows a buffer to at least n elements, with an eighth more for the next growth; never shrinks,
// so a map whose grid changes shape every few iterations reuses its arrays.
template <class T>
void grow(DeviceBuffer<T>& b, size_t n) {
  if (b.size() < n) b.resize(n + n / 8);
}

// The bytes grow() would add to a buffer of `have` elements for n of `size` bytes.
double growth_bytes(size_t have, size_t n, double size) {
  return have < n ? size * static_cast<double>(n + n / 8) - size * static_cast<double>(have) : 0.0;
}

// Stages of the grid's StageClock (DeviceGrid::Timings).
enum Stage { kGridStage, kScatterStage, kFftStage, kGatherStage, kFarStage, kStages };

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
  // cuFFT plans for the current shape (plans): the charges' D + 1 forward transforms, the D + 1
  // inverse ones a fit reads (products 1.. into potentials 1..), and, made on the first freeze of a
  // shape, H's own inverse (product 0, potential 0). They share one work area, grown only.
  cufftHandle forward = 0, inverse = 0, inverse_h = 0;
  bool plans = false, plan_h = false;
  bool spectra_made = false;  // kernel_h, kernel_hs and the self tables are the current shape's and h's
  DeviceBuffer<unsigned char> fft_work;
  std::vector<long long> all_trims;  // 1, 2, 4, ..., N / 128
  DeviceBuffer<long long> trims_dev, start;
  DeviceBuffer<double> bounds_part, col, sorted_col, picks, weights, charges, potentials, kernel_h, kernel_hs, self_h,
      self_hs;
  DeviceBuffer<cufftDoubleComplex> spectra, products;
  DeviceBuffer<int> far_flag, far_pos;
  DeviceBuffer<index_t> far, index, order;
  DeviceBuffer<unsigned> key, sorted_key;
  CubScratch scratch;
  StageClock clock{kStages};
  int calls = 0;
  long long far_points = 0;  // at the last call
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
    if (plan_h) cufftDestroy(inverse_h);
    plans = plan_h = false;
  }

  // A plan of `batch` transforms of the padded shape n (cuFFT's axis order) without a work area of
  // its own (the caller sets the shared one, grow_work_area); *work gets the size it needs.
  cufftHandle make_plan(const int* n, cufftType type, int batch, size_t* work) {
    cufftHandle plan = 0;
    ORRERY_CUFFT_CHECK(cufftCreate(&plan));
    const bool forward_type = type == CUFFT_D2Z;
    cufftResult r = cufftSetAutoAllocation(plan, 0);
    if (r == CUFFT_SUCCESS)
      r = cufftMakePlanMany(plan, D, const_cast<int*>(n), nullptr, 1,
                            static_cast<int>(forward_type ? g.cells : g.spectrum), nullptr, 1,
                            static_cast<int>(forward_type ? g.spectrum : g.cells), type, batch, work);
    if (r != CUFFT_SUCCESS) cufftDestroy(plan);
    ORRERY_CUFFT_CHECK(r);
    return plan;
  }

  // The shared work area grown to `bytes` (refused like the grid when it does not fit).
  void grow_work_area(size_t bytes) {
    if (fft_work.size() < bytes) {
      size_t free_bytes = 0, total = 0;
      ORRERY_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
      if (growth_bytes(fft_work.size(), bytes, 1.0) > static_cast<double>(free_bytes))
        input_error("params.interp_box: the interpolation grid's transforms need " +
                    format_bytes(static_cast<double>(bytes)) + " of work space on the device, more than the " +
                    format_bytes(static_cast<double>(free_bytes)) +
                    " free; use a larger params.interp_box or params.repulsion \"exact\"");
      grow(fft_work, bytes);
      // a moved area: the plans made before it are pointed at the new one
      if (plans)
        for (cufftHandle p : {forward, inverse}) ORRERY_CUFFT_CHECK(cufftSetWorkArea(p, fft_work.get()));
      if (plan_h) ORRERY_CUFFT_CHECK(cufftSetWorkArea(inverse_h, fft_work.get()));
    }
  }

  // H's own inverse transform for the current shape, for frozen fields (made once per shape).
  void need_h_plan() {
    if (plan_h) return;
    int n[3];
    for (int d = 0; d < D; ++d) n[D - 1 - d] = 2 * g.nodes[d];
    size_t work = 0;
    const cufftHandle plan = make_plan(n, CUFFT_Z2D, 1, &work);
    try {
      grow_work_area(work);
      ORRERY_CUFFT_CHECK(cufftSetWorkArea(plan, fft_work.get()));
    } catch (...) {
      cufftDestroy(plan);
      throw;
    }
    inverse_h = plan;
    plan_h = true;
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

  // The grid for `need` boxes per axis and node spacing h. The arrays are kept by capacity (grown
  // only, with headroom), the cuFFT plans are remade only when the padded shape changes, and the
  // kernels' spectra (and self tables) only when the shape or h does: all three are functions of
  // the shape and h alone, so a reused one is the same bits as a remade one.
  void shape(const std::vector<int>& need, double h) {
    std::vector<int> b(need);
    for (int& n : b) n = interp::friendly_boxes(n, s.nodes);
    if (b == boxes && h == spacing && plans && spectra_made) return;
    const bool same_shape = b == boxes && plans;
    const int p = s.nodes;
    if (!same_shape) {
      release_plans();
      spectra_made = false;
      boxes = b;
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
      make_arrays(h);
    }
    spacing = h;
    // the kernels through the charges' own plan: grids 0 and 1 hold H and HS, the rest zeros
    ORRERY_CUDA_CHECK(cudaMemset(charges.get(), 0, static_cast<size_t>((D + 1) * g.cells) * sizeof(double)));
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
    spectra_made = true;
  }

  // The current shape's arrays (grown as needed) and plans. Refused before anything is allocated
  // when what the arrays and the transforms' work area would add exceeds the free memory.
  void make_arrays(double h) {
    const int p = s.nodes;
    // cuFFT's axes are row-major (the last fastest): ours reversed.
    int n[3];
    for (int d = 0; d < D; ++d) n[D - 1 - d] = 2 * g.nodes[d];
    size_t free_bytes = 0, total = 0;
    ORRERY_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
    auto refuse = [&](double bytes) {
      std::string shape_text;
      for (int d = 0; d < D; ++d) shape_text += (d ? " x " : "") + std::to_string(2 * g.nodes[d]);
      input_error("params.interp_box: the interpolation grid for this map (" + shape_text + " cells, box width " +
                  std::to_string(h * p) + ") needs " + format_bytes(bytes) + " more of device memory, more than the " +
                  format_bytes(static_cast<double>(free_bytes)) +
                  " free; use a larger params.interp_box or params.repulsion \"exact\"");
    };
    const auto cells = static_cast<size_t>(g.cells), spectrum = static_cast<size_t>(g.spectrum);
    double bytes = growth_bytes(charges.size(), (D + 1) * cells, 8) + growth_bytes(potentials.size(), (D + 2) * cells, 8) +
                   growth_bytes(spectra.size(), (D + 1) * spectrum, 16) +
                   growth_bytes(products.size(), (D + 2) * spectrum, 16) + growth_bytes(kernel_h.size(), spectrum, 8) +
                   growth_bytes(kernel_hs.size(), spectrum, 8) +
                   growth_bytes(start.size(), static_cast<size_t>(g.num_sten + 1), 8);
    if (bytes > static_cast<double>(free_bytes) || (D + 2) * g.cells > std::numeric_limits<int>::max()) refuse(bytes);
    size_t work_forward = 0, work_inverse = 0;
    ORRERY_CUFFT_CHECK(cufftEstimateMany(D, n, nullptr, 1, static_cast<int>(g.cells), nullptr, 1,
                                         static_cast<int>(g.spectrum), CUFFT_D2Z, D + 1, &work_forward));
    ORRERY_CUFFT_CHECK(cufftEstimateMany(D, n, nullptr, 1, static_cast<int>(g.spectrum), nullptr, 1,
                                         static_cast<int>(g.cells), CUFFT_Z2D, D + 1, &work_inverse));
    bytes += growth_bytes(fft_work.size(), std::max(work_forward, work_inverse), 1);
    if (bytes > static_cast<double>(free_bytes)) refuse(bytes);
    grow(charges, (D + 1) * cells);
    grow(potentials, (D + 2) * cells);
    grow(spectra, (D + 1) * spectrum);
    grow(products, (D + 2) * spectrum);
    grow(kernel_h, spectrum);
    grow(kernel_hs, spectrum);
    grow(start, static_cast<size_t>(g.num_sten + 1));
    const cufftHandle f = make_plan(n, CUFFT_D2Z, D + 1, &work_forward);
    cufftHandle i = 0;
    bool made_i = false;
    try {
      i = make_plan(n, CUFFT_Z2D, D + 1, &work_inverse);
      made_i = true;
      grow_work_area(std::max(work_forward, work_inverse));
      ORRERY_CUFFT_CHECK(cufftSetWorkArea(f, fft_work.get()));
      ORRERY_CUFFT_CHECK(cufftSetWorkArea(i, fft_work.get()));
    } catch (...) {
      cufftDestroy(f);
      if (made_i) cufftDestroy(i);
      throw;
    }
    forward = f;
    inverse = i;
    plans = true;
  }

  // Steps 2-4 over `box`: the grid, the charges of y's points but the far ones, the potentials.
  // with_h: also H's potential (row 0), which only a frozen field reads.
  template <int D_>
  void field(const double* y, const interp::Bounds& box, long long far_count, bool with_h) {
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
    const int end_bit = math::key_bits(static_cast<unsigned long long>(g.num_sten));  // keys 0 .. num_sten
    scratch.run([&](void* tmp, size_t& bytes) {
      return cub::DeviceRadixSort::SortPairs(tmp, bytes, key.get(), sorted_key.get(), index.get(), order.get(),
                                             static_cast<int>(N), 0, end_bit);
    });
    key_start_kernel<<<blocks_for(g.num_sten + 1), kThreads>>>(sorted_key.get(), N, g.num_sten, start.get());
    ORRERY_CUDA_LAUNCHED("key_start_kernel");
    clock.mark(kGridStage);
    // 3. scatter into the zero-padded grids
    ORRERY_CUDA_CHECK(cudaMemset(charges.get(), 0, static_cast<size_t>((D_ + 1) * g.cells) * sizeof(double)));
    scatter_kernel<D_><<<blocks_for(g.num_nodes), kThreads>>>(y, g, start.get(), order.get(), weights.get(),
                                                              charges.get());
    ORRERY_CUDA_LAUNCHED("scatter_kernel");
    clock.mark(kScatterStage);
    // 4. convolutions
    if (with_h) need_h_plan();
    ORRERY_CUFFT_CHECK(cufftExecD2Z(forward, charges.get(), spectra.get()));
    multiply_kernel<D_><<<blocks_for(g.spectrum), kThreads>>>(spectra.get(), g.spectrum, kernel_h.get(), kernel_hs.get(),
                                                              with_h, products.get());
    ORRERY_CUDA_LAUNCHED("multiply_kernel");
    ORRERY_CUFFT_CHECK(cufftExecZ2D(inverse, products.get() + g.spectrum, potentials.get() + g.cells));
    if (with_h) ORRERY_CUFFT_CHECK(cufftExecZ2D(inverse_h, products.get(), potentials.get()));
    clock.mark(kFftStage);
  }

  template <int D_>
  void run(const double* y, const interp::Bounds& box, long long far_count, double* out, double* z_grid) {
    field<D_>(y, box, far_count, false);
    frozen = false;
    energy_kernel<<<kBoundsBlocks, kThreads>>>(spectra.get(), g, kernel_h.get(), bounds_part.get());
    ORRERY_CUDA_LAUNCHED("energy_kernel");
    std::vector<double> part(kBoundsBlocks);
    bounds_part.download(part.data(), part.size());
    *z_grid = 0;
    for (double e : part) *z_grid += e;
    clock.mark(kFftStage);
    // 5. gather, then the far points exactly
    const long long inside = N - far_count;
    gather_kernel<D_><<<blocks_for(inside), kThreads>>>(y, N, inside, g, sorted_key.get(), order.get(), weights.get(),
                                                        potentials.get(), self_h.get(), self_hs.get(), out);
    ORRERY_CUDA_LAUNCHED("gather_kernel");
    clock.mark(kGatherStage);
    if (far_count) {
      far_own_kernel<D_, kThreads><<<static_cast<int>(far_count), kThreads>>>(y, N, alpha, far.get(), out);
      ORRERY_CUDA_LAUNCHED("far_own_kernel");
      far_share_kernel<D_><<<blocks_for(N), kThreads>>>(y, N, alpha, far.get(), far_count, far_flag.get(), out);
      ORRERY_CUDA_LAUNCHED("far_share_kernel");
    }
    clock.mark(kFarStage);
    far_points = far_count;
    ++calls;
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
  I.clock.start();
  interp::Bounds box;
  double cells = 0;
  const long long far_count = I.choose(y, box, cells);
  I.clock.mark(kGridStage);
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
  I.clock.start();
  interp::Bounds box = I.full_box(reference);
  for (int d = 0; d < I.D; ++d) box.lo[d] -= margin, box.hi[d] += margin;
  I.clock.mark(kGridStage);
  if (I.D == 2) I.field<2>(reference, box, 0, true);
  else I.field<3>(reference, box, 0, true);
  I.frozen = true;
  ++I.calls;
}

void DeviceGrid::sums_at(const double* q, long long count, double* out, unsigned char* inside) const {
  const Impl& I = *impl_;
  if (!I.frozen) internal_error("DeviceGrid::sums_at: no frozen reference");
  if (count <= 0) return;
  if (I.D == 2) gather_at_kernel<2><<<blocks_for(count), kThreads>>>(q, count, I.g, I.potentials.get(), out, inside);
  else gather_at_kernel<3><<<blocks_for(count), kThreads>>>(q, count, I.g, I.potentials.get(), out, inside);
  ORRERY_CUDA_LAUNCHED("gather_at_kernel");
}

DeviceGrid::Timings DeviceGrid::timings() const {
  const std::vector<double>& sec = impl_->clock.seconds();
  Timings t;
  t.grid = sec[kGridStage];
  t.scatter = sec[kScatterStage];
  t.fft = sec[kFftStage];
  t.gather = sec[kGatherStage];
  t.far = sec[kFarStage];
  t.calls = impl_->calls;
  t.far_points = impl_->far_points;
  return t;
}

}  // namespace orrery::cuda
