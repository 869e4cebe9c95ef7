// NeRV's exact cost and gradient on the GPU (MATH.md §3), over the per-pair arithmetic of
// math/nerv.hpp, with conjugate gradient's five vectors (x, gradient, direction, trial and its
// gradient; N x D doubles) resident on the device: per step only a cost, a dot product or a step
// length crosses (the reductions are reduce.cuh's, in a fixed order).
//
// The input stays as the caller gave it, in float:
//   dense:  P and log P (N x N, rows p_{j|i}), each row-major and transposed, so that thread i
//           reads P_ij = Pt[j N + i] and P_ji = P[j N + i] as consecutive words across a warp;
//   sparse: the CSR rows (p_{j|i} and log p_{j|i} for the listed j), each row's floor log p (MATH.md,
//           orrery/nerv.hpp), and the transposed lists (for each i, the rows j that list i): O(N k).
//           The all-pairs passes use p = 0 and the row's floor for every pair, and a per-point pass
//           adds the listed pairs' corrections (nerv_row_listed, nerv_pair_c_listed), as on the CPU.
// Three all-pairs passes (pairs.cuh: a thread per point i over tiles of points j in shared memory,
// a tile summed in float and tiles in double, chunks of j finished per point in chunk order):
//   1. the shift m_i = -beta_i min_j d_ij;
//   2. the row sums Z_i, T_i, U_i, P_i, finished per point in double into lse_i, KL(q_i||p_i) and
//      the cost;
//   3. the gradient 2 sum_j (c_ij + c_ji)(y_i - y_j), with row j's scalars staged beside y_j.
// Same input, same device: the same bits.
#include <algorithm>
#include <cfloat>
#include <memory>
#include <utility>
#include <vector>

#include "check.cuh"
#include "coords.cuh"
#include "engines.cuh"
#include "nerv_cells.cuh"
#include "orrery/affinity.hpp"
#include "orrery/engines.hpp"
#include "orrery/error.hpp"
#include "orrery/math/nerv.hpp"
#include "pairs.cuh"
#include "reduce.cuh"

namespace orrery::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kPointThreads = 128;

// Row i's scalars as the pair kernels stage them: (beta, lse, kl_qp, P_i).
__device__ __forceinline__ math::NervRow<float> row_of(const float4& r) { return {r.x, r.y, r.z, 0.f, r.w, 0.f}; }

// c_ij of a pair at squared distance d, from row i's staged scalars.
__device__ __forceinline__ float pair_c(float d, const float4& row, float p, float lp, float lambda) {
  const math::NervRow<float> r = row_of(row);
  const float lq = math::nerv_log_q(d, r);
  return math::nerv_pair_c(math::exp_nonpositive(lq), lq, r, p, lp, lambda);
}

// The listed pair's correction c_ij(p, lp) - c_ij(0, lpf) (sparse rows).
__device__ __forceinline__ float listed_c(float d, const float4& row, float p, float lp, float lpf, float lambda) {
  const math::NervRow<float> r = row_of(row);
  return math::nerv_pair_c_listed(math::exp_nonpositive(math::nerv_log_q(d, r)), r, p, lp, lpf, lambda);
}

__device__ __forceinline__ float sq_dist(const float4& a, const float4& b) {
  const float dx = a.x - b.x, dy = a.y - b.y, dz = a.z - b.z;
  return dx * dx + dy * dy + dz * dz;  // z is 0 for D = 2
}

// The input of the pair kernels: dense matrices, or (for sparse rows) each row's floor log p.
struct PairInput {
  const float *P, *LP, *Pt, *LPt;  // dense (N x N each), else null
  const float* lpf;                // sparse: floor log p per row, else null
};

__global__ void __launch_bounds__(kThreads) min_kernel(const float4* __restrict__ y, long long N, long long chunk,
                                                       float* __restrict__ partial) {
  __shared__ float4 tile[kThreads];
  const long long i = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x;
  const float4 yi = i < N ? y[i] : make_float4(0.f, 0.f, 0.f, 0.f);
  float best = FLT_MAX;
  for_each_tile<kThreads>(
      chunk_range(N, chunk), i < N, [&](int slot, long long j) { tile[slot] = y[j]; },
      [&](long long t0, int count) {
        for (int q = 0; q < count; ++q)
          if (t0 + q != i) best = fminf(best, sq_dist(yi, tile[q]));
      });
  if (i < N) partial[blockIdx.y * N + i] = best;
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

// Row sums Z, T, U (and P_i) of pass 2 over all pairs, partial per chunk: partial[(c * 4 + f) N + i].
// Sparse rows use p = 0 and the row's floor here.
template <bool kDense>
__global__ void __launch_bounds__(kThreads) row_kernel(const float4* __restrict__ y, long long N, long long chunk,
                                                       const float* __restrict__ beta, const float* __restrict__ shift,
                                                       PairInput in, double* __restrict__ partial) {
  __shared__ float4 tile[kThreads];
  const long long i = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x;
  const bool live = i < N;
  const float4 yi = live ? y[i] : make_float4(0.f, 0.f, 0.f, 0.f);
  const float b = live ? beta[i] : 0.f, m = live ? shift[i] : 0.f;
  const float lpf = !kDense && live ? in.lpf[i] : 0.f;
  double z = 0, t = 0, u = 0, ps = 0;
  for_each_tile<kThreads>(
      chunk_range(N, chunk), live, [&](int slot, long long j) { tile[slot] = y[j]; },
      [&](long long t0, int count) {
        float zf = 0.f, tf = 0.f, uf = 0.f, pf = 0.f;
        for (int q = 0; q < count; ++q) {
          const long long j = t0 + q;
          if (j == i) continue;
          const float p = kDense ? in.Pt[j * N + i] : 0.f, lp = kDense ? in.LPt[j * N + i] : lpf;
          const math::NervRowTerms<float> r = math::nerv_row_terms(sq_dist(yi, tile[q]), b, m, p, lp);
          zf += r.w;
          tf += r.wt;
          uf += r.pu;
          pf += p;
        }
        z += zf, t += tf, u += uf, ps += pf;
      });
  if (!live) return;
  double* out = partial + static_cast<long long>(blockIdx.y) * 4 * N + i;
  out[0] = z, out[N] = t, out[2 * N] = u, out[3 * N] = ps;
}

// Sparse rows' listed pairs (row_ptr, col, val, lp: CSR), with the row's floor lpf.
struct ListedRows {
  const index_t *row_ptr, *col;
  const float *val, *lp;
};

// Per point: row scalars from the chunks' sums (pass 2), in double, after adding a sparse row's listed
// pairs (the all-pairs sums used p = 0 and the floor for them); rows4[i] = (beta, lse, kl_qp, P_i).
template <bool kDense>
__global__ void row_finish_kernel(const double* __restrict__ partial, int chunks, long long N,
                                  const float4* __restrict__ y, const float* __restrict__ beta,
                                  const float* __restrict__ shift, const float* __restrict__ lpf, ListedRows rows,
                                  double lambda, float4* __restrict__ rows4, double* __restrict__ cost) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= N) return;
  double s[4] = {0, 0, 0, 0};
  for (int c = 0; c < chunks; ++c)
    for (int f = 0; f < 4; ++f) s[f] += partial[(static_cast<long long>(c) * 4 + f) * N + i];
  if (!kDense) {
    const float b = beta[i], m = shift[i], f = lpf[i];
    for (index_t q = rows.row_ptr[i]; q < rows.row_ptr[i + 1]; ++q) {
      const float d = sq_dist(y[i], y[rows.col[q]]);
      const float w = math::nerv_row_terms(d, b, m, 0.f, f).w;
      const math::NervRowTerms<float> r = math::nerv_row_listed(w, d, b, rows.val[q], rows.lp[q], f);
      s[1] += r.wt;
      s[2] += r.pu;
      s[3] += rows.val[q];
    }
  }
  const math::NervRow<double> r = math::nerv_row_finish<double>(beta[i], shift[i], s[0], s[1], s[2], s[3]);
  rows4[i] = make_float4(static_cast<float>(r.beta), static_cast<float>(r.lse), static_cast<float>(r.kl_qp),
                         static_cast<float>(r.p_sum));
  cost[i] = lambda * r.kl_pq + (1.0 - lambda) * r.kl_qp;
}

// Pass 3: sum_j (c_ij + c_ji)(y_i - y_j), partial per chunk: partial[(c * 3 + d) N + i]. Sparse rows
// take p = 0 and their row's floor here (row j's floor staged beside its scalars).
template <bool kDense>
__global__ void __launch_bounds__(kThreads) grad_kernel(const float4* __restrict__ y, const float4* __restrict__ rows4,
                                                        long long N, long long chunk, float lambda, PairInput in,
                                                        double* __restrict__ partial) {
  __shared__ float4 tile[kThreads];
  __shared__ float4 rtile[kThreads];
  __shared__ float ftile[kDense ? 1 : kThreads];
  const long long i = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x;
  const bool live = i < N;
  const float4 yi = live ? y[i] : make_float4(0.f, 0.f, 0.f, 0.f);
  const float4 ri = live ? rows4[i] : make_float4(0.f, 0.f, 0.f, 0.f);
  const float lpf_i = !kDense && live ? in.lpf[i] : 0.f;
  double g[3] = {0, 0, 0};
  for_each_tile<kThreads>(
      chunk_range(N, chunk), live,
      [&](int slot, long long j) {
        tile[slot] = y[j];
        rtile[slot] = rows4[j];
        if (!kDense) ftile[slot] = in.lpf[j];
      },
      [&](long long t0, int count) {
        float gf[3] = {0.f, 0.f, 0.f};
        for (int q = 0; q < count; ++q) {
          const long long j = t0 + q;
          if (j == i) continue;
          const float4 yj = tile[q], rj = rtile[q];
          const float d = sq_dist(yi, yj);
          const float c = kDense ? pair_c(d, ri, in.Pt[j * N + i], in.LPt[j * N + i], lambda) +
                                       pair_c(d, rj, in.P[j * N + i], in.LP[j * N + i], lambda)
                                 : pair_c(d, ri, 0.f, lpf_i, lambda) + pair_c(d, rj, 0.f, ftile[q], lambda);
          gf[0] += c * (yi.x - yj.x);
          gf[1] += c * (yi.y - yj.y);
          gf[2] += c * (yi.z - yj.z);
        }
        for (int d = 0; d < 3; ++d) g[d] += gf[d];
      });
  if (!live) return;
  double* out = partial + static_cast<long long>(blockIdx.y) * 3 * N + i;
  for (int d = 0; d < 3; ++d) out[d * N] = g[d];
}

// Per point: the chunks' partial gradients in chunk order, for sparse rows plus the listed pairs'
// corrections of row i (c_ij) and of the rows listing i (c_ji, from the transposed lists); grad =
// 2 sum, written into the engine's gradient vector (N x D doubles).
template <bool kDense>
__global__ void grad_finish_kernel(const double* __restrict__ partial, int chunks, long long N, int D,
                                   const float4* __restrict__ y, const float4* __restrict__ rows4,
                                   const float* __restrict__ lpf, ListedRows rows, ListedRows incoming, float lambda,
                                   double* __restrict__ grad) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= N) return;
  double s[3] = {0, 0, 0};
  for (int c = 0; c < chunks; ++c)
    for (int d = 0; d < D; ++d) s[d] += partial[(static_cast<long long>(c) * 3 + d) * N + i];
  if (!kDense) {
    const float4 yi = y[i], ri = rows4[i];
    const float f = lpf[i];
    for (index_t q = rows.row_ptr[i]; q < rows.row_ptr[i + 1]; ++q) {
      const float4 yj = y[rows.col[q]];
      const float c = listed_c(sq_dist(yi, yj), ri, rows.val[q], rows.lp[q], f, lambda);
      s[0] += c * (yi.x - yj.x), s[1] += c * (yi.y - yj.y), s[2] += c * (yi.z - yj.z);
    }
    for (index_t q = incoming.row_ptr[i]; q < incoming.row_ptr[i + 1]; ++q) {
      const index_t j = incoming.col[q];
      const float4 yj = y[j];
      const float c = listed_c(sq_dist(yi, yj), rows4[j], incoming.val[q], incoming.lp[q], lpf[j], lambda);
      s[0] += c * (yi.x - yj.x), s[1] += c * (yi.y - yj.y), s[2] += c * (yi.z - yj.z);
    }
  }
  for (int d = 0; d < D; ++d) grad[i * D + d] = 2.0 * s[d];
}

// trial = x + t direction.
__global__ void trial_kernel(const double* __restrict__ x, const double* __restrict__ dir, double t, long long n,
                             double* __restrict__ trial) {
  const long long q = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (q < n) trial[q] = x[q] + t * dir[q];
}

// direction = -gradient + beta direction (exactly -gradient for beta = 0).
__global__ void direction_kernel(const double* __restrict__ grad, double beta, long long n, double* __restrict__ dir) {
  const long long q = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (q < n) dir[q] = beta == 0.0 ? -grad[q] : -grad[q] + beta * dir[q];
}

// Host CSR lists in the device's types.
struct HostLists {
  std::vector<index_t> row_ptr, col;
  std::vector<float> val, lp;
};

class CudaNervEngine final : public NervEngine {
 public:
  CudaNervEngine(int device, const MatrixD* dense, const SparseAffinity* sparse, const std::vector<double>& beta,
                 const NervOptions& o)
      : device_(device), N_(dense ? dense->rows : sparse->num_points), dim_(o.dim), lambda_(o.lambda),
        dense_(dense != nullptr) {
    if (static_cast<index_t>(beta.size()) != N_) internal_error("nerv (cuda): P and beta disagree on N");
    if (dim_ != 2 && dim_ != 3) internal_error("nerv (cuda): D must be 2 or 3");
    if (N_ < 2) internal_error("nerv (cuda): needs at least 2 points");
    ORRERY_CUDA_CHECK(cudaSetDevice(device_));
    cudaDeviceProp prop{};
    ORRERY_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
    name_ = "cuda:" + std::to_string(device_) + " " + prop.name;
    const size_t nd = static_cast<size_t>(N_) * dim_;
    if (o.cutoff > 0) {  // params.pairs = approximate: the truncated cost (nerv_cells.cu)
      if (!sparse) internal_error("nerv (cuda): approximate pairs need sparse P");
      cells_ = std::make_unique<NervCellsDevice>(*sparse, beta, o.cutoff, dim_);
      for (auto& v : v_) v.resize(nd);
      ORRERY_CUDA_CHECK(cudaMemset(at(NervVector::direction).get(), 0, nd * sizeof(double)));
      return;
    }
    if (dense) upload_dense(*dense);
    else upload_sparse(*sparse);
    std::vector<float> bf(beta.begin(), beta.end());
    beta_.upload(bf.data(), bf.size());
    chunks_ = pair_chunks(N_, kThreads, prop.multiProcessorCount);
    const size_t n = static_cast<size_t>(N_);
    for (auto& v : v_) v.resize(nd);
    ORRERY_CUDA_CHECK(cudaMemset(at(NervVector::direction).get(), 0, nd * sizeof(double)));
    y4_.resize(n);
    rows4_.resize(n);
    shift_.resize(n);
    min_part_.resize(static_cast<size_t>(chunks_.count) * n);
    part_.resize(static_cast<size_t>(chunks_.count) * 4 * n);
    cost_.resize(n);
  }

  std::string name() const override { return name_; }
  std::string arithmetic() const override { return "float"; }

  void set_coords(const MatrixD& Y) override {
    if (Y.rows != N_ || Y.cols != dim_) internal_error("nerv (cuda): Y has the wrong shape");
    ORRERY_CUDA_CHECK(cudaSetDevice(device_));
    at(NervVector::x).upload(Y.data.data(), Y.data.size());
  }
  void set_vector(NervVector v, const MatrixD& V) override {
    if (V.rows != N_ || V.cols != dim_) internal_error("nerv (cuda): a vector has the wrong shape");
    ORRERY_CUDA_CHECK(cudaSetDevice(device_));
    at(v).upload(V.data.data(), V.data.size());
  }
  MatrixD vector(NervVector v) const override {
    ORRERY_CUDA_CHECK(cudaSetDevice(device_));
    MatrixD out(N_, dim_);
    at(v).download(out.data.data(), out.data.size());
    return out;
  }
  double evaluate(bool with_gradient) override {
    ORRERY_CUDA_CHECK(cudaSetDevice(device_));
    return evaluate_at(at(NervVector::x), with_gradient ? &at(NervVector::gradient) : nullptr);
  }
  double evaluate_trial(double t) override {
    ORRERY_CUDA_CHECK(cudaSetDevice(device_));
    const long long n = N_ * dim_;
    if (n > 0) {
      trial_kernel<<<blocks(n), kPointThreads>>>(at(NervVector::x).get(), at(NervVector::direction).get(), t, n,
                                                 at(NervVector::trial).get());
      ORRERY_CUDA_LAUNCHED("trial_kernel");
    }
    return evaluate_at(at(NervVector::trial), &at(NervVector::trial_gradient));
  }
  double dot(NervVector a, NervVector b) override {
    ORRERY_CUDA_CHECK(cudaSetDevice(device_));
    return reducer_.dot(at(a).get(), at(b).get(), N_ * dim_);
  }
  void update_direction(double beta) override {
    ORRERY_CUDA_CHECK(cudaSetDevice(device_));
    const long long n = N_ * dim_;
    if (n == 0) return;  // no points: no blocks to launch
    direction_kernel<<<blocks(n), kPointThreads>>>(at(NervVector::gradient).get(), beta, n,
                                                   at(NervVector::direction).get());
    ORRERY_CUDA_LAUNCHED("direction_kernel");
  }
  void accept_trial() override {
    at(NervVector::x).swap(at(NervVector::trial));
    at(NervVector::gradient).swap(at(NervVector::trial_gradient));
  }

 private:
  static int blocks(long long n) { return static_cast<int>((n + kPointThreads - 1) / kPointThreads); }

  DeviceBuffer<double>& at(NervVector v) { return v_[static_cast<size_t>(v)]; }
  const DeviceBuffer<double>& at(NervVector v) const { return v_[static_cast<size_t>(v)]; }

  void upload_dense(const MatrixD& P) {
    if (P.cols != N_) internal_error("nerv (cuda): P is not square");
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
        const auto lp = static_cast<float>(math::nerv_log_prob(P(i, j), kNervProbabilityFloor));
        a[static_cast<size_t>(i * N_ + j)] = lp;
        b[static_cast<size_t>(j * N_ + i)] = lp;
      }
    lp_.upload(a.data(), nn);
    lpt_.upload(b.data(), nn);
  }

  // The rows as given, and their transpose: for each i the rows j listing i, in increasing j.
  void upload_sparse(const SparseAffinity& P) {
    const std::vector<double> floors = nerv_row_log_floors(P);
    std::vector<float> lpf(floors.begin(), floors.end());
    lpf_.upload(lpf.data(), lpf.size());
    HostLists rows, in;
    rows.row_ptr = P.row_ptr;
    rows.col = P.col;
    for (double v : P.val) {
      rows.val.push_back(static_cast<float>(v));
      rows.lp.push_back(static_cast<float>(math::nerv_log_prob(v, kNervProbabilityFloor)));
    }
    const size_t nnz = P.col.size();
    in.row_ptr.assign(static_cast<size_t>(N_) + 1, 0);
    for (index_t j : P.col) ++in.row_ptr[static_cast<size_t>(j) + 1];
    for (long long i = 0; i < N_; ++i) in.row_ptr[static_cast<size_t>(i) + 1] += in.row_ptr[static_cast<size_t>(i)];
    in.col.resize(nnz);
    in.val.resize(nnz);
    in.lp.resize(nnz);
    std::vector<index_t> fill(in.row_ptr.begin(), in.row_ptr.end() - 1);
    for (long long j = 0; j < N_; ++j)
      for (index_t q = P.row_ptr[static_cast<size_t>(j)]; q < P.row_ptr[static_cast<size_t>(j) + 1]; ++q) {
        const auto slot = static_cast<size_t>(fill[static_cast<size_t>(P.col[static_cast<size_t>(q)])]++);
        in.col[slot] = j;
        in.val[slot] = rows.val[static_cast<size_t>(q)];
        in.lp[slot] = rows.lp[static_cast<size_t>(q)];
      }
    upload_lists(rows, rows_);
    upload_lists(in, incoming_);
  }

  struct DeviceLists {
    DeviceBuffer<index_t> row_ptr, col;
    DeviceBuffer<float> val, lp;
    ListedRows view() const { return {row_ptr.get(), col.get(), val.get(), lp.get()}; }
  };
  static void upload_lists(const HostLists& h, DeviceLists& d) {
    d.row_ptr.upload(h.row_ptr.data(), h.row_ptr.size());
    d.col.upload(h.col.data(), h.col.size());
    d.val.upload(h.val.data(), h.val.size());
    d.lp.upload(h.lp.data(), h.lp.size());
  }

  // E at the map y (N x D doubles on the device); its gradient into *grad when given. No points:
  // E = 0 and an empty gradient, with nothing launched (pair_chunks plans no chunk).
  double evaluate_at(const DeviceBuffer<double>& y, DeviceBuffer<double>* grad) {
    if (cells_) return cells_->evaluate(y.get(), lambda_, grad ? grad->get() : nullptr);
    if (chunks_.count == 0) return 0.0;
    const int pb = blocks(N_);
    to_float4_kernel<<<pb, kPointThreads>>>(y.get(), N_, dim_, y4_.get());
    ORRERY_CUDA_LAUNCHED("to_float4_kernel");
    const dim3 grid = pair_grid(N_, kThreads, chunks_);
    const PairInput in{p_.get(), lp_.get(), pt_.get(), lpt_.get(), lpf_.get()};
    min_kernel<<<grid, kThreads>>>(y4_.get(), N_, chunks_.chunk, min_part_.get());
    ORRERY_CUDA_LAUNCHED("min_kernel");
    shift_kernel<<<pb, kPointThreads>>>(min_part_.get(), chunks_.count, N_, beta_.get(), shift_.get());
    ORRERY_CUDA_LAUNCHED("shift_kernel");
    if (dense_) {
      row_kernel<true><<<grid, kThreads>>>(y4_.get(), N_, chunks_.chunk, beta_.get(), shift_.get(), in, part_.get());
      ORRERY_CUDA_LAUNCHED("row_kernel");
      row_finish_kernel<true><<<pb, kPointThreads>>>(part_.get(), chunks_.count, N_, y4_.get(), beta_.get(),
                                                     shift_.get(), nullptr, rows_.view(), lambda_, rows4_.get(),
                                                     cost_.get());
    } else {
      row_kernel<false><<<grid, kThreads>>>(y4_.get(), N_, chunks_.chunk, beta_.get(), shift_.get(), in, part_.get());
      ORRERY_CUDA_LAUNCHED("row_kernel");
      row_finish_kernel<false><<<pb, kPointThreads>>>(part_.get(), chunks_.count, N_, y4_.get(), beta_.get(),
                                                      shift_.get(), lpf_.get(), rows_.view(), lambda_, rows4_.get(),
                                                      cost_.get());
    }
    ORRERY_CUDA_LAUNCHED("row_finish_kernel");
    if (grad) {
      const auto lam = static_cast<float>(lambda_);
      if (dense_) {
        grad_kernel<true><<<grid, kThreads>>>(y4_.get(), rows4_.get(), N_, chunks_.chunk, lam, in, part_.get());
        ORRERY_CUDA_LAUNCHED("grad_kernel");
        grad_finish_kernel<true><<<pb, kPointThreads>>>(part_.get(), chunks_.count, N_, dim_, y4_.get(), rows4_.get(),
                                                        nullptr, rows_.view(), incoming_.view(), lam, grad->get());
      } else {
        grad_kernel<false><<<grid, kThreads>>>(y4_.get(), rows4_.get(), N_, chunks_.chunk, lam, in, part_.get());
        ORRERY_CUDA_LAUNCHED("grad_kernel");
        grad_finish_kernel<false><<<pb, kPointThreads>>>(part_.get(), chunks_.count, N_, dim_, y4_.get(), rows4_.get(),
                                                         lpf_.get(), rows_.view(), incoming_.view(), lam, grad->get());
      }
      ORRERY_CUDA_LAUNCHED("grad_finish_kernel");
    }
    return reducer_.sum(cost_.get(), N_);
  }

  int device_;
  long long N_;
  int dim_;
  double lambda_;
  bool dense_;
  std::string name_;
  PairChunks chunks_;
  DeviceBuffer<float> p_, pt_, lp_, lpt_, lpf_, beta_, shift_, min_part_;
  DeviceLists rows_, incoming_;
  DeviceBuffer<double> v_[kNervVectors];  // by NervVector
  DeviceBuffer<double> part_, cost_;
  DeviceBuffer<float4> y4_, rows4_;
  Reducer reducer_;
  std::unique_ptr<NervCellsDevice> cells_;  // the truncated cost, or null for all pairs
};

}  // namespace

std::unique_ptr<NervEngine> make_nerv_engine(int device, const MatrixD* dense, const SparseAffinity* sparse,
                                             const std::vector<double>& beta, const NervOptions& options) {
  if ((dense == nullptr) == (sparse == nullptr)) internal_error("make_nerv_engine (cuda): give dense or sparse P");
  return std::make_unique<CudaNervEngine>(device, dense, sparse, beta, options);
}

}  // namespace orrery::cuda
