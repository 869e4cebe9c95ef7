// CUDA engine for PLSV (MATH.md §2). The counts (CSR by documents and its column index by words),
// X, theta (word-major, W x Z), the topic proportions P and the scaled responsibility sums
// R_nz / M_n stay on the device for the whole fit; per call only Phi (Z x D) goes up and scalars or
// the topic gradient (Z x D) come down.
//
// E-step: a warp per document, lanes over topics (z = lane, lane + 32, ...; Z <= 256): P(z|x_n) by
// the shared exponent, then for every nonzero the mixture sum_z P_z theta_zw (a warp sum), u_nw =
// c_nw / m and the per-lane topic sums, all in the document's own order. Theta statistics: a warp
// per word over its column in document order. Newton and relocation: a thread per document on the
// shared math (math/plsv.hpp, math/pe.hpp). Every sum over documents or words is written per item
// and reduced in a fixed order (fixed-shape CUB block sums of fixed chunks), so the same input gives
// the same bits on every run.
#include <algorithm>
#include <cmath>

#include "check.cuh"
#include "engines.cuh"
#include "orrery/corpus.hpp"
#include "orrery/engines.hpp"
#include "orrery/math/plsv.hpp"
#include "reduce.cuh"

namespace orrery::cuda {
namespace {

using math::warp_sum;

constexpr int kBlock = 256;
constexpr int kWarp = 32;
constexpr int kPerLane = 8;  // topics per lane: Z <= kWarp * kPerLane
constexpr int kMaxTopics = kWarp * kPerLane;

template <int D>
__global__ void __launch_bounds__(kBlock)
    estep_docs_kernel(const long long* row_ptr, const int* word, const float* count, const float* len, long long N,
                      int Z, const float* X, const float* phi, const float* theta_t, float* P, float* Rs, float* u,
                      double* ll_doc, double* sq_doc) {
  const long long n = (static_cast<long long>(blockIdx.x) * kBlock + threadIdx.x) / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (n >= N) return;  // uniform per warp
  float x[D];
  for (int d = 0; d < D; ++d) x[d] = X[n * D + d];
  float p[kPerLane];
  math::plsv_topic_proportions_warp<float, D, kPerLane>(x, phi, Z, lane, p);
  double acc[kPerLane] = {};
#pragma unroll
  for (int j = 0; j < kPerLane; ++j)
    if (lane + kWarp * j < Z) P[n * Z + lane + kWarp * j] = p[j];
  double ll = 0.0;
  for (long long i = row_ptr[n]; i < row_ptr[n + 1]; ++i) {
    const float* th = theta_t + static_cast<long long>(word[i]) * Z;
    float m = 0.0f;
#pragma unroll
    for (int j = 0; j < kPerLane; ++j)
      if (lane + kWarp * j < Z) m += p[j] * th[lane + kWarp * j];
    m = warp_sum(m);
    const float c = count[i], ui = c / m;
    if (lane == 0) {
      u[i] = ui;
      ll += static_cast<double>(c) * math::hd_log(static_cast<double>(m));
    }
#pragma unroll
    for (int j = 0; j < kPerLane; ++j)
      if (lane + kWarp * j < Z) acc[j] += static_cast<double>(ui) * th[lane + kWarp * j];
  }
  const double inv_len = 1.0 / len[n];
#pragma unroll
  for (int j = 0; j < kPerLane; ++j)
    if (lane + kWarp * j < Z) Rs[n * Z + lane + kWarp * j] = static_cast<float>(p[j] * acc[j] * inv_len);
  if (lane == 0) {
    double sq = 0.0;
    for (int d = 0; d < D; ++d) sq += static_cast<double>(x[d]) * x[d];
    ll_doc[n] = ll;
    sq_doc[n] = sq;
  }
}

// S_zw = theta_zw sum_n u_nw P(z|x_n) over word w's column (document order); alpha-free prior
// part sum_z log theta_zw per word.
__global__ void __launch_bounds__(kBlock)
    stats_words_kernel(const long long* col_ptr, const long long* col_src, const int* col_doc, long long W, int Z,
                       const float* u, const float* P, const float* theta_t, float* S_t, double* log_theta_word) {
  const long long w = (static_cast<long long>(blockIdx.x) * kBlock + threadIdx.x) / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (w >= W) return;
  double s[kPerLane] = {};
  for (long long j = col_ptr[w]; j < col_ptr[w + 1]; ++j) {
    const double uj = u[col_src[j]];
    const float* p = P + static_cast<long long>(col_doc[j]) * Z;
#pragma unroll
    for (int k = 0; k < kPerLane; ++k)
      if (lane + kWarp * k < Z) s[k] += uj * p[lane + kWarp * k];
  }
  double lt = 0.0;
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) {
    const int z = lane + kWarp * k;
    if (z < Z) {
      const float th = theta_t[w * Z + z];
      S_t[w * Z + z] = static_cast<float>(th * s[k]);
      lt += math::hd_log(static_cast<double>(th));
    }
  }
  lt = warp_sum(lt);
  if (lane == 0) log_theta_word[w] = lt;
}

__global__ void topic_totals_kernel(const float* S_t, long long W, int Z, double* total) {
  const int z = blockIdx.x * blockDim.x + threadIdx.x;
  if (z >= Z) return;
  double t = 0.0;
  for (long long w = 0; w < W; ++w) t += S_t[w * Z + z];
  total[z] = t;
}

__global__ void theta_update_kernel(const float* S_t, const double* total, long long W, int Z, double alpha,
                                    float* theta_t) {
  const long long i = static_cast<long long>(blockIdx.x) * kBlock + threadIdx.x;
  if (i >= W * Z) return;
  theta_t[i] = static_cast<float>(
      math::plsv_theta_update<double>(S_t[i], total[i % Z], alpha, static_cast<double>(W)));
}

template <int D>
__global__ void __launch_bounds__(kBlock)
    solve_docs_kernel(const float* Rs, const float* zeros, const float* phi, int Z, long long N, const float* len,
                      float gamma, float eps, int max_iter, float* X, float* lse, double* obj_doc, double* gsq_doc,
                      double* steps_doc, double* unconv_doc) {
  const long long n = static_cast<long long>(blockIdx.x) * kBlock + threadIdx.x;
  if (n >= N) return;
  float x[D];
  for (int d = 0; d < D; ++d) x[d] = X[n * D + d];
  const auto res = math::plsv_newton_document<float, D>(Rs + n * Z, zeros, phi, Z, x, len[n], gamma, eps, max_iter,
                                                         nullptr);
  for (int d = 0; d < D; ++d) X[n * D + d] = x[d];
  lse[n] = res.lse;
  obj_doc[n] = static_cast<double>(len[n]) * res.objective;
  gsq_doc[n] = res.grad_sq;
  steps_doc[n] = res.iterations;
  unconv_doc[n] = res.converged ? 0.0 : 1.0;
}

// -dQ/dPhi without beta, stage 1: a block takes a tile of kBlock documents; thread t owns topics
// t, t + kBlock, ... and sums M_n (R_nz / M_n - P_nz)(phi_z - x_n) over the tile in document order.
template <int D>
__global__ void __launch_bounds__(kBlock)
    topic_grad_kernel(const float* Rs, const float* phi, int Z, long long N, const float* len, const float* X,
                      const float* lse, double* partial) {
  __shared__ float x_tile[kBlock * D];
  __shared__ float lse_tile[kBlock], len_tile[kBlock];
  const long long first = static_cast<long long>(blockIdx.x) * kBlock;
  const int count = static_cast<int>(min(static_cast<long long>(kBlock), N - first));
  for (int i = threadIdx.x; i < count; i += kBlock) {
    for (int d = 0; d < D; ++d) x_tile[i * D + d] = X[(first + i) * D + d];
    lse_tile[i] = lse[first + i];
    len_tile[i] = len[first + i];
  }
  __syncthreads();
  for (int z = threadIdx.x; z < Z; z += kBlock) {
    float phi_z[D];
    double acc[D] = {};
    for (int d = 0; d < D; ++d) phi_z[d] = phi[z * D + d];
    for (int i = 0; i < count; ++i) {
      float f[D];
      math::pe_class_force<float, D>(Rs[(first + i) * Z + z], 0.0f, phi_z, x_tile + i * D, lse_tile[i], f);
      for (int d = 0; d < D; ++d) acc[d] += static_cast<double>(len_tile[i]) * f[d];
    }
    for (int d = 0; d < D; ++d) partial[(static_cast<long long>(blockIdx.x) * Z + z) * D + d] = acc[d];
  }
}

template <int D>
__global__ void __launch_bounds__(kBlock)
    relocate_kernel(const long long* row_ptr, const int* word, const float* count, long long N, int Z,
                    const float* phi, const float* theta_t, float gamma, float* X, float* l_scratch, float* p_scratch,
                    double* moved_doc) {
  const long long n = static_cast<long long>(blockIdx.x) * kBlock + threadIdx.x;
  if (n >= N) return;
  float x[D];
  for (int d = 0; d < D; ++d) x[d] = X[n * D + d];
  const long long b = row_ptr[n];
  const int which = math::plsv_relocate_document<float, D>(x, phi, Z, word + b, count + b, row_ptr[n + 1] - b,
                                                           theta_t, gamma, l_scratch + n * Z, p_scratch + n * Z);
  for (int d = 0; d < D; ++d) X[n * D + d] = x[d];
  moved_doc[n] = which != -2 ? 1.0 : 0.0;
}

class CudaPlsvEngine final : public PlsvEngine {
 public:
  CudaPlsvEngine(int device, const Corpus& c, int topics, int dim)
      : device_(device), N_(c.num_docs()), W_(c.num_words), Z_(topics), D_(dim) {
    if (Z_ > kMaxTopics)
      input_error("params.topics: the CUDA engine handles at most " + std::to_string(kMaxTopics) + " topics, found " +
                  std::to_string(Z_) + " (use device \"cpu\")");
    ORRERY_CUDA_CHECK(cudaSetDevice(device_));
    const size_t nnz = static_cast<size_t>(c.nnz());
    std::vector<long long> rp(c.row_ptr.begin(), c.row_ptr.end());
    row_ptr_.upload(rp.data(), rp.size());
    std::vector<int> wd(c.word.begin(), c.word.end());
    word_.upload(wd.data(), wd.size());
    std::vector<float> cnt(c.count.begin(), c.count.end()), len(static_cast<size_t>(N_));
    count_.upload(cnt.data(), cnt.size());
    for (index_t n = 0; n < N_; ++n) len[static_cast<size_t>(n)] = static_cast<float>(c.length(n));
    len_.upload(len.data(), len.size());
    // Columns by words, documents in order within each.
    std::vector<long long> cp(static_cast<size_t>(W_ + 1), 0), src(nnz);
    std::vector<int> doc(nnz);
    for (auto w : c.word) ++cp[static_cast<size_t>(w) + 1];
    for (index_t w = 0; w < W_; ++w) cp[static_cast<size_t>(w + 1)] += cp[static_cast<size_t>(w)];
    std::vector<long long> fill(cp.begin(), cp.end() - 1);
    for (index_t n = 0; n < N_; ++n)
      for (index_t i = c.row_ptr[static_cast<size_t>(n)]; i < c.row_ptr[static_cast<size_t>(n) + 1]; ++i) {
        const auto slot = static_cast<size_t>(fill[static_cast<size_t>(c.word[static_cast<size_t>(i)])]++);
        src[slot] = i;
        doc[slot] = static_cast<int>(n);
      }
    col_ptr_.upload(cp.data(), cp.size());
    col_src_.upload(src.data(), src.size());
    col_doc_.upload(doc.data(), doc.size());
    const size_t NZ = static_cast<size_t>(N_) * Z_, WZ = static_cast<size_t>(W_) * Z_;
    X_.resize(static_cast<size_t>(N_) * D_);
    theta_t_.resize(WZ);
    S_t_.resize(WZ);
    P_.resize(NZ);
    Rs_.resize(NZ);
    u_.resize(nnz);
    lse_.resize(static_cast<size_t>(N_));
    phi_.resize(static_cast<size_t>(Z_) * D_);
    std::vector<float> zeros(static_cast<size_t>(Z_), 0.0f);
    zeros_.upload(zeros.data(), zeros.size());
    per_item_.resize(static_cast<size_t>(4 * std::max(N_, W_)));
    total_.resize(static_cast<size_t>(Z_));
    grad_blocks_ = static_cast<int>((N_ + kBlock - 1) / kBlock);
    grad_partial_.resize(static_cast<size_t>(grad_blocks_) * Z_ * D_);
    grad_.resize(static_cast<size_t>(Z_) * D_);
  }

  std::string name() const override { return "cuda:" + std::to_string(device_); }

  void set_docs(const MatrixD& X) override {
    ORRERY_CUDA_CHECK(cudaSetDevice(device_));
    if (X.rows != N_ || X.cols != D_) internal_error("CudaPlsvEngine::set_docs: shape mismatch");
    std::vector<float> h(X.data.begin(), X.data.end());
    X_.upload(h.data(), h.size());
  }
  MatrixD docs() const override {
    ORRERY_CUDA_CHECK(cudaSetDevice(device_));
    return download(X_, N_, D_);
  }
  void set_theta(const MatrixD& theta) override {
    ORRERY_CUDA_CHECK(cudaSetDevice(device_));
    if (theta.rows != Z_ || theta.cols != W_) internal_error("CudaPlsvEngine::set_theta: shape mismatch");
    std::vector<float> h(static_cast<size_t>(W_) * Z_);
    for (index_t z = 0; z < Z_; ++z)
      for (index_t w = 0; w < W_; ++w) h[static_cast<size_t>(w * Z_ + z)] = static_cast<float>(theta(z, w));
    theta_t_.upload(h.data(), h.size());
  }
  MatrixD theta() const override {
    ORRERY_CUDA_CHECK(cudaSetDevice(device_));
    const MatrixD t = download(theta_t_, W_, Z_);
    MatrixD out(Z_, W_);
    for (index_t z = 0; z < Z_; ++z)
      for (index_t w = 0; w < W_; ++w) out(z, w) = t(w, z);
    return out;
  }
  MatrixD topic_counts() const override {
    ORRERY_CUDA_CHECK(cudaSetDevice(device_));
    MatrixD R = download(Rs_, N_, Z_);
    std::vector<float> len(static_cast<size_t>(N_));
    len_.download(len.data(), len.size());
    for (index_t n = 0; n < N_; ++n)
      for (index_t z = 0; z < Z_; ++z) R(n, z) *= len[static_cast<size_t>(n)];
    return R;
  }

  EStep e_step(const std::vector<double>& phi, double alpha) override {
    upload_phi(phi);
    double* ll = per_item_.get();
    double* sq = ll + N_;
    const auto warps_blocks = [](index_t items) { return static_cast<int>((items * kWarp + kBlock - 1) / kBlock); };
    if (D_ == 2)
      estep_docs_kernel<2><<<warps_blocks(N_), kBlock>>>(row_ptr_.get(), word_.get(), count_.get(), len_.get(), N_, Z_,
                                                         X_.get(), phi_.get(), theta_t_.get(), P_.get(), Rs_.get(),
                                                         u_.get(), ll, sq);
    else
      estep_docs_kernel<3><<<warps_blocks(N_), kBlock>>>(row_ptr_.get(), word_.get(), count_.get(), len_.get(), N_, Z_,
                                                         X_.get(), phi_.get(), theta_t_.get(), P_.get(), Rs_.get(),
                                                         u_.get(), ll, sq);
    ORRERY_CUDA_LAUNCHED("estep_docs_kernel");
    EStep out;
    out.log_likelihood = reduce(ll, N_, SumOp());
    out.docs_sq = reduce(sq, N_, SumOp());
    double* lt = per_item_.get();
    stats_words_kernel<<<warps_blocks(W_), kBlock>>>(col_ptr_.get(), col_src_.get(), col_doc_.get(), W_, Z_, u_.get(),
                                                     P_.get(), theta_t_.get(), S_t_.get(), lt);
    ORRERY_CUDA_LAUNCHED("stats_words_kernel");
    out.theta_log_prior = alpha * reduce(lt, W_, SumOp());
    return out;
  }

  void m_step_theta(double alpha) override {
    ORRERY_CUDA_CHECK(cudaSetDevice(device_));
    topic_totals_kernel<<<(Z_ + 127) / 128, 128>>>(S_t_.get(), W_, Z_, total_.get());
    ORRERY_CUDA_LAUNCHED("topic_totals_kernel");
    const long long WZ = static_cast<long long>(W_) * Z_;
    theta_update_kernel<<<static_cast<int>((WZ + kBlock - 1) / kBlock), kBlock>>>(S_t_.get(), total_.get(), W_, Z_,
                                                                                  alpha, theta_t_.get());
    ORRERY_CUDA_LAUNCHED("theta_update_kernel");
  }

  PeSweep solve_docs(const std::vector<double>& phi, double gamma, const PeNewtonOptions& opt,
                     std::vector<double>* topic_grad) override {
    upload_phi(phi);
    double* obj = per_item_.get();
    double* gsq = obj + N_;
    double* steps = gsq + N_;
    double* unconv = steps + N_;
    const int blocks = static_cast<int>((N_ + kBlock - 1) / kBlock);
    const float g = static_cast<float>(gamma), eps = static_cast<float>(opt.eps_r);
    if (D_ == 2)
      solve_docs_kernel<2><<<blocks, kBlock>>>(Rs_.get(), zeros_.get(), phi_.get(), Z_, N_, len_.get(), g, eps,
                                               opt.max_iter, X_.get(), lse_.get(), obj, gsq, steps, unconv);
    else
      solve_docs_kernel<3><<<blocks, kBlock>>>(Rs_.get(), zeros_.get(), phi_.get(), Z_, N_, len_.get(), g, eps,
                                               opt.max_iter, X_.get(), lse_.get(), obj, gsq, steps, unconv);
    ORRERY_CUDA_LAUNCHED("solve_docs_kernel");
    PeSweep s;
    s.objective = reduce(obj, N_, SumOp());
    s.max_grad_sq = reduce(gsq, N_, MaxOp());
    s.newton_steps = static_cast<index_t>(reduce(steps, N_, SumOp()));
    s.max_newton_steps = static_cast<int>(reduce(steps, N_, MaxOp()));
    s.unconverged = static_cast<index_t>(reduce(unconv, N_, SumOp()));
    if (topic_grad) {
      if (D_ == 2)
        topic_grad_kernel<2><<<grad_blocks_, kBlock>>>(Rs_.get(), phi_.get(), Z_, N_, len_.get(), X_.get(), lse_.get(),
                                                       grad_partial_.get());
      else
        topic_grad_kernel<3><<<grad_blocks_, kBlock>>>(Rs_.get(), phi_.get(), Z_, N_, len_.get(), X_.get(), lse_.get(),
                                                       grad_partial_.get());
      ORRERY_CUDA_LAUNCHED("topic_grad_kernel");
      const int width = Z_ * D_;
      sum_columns(grad_partial_.get(), grad_blocks_, width, grad_.get());
      topic_grad->resize(static_cast<size_t>(width));
      grad_.download(topic_grad->data(), topic_grad->size());
    }
    return s;
  }

  index_t relocate_docs(const std::vector<double>& phi, double gamma) override {
    upload_phi(phi);
    const size_t NZ = static_cast<size_t>(N_) * Z_;
    l_scratch_.resize(NZ);
    p_scratch_.resize(NZ);
    double* moved = per_item_.get();
    const int blocks = static_cast<int>((N_ + kBlock - 1) / kBlock);
    if (D_ == 2)
      relocate_kernel<2><<<blocks, kBlock>>>(row_ptr_.get(), word_.get(), count_.get(), N_, Z_, phi_.get(),
                                             theta_t_.get(), static_cast<float>(gamma), X_.get(), l_scratch_.get(),
                                             p_scratch_.get(), moved);
    else
      relocate_kernel<3><<<blocks, kBlock>>>(row_ptr_.get(), word_.get(), count_.get(), N_, Z_, phi_.get(),
                                             theta_t_.get(), static_cast<float>(gamma), X_.get(), l_scratch_.get(),
                                             p_scratch_.get(), moved);
    ORRERY_CUDA_LAUNCHED("relocate_kernel");
    return static_cast<index_t>(reduce(moved, N_, SumOp()));
  }

 private:
  static MatrixD download(const DeviceBuffer<float>& buf, index_t rows, index_t cols) {
    std::vector<float> h(static_cast<size_t>(rows * cols));
    buf.download(h.data(), h.size());
    MatrixD out(rows, cols);
    std::copy(h.begin(), h.end(), out.data.begin());
    return out;
  }
  void upload_phi(const std::vector<double>& phi) {
    if (phi.size() != static_cast<size_t>(Z_) * D_) internal_error("CudaPlsvEngine: Phi has the wrong size");
    ORRERY_CUDA_CHECK(cudaSetDevice(device_));
    std::vector<float> h(phi.begin(), phi.end());
    phi_.upload(h.data(), h.size());
  }
  // Deterministic reductions of per-document or per-word values (reduce.cuh).
  template <class Op>
  double reduce(const double* in, index_t n, Op op) {
    return reducer_.reduce(n, Entries{in}, op);
  }

  int device_;
  index_t N_, W_;
  int Z_, D_;
  int grad_blocks_ = 0;
  DeviceBuffer<long long> row_ptr_, col_ptr_, col_src_;
  DeviceBuffer<int> word_, col_doc_;
  DeviceBuffer<float> count_, len_, X_, theta_t_, S_t_, P_, Rs_, u_, lse_, phi_, zeros_, l_scratch_, p_scratch_;
  DeviceBuffer<double> per_item_, total_, grad_partial_, grad_;
  Reducer reducer_;
};

}  // namespace

std::unique_ptr<PlsvEngine> make_plsv_engine(int device, const Corpus& corpus, int topics, int dim) {
  return std::make_unique<CudaPlsvEngine>(device, corpus, topics, dim);
}

}  // namespace orrery::cuda
