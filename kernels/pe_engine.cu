// CUDA engine for PE. Four layers per operation, as everywhere in kernels/: the per-object
// arithmetic is the shared ORRERY_HD code of include/orrery/math/pe.hpp (the same functions the
// CPU backend runs, here in float); a kernel maps threads onto it; a launcher picks shapes; the
// engine method is the entry point.
//
// Layout and reductions: P (N x K, row-major float), R (N x D) and the per-object log-normaliser
// lse (N) stay on the device. Every reduction over objects goes through per-block partials in
// double (CUB BlockReduce, fixed block size) and a single-block final pass that sums the partials
// in index order, so a given input gives the same bits on every run. Only Phi (K x D) goes up and
// the class gradient (K x D) plus a few scalars come down per call.
#include <cub/block/block_reduce.cuh>

#include <algorithm>
#include <cmath>

#include "check.cuh"
#include "engines.cuh"
#include "orrery/exact_sum.hpp"
#include "orrery/math/pe.hpp"
#include "reduce.cuh"

namespace orrery::cuda {
namespace {

constexpr int kBlock = 256;        // threads per block in every PE kernel (fixed: determinism)
constexpr int kStats = 5;          // objective, max grad_sq, unconverged, steps, max steps

// Stage 1 of every reduction: one block's partials, written to partial[stat * blocks + block].
struct ObjectStats {
  double objective, max_grad_sq, unconverged, steps, max_steps;
};

__device__ void write_block_stats(const ObjectStats& s, double* partial, int blocks) {
  using Reduce = cub::BlockReduce<double, kBlock>;
  __shared__ typename Reduce::TempStorage tmp;
  const double vals[kStats] = {s.objective, s.max_grad_sq, s.unconverged, s.steps, s.max_steps};
  for (int i = 0; i < kStats; ++i) {
    const bool is_max = i == 1 || i == 4;
    const double r = is_max ? Reduce(tmp).Reduce(vals[i], MaxOp()) : Reduce(tmp).Sum(vals[i]);
    if (threadIdx.x == 0) partial[i * blocks + blockIdx.x] = r;
    __syncthreads();  // tmp is reused by the next reduction
  }
}

// Shared memory holds Phi and the log priors when they fit; otherwise kernels read global memory.
template <int D>
__device__ const float* stage_classes(const float* phi, const float* log_prior, int K, bool staged, float* smem,
                                      const float** lp_out) {
  if (!staged) {
    *lp_out = log_prior;
    return phi;
  }
  for (int i = threadIdx.x; i < K * D; i += blockDim.x) smem[i] = phi[i];
  for (int i = threadIdx.x; i < K; i += blockDim.x) smem[K * D + i] = log_prior[i];
  __syncthreads();
  *lp_out = smem + K * D;
  return smem;
}

template <int D>
__global__ void __launch_bounds__(kBlock) solve_objects_kernel(const float* __restrict__ P, const float* phi_g,
                                                               const float* lp_g, int K, long long N, float eta_r,
                                                               float eps_r, int max_iter, bool staged, float* R,
                                                               float* lse, double* partial) {
  extern __shared__ float smem[];
  const float* lp;
  const float* phi = stage_classes<D>(phi_g, lp_g, K, staged, smem, &lp);
  const long long n = static_cast<long long>(blockIdx.x) * kBlock + threadIdx.x;
  ObjectStats s{0, 0, 0, 0, 0};
  if (n < N) {
    float r[D];
    for (int d = 0; d < D; ++d) r[d] = R[n * D + d];
    const auto res = math::pe_newton_object<float, D>(P + n * K, lp, phi, K, r, eta_r, eps_r, max_iter);
    for (int d = 0; d < D; ++d) R[n * D + d] = r[d];
    lse[n] = res.lse;
    s = ObjectStats{res.objective, res.grad_sq, res.converged ? 0.0 : 1.0, static_cast<double>(res.iterations),
                    static_cast<double>(res.iterations)};
  }
  write_block_stats(s, partial, gridDim.x);
}

template <int D>
__global__ void __launch_bounds__(kBlock) objective_kernel(const float* __restrict__ P, const float* phi_g,
                                                           const float* lp_g, int K, long long N, float eta_r,
                                                           bool staged, const float* R, double* partial) {
  extern __shared__ float smem[];
  const float* lp;
  const float* phi = stage_classes<D>(phi_g, lp_g, K, staged, smem, &lp);
  const long long n = static_cast<long long>(blockIdx.x) * kBlock + threadIdx.x;
  ObjectStats s{0, 0, 0, 0, 0};
  if (n < N) {
    float r[D];
    for (int d = 0; d < D; ++d) r[d] = R[n * D + d];
    s.objective = math::pe_object_eval<float, D>(P + n * K, lp, phi, K, r, eta_r, nullptr, nullptr);
  }
  write_block_stats(s, partial, gridDim.x);
}

// Class gradient, stage 1: a block takes a tile of kBlock objects; thread t owns classes
// t, t + kBlock, ... and sums (P_nk - q_nk)(phi_k - r_n) over the tile in object order (float,
// short sums), then writes the tile's partial in double. Reading P[n, k] for fixed n across
// the threads is coalesced.
template <int D>
__global__ void __launch_bounds__(kBlock) class_grad_kernel(const float* __restrict__ P, const float* phi,
                                                            const float* lp, int K, long long N, const float* R,
                                                            const float* lse, double* partial) {
  __shared__ float r_tile[kBlock * D];
  __shared__ float lse_tile[kBlock];
  const long long first = static_cast<long long>(blockIdx.x) * kBlock;
  const int count = static_cast<int>(min(static_cast<long long>(kBlock), N - first));
  for (int i = threadIdx.x; i < count; i += kBlock) {
    for (int d = 0; d < D; ++d) r_tile[i * D + d] = R[(first + i) * D + d];
    lse_tile[i] = lse[first + i];
  }
  __syncthreads();
  for (int k = threadIdx.x; k < K; k += kBlock) {
    float phi_k[D], acc[D] = {};
    for (int d = 0; d < D; ++d) phi_k[d] = phi[k * D + d];
    const float lp_k = lp[k];
    for (int i = 0; i < count; ++i) {
      float f[D];
      math::pe_class_force<float, D>(P[(first + i) * K + k], lp_k, phi_k, r_tile + i * D, lse_tile[i], f);
      for (int d = 0; d < D; ++d) acc[d] += f[d];
    }
    for (int d = 0; d < D; ++d) partial[(static_cast<long long>(blockIdx.x) * K + k) * D + d] = acc[d];
  }
}

// Stage 2 for the object statistics: one block, thread t folds blocks t, t + kBlock, ... in
// order, then a CUB block reduction (fixed shape) combines the threads.
__global__ void __launch_bounds__(kBlock) final_stats_kernel(const double* partial, int blocks, double* out) {
  using Reduce = cub::BlockReduce<double, kBlock>;
  __shared__ typename Reduce::TempStorage tmp;
  for (int i = 0; i < kStats; ++i) {
    const bool is_max = i == 1 || i == 4;
    double v = 0.0;  // every statistic is >= 0, so 0 is also the identity of the max
    for (int b = threadIdx.x; b < blocks; b += kBlock) {
      const double x = partial[i * blocks + b];
      v = is_max ? math::nan_max(v, x) : v + x;  // fmax would drop a NaN
    }
    const double r = is_max ? Reduce(tmp).Reduce(v, MaxOp()) : Reduce(tmp).Sum(v);
    if (threadIdx.x == 0) out[i] = r;
    __syncthreads();
  }
}

class CudaPeEngine final : public PeEngine {
 public:
  CudaPeEngine(int device, const MatrixD& P, const std::vector<double>& log_priors, int dim, double eta_r)
      : device_(device), N_(P.rows), K_(static_cast<int>(P.cols)), D_(dim), eta_r_(static_cast<float>(eta_r)) {
    std::vector<float> host(P.data.begin(), P.data.end());
    P_.upload(host.data(), host.size());
    std::vector<float> lp(log_priors.begin(), log_priors.end());
    lp_.upload(lp.data(), lp.size());
    phi_.resize(static_cast<size_t>(K_) * D_);
    R_.resize(static_cast<size_t>(N_) * D_);
    lse_.resize(static_cast<size_t>(N_));
    blocks_ = static_cast<int>((N_ + kBlock - 1) / kBlock);
    stat_partial_.resize(static_cast<size_t>(kStats) * blocks_);
    stats_.resize(kStats);
    grad_partial_.resize(static_cast<size_t>(blocks_) * K_ * D_);
    grad_.resize(static_cast<size_t>(K_) * D_);
    smem_bytes_ = static_cast<size_t>(K_) * (D_ + 1) * sizeof(float);
    int dev = 0, limit = 0;
    ORRERY_CUDA_CHECK(cudaGetDevice(&dev));
    ORRERY_CUDA_CHECK(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlock, dev));
    staged_ = smem_bytes_ + 2 * 1024 <= static_cast<size_t>(limit);  // leave room for CUB's storage
    if (!staged_) smem_bytes_ = 0;
  }

  index_t num_objects() const override { return N_; }
  int num_classes() const override { return K_; }
  int dim() const override { return D_; }

  void set_objects(const MatrixD& R) override {
    if (R.rows != N_ || R.cols != D_) internal_error("CudaPeEngine::set_objects: shape mismatch");
    ORRERY_CUDA_CHECK(cudaSetDevice(device_));
    std::vector<float> host(R.data.begin(), R.data.end());
    R_.upload(host.data(), host.size());
  }

  MatrixD objects() const override {
    ORRERY_CUDA_CHECK(cudaSetDevice(device_));
    std::vector<float> host(static_cast<size_t>(N_) * D_);
    R_.download(host.data(), host.size());
    MatrixD out(N_, D_);
    std::copy(host.begin(), host.end(), out.data.begin());
    return out;
  }

  PeSweep solve_objects(const std::vector<double>& phi, const PeNewtonOptions& opt,
                        std::vector<double>* class_grad) override {
    if (N_ == 0) {  // a rank that owns no objects (more ranks than chunks): nothing to launch
      if (class_grad) class_grad->assign(static_cast<size_t>(K_) * D_, 0.0);
      return PeSweep{};
    }
    upload_phi(phi);
    const float eps = static_cast<float>(opt.eps_r);
    if (D_ == 2)
      solve_objects_kernel<2><<<blocks_, kBlock, smem_bytes_>>>(P_.get(), phi_.get(), lp_.get(), K_, N_, eta_r_, eps,
                                                                opt.max_iter, staged_, R_.get(), lse_.get(),
                                                                stat_partial_.get());
    else
      solve_objects_kernel<3><<<blocks_, kBlock, smem_bytes_>>>(P_.get(), phi_.get(), lp_.get(), K_, N_, eta_r_, eps,
                                                                opt.max_iter, staged_, R_.get(), lse_.get(),
                                                                stat_partial_.get());
    ORRERY_CUDA_LAUNCHED("solve_objects_kernel");
    if (class_grad) {
      if (D_ == 2)
        class_grad_kernel<2><<<blocks_, kBlock>>>(P_.get(), phi_.get(), lp_.get(), K_, N_, R_.get(), lse_.get(),
                                                  grad_partial_.get());
      else
        class_grad_kernel<3><<<blocks_, kBlock>>>(P_.get(), phi_.get(), lp_.get(), K_, N_, R_.get(), lse_.get(),
                                                  grad_partial_.get());
      ORRERY_CUDA_LAUNCHED("class_grad_kernel");
      const int width = K_ * D_;
      sum_columns(grad_partial_.get(), blocks_, width, grad_.get());
      class_grad->resize(static_cast<size_t>(width));
      grad_.download(class_grad->data(), class_grad->size());
    }
    const auto s = final_stats();
    PeSweep out;
    out.objective = s[0];
    out.max_grad_sq = s[1];
    out.unconverged = static_cast<index_t>(s[2]);
    out.newton_steps = static_cast<index_t>(s[3]);
    out.max_newton_steps = static_cast<int>(s[4]);
    return out;
  }

  // solve_objects, then the class gradient and the objective of every kPeChunk objects (the block
  // partials of its kPeChunk / kBlock blocks summed in order, on the host) added to `sums` one chunk
  // at a time, as the CPU engine adds its chunks. A rank's objects start at a multiple of kPeChunk
  // (pe_rank_block), so its blocks are the whole run's blocks from there, each object's Newton steps
  // are its own, and the exact sums of the chunks are the same bits for any number of ranks.
  PeSweep solve_objects_exact(const std::vector<double>& phi, const PeNewtonOptions& opt, ExactSum& sums) override {
    static_assert(kPeChunk % kBlock == 0, "a chunk is whole blocks");
    const int width = K_ * D_;
    if (sums.size() != static_cast<size_t>(width) + 1)
      internal_error("CudaPeEngine::solve_objects_exact: expected K x D + 1 sums");
    std::vector<double> grad;
    const PeSweep s = solve_objects(phi, opt, &grad);
    std::vector<double> gp(static_cast<size_t>(blocks_) * width), obj(static_cast<size_t>(blocks_));
    grad_partial_.download(gp.data(), gp.size());
    stat_partial_.download(obj.data(), obj.size());  // statistic 0 (the objective) of every block
    constexpr int kPerChunk = static_cast<int>(kPeChunk / kBlock);
    std::vector<double> chunk(static_cast<size_t>(width) + 1);
    for (int b0 = 0; b0 < blocks_; b0 += kPerChunk) {
      std::fill(chunk.begin(), chunk.end(), 0.0);
      for (int b = b0; b < std::min(blocks_, b0 + kPerChunk); ++b) {
        const double* g = gp.data() + static_cast<size_t>(b) * width;
        for (int i = 0; i < width; ++i) chunk[static_cast<size_t>(i)] += g[i];
        chunk[static_cast<size_t>(width)] += obj[static_cast<size_t>(b)];
      }
      sums.add(chunk.data());
    }
    return s;
  }

  double objective(const std::vector<double>& phi) override {
    if (N_ == 0) return 0.0;
    upload_phi(phi);
    if (D_ == 2)
      objective_kernel<2><<<blocks_, kBlock, smem_bytes_>>>(P_.get(), phi_.get(), lp_.get(), K_, N_, eta_r_, staged_,
                                                            R_.get(), stat_partial_.get());
    else
      objective_kernel<3><<<blocks_, kBlock, smem_bytes_>>>(P_.get(), phi_.get(), lp_.get(), K_, N_, eta_r_, staged_,
                                                            R_.get(), stat_partial_.get());
    ORRERY_CUDA_LAUNCHED("objective_kernel");
    return final_stats()[0];
  }

 private:
  // Every launching call starts here, so it also makes the engine's device current.
  void upload_phi(const std::vector<double>& phi) {
    if (phi.size() != static_cast<size_t>(K_) * D_) internal_error("CudaPeEngine: Phi has the wrong size");
    ORRERY_CUDA_CHECK(cudaSetDevice(device_));
    std::vector<float> host(phi.begin(), phi.end());
    phi_.upload(host.data(), host.size());
  }

  std::vector<double> final_stats() {
    final_stats_kernel<<<1, kBlock>>>(stat_partial_.get(), blocks_, stats_.get());
    ORRERY_CUDA_LAUNCHED("final_stats_kernel");
    std::vector<double> s(kStats);
    stats_.download(s.data(), s.size());
    return s;
  }

  int device_;
  index_t N_;
  int K_, D_;
  float eta_r_;
  int blocks_ = 0;
  size_t smem_bytes_ = 0;
  bool staged_ = false;
  DeviceBuffer<float> P_, lp_, phi_, R_, lse_;
  DeviceBuffer<double> stat_partial_, stats_, grad_partial_, grad_;
};

}  // namespace

std::unique_ptr<PeEngine> make_pe_engine(int device, const MatrixD& P, const std::vector<double>& log_priors, int dim,
                                         double eta_r) {
  ORRERY_CUDA_CHECK(cudaSetDevice(device));
  if (dim != 2 && dim != 3) internal_error("make_pe_engine: dim must be 2 or 3");
  if (P.cols < 2) internal_error("make_pe_engine: fewer than 2 classes");  // 0 objects: a rank's empty block
  return std::make_unique<CudaPeEngine>(device, P, log_priors, dim, eta_r);
}

}  // namespace orrery::cuda
