// NeRV's exact cost and gradient on the GPU (MATH.md §3), over the per-pair arithmetic of
// math/nerv.hpp. P and log P (N x N, with sparse rows' floors filled in) live on the device in
// float, each both row-major and transposed, so that thread i reads P_ij = Pt[j N + i] and
// P_ji = P[j N + i] as consecutive words across a warp. Three all-pairs passes, each a thread per
// point i over tiles of points j staged in shared memory, summing a tile in float and tiles in
// double, the j range split into chunks whose partials a per-point kernel adds in chunk order:
//   1. the shift m_i = -beta_i min_j d_ij;
//   2. the row sums Z_i, T_i, U_i, finished per point in double into lse_i, KL(q_i||p_i), the cost;
//   3. the gradient 2 sum_j (c_ij + c_ji)(y_i - y_j), with row j's scalars staged beside y_j.
// Same input, same device: the same bits.
#include <algorithm>
#include <cfloat>
#include <memory>
#include <vector>

#include "check.cuh"
#include "coords.cuh"
#include "orrery/error.hpp"
#include "orrery/math/nerv.hpp"
#include "orrery/nerv.hpp"

namespace orrery {
namespace {

constexpr int kThreads = 256;

struct Chunks {
  long long chunk = 0;
  int count = 1;
};

// c_ij of a pair at squared distance d, from row i's staged scalars (beta, lse, kl_qp, P_i).
__device__ __forceinline__ float pair_c(float d, const float4& row, float p, float lp, float lambda) {
  const math::NervRow<float> r{row.x, row.y, row.z, 0.f, row.w, 0.f};
  const float lq = math::nerv_log_q(d, r);
  return math::nerv_pair_c(math::exp_nonpositive(lq), lq, r, p, lp, lambda);
}

__device__ __forceinline__ float sq_dist(const float4& a, const float4& b) {
  const float dx = a.x - b.x, dy = a.y - b.y, dz = a.z - b.z;
  return dx * dx + dy * dy + dz * dz;  // z is 0 for D = 2
}

__global__ void __launch_bounds__(kThreads) min_kernel(const float4* __restrict__ y, long long N, long long chunk,
                                                       float* __restrict__ partial) {
  __shared__ float4 tile[kThreads];
  const long long i = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x;
  const long long j0 = static_cast<long long>(blockIdx.y) * chunk, j1 = min(j0 + chunk, N);
  const float4 yi = i < N ? y[i] : make_float4(0.f, 0.f, 0.f, 0.f);
  float best = FLT_MAX;
  for (long long t0 = j0; t0 < j1; t0 += kThreads) {
    __syncthreads();
    if (t0 + threadIdx.x < j1) tile[threadIdx.x] = y[t0 + threadIdx.x];
    __syncthreads();
    const int count = static_cast<int>(j1 - t0 < kThreads ? j1 - t0 : kThreads);
    for (int q = 0; q < count; ++q)
      if (t0 + q != i) best = fminf(best, sq_dist(yi, tile[q]));
  }
  if (i < N) partial[blockIdx.y * N + i] = best;
}

// Row sums Z, T, U (and P_i) of pass 2, partial per chunk: partial[(c * 4 + f) N + i].
__global__ void __launch_bounds__(kThreads) row_kernel(const float4* __restrict__ y, long long N, long long chunk,
                                                       const float* __restrict__ beta, const float* __restrict__ shift,
                                                       const float* __restrict__ Pt, const float* __restrict__ LPt,
                                                       double* __restrict__ partial) {
  __shared__ float4 tile[kThreads];
  const long long i = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x;
  const long long j0 = static_cast<long long>(blockIdx.y) * chunk, j1 = min(j0 + chunk, N);
  const bool live = i < N;
  const float4 yi = live ? y[i] : make_float4(0.f, 0.f, 0.f, 0.f);
  const float b = live ? beta[i] : 0.f, m = live ? shift[i] : 0.f;
  double z = 0, t = 0, u = 0, ps = 0;
  for (long long t0 = j0; t0 < j1; t0 += kThreads) {
    __syncthreads();
    if (t0 + threadIdx.x < j1) tile[threadIdx.x] = y[t0 + threadIdx.x];
    __syncthreads();
    if (!live) continue;
    const int count = static_cast<int>(j1 - t0 < kThreads ? j1 - t0 : kThreads);
    float zf = 0.f, tf = 0.f, uf = 0.f, pf = 0.f;
    for (int q = 0; q < count; ++q) {
      const long long j = t0 + q;
      if (j == i) continue;
      const float p = Pt[j * N + i], lp = LPt[j * N + i];
      const math::NervRowTerms<float> r = math::nerv_row_terms(sq_dist(yi, tile[q]), b, m, p, lp);
      zf += r.w;
      tf += r.wt;
      uf += r.pu;
      pf += p;
    }
    z += zf, t += tf, u += uf, ps += pf;
  }
  if (!live) return;
  double* out = partial + static_cast<long long>(blockIdx.y) * 4 * N + i;
  out[0] = z, out[N] = t, out[2 * N] = u, out[3 * N] = ps;
}

// Per point: the shift from the chunks' minima (pass 1).
__global__ void shift_kernel(const float* __restrict__ partial, int chunks, long long N,
                             const float* __restrict__ beta, float* __restrict__ shift) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= N) return;
  float best = FLT_MAX;
  for (int c = 0; c < chunks; ++c) best = fminf(best, partial[c * N + i]);
  shift[i] = -beta[i] * best;
}

// Per point: row scalars from the chunks' sums (pass 2), in double; rows4[i] = (beta, lse, kl_qp, P_i).
__global__ void row_finish_kernel(const double* __restrict__ partial, int chunks, long long N,
                                  const float* __restrict__ beta, const float* __restrict__ shift, double lambda,
                                  float4* __restrict__ rows4, double* __restrict__ cost) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= N) return;
  double s[4] = {0, 0, 0, 0};
  for (int c = 0; c < chunks; ++c)
    for (int f = 0; f < 4; ++f) s[f] += partial[(static_cast<long long>(c) * 4 + f) * N + i];
  const math::NervRow<double> r = math::nerv_row_finish<double>(beta[i], shift[i], s[0], s[1], s[2], s[3]);
  rows4[i] = make_float4(static_cast<float>(r.beta), static_cast<float>(r.lse), static_cast<float>(r.kl_qp),
                         static_cast<float>(r.p_sum));
  cost[i] = lambda * r.kl_pq + (1.0 - lambda) * r.kl_qp;
}

// Pass 3: sum_j (c_ij + c_ji)(y_i - y_j), partial per chunk: partial[(c * 3 + d) N + i].
__global__ void __launch_bounds__(kThreads) grad_kernel(const float4* __restrict__ y, const float4* __restrict__ rows4,
                                                        long long N, long long chunk, float lambda,
                                                        const float* __restrict__ P, const float* __restrict__ LP,
                                                        const float* __restrict__ Pt, const float* __restrict__ LPt,
                                                        double* __restrict__ partial) {
  __shared__ float4 tile[kThreads];
  __shared__ float4 rtile[kThreads];
  const long long i = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x;
  const long long j0 = static_cast<long long>(blockIdx.y) * chunk, j1 = min(j0 + chunk, N);
  const bool live = i < N;
  const float4 yi = live ? y[i] : make_float4(0.f, 0.f, 0.f, 0.f);
  const float4 ri = live ? rows4[i] : make_float4(0.f, 0.f, 0.f, 0.f);
  double g[3] = {0, 0, 0};
  for (long long t0 = j0; t0 < j1; t0 += kThreads) {
    __syncthreads();
    if (t0 + threadIdx.x < j1) {
      tile[threadIdx.x] = y[t0 + threadIdx.x];
      rtile[threadIdx.x] = rows4[t0 + threadIdx.x];
    }
    __syncthreads();
    if (!live) continue;
    const int count = static_cast<int>(j1 - t0 < kThreads ? j1 - t0 : kThreads);
    float gf[3] = {0.f, 0.f, 0.f};
    for (int q = 0; q < count; ++q) {
      const long long j = t0 + q;
      if (j == i) continue;
      const float4 yj = tile[q], rj = rtile[q];
      const float d = sq_dist(yi, yj);
      const float cij = pair_c(d, ri, Pt[j * N + i], LPt[j * N + i], lambda);
      const float cji = pair_c(d, rj, P[j * N + i], LP[j * N + i], lambda);
      const float c = cij + cji;
      gf[0] += c * (yi.x - yj.x);
      gf[1] += c * (yi.y - yj.y);
      gf[2] += c * (yi.z - yj.z);
    }
    for (int d = 0; d < 3; ++d) g[d] += gf[d];
  }
  if (!live) return;
  double* out = partial + static_cast<long long>(blockIdx.y) * 3 * N + i;
  for (int d = 0; d < 3; ++d) out[d * N] = g[d];
}

__global__ void grad_finish_kernel(const double* __restrict__ partial, int chunks, long long N, int D,
                                   double* __restrict__ grad) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= N) return;
  for (int d = 0; d < D; ++d) {
    double s = 0;
    for (int c = 0; c < chunks; ++c) s += partial[(static_cast<long long>(c) * 3 + d) * N + i];
    grad[i * D + d] = 2.0 * s;
  }
}

class CudaNervEngine final : public NervEngine {
 public:
  CudaNervEngine(int device, const MatrixD& P, const MatrixD& logP, const std::vector<double>& beta, double lambda,
                 int dim)
      : device_(device), N_(P.rows), dim_(dim), lambda_(lambda) {
    ORRERY_CUDA_CHECK(cudaSetDevice(device_));
    cudaDeviceProp prop{};
    ORRERY_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
    const size_t nn = static_cast<size_t>(N_) * N_;
    std::vector<float> a(nn), b(nn);
    for (long long i = 0; i < N_; ++i)
      for (long long j = 0; j < N_; ++j) {
        a[static_cast<size_t>(i * N_ + j)] = static_cast<float>(P(i, j));
        b[static_cast<size_t>(j * N_ + i)] = static_cast<float>(P(i, j));
      }
    p_.upload(a.data(), nn);
    pt_.upload(b.data(), nn);
    for (long long i = 0; i < N_; ++i)
      for (long long j = 0; j < N_; ++j) {
        a[static_cast<size_t>(i * N_ + j)] = static_cast<float>(logP(i, j));
        b[static_cast<size_t>(j * N_ + i)] = static_cast<float>(logP(i, j));
      }
    lp_.upload(a.data(), nn);
    lpt_.upload(b.data(), nn);
    std::vector<float> bf(beta.begin(), beta.end());
    beta_.upload(bf.data(), bf.size());
    const long long blocks_i = (N_ + kThreads - 1) / kThreads;
    const long long target = 32LL * prop.multiProcessorCount;
    chunks_.count = static_cast<int>(std::min<long long>(std::max<long long>(1, (target + blocks_i - 1) / blocks_i), blocks_i));
    chunks_.chunk = ((blocks_i + chunks_.count - 1) / chunks_.count) * kThreads;
    chunks_.count = static_cast<int>((N_ + chunks_.chunk - 1) / chunks_.chunk);
    yd_.resize(static_cast<size_t>(N_) * dim);
    y4_.resize(static_cast<size_t>(N_));
    rows4_.resize(static_cast<size_t>(N_));
    shift_.resize(static_cast<size_t>(N_));
    min_part_.resize(static_cast<size_t>(chunks_.count) * N_);
    part_.resize(static_cast<size_t>(chunks_.count) * 4 * N_);
    cost_.resize(static_cast<size_t>(N_));
    grad_.resize(static_cast<size_t>(N_) * dim);
  }

  double evaluate(const MatrixD& Y, MatrixD* grad) override {
    if (Y.rows != N_ || Y.cols != dim_) internal_error("nerv (cuda): Y has the wrong shape");
    ORRERY_CUDA_CHECK(cudaSetDevice(device_));
    yd_.upload(Y.data.data(), Y.data.size());
    const int pb = static_cast<int>((N_ + 127) / 128);
    cuda::to_float4_kernel<<<pb, 128>>>(yd_.get(), N_, dim_, y4_.get());
    ORRERY_CUDA_LAUNCHED("to_float4_kernel");
    const dim3 grid(static_cast<unsigned>((N_ + kThreads - 1) / kThreads), static_cast<unsigned>(chunks_.count));
    min_kernel<<<grid, kThreads>>>(y4_.get(), N_, chunks_.chunk, min_part_.get());
    ORRERY_CUDA_LAUNCHED("min_kernel");
    shift_kernel<<<pb, 128>>>(min_part_.get(), chunks_.count, N_, beta_.get(), shift_.get());
    ORRERY_CUDA_LAUNCHED("shift_kernel");
    row_kernel<<<grid, kThreads>>>(y4_.get(), N_, chunks_.chunk, beta_.get(), shift_.get(), pt_.get(), lpt_.get(),
                                   part_.get());
    ORRERY_CUDA_LAUNCHED("row_kernel");
    row_finish_kernel<<<pb, 128>>>(part_.get(), chunks_.count, N_, beta_.get(), shift_.get(), lambda_, rows4_.get(),
                                   cost_.get());
    ORRERY_CUDA_LAUNCHED("row_finish_kernel");
    if (grad) {
      grad_kernel<<<grid, kThreads>>>(y4_.get(), rows4_.get(), N_, chunks_.chunk, static_cast<float>(lambda_), p_.get(),
                                      lp_.get(), pt_.get(), lpt_.get(), part_.get());
      ORRERY_CUDA_LAUNCHED("grad_kernel");
      grad_finish_kernel<<<pb, 128>>>(part_.get(), chunks_.count, N_, dim_, grad_.get());
      ORRERY_CUDA_LAUNCHED("grad_finish_kernel");
      if (grad->rows != N_ || grad->cols != dim_) *grad = MatrixD(N_, dim_);
      grad_.download(grad->data.data(), grad->data.size());
    }
    std::vector<double> cost(static_cast<size_t>(N_));
    cost_.download(cost.data(), cost.size());
    double E = 0.0;
    for (double v : cost) E += v;  // row order, as on the CPU
    return E;
  }

 private:
  int device_;
  long long N_;
  int dim_;
  double lambda_;
  Chunks chunks_;
  cuda::DeviceBuffer<float> p_, pt_, lp_, lpt_, beta_, shift_, min_part_;
  cuda::DeviceBuffer<double> yd_, part_, cost_, grad_;
  cuda::DeviceBuffer<float4> y4_, rows4_;
};

}  // namespace

std::unique_ptr<NervEngine> make_nerv_engine_cuda(int device, const MatrixD& P, const MatrixD& logP,
                                                  const std::vector<double>& beta, double lambda, int dim) {
  if (P.rows != P.cols || logP.rows != P.rows || logP.cols != P.cols || static_cast<index_t>(beta.size()) != P.rows)
    internal_error("make_nerv_engine_cuda: P, log P and beta disagree on N");
  if (dim != 2 && dim != 3) internal_error("make_nerv_engine_cuda: D must be 2 or 3");
  return std::make_unique<CudaNervEngine>(device, P, logP, beta, lambda, dim);
}

}  // namespace orrery
