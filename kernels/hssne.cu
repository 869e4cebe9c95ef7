// HSSNE on the GPU (MATH.md §4): the sums over pairs over the per-pair function of
// math/neighbor.hpp, and the optimisers' steps over its per-coordinate updates, with the map and
// every per-point array resident on the device.
//
// Pass 1, all pairs (hssne_pairs_kernel): one thread per point i, the points j in tiles of
// kThreads coordinates staged in shared memory. Each thread sums one tile in float (the same
// hssne_accumulate as the CPU), then adds the tile's sums into double accumulators, so rounding
// grows with the tile (256 pairs), not with N. The j range is split into a few chunks (grid.y) so
// that small N still fills the device; each chunk writes its partial sums.
// Pass 2, per point (hssne_finish_kernel): the chunks' partials summed in chunk order, for sparse
// P the attraction over the point's CSR row in double, and each block's share of the totals Z
// and sum P log H (a fixed-shape block reduction); hssne_totals_kernel adds the blocks' shares in
// block order. Same input, same device, same launch shape: the same bits.
// Steps (fixed_point_kernel, damp_kernel, gradient_step_kernel): a thread per point, in double.
//
// Dense P is read transposed (thread i reads Pt[j N + i] = P_ij), so a warp reads consecutive
// words. Per evaluation only the two totals come back to the host (16 bytes), which decides the
// next step; the map crosses at start() and coords() only.
#include <cub/block/block_reduce.cuh>

#include <algorithm>
#include <memory>
#include <vector>

#include "check.cuh"
#include "coords.cuh"
#include "engines.cuh"
#include "interp.cuh"
#include "orrery/affinity.hpp"
#include "orrery/engines.hpp"
#include "orrery/error.hpp"
#include "orrery/math/neighbor.hpp"
#include "pairs.cuh"
#include "stage_clock.cuh"

namespace orrery::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kPointThreads = 128;  // per-point kernels (finish, steps)
constexpr int kTotalsThreads = 256;

// Fields of a point's sums, in this order (partials and results): h, hs, hsy[D], then for dense
// P or the finished results a, p_log_h, ay[D].
template <int D>
constexpr int kRepulsive = 2 + D;
template <int D>
constexpr int kAll = 4 + 2 * D;

// One tile's pairs in float. The tile holding i itself (kSkipSelf) leaves the pair (i, i) out;
// every other tile runs without the test.
template <int D, bool kDense, bool kSkipSelf>
__device__ __forceinline__ void tile_sums(const float4* tile, int count, const float* yi, long long i, long long t0,
                                          long long N, float alpha, const float* __restrict__ Pt,
                                          math::HssneRow<double, D>& acc) {
  math::HssneRow<float, D> t;
  auto pair = [&](int q) {
    const float4 yj4 = tile[q];
    const float yj[3] = {yj4.x, yj4.y, yj4.z};
    const float p = kDense ? Pt[(t0 + q) * N + i] : 0.f;
    math::hssne_accumulate<float, D>(yi, yj, p, alpha, true, t);
  };
  if (!kSkipSelf && count == kThreads) {  // a full tile: a fixed trip count the compiler unrolls
#pragma unroll 8
    for (int q = 0; q < kThreads; ++q) pair(q);
  } else {
    for (int q = 0; q < count; ++q)
      if (!kSkipSelf || t0 + q != i) pair(q);
  }
  acc.h_sum += t.h_sum;
  acc.hs_sum += t.hs_sum;
  acc.a_sum += t.a_sum;
  acc.p_log_h += t.p_log_h;
  for (int d = 0; d < D; ++d) {
    acc.hsy[d] += t.hsy[d];
    acc.ay[d] += t.ay[d];
  }
}

template <int D, bool kDense>
__global__ void __launch_bounds__(kThreads) hssne_pairs_kernel(const float4* __restrict__ y, long long N,
                                                              float alpha, const float* __restrict__ Pt,
                                                              long long chunk, double* __restrict__ partial) {
  __shared__ float4 tile[kThreads];
  const long long first = static_cast<long long>(blockIdx.x) * kThreads;
  const long long i = first + threadIdx.x;
  const float4 yi4 = i < N ? y[i] : make_float4(0.f, 0.f, 0.f, 0.f);
  const float yi[3] = {yi4.x, yi4.y, yi4.z};
  math::HssneRow<double, D> acc;
  for_each_tile<kThreads>(
      chunk_range(N, chunk), i < N, [&](int slot, long long j) { tile[slot] = y[j]; },
      [&](long long t0, int count) {
        if (t0 == first) tile_sums<D, kDense, true>(tile, count, yi, i, t0, N, alpha, Pt, acc);
        else tile_sums<D, kDense, false>(tile, count, yi, i, t0, N, alpha, Pt, acc);
      });
  if (i >= N) return;
  constexpr int F = kDense ? kAll<D> : kRepulsive<D>;
  double* out = partial + static_cast<long long>(blockIdx.y) * F * N + i;
  out[0] = acc.h_sum;
  out[N] = acc.hs_sum;
  for (int d = 0; d < D; ++d) out[(2 + d) * N] = acc.hsy[d];
  if (kDense) {
    out[(2 + D) * N] = acc.a_sum;
    out[(3 + D) * N] = acc.p_log_h;
    for (int d = 0; d < D; ++d) out[(4 + D + d) * N] = acc.ay[d];
  }
}

// Results per point i, row-major: h, hs, hsy[D], a, p_log_h, ay[D]; and the block's totals of h
// and p_log_h in block_totals[2 blockIdx.x + {0, 1}].
template <int D, bool kDense>
__global__ void __launch_bounds__(kPointThreads)
    hssne_finish_kernel(const double* __restrict__ yd, long long N, int chunks, double alpha,
                        const double* __restrict__ partial, const index_t* __restrict__ row_ptr,
                        const index_t* __restrict__ col, const double* __restrict__ val, double* __restrict__ result,
                        double* __restrict__ block_totals) {
  using Reduce = cub::BlockReduce<double, kPointThreads>;
  __shared__ typename Reduce::TempStorage tmp;
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  constexpr int F = kDense ? kAll<D> : kRepulsive<D>;
  double sum[kAll<D>] = {};
  if (i < N) {
    for (int c = 0; c < chunks; ++c)
      for (int f = 0; f < F; ++f) sum[f] += partial[(static_cast<long long>(c) * F + f) * N + i];
    if (!kDense) {
      math::HssneRow<double, D> att;
      for (index_t q = row_ptr[i]; q < row_ptr[i + 1]; ++q)
        math::hssne_accumulate<double, D>(yd + i * D, yd + col[q] * D, val[q], alpha, false, att);
      sum[2 + D] = att.a_sum;
      sum[3 + D] = att.p_log_h;
      for (int d = 0; d < D; ++d) sum[4 + D + d] = att.ay[d];
    }
    for (int f = 0; f < kAll<D>; ++f) result[i * kAll<D> + f] = sum[f];
  }
  const double z = Reduce(tmp).Sum(sum[0]);
  __syncthreads();
  const double plh = Reduce(tmp).Sum(sum[3 + D]);
  if (threadIdx.x == 0) {
    block_totals[2 * blockIdx.x] = z;
    block_totals[2 * blockIdx.x + 1] = plh;
  }
}

// The blocks' totals summed in a fixed order: thread t folds blocks t, t + kTotalsThreads, ...,
// then a fixed-shape block reduction. One block; out = {Z, sum P log H}.
__global__ void __launch_bounds__(kTotalsThreads)
    hssne_totals_kernel(const double* __restrict__ block_totals, int blocks, double* __restrict__ out) {
  using Reduce = cub::BlockReduce<double, kTotalsThreads>;
  __shared__ typename Reduce::TempStorage tmp;
  double z = 0.0, plh = 0.0;
  for (int b = threadIdx.x; b < blocks; b += kTotalsThreads) {
    z += block_totals[2 * b];
    plh += block_totals[2 * b + 1];
  }
  const double zt = Reduce(tmp).Sum(z);
  __syncthreads();
  const double pt = Reduce(tmp).Sum(plh);
  if (threadIdx.x == 0) {
    out[0] = zt;
    out[1] = pt;
  }
}

// trial = Y + step (T_c(Y) - Y) + beta (Y - Y_prev) from the sums at Y (math::hssne_fixed_point_coord).
template <int D>
__global__ void fixed_point_kernel(const double* __restrict__ y, const double* __restrict__ prev,
                                   const double* __restrict__ sums, long long N, double c, double inv_z, double step,
                                   double beta, double* __restrict__ trial) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= N) return;
  const double* s = sums + i * kAll<D>;
  for (int d = 0; d < D; ++d)
    trial[i * D + d] =
        math::hssne_fixed_point_coord(y[i * D + d], prev[i * D + d], s[2 + D], s[1], s[4 + D + d], s[2 + d], c, inv_z,
                                      step, beta);
}

__global__ void damp_kernel(double* __restrict__ trial, const double* __restrict__ y, long long n) {
  const long long q = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (q < n) trial[q] = math::hssne_damp_coord(trial[q], y[q]);
}

// Y += velocity after math::tsne_momentum_step on the gradient at Y.
template <int D>
__global__ void gradient_step_kernel(double* __restrict__ y, double* __restrict__ velocity, double* __restrict__ gains,
                                     const double* __restrict__ sums, long long N, double c, double inv_z,
                                     double momentum, double learning_rate) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= N) return;
  const double* s = sums + i * kAll<D>;
  for (int d = 0; d < D; ++d) {
    const long long q = i * D + d;
    const double g = math::hssne_gradient_coord(y[q], s[2 + D], s[1], s[4 + D + d], s[2 + d], c, inv_z);
    y[q] += math::tsne_momentum_step(g, velocity[q], gains[q], momentum, learning_rate);
  }
}

class CudaHssneEngine final : public HssneEngine {
 public:
  CudaHssneEngine(int device, const MatrixD* dense, const SparseAffinity* sparse, double alpha, int dim,
                  const HssneRepulsion& repulsion)
      : device_(device), alpha_(alpha), dim_(dim), dense_(dense != nullptr) {
    if (dim != 2 && dim != 3) internal_error("hssne (cuda): D must be 2 or 3");
    ORRERY_CUDA_CHECK(cudaSetDevice(device_));
    cudaDeviceProp prop{};
    ORRERY_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
    name_ = "cuda:" + std::to_string(device_) + " " + prop.name;
    if (dense) {
      N_ = dense->rows;
      std::vector<float> pt(static_cast<size_t>(N_) * N_);
      for (long long j = 0; j < N_; ++j)
        for (long long i = 0; i < N_; ++i) pt[static_cast<size_t>(j * N_ + i)] = static_cast<float>((*dense)(i, j));
      pt_.upload(pt.data(), pt.size());
    } else {
      N_ = sparse->num_points;
      row_ptr_.upload(sparse->row_ptr.data(), sparse->row_ptr.size());
      col_.upload(sparse->col.data(), sparse->col.size());
      val_.upload(sparse->val.data(), sparse->val.size());
    }
    chunks_ = pair_chunks(N_, kThreads, prop.multiProcessorCount);
    point_blocks_ = static_cast<int>((N_ + kPointThreads - 1) / kPointThreads);
    const int F = dense_ ? (dim == 2 ? kAll<2> : kAll<3>) : (dim == 2 ? kRepulsive<2> : kRepulsive<3>);
    const size_t nd = static_cast<size_t>(N_) * dim, nf = static_cast<size_t>(N_) * (4 + 2 * dim);
    for (auto* b : {&y_, &prev_, &trial_, &velocity_, &gains_}) b->resize(nd);
    y4_.resize(static_cast<size_t>(N_));
    partial_.resize(static_cast<size_t>(chunks_.count) * F * N_);
    sums_.resize(nf);
    trial_sums_.resize(nf);
    block_totals_.resize(2 * static_cast<size_t>(point_blocks_));
    totals_.resize(2);
    host_totals_.resize(2);
    if (repulsion.interpolated) {
      if (dense_) internal_error("hssne (cuda): interpolated repulsion needs sparse P");
      grid_ = std::make_unique<DeviceGrid>(dim, alpha, repulsion.grid, N_);
      exact_when_cheaper_ = repulsion.exact_when_cheaper;
    }
  }

  std::string name() const override { return name_; }

  HssneTotals start(const MatrixD& Y) override {
    if (Y.rows != N_ || Y.cols != dim_) internal_error("hssne (cuda): Y has the wrong shape");
    ORRERY_CUDA_CHECK(cudaSetDevice(device_));
    const size_t nd = Y.data.size();
    y_.upload(Y.data.data(), nd);
    prev_.copy_from(y_, nd);
    trial_.copy_from(y_, nd);
    ORRERY_CUDA_CHECK(cudaMemset(velocity_.get(), 0, nd * sizeof(double)));
    const std::vector<double> ones(nd, 1.0);
    gains_.upload(ones.data(), nd);
    return cur_ = evaluate(y_, sums_);
  }

  HssneTotals propose(double c, double step, double beta) override {
    ORRERY_CUDA_CHECK(cudaSetDevice(device_));
    if (N_ == 0) return trial_totals_ = evaluate(trial_, trial_sums_);
    if (dim_ == 2) fixed_point_kernel<2><<<point_blocks_, kPointThreads>>>(y_.get(), prev_.get(), sums_.get(), N_, c, 1.0 / cur_.z, step, beta, trial_.get());
    else fixed_point_kernel<3><<<point_blocks_, kPointThreads>>>(y_.get(), prev_.get(), sums_.get(), N_, c, 1.0 / cur_.z, step, beta, trial_.get());
    ORRERY_CUDA_LAUNCHED("fixed_point_kernel");
    return trial_totals_ = evaluate(trial_, trial_sums_);
  }

  HssneTotals damp() override {
    ORRERY_CUDA_CHECK(cudaSetDevice(device_));
    const long long n = N_ * dim_;
    if (n > 0) {
      damp_kernel<<<static_cast<int>((n + kPointThreads - 1) / kPointThreads), kPointThreads>>>(trial_.get(), y_.get(),
                                                                                                n);
      ORRERY_CUDA_LAUNCHED("damp_kernel");
    }
    return trial_totals_ = evaluate(trial_, trial_sums_);
  }

  void accept() override {
    prev_.swap(y_);   // prev <- Y
    y_.swap(trial_);  // Y <- trial; the old prev becomes scratch
    sums_.swap(trial_sums_);
    cur_ = trial_totals_;
  }

  // The sums always include p log H here (`objective` only allows an engine to skip them).
  HssneTotals gradient_step(double c, double momentum, double learning_rate, bool /*objective*/) override {
    ORRERY_CUDA_CHECK(cudaSetDevice(device_));
    if (N_ == 0) return cur_ = evaluate(y_, sums_);
    if (dim_ == 2)
      gradient_step_kernel<2><<<point_blocks_, kPointThreads>>>(y_.get(), velocity_.get(), gains_.get(), sums_.get(),
                                                               N_, c, 1.0 / cur_.z, momentum, learning_rate);
    else
      gradient_step_kernel<3><<<point_blocks_, kPointThreads>>>(y_.get(), velocity_.get(), gains_.get(), sums_.get(),
                                                               N_, c, 1.0 / cur_.z, momentum, learning_rate);
    ORRERY_CUDA_LAUNCHED("gradient_step_kernel");
    return cur_ = evaluate(y_, sums_);
  }

  MatrixD coords() const override {
    ORRERY_CUDA_CHECK(cudaSetDevice(device_));
    MatrixD Y(N_, dim_);
    y_.download(Y.data.data(), Y.data.size());
    return Y;
  }

  HssneState state() const override {
    ORRERY_CUDA_CHECK(cudaSetDevice(device_));
    HssneState s{MatrixD(N_, dim_), MatrixD(N_, dim_), MatrixD(N_, dim_), MatrixD(N_, dim_)};
    y_.download(s.y.data.data(), s.y.data.size());
    prev_.download(s.prev.data.data(), s.prev.data.size());
    velocity_.download(s.velocity.data.data(), s.velocity.data.size());
    gains_.download(s.gains.data.data(), s.gains.data.size());
    return s;
  }

  HssneTotals restore(const HssneState& s) override {
    for (const MatrixD* m : {&s.y, &s.prev, &s.velocity, &s.gains})
      if (m->rows != N_ || m->cols != dim_) internal_error("hssne (cuda): a saved state has the wrong shape");
    ORRERY_CUDA_CHECK(cudaSetDevice(device_));
    const size_t nd = s.y.data.size();
    y_.upload(s.y.data.data(), nd);
    prev_.upload(s.prev.data.data(), nd);
    trial_.copy_from(y_, nd);
    velocity_.upload(s.velocity.data.data(), nd);
    gains_.upload(s.gains.data.data(), nd);
    return cur_ = evaluate(y_, sums_);
  }

  HssneStageTimes stage_times() const override {
    HssneStageTimes t = times_;
    const std::vector<double>& s = clock_.seconds();
    t.pairs = s[kPairsStage];
    t.attraction = s[kAttractionStage];
    return grid_ ? with_grid_stages(t, grid_->timings()) : t;
  }

  void current_sums(HssneSums& out) const override {
    ORRERY_CUDA_CHECK(cudaSetDevice(device_));
    const int F = 4 + 2 * dim_;
    std::vector<double> host(static_cast<size_t>(N_) * F);
    sums_.download(host.data(), host.size());
    for (auto* v : {&out.h, &out.p_log_h, &out.a, &out.hs}) v->resize(static_cast<size_t>(N_));
    if (out.ay.rows != N_ || out.ay.cols != dim_) out.ay = MatrixD(N_, dim_);
    if (out.hsy.rows != N_ || out.hsy.cols != dim_) out.hsy = MatrixD(N_, dim_);
    for (long long i = 0; i < N_; ++i) {
      const double* r = host.data() + i * F;
      const auto k = static_cast<size_t>(i);
      out.h[k] = r[0];
      out.hs[k] = r[1];
      out.a[k] = r[2 + dim_];
      out.p_log_h[k] = r[3 + dim_];
      for (int d = 0; d < dim_; ++d) {
        out.hsy(i, d) = r[2 + d];
        out.ay(i, d) = r[4 + dim_ + d];
      }
    }
  }

 private:
  // The sums at the map y (N x D doubles on the device) into `out`; the totals come back (the one
  // synchronisation: the optimiser needs them). Stages are timed by events on the stream
  // (StageClock), read only when stage_times() asks.
  HssneTotals evaluate(const DeviceBuffer<double>& y, DeviceBuffer<double>& out) {
    z_grid_ = 0;
    // No points, no pairs (pair_chunks plans no chunk): nothing to launch; the totals kernel
    // folds no blocks and writes 0, 0.
    if (N_ > 0 && dim_ == 2) launch<2>(y.get(), out.get());
    else if (N_ > 0) launch<3>(y.get(), out.get());
    hssne_totals_kernel<<<1, kTotalsThreads>>>(block_totals_.get(), point_blocks_, totals_.get());
    ORRERY_CUDA_LAUNCHED("hssne_totals_kernel");
    totals_.download(host_totals_.get(), 2);
    ++times_.evaluations;
    return {z_grid_ + host_totals_.get()[0], host_totals_.get()[1]};
  }

  // The repulsive sums into partial_ (chunk 0 of the pairs kernel's layout, from the grid; or
  // every chunk, from all pairs), then the finish kernel (the attraction, the per-point results).
  // Neither is awaited: their marks on the stream time them.
  template <int D>
  void launch(const double* yd, double* result) {
    int chunks = 1;
    z_grid_ = 0;  // the grid's share of Z, a total (the rows' h keep the rest)
    if (!(grid_ && grid_->sums(yd, partial_.get(), exact_when_cheaper_, &z_grid_))) {
      z_grid_ = 0;
      clock_.start();
      to_float4_kernel<<<point_blocks_, kPointThreads>>>(yd, N_, dim_, y4_.get());
      ORRERY_CUDA_LAUNCHED("to_float4_kernel");
      const dim3 grid = pair_grid(N_, kThreads, chunks_);
      const float a = static_cast<float>(alpha_);
      if (dense_) hssne_pairs_kernel<D, true><<<grid, kThreads>>>(y4_.get(), N_, a, pt_.get(), chunks_.chunk, partial_.get());
      else hssne_pairs_kernel<D, false><<<grid, kThreads>>>(y4_.get(), N_, a, nullptr, chunks_.chunk, partial_.get());
      ORRERY_CUDA_LAUNCHED("hssne_pairs_kernel");
      clock_.mark(kPairsStage);
      chunks = chunks_.count;
    } else {
      clock_.start();
    }
    finish<D>(yd, chunks, result);
    clock_.mark(kAttractionStage);
  }

  template <int D>
  void finish(const double* yd, int chunks, double* result) {
    if (dense_)
      hssne_finish_kernel<D, true><<<point_blocks_, kPointThreads>>>(yd, N_, chunks, alpha_, partial_.get(), nullptr,
                                                                     nullptr, nullptr, result, block_totals_.get());
    else
      hssne_finish_kernel<D, false><<<point_blocks_, kPointThreads>>>(yd, N_, chunks, alpha_, partial_.get(),
                                                                      row_ptr_.get(), col_.get(), val_.get(), result,
                                                                      block_totals_.get());
    ORRERY_CUDA_LAUNCHED("hssne_finish_kernel");
  }

  int device_;
  double alpha_;
  int dim_;
  bool dense_;
  long long N_ = 0;
  PairChunks chunks_;
  int point_blocks_ = 1;
  std::string name_;
  DeviceBuffer<float> pt_;
  DeviceBuffer<index_t> row_ptr_, col_;
  DeviceBuffer<double> val_, partial_, block_totals_, totals_;
  DeviceBuffer<double> y_, prev_, trial_, velocity_, gains_, sums_, trial_sums_;
  DeviceBuffer<float4> y4_;
  PinnedBuffer<double> host_totals_;
  HssneTotals cur_, trial_totals_;
  std::unique_ptr<DeviceGrid> grid_;  // null: exact repulsion over all pairs
  double z_grid_ = 0;                 // the last evaluation's grid share of Z (DeviceGrid::sums)
  bool exact_when_cheaper_ = false;
  HssneStageTimes times_;  // the evaluations; the stages' seconds are clock_'s
  static constexpr int kPairsStage = 0, kAttractionStage = 1;
  StageClock clock_{2};
};

}  // namespace

std::unique_ptr<HssneEngine> make_hssne_engine(int device, const MatrixD* dense, const SparseAffinity* sparse,
                                               double alpha, int dim, const HssneRepulsion& repulsion) {
  if ((dense == nullptr) == (sparse == nullptr)) internal_error("make_hssne_engine (cuda): give dense or sparse P");
  return std::make_unique<CudaHssneEngine>(device, dense, sparse, alpha, dim, repulsion);
}

}  // namespace orrery::cuda
