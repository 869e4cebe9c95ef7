// Exact kNN on the GPU: one thread per query scans every point with the CPU's double distance
// (math/distance.hpp) and bounded heap (math/select.hpp). The heaps live in global memory
// (N x k); the current worst entry is mirrored in registers so that most candidates are rejected
// without touching the heap. Points are read from global memory: a warp reads the same point at
// the same time, so each read is one broadcast, and X stays cached.
#include <vector>

#include "check.cuh"
#include "orrery/error.hpp"
#include "orrery/knn.hpp"
#include "orrery/math/distance.hpp"
#include "orrery/math/select.hpp"

namespace orrery {
namespace {

constexpr int kThreads = 128;

__global__ void knn_kernel(const double* __restrict__ X, int d, long long N, int k, double* __restrict__ dist2,
                           index_t* __restrict__ index) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= N) return;
  double* hd = dist2 + i * k;
  index_t* hi = index + i * k;
  int size = 0;
  double worst_d = 0.0;
  index_t worst_i = 0;
  const double* xi = X + i * d;
  for (long long l = 0; l < N; ++l) {
    if (l == i) continue;
    const double dl = math::squared_distance(xi, X + l * d, d);
    if (size == k && !math::neighbour_before(dl, static_cast<index_t>(l), worst_d, worst_i)) continue;
    math::heap_offer(dl, static_cast<index_t>(l), hd, hi, size, k);
    if (size == k) worst_d = hd[0], worst_i = hi[0];
  }
  math::heap_sort_ascending(hd, hi, k);
}

}  // namespace

KnnGraph exact_knn_cuda(const MatrixD& X, int k, int device) {
  const index_t N = X.rows;
  if (k < 1 || k > N - 1)
    input_error("k: expected 1 <= k <= N - 1 = " + std::to_string(N - 1) + " neighbours, found " + std::to_string(k));
  ORRERY_CUDA_CHECK(cudaSetDevice(device));
  const size_t nk = static_cast<size_t>(N) * k;
  cuda::DeviceBuffer<double> x, dist2(nk);
  cuda::DeviceBuffer<index_t> index(nk);
  x.upload(X.data.data(), X.data.size());
  const int blocks = static_cast<int>((N + kThreads - 1) / kThreads);
  knn_kernel<<<blocks, kThreads>>>(x.get(), static_cast<int>(X.cols), N, k, dist2.get(), index.get());
  ORRERY_CUDA_LAUNCHED("knn_kernel");
  KnnGraph g;
  g.num_points = N;
  g.k = k;
  g.index.resize(nk);
  g.dist2.resize(nk);
  index.download(g.index.data(), nk);
  dist2.download(g.dist2.data(), nk);
  return g;
}

}  // namespace orrery
