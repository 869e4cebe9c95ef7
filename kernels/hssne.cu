// HSSNE sums on the GPU (MATH.md §4), over the per-pair function of math/neighbor.hpp.
//
// Pass 1, all pairs (hssne_pairs_kernel): one thread per point i, the points j in tiles of
// kThreads coordinates staged in shared memory. Each thread sums one tile in float (the same
// hssne_accumulate as the CPU), then adds the tile's sums into double accumulators, so rounding
// grows with the tile (256 pairs), not with N. The j range is split into a few chunks (grid.y) so
// that small N still fills the device; each chunk writes its partial sums.
// Pass 2, per point (hssne_finish_kernel): the chunks' partials summed in chunk order, and for
// sparse P the attraction over the point's CSR row in double. Same input, same device, same launch shape: the same bits.
//
// Dense P is read transposed (thread i reads Pt[j N + i] = P_ij), so a warp reads consecutive
// words. Y travels each evaluation (N D doubles up, 4 + 2 D doubles per point down, through
// page-locked buffers); P stays.
#include <algorithm>
#include <memory>
#include <vector>

#include "check.cuh"
#include "coords.cuh"
#include "orrery/error.hpp"
#include "orrery/hssne.hpp"
#include "orrery/math/neighbor.hpp"

namespace orrery {
namespace {

constexpr int kThreads = 256;

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
  const long long j0 = static_cast<long long>(blockIdx.y) * chunk;
  const long long j1 = j0 + chunk < N ? j0 + chunk : N;
  const float4 yi4 = i < N ? y[i] : make_float4(0.f, 0.f, 0.f, 0.f);
  const float yi[3] = {yi4.x, yi4.y, yi4.z};
  math::HssneRow<double, D> acc;
  for (long long t0 = j0; t0 < j1; t0 += kThreads) {
    __syncthreads();
    if (t0 + threadIdx.x < j1) tile[threadIdx.x] = y[t0 + threadIdx.x];
    __syncthreads();
    if (i >= N) continue;
    const int count = static_cast<int>(j1 - t0 < kThreads ? j1 - t0 : kThreads);
    if (t0 == first) tile_sums<D, kDense, true>(tile, count, yi, i, t0, N, alpha, Pt, acc);
    else tile_sums<D, kDense, false>(tile, count, yi, i, t0, N, alpha, Pt, acc);
  }
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

// Results per point i, row-major: h, hs, hsy[D], a, p_log_h, ay[D].
template <int D, bool kDense>
__global__ void hssne_finish_kernel(const double* __restrict__ yd, long long N,
                                    int chunks, double alpha, const double* __restrict__ partial,
                                    const index_t* __restrict__ row_ptr, const index_t* __restrict__ col,
                                    const double* __restrict__ val, double* __restrict__ result) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= N) return;
  constexpr int F = kDense ? kAll<D> : kRepulsive<D>;
  double sum[kAll<D>] = {};
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

class CudaHssneEngine final : public HssneEngine {
 public:
  CudaHssneEngine(int device, const MatrixD* dense, const SparseAffinity* sparse, double alpha, int dim)
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
    // Many blocks per multiprocessor (several waves, so the last one's tail is short): split j
    // into chunks of whole tiles.
    const long long blocks_i = (N_ + kThreads - 1) / kThreads;
    const long long target = 32LL * prop.multiProcessorCount;
    chunks_ = static_cast<int>(std::min<long long>(std::max<long long>(1, (target + blocks_i - 1) / blocks_i), blocks_i));
    const long long tiles = blocks_i;
    chunk_ = ((tiles + chunks_ - 1) / chunks_) * kThreads;
    chunks_ = static_cast<int>((N_ + chunk_ - 1) / chunk_);
    const int F = dense_ ? (dim == 2 ? kAll<2> : kAll<3>) : (dim == 2 ? kRepulsive<2> : kRepulsive<3>);
    yd_.resize(static_cast<size_t>(N_) * dim);
    y4_.resize(static_cast<size_t>(N_));
    partial_.resize(static_cast<size_t>(chunks_) * F * N_);
    result_.resize(static_cast<size_t>(N_) * (4 + 2 * dim));
    host_.resize(result_.size());
    host_y_.resize(static_cast<size_t>(N_) * dim);
  }

  std::string name() const override { return name_; }

  void sums(const MatrixD& Y, HssneSums& out) override {
    if (Y.rows != N_ || Y.cols != dim_) internal_error("hssne (cuda): Y has the wrong shape");
    ORRERY_CUDA_CHECK(cudaSetDevice(device_));
    std::copy(Y.data.begin(), Y.data.end(), host_y_.get());
    ORRERY_CUDA_CHECK(cudaMemcpy(yd_.get(), host_y_.get(), Y.data.size() * sizeof(double), cudaMemcpyHostToDevice));
    const int pb = static_cast<int>((N_ + 127) / 128);
    cuda::to_float4_kernel<<<pb, 128>>>(yd_.get(), N_, dim_, y4_.get());
    ORRERY_CUDA_LAUNCHED("to_float4_kernel");
    if (dim_ == 2) launch<2>();
    else launch<3>();
    result_.download(host_.get(), host_.size());
    const int F = 4 + 2 * dim_;
    for (auto* v : {&out.h, &out.p_log_h, &out.a, &out.hs}) v->resize(static_cast<size_t>(N_));
    if (out.ay.rows != N_ || out.ay.cols != dim_) out.ay = MatrixD(N_, dim_);
    if (out.hsy.rows != N_ || out.hsy.cols != dim_) out.hsy = MatrixD(N_, dim_);
    for (long long i = 0; i < N_; ++i) {
      const double* r = host_.get() + i * F;
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
  template <int D>
  void launch() {
    const dim3 grid(static_cast<unsigned>((N_ + kThreads - 1) / kThreads), static_cast<unsigned>(chunks_));
    const float a = static_cast<float>(alpha_);
    if (dense_) hssne_pairs_kernel<D, true><<<grid, kThreads>>>(y4_.get(), N_, a, pt_.get(), chunk_, partial_.get());
    else hssne_pairs_kernel<D, false><<<grid, kThreads>>>(y4_.get(), N_, a, nullptr, chunk_, partial_.get());
    ORRERY_CUDA_LAUNCHED("hssne_pairs_kernel");
    const int pb = static_cast<int>((N_ + 127) / 128);
    if (dense_)
      hssne_finish_kernel<D, true><<<pb, 128>>>(yd_.get(), N_, chunks_, alpha_, partial_.get(), nullptr,
                                                nullptr, nullptr, result_.get());
    else
      hssne_finish_kernel<D, false><<<pb, 128>>>(yd_.get(), N_, chunks_, alpha_, partial_.get(),
                                                 row_ptr_.get(), col_.get(), val_.get(), result_.get());
    ORRERY_CUDA_LAUNCHED("hssne_finish_kernel");
  }

  int device_;
  double alpha_;
  int dim_;
  bool dense_;
  long long N_ = 0, chunk_ = 0;
  int chunks_ = 1;
  std::string name_;
  cuda::DeviceBuffer<float> pt_;
  cuda::DeviceBuffer<index_t> row_ptr_, col_;
  cuda::DeviceBuffer<double> val_, yd_, partial_, result_;
  cuda::DeviceBuffer<float4> y4_;
  cuda::PinnedBuffer<double> host_, host_y_;
};

}  // namespace

std::unique_ptr<HssneEngine> make_hssne_engine_cuda(int device, const MatrixD* dense, const SparseAffinity* sparse,
                                                    double alpha, int dim) {
  if ((dense == nullptr) == (sparse == nullptr)) internal_error("make_hssne_engine_cuda: give dense or sparse P");
  return std::make_unique<CudaHssneEngine>(device, dense, sparse, alpha, dim);
}

}  // namespace orrery
