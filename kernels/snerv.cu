// Learning-metric distances on the GPU: one thread per pair (i < j) runs the shared straight-path
// integral (math/fisher.hpp) in double over the projections u_k(x) = m_k . x (metric_projections,
// the CPU's own set-up, computed on the host once: O(N K d)); each thread writes D_ij and D_ji.
// Scratch (3 K values per thread) lives in local memory. Same arithmetic as the CPU, so the two
// agree to rounding of exp and sqrt. The candidate path's listed pairs (learning_metric_pairs): one
// thread per entry of the graph, the same integral from the pair's lower-index end as the CPU.
#include <algorithm>
#include <string>
#include <vector>

#include "check.cuh"
#include "engines.cuh"
#include "orrery/engines.hpp"
#include "orrery/error.hpp"
#include "orrery/knn.hpp"
#include "orrery/math/distance.hpp"
#include "orrery/math/fisher.hpp"

namespace orrery::cuda {
namespace {

constexpr int kMaxComponents = 128;

// Rows i step by the grid's rows (grid.y is at most 65,535, so above N = 262,140 a thread row
// visits several i); each pair is its own, so the visiting order changes no bits.
__global__ void learning_metric_kernel(const double* __restrict__ U, const double* __restrict__ h,
                                       const double* __restrict__ beta, double w, int K, int C, int pieces,
                                       const double* __restrict__ X, int dims, double eta, long long N,
                                       double* __restrict__ D) {
  const long long j = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= N) return;
  const long long i_step = static_cast<long long>(gridDim.y) * blockDim.y;
  for (long long i = static_cast<long long>(blockIdx.y) * blockDim.y + threadIdx.y; i < j; i += i_step) {
    double scratch[3 * kMaxComponents];
    const double reg = eta * w * math::squared_distance(X + i * dims, X + j * dims, dims);
    const double d =
        math::fisher_path_distance(U + i * K, U + j * K, h, beta, w, K, C, pieces, math::kFisherFloor, reg, scratch);
    D[i * N + j] = d;
    D[j * N + i] = d;
  }
}

// Entry e = i k + q of the graph: the pair (i, index[e]), integrated from its lower-index end.
__global__ void learning_metric_pairs_kernel(const double* __restrict__ U, const double* __restrict__ h,
                                             const double* __restrict__ beta, double w, int K, int C, int pieces,
                                             const double* __restrict__ X, int dims, double eta,
                                             const index_t* __restrict__ index, int k, long long entries,
                                             double* __restrict__ out) {
  const long long e = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= entries) return;
  const long long i = e / k, j = index[e];
  const long long a = i < j ? i : j, b = i < j ? j : i;
  if (a == b) {
    out[e] = 0.0;
    return;
  }
  double scratch[3 * kMaxComponents];
  const double reg = eta * w * math::squared_distance(X + a * dims, X + b * dims, dims);
  out[e] = math::fisher_path_distance(U + a * K, U + b * K, h, beta, w, K, C, pieces, math::kFisherFloor, reg, scratch);
}

void check_components(int K) {
  if (K > kMaxComponents)
    input_error("params.components: the CUDA distances allow at most " + std::to_string(kMaxComponents) +
                " components, found " + std::to_string(K));
}

}  // namespace

std::vector<double> learning_metric_pairs(const ClassMixture& m, const MatrixD& X, const KnnGraph& g, int pieces,
                                          int device) {
  const auto K = static_cast<int>(m.centres.rows);
  check_components(K);
  if (pieces < 1) input_error("params.pieces: expected >= 1, found " + std::to_string(pieces));
  if (g.num_points != X.rows || g.index.size() != static_cast<size_t>(g.num_points) * static_cast<size_t>(g.k))
    internal_error("learning_metric_pairs: the graph's rows are not X's");
  for (index_t j : g.index)
    if (j < 0 || j >= X.rows) internal_error("learning_metric_pairs: a neighbor index outside the points");
  std::vector<double> out(g.index.size());
  if (out.empty()) return out;
  const MetricProjections proj = metric_projections(m, X);
  ORRERY_CUDA_CHECK(cudaSetDevice(device));
  DeviceBuffer<double> u, hd, beta, x, d(out.size());
  DeviceBuffer<index_t> index;
  u.upload(proj.U.data.data(), proj.U.data.size());
  x.upload(X.data.data(), X.data.size());
  hd.upload(proj.h.data(), proj.h.size());
  beta.upload(m.beta.data.data(), m.beta.data.size());
  index.upload(g.index.data(), g.index.size());
  const auto entries = static_cast<long long>(out.size());
  constexpr int kBlock = 128;
  learning_metric_pairs_kernel<<<static_cast<unsigned>((entries + kBlock - 1) / kBlock), kBlock>>>(
      u.get(), hd.get(), beta.get(), proj.w, K, m.num_classes, pieces, x.get(), static_cast<int>(X.cols), m.euclidean,
      index.get(), g.k, entries, d.get());
  ORRERY_CUDA_LAUNCHED("learning_metric_pairs_kernel");
  d.download(out.data(), out.size());
  return out;
}

MatrixD learning_metric_distances(const ClassMixture& m, const MatrixD& X, int pieces, int device) {
  const auto K = static_cast<int>(m.centres.rows);
  check_components(K);
  if (pieces < 1) input_error("params.pieces: expected >= 1, found " + std::to_string(pieces));
  const MetricProjections proj = metric_projections(m, X);
  ORRERY_CUDA_CHECK(cudaSetDevice(device));
  const index_t N = X.rows;
  DeviceBuffer<double> u, hd, beta, x, d(static_cast<size_t>(N) * N);
  u.upload(proj.U.data.data(), proj.U.data.size());
  x.upload(X.data.data(), X.data.size());
  hd.upload(proj.h.data(), proj.h.size());
  beta.upload(m.beta.data.data(), m.beta.data.size());
  ORRERY_CUDA_CHECK(cudaMemset(d.get(), 0, d.size() * sizeof(double)));
  constexpr long long kMaxGridY = 65535;  // CUDA's limit on grid.y; the kernel strides over the rest
  const dim3 block(32, 4), grid(static_cast<unsigned>((N + 31) / 32),
                                static_cast<unsigned>(std::min<long long>((N + 3) / 4, kMaxGridY)));
  if (N > 1) {  // else no pair (and an empty grid, which is no launch)
    learning_metric_kernel<<<grid, block>>>(u.get(), hd.get(), beta.get(), proj.w, K, m.num_classes, pieces, x.get(),
                                            static_cast<int>(X.cols), m.euclidean, N, d.get());
    ORRERY_CUDA_LAUNCHED("learning_metric_kernel");
  }
  MatrixD D(N, N);
  d.download(D.data.data(), D.data.size());
  return D;
}

}  // namespace orrery::cuda
