// NeRV's truncated cost on the GPU: math/nerv_cells.hpp's sweeps, one thread per point, over a grid
// built on the device each evaluation. The steps are the CPU's (host/cpu/nerv_cells.cpp):
//   1. the map in float by dimension, its box (a min/max reduction; 6 floats come back to plan
//      the grid on the host), each point's cell, a stable radix sort of (cell, index) over the bits
//      the cell ids use, the cells' starts by binary search, the sorted copies;
//   2. dmin by ring search, R^2, the wide rows (the (limit + 1)-th largest R^2, found by radix
//      selection (math/radix_select.hpp: the value a descending sort put there), when more than the
//      limit exceed kWideCells cells), each cell's largest column radius and its reach (atomicMax on
//      the bits of non-negative floats: order-free, so deterministic);
//   3. the rows' floor sums by sweep, then per point the listed sums and the row's scalars and cost;
//   4. the gradient sweep and the listed/wide terms, added per point in double.
// Only O(1) values cross to the host per evaluation (the box, the wide threshold, the cost).
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_select.cuh>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <vector>

#include "check.cuh"
#include "nerv_cells.cuh"
#include "orrery/engines.hpp"
#include "orrery/error.hpp"
#include "orrery/math/launch.hpp"
#include "orrery/math/nerv_cells.hpp"
#include "orrery/math/radix_select.hpp"
#include "reduce.cuh"

namespace orrery::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kBoxBlocks = 64;

int blocks_for(long long n) { return static_cast<int>((n + kThreads - 1) / kThreads); }

// y (N x D doubles) -> yo[a] (float, by dimension), and per-block minima and maxima of each axis.
// fminf/fmaxf skip a NaN, so a NaN coordinate would leave the box as if the point were absent; that
// is harmless here because such a map never gets a box: `bad` flags any coordinate that is not
// finite in float, and run() raises an error before it plans the grid from the box.
__global__ void __launch_bounds__(kThreads) split_kernel(const double* __restrict__ y, long long N, int D,
                                                          float* __restrict__ y0, float* __restrict__ y1,
                                                          float* __restrict__ y2, float* __restrict__ box_part,
                                                          int* __restrict__ bad) {
  __shared__ float lo[3][kThreads], hi[3][kThreads];
  float l[3] = {FLT_MAX, FLT_MAX, FLT_MAX}, h[3] = {-FLT_MAX, -FLT_MAX, -FLT_MAX};
  float* out[3] = {y0, y1, y2};
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < N;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    for (int a = 0; a < D; ++a) {
      const float v = static_cast<float>(y[i * D + a]);
      if (!isfinite(v)) *bad = 1;
      out[a][i] = v;
      l[a] = fminf(l[a], v), h[a] = fmaxf(h[a], v);
    }
  for (int a = 0; a < 3; ++a) lo[a][threadIdx.x] = l[a], hi[a][threadIdx.x] = h[a];
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s)
      for (int a = 0; a < 3; ++a) {
        lo[a][threadIdx.x] = fminf(lo[a][threadIdx.x], lo[a][threadIdx.x + s]);
        hi[a][threadIdx.x] = fmaxf(hi[a][threadIdx.x], hi[a][threadIdx.x + s]);
      }
    __syncthreads();
  }
  if (threadIdx.x == 0)
    for (int a = 0; a < 3; ++a) box_part[blockIdx.x * 6 + a] = lo[a][0], box_part[blockIdx.x * 6 + 3 + a] = hi[a][0];
}

template <int D>
__global__ void cell_kernel(math::NervCells<float, D> g, const float* __restrict__ y0, const float* __restrict__ y1,
                            const float* __restrict__ y2, long long N, long long* __restrict__ key,
                            long long* __restrict__ index) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= N) return;
  const float p[3] = {y0[i], D > 1 ? y1[i] : 0.f, D > 2 ? y2[i] : 0.f};
  int c[3];
  math::cells_of(g, p, c);
  key[i] = math::cells_index(g, c);
  index[i] = i;
}

// start[c] = the first sorted position whose cell is >= c, for c in [0, cells].
__global__ void starts_kernel(const long long* __restrict__ keys, long long N, long long cells,
                              long long* __restrict__ start) {
  const long long c = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c > cells) return;
  long long lo = 0, hi = N;
  while (lo < hi) {
    const long long mid = (lo + hi) / 2;
    if (keys[mid] < c) lo = mid + 1;
    else hi = mid;
  }
  start[c] = lo;
}

__global__ void gather_kernel(const float* __restrict__ from, const long long* __restrict__ perm, long long N,
                              float* __restrict__ to) {
  const long long k = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k < N) to[k] = from[perm[k]];
}

__global__ void scatter_kernel(const float* __restrict__ from, const long long* __restrict__ perm, long long N,
                               float* __restrict__ to) {
  const long long k = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k < N) to[perm[k]] = from[k];
}

template <int D>
__global__ void nearest_kernel(math::NervCells<float, D> g, long long N, float cutoff, float* __restrict__ dmin,
                               float* __restrict__ r2) {
  const long long k = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k >= N) return;
  const float d = math::nerv_cells_nearest(g, k);
  dmin[k] = d;
  r2[k] = d + cutoff / g.beta[k];
}

// Radix selection (math/radix_select.hpp), one pass: the digits of the keys still in the bracket,
// counted per block in shared memory and added into count (integer atomics: exact, any order).
__global__ void __launch_bounds__(math::kRadixBins) radix_count_kernel(const float* __restrict__ v, long long n,
                                                                      const math::RadixSelect* __restrict__ state,
                                                                      unsigned* __restrict__ count) {
  __shared__ unsigned bins[math::kRadixBins];
  bins[threadIdx.x] = 0;
  __syncthreads();
  const math::RadixSelect s = *state;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const unsigned key = math::radix_key(v[i]);
    if (math::radix_in_bracket(key, s)) atomicAdd(&bins[math::radix_digit(key, s.pass)], 1u);
  }
  __syncthreads();
  if (bins[threadIdx.x]) atomicAdd(&count[threadIdx.x], bins[threadIdx.x]);
}

// The pass's step (thread 0), then the counts cleared for the next pass.
__global__ void __launch_bounds__(math::kRadixBins) radix_step_kernel(unsigned* __restrict__ count,
                                                                     math::RadixSelect* __restrict__ state) {
  if (threadIdx.x == 0) math::radix_select_step(count, *state);
  __syncthreads();
  count[threadIdx.x] = 0;
}

// col_r2 and the wide flags (input order) from the threshold; each cell's largest col_r2.
__global__ void wide_kernel(const float* __restrict__ r2, const long long* __restrict__ perm, long long N,
                            float threshold, float* __restrict__ col_r2, int* __restrict__ wide_flag) {
  const long long k = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k >= N) return;
  const bool wide = r2[k] > threshold;
  col_r2[k] = wide ? -1.f : r2[k];
  wide_flag[perm[k]] = wide ? 1 : 0;
}

__global__ void cell_r2_kernel(const long long* __restrict__ start, long long cells, const float* __restrict__ col_r2,
                               float* __restrict__ cell_r2, int* __restrict__ reach_bits) {
  const long long c = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cells) return;
  float m = -1.f;
  for (long long k = start[c]; k < start[c + 1]; ++k) m = fmaxf(m, col_r2[k]);
  cell_r2[c] = m;
  reach_bits[c] = 0;  // the bits of 0.f
}

// Cell c reaches every cell whose box lies within its largest column radius of c's box.
template <int D>
__global__ void reach_kernel(math::NervCells<float, D> g, long long cells, const float* __restrict__ cell_r2,
                             int* __restrict__ reach_bits) {
  const long long c = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cells) return;
  const float r2 = cell_r2[c];
  if (r2 < 0) return;
  const int cc[3] = {static_cast<int>(c % g.g[0]), static_cast<int>((c / g.g[0]) % g.g[1]),
                     static_cast<int>(c / g.g[0] / g.g[1])};
  const int span = static_cast<int>(ceilf(sqrtf(r2) / g.h)) + 1;
  int lo[3], hi[3];
  for (int a = 0; a < 3; ++a) {
    lo[a] = a < D ? max(0, cc[a] - span) : 0;
    hi[a] = a < D ? min(g.g[a] - 1, cc[a] + span) : 0;
  }
  const int bits = __float_as_int(r2);
  for (int z = lo[2]; z <= hi[2]; ++z)
    for (int y = lo[1]; y <= hi[1]; ++y)
      for (int x = lo[0]; x <= hi[0]; ++x) {
        float gap = 0.f;
        const int xyz[3] = {x, y, z};
        for (int a = 0; a < D; ++a) {
          const int m = abs(xyz[a] - cc[a]) - 1;
          if (m > 0) gap += static_cast<float>(m) * g.h * static_cast<float>(m) * g.h;
        }
        if (gap > r2) continue;
        atomicMax(reach_bits + x + static_cast<long long>(g.g[0]) * (y + static_cast<long long>(g.g[1]) * z), bits);
      }
}

template <int D>
__global__ void row_sums_kernel(math::NervCells<float, D> g, long long N, const long long* __restrict__ perm,
                                double* __restrict__ z, double* __restrict__ t) {
  const long long k = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k >= N) return;
  const math::CellRowSums<float> s = math::nerv_cells_row_sums(g, k);
  z[perm[k]] = s.z;
  t[perm[k]] = s.t;
}

// Per point (input order): the listed sums, the row's scalars and its cost.
template <int D>
__global__ void finish_kernel(math::NervCellsRows<float, D> r, long long N, const double* __restrict__ z,
                              const double* __restrict__ t, double lambda, float* __restrict__ lz,
                              float* __restrict__ kl_qp, float* __restrict__ p_sum, float* __restrict__ q_scale,
                              double* __restrict__ cost) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= N) return;
  const math::ListedSums l = math::nerv_cells_listed_sums(r, i);
  const double b = r.beta[i];
  const math::NervRow<double> row =
      math::nerv_row_finish(b, -b * static_cast<double>(r.dmin[i]), z[i], t[i] + l.t, l.u, l.p);
  cost[i] = lambda * row.kl_pq + (1.0 - lambda) * row.kl_qp;
  lz[i] = static_cast<float>(log(z[i]));
  kl_qp[i] = static_cast<float>(row.kl_qp);
  p_sum[i] = static_cast<float>(row.p_sum);
  q_scale[i] = static_cast<float>(row.q_scale);
}

template <int D>
__global__ void gradient_kernel(math::NervCells<float, D> g, math::NervCellsRows<float, D> r, long long N,
                                const long long* __restrict__ perm, float lambda, double* __restrict__ grad) {
  const long long k = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k >= N) return;
  double a[3] = {0, 0, 0}, b[3] = {0, 0, 0};
  math::nerv_cells_gradient(g, k, lambda, a);
  const long long i = perm[k];
  math::nerv_cells_listed_gradient(r, i, lambda, b);
  for (int d = 0; d < D; ++d) grad[i * D + d] = 2.0 * (a[d] + b[d]);
}

}  // namespace

struct NervCellsDevice::Impl {
  long long n = 0;
  int dim = 2;
  double cutoff = 0.0, h0 = 0.0;
  DeviceBuffer<long long> row_ptr, col, t_ptr, t_row;
  DeviceBuffer<float> p, lp, lpf, beta, t_p, t_lp;
  // per evaluation
  DeviceBuffer<float> yo[3], ys[3], beta_s, lpf_s, dmin_s, r2_s, colr2_s, lz_s, klqp_s, psum_s, qs_s;
  DeviceBuffer<float> dmin_o, r2_o, lz_o, klqp_o, psum_o, qs_o, cell_r2, box_part;
  DeviceBuffer<long long> key, key_sorted, index, perm, start, wide, wide_count_dev;
  DeviceBuffer<int> reach_bits, wide_flag, bad;
  DeviceBuffer<double> z, t, cost;
  DeviceBuffer<unsigned> select_count;
  DeviceBuffer<math::RadixSelect> select_state;
  int select_blocks = 1;
  CubScratch scratch;
  Reducer reducer;

  // The rank-th largest of v[0, n) (0: the largest), as a descending sort would place it: kRadixPasses
  // counting passes over v and 4 + 16 bytes between host and device, instead of sorting n floats.
  float largest(const float* v, long long rank) {
    math::RadixSelect s;
    s.rank = rank;
    select_state.upload(&s, 1);
    ORRERY_CUDA_CHECK(cudaMemset(select_count.get(), 0, math::kRadixBins * sizeof(unsigned)));
    for (int pass = 0; pass < math::kRadixPasses; ++pass) {
      radix_count_kernel<<<select_blocks, math::kRadixBins>>>(v, n, select_state.get(), select_count.get());
      ORRERY_CUDA_LAUNCHED("radix_count_kernel");
      radix_step_kernel<<<1, math::kRadixBins>>>(select_count.get(), select_state.get());
      ORRERY_CUDA_LAUNCHED("radix_step_kernel");
    }
    select_state.download(&s, 1);
    return math::radix_value(s.prefix);
  }

  template <int D>
  double run(const double* y, double lambda, double* grad);
};

NervCellsDevice::NervCellsDevice(const SparseAffinity& P, const std::vector<double>& beta, double cutoff, int dim)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.n = P.num_points;
  m.dim = dim;
  m.cutoff = cutoff;
  if (dim != 2 && dim != 3) internal_error("nerv (cuda, approximate pairs): the map must be 2-D or 3-D");
  if (static_cast<long long>(beta.size()) != m.n || m.n < 2) internal_error("nerv (cuda, approximate pairs): P and beta disagree");
  const std::vector<double> floors = nerv_row_log_floors(P);
  const size_t nnz = P.col.size(), un = static_cast<size_t>(m.n);
  std::vector<long long> rp(P.row_ptr.begin(), P.row_ptr.end()), cl(P.col.begin(), P.col.end());
  std::vector<float> pv(nnz), lpv(nnz), lpfv(floors.begin(), floors.end()), bv(beta.begin(), beta.end());
  for (size_t e = 0; e < nnz; ++e) {
    pv[e] = static_cast<float>(P.val[e]);
    lpv[e] = static_cast<float>(math::nerv_log_prob(P.val[e], kNervProbabilityFloor));
  }
  const math::NervListsTranspose<float, long long> tr = math::nerv_lists_transpose(m.n, rp, cl, pv, lpv);
  m.row_ptr.upload(rp.data(), rp.size());
  m.col.upload(cl.data(), cl.size());
  m.t_ptr.upload(tr.ptr.data(), tr.ptr.size());
  m.t_row.upload(tr.row.data(), tr.row.size());
  m.t_p.upload(tr.p.data(), tr.p.size());
  m.t_lp.upload(tr.lp.data(), tr.lp.size());
  m.p.upload(pv.data(), pv.size());
  m.lp.upload(lpv.data(), lpv.size());
  m.lpf.upload(lpfv.data(), lpfv.size());
  m.beta.upload(bv.data(), bv.size());
  std::vector<double> sorted(beta);
  std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
  m.h0 = math::cells_side(cutoff, sorted[sorted.size() / 2]);
  for (auto* b : {&m.ys[0], &m.ys[1], &m.ys[2], &m.yo[0], &m.yo[1], &m.yo[2], &m.beta_s, &m.lpf_s, &m.dmin_s, &m.r2_s,
                  &m.colr2_s, &m.lz_s, &m.klqp_s, &m.psum_s, &m.qs_s, &m.dmin_o, &m.r2_o, &m.lz_o, &m.klqp_o, &m.psum_o,
                  &m.qs_o})
    b->resize(un);
  for (auto* b : {&m.key, &m.key_sorted, &m.index, &m.perm, &m.wide}) b->resize(un);
  m.wide_flag.resize(un);
  m.z.resize(un), m.t.resize(un), m.cost.resize(un);
  m.box_part.resize(6 * kBoxBlocks);
  m.bad.resize(1);
  m.wide_count_dev.resize(1);
  m.select_count.resize(math::kRadixBins);
  m.select_state.resize(1);
  // a few blocks per multiprocessor, each counting its strided share of the N values
  int device = 0, multiprocessors = 1;
  ORRERY_CUDA_CHECK(cudaGetDevice(&device));
  ORRERY_CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device));
  m.select_blocks = static_cast<int>(
      std::max(1LL, std::min<long long>(4LL * multiprocessors, (m.n + math::kRadixBins - 1) / math::kRadixBins)));
}

NervCellsDevice::~NervCellsDevice() = default;

double NervCellsDevice::evaluate(const double* y, double lambda, double* grad) {
  return impl_->dim == 2 ? impl_->run<2>(y, lambda, grad) : impl_->run<3>(y, lambda, grad);
}

template <int D>
double NervCellsDevice::Impl::run(const double* y, double lambda, double* grad) {
  const int nb = blocks_for(n);
  // 1. the map, its box, the grid, the points sorted by cell
  const int zero = 0;
  bad.upload(&zero, 1);
  split_kernel<<<kBoxBlocks, kThreads>>>(y, n, D, yo[0].get(), yo[1].get(), yo[2].get(), box_part.get(), bad.get());
  ORRERY_CUDA_LAUNCHED("split_kernel");
  std::vector<float> part(6 * kBoxBlocks);
  box_part.download(part.data(), part.size());
  int is_bad = 0;
  bad.download(&is_bad, 1);
  if (is_bad) internal_error("nerv (cuda, approximate pairs): a coordinate is not finite in float");
  double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
  for (int a = 0; a < D; ++a) {
    float l = FLT_MAX, h = -FLT_MAX;
    for (int b = 0; b < kBoxBlocks; ++b) l = std::min(l, part[static_cast<size_t>(6 * b + a)]), h = std::max(h, part[static_cast<size_t>(6 * b + 3 + a)]);
    lo[a] = l, hi[a] = h;
  }
  const math::CellsPlan plan = math::cells_plan(lo, hi, D, h0, n);
  math::NervCells<float, D> g{};
  for (int a = 0; a < 3; ++a) {
    g.lo[a] = static_cast<float>(lo[a]);
    g.g[a] = plan.g[a];
  }
  g.h = static_cast<float>(plan.h);
  g.inv_h = static_cast<float>(1.0 / plan.h);
  const long long cells = plan.cells;
  if (start.size() < static_cast<size_t>(cells) + 1) start.resize(static_cast<size_t>(cells) + 1);
  if (cell_r2.size() < static_cast<size_t>(cells)) cell_r2.resize(static_cast<size_t>(cells));
  if (reach_bits.size() < static_cast<size_t>(cells)) reach_bits.resize(static_cast<size_t>(cells));
  cell_kernel<D><<<nb, kThreads>>>(g, yo[0].get(), yo[1].get(), yo[2].get(), n, key.get(), index.get());
  ORRERY_CUDA_LAUNCHED("cell_kernel");
  // the cell ids are below `cells`: only their low bits need sorting (a few passes, not 64 bits')
  const int key_end_bit = math::key_bits(static_cast<unsigned long long>(cells - 1));
  scratch.run([&](void* tmp, size_t& bytes) {
    return cub::DeviceRadixSort::SortPairs(tmp, bytes, key.get(), key_sorted.get(), index.get(), perm.get(),
                                           static_cast<int>(n), 0, key_end_bit);
  });
  starts_kernel<<<blocks_for(cells + 1), kThreads>>>(key_sorted.get(), n, cells, start.get());
  ORRERY_CUDA_LAUNCHED("starts_kernel");
  for (int a = 0; a < D; ++a) {
    gather_kernel<<<nb, kThreads>>>(yo[a].get(), perm.get(), n, ys[a].get());
    ORRERY_CUDA_LAUNCHED("gather_kernel");
  }
  gather_kernel<<<nb, kThreads>>>(beta.get(), perm.get(), n, beta_s.get());
  ORRERY_CUDA_LAUNCHED("gather_kernel");
  gather_kernel<<<nb, kThreads>>>(lpf.get(), perm.get(), n, lpf_s.get());
  ORRERY_CUDA_LAUNCHED("gather_kernel");
  for (int a = 0; a < 3; ++a) g.y[a] = ys[a < D ? a : 0].get();
  g.start = start.get();
  g.beta = beta_s.get();
  g.lpf = lpf_s.get();

  // 2. nearest distances, radii, wide rows, the cells' radii and reach
  nearest_kernel<D><<<nb, kThreads>>>(g, n, static_cast<float>(cutoff), dmin_s.get(), r2_s.get());
  ORRERY_CUDA_LAUNCHED("nearest_kernel");
  g.dmin = dmin_s.get();
  g.r2 = r2_s.get();
  const float min_wide = static_cast<float>(math::kWideCells * plan.h) * static_cast<float>(math::kWideCells * plan.h);
  float threshold = min_wide;
  const long long limit = math::cells_wide_limit(n);
  if (limit < n) {
    // the limit-th largest R^2 (0-based), the value a descending sort put there, by selection
    const float at = largest(r2_s.get(), limit);
    if (at > threshold) threshold = at;  // more than `limit` exceed min_wide: only the limit widest are wide
  }
  wide_kernel<<<nb, kThreads>>>(r2_s.get(), perm.get(), n, threshold, colr2_s.get(), wide_flag.get());
  ORRERY_CUDA_LAUNCHED("wide_kernel");
  // index still holds 0..N-1 (the sort's input is not modified): the wide rows in input order
  scratch.run([&](void* tmp, size_t& bytes) {
    return cub::DeviceSelect::Flagged(tmp, bytes, index.get(), wide_flag.get(), wide.get(),
                                      wide_count_dev.get(), static_cast<int>(n));
  });
  long long num_wide = 0;
  wide_count_dev.download(&num_wide, 1);
  cell_r2_kernel<<<blocks_for(cells), kThreads>>>(start.get(), cells, colr2_s.get(), cell_r2.get(), reach_bits.get());
  ORRERY_CUDA_LAUNCHED("cell_r2_kernel");
  reach_kernel<D><<<blocks_for(cells), kThreads>>>(g, cells, cell_r2.get(), reach_bits.get());
  ORRERY_CUDA_LAUNCHED("reach_kernel");
  g.col_r2 = colr2_s.get();
  g.cell_r2 = cell_r2.get();
  g.reach2 = reinterpret_cast<const float*>(reach_bits.get());

  // 3. rows
  row_sums_kernel<D><<<nb, kThreads>>>(g, n, perm.get(), z.get(), t.get());
  ORRERY_CUDA_LAUNCHED("row_sums_kernel");
  scatter_kernel<<<nb, kThreads>>>(dmin_s.get(), perm.get(), n, dmin_o.get());
  ORRERY_CUDA_LAUNCHED("scatter_kernel");
  scatter_kernel<<<nb, kThreads>>>(r2_s.get(), perm.get(), n, r2_o.get());
  ORRERY_CUDA_LAUNCHED("scatter_kernel");
  math::NervCellsRows<float, D> rows{};
  for (int a = 0; a < 3; ++a) rows.y[a] = yo[a < D ? a : 0].get();
  rows.beta = beta.get();
  rows.dmin = dmin_o.get();
  rows.r2 = r2_o.get();
  rows.lpf = lpf.get();
  rows.row_ptr = row_ptr.get();
  rows.col = col.get();
  rows.p = p.get();
  rows.lp = lp.get();
  rows.t_ptr = t_ptr.get();
  rows.t_row = t_row.get();
  rows.t_p = t_p.get();
  rows.t_lp = t_lp.get();
  rows.wide = wide.get();
  rows.num_wide = num_wide;
  finish_kernel<D><<<nb, kThreads>>>(rows, n, z.get(), t.get(), lambda, lz_o.get(), klqp_o.get(), psum_o.get(),
                                     qs_o.get(), cost.get());
  ORRERY_CUDA_LAUNCHED("finish_kernel");
  const double E = reducer.sum(cost.get(), n);
  if (!grad) return E;

  // 4. the gradient
  rows.lz = lz_o.get();
  rows.kl_qp = klqp_o.get();
  rows.p_sum = psum_o.get();
  rows.q_scale = qs_o.get();
  const std::pair<DeviceBuffer<float>*, DeviceBuffer<float>*> sorted_of[] = {
      {&lz_o, &lz_s}, {&klqp_o, &klqp_s}, {&psum_o, &psum_s}, {&qs_o, &qs_s}};
  for (const auto& fs : sorted_of) {
    gather_kernel<<<nb, kThreads>>>(fs.first->get(), perm.get(), n, fs.second->get());
    ORRERY_CUDA_LAUNCHED("gather_kernel");
  }
  g.lz = lz_s.get();
  g.kl_qp = klqp_s.get();
  g.p_sum = psum_s.get();
  g.q_scale = qs_s.get();
  gradient_kernel<D><<<nb, kThreads>>>(g, rows, n, perm.get(), static_cast<float>(lambda), grad);
  ORRERY_CUDA_LAUNCHED("gradient_kernel");
  return E;
}

}  // namespace orrery::cuda
