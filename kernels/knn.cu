// Exact kNN on the GPU: one thread per query scans every point with double squared distances
// summed in coordinate order and the CPU's bounded heap (math/select.hpp), so the neighbour
// order (ties by index) is the CPU's. The heaps live in global memory (N x k).
#include <vector>

#include "check.cuh"
#include "engines.cuh"
#include "orrery/error.hpp"
#include "orrery/knn.hpp"
#include "orrery/math/distance.hpp"
#include "orrery/math/select.hpp"

namespace orrery::cuda {
namespace {

constexpr int kQueries = 128;  // queries per block, one per thread
constexpr int kCands = 32;     // candidates per tile (their partial distances stay in registers)
constexpr int kDims = 32;      // coordinates per staged slice

// A block's queries and one tile of candidates are staged in shared memory a slice of
// coordinates at a time; each thread keeps the partial squared distances of its query to the
// tile's candidates in registers, summed over coordinates in index order (as on the CPU), then
// offers the finished distances to its heap in candidate order. The current worst entry is
// mirrored in registers so that most candidates are rejected without touching the heap.
__global__ void __launch_bounds__(kQueries) knn_kernel(const double* __restrict__ X, int d, long long N, int k,
                                                       double* __restrict__ dist2, index_t* __restrict__ index) {
  __shared__ double qs[kQueries][kDims + 1];
  __shared__ double cs[kCands][kDims + 1];
  const long long first = static_cast<long long>(blockIdx.x) * kQueries;
  const long long i = first + threadIdx.x;
  double* hd = dist2 + (i < N ? i : 0) * k;
  index_t* hi = index + (i < N ? i : 0) * k;
  int size = 0;
  double worst_d = 0.0;
  index_t worst_i = 0;
  for (long long l0 = 0; l0 < N; l0 += kCands) {
    double acc[kCands];
    for (int c = 0; c < kCands; ++c) acc[c] = 0.0;
    for (int c0 = 0; c0 < d; c0 += kDims) {
      const int w = d - c0 < kDims ? d - c0 : kDims;
      __syncthreads();
      for (int e = threadIdx.x; e < kQueries * kDims; e += kQueries) {
        const int r = e / kDims, c = e % kDims;
        qs[r][c] = first + r < N && c < w ? X[(first + r) * d + c0 + c] : 0.0;
      }
      for (int e = threadIdx.x; e < kCands * kDims; e += kQueries) {
        const int r = e / kDims, c = e % kDims;
        cs[r][c] = l0 + r < N && c < w ? X[(l0 + r) * d + c0 + c] : 0.0;
      }
      __syncthreads();
      for (int c = 0; c < w; ++c) {
        const double q = qs[threadIdx.x][c];
#pragma unroll
        for (int j = 0; j < kCands; ++j) {
          const double t = q - cs[j][c];
          acc[j] += t * t;
        }
      }
    }
    if (i >= N) continue;
#pragma unroll
    for (int j = 0; j < kCands; ++j) {
      const long long l = l0 + j;
      if (l >= N || l == i) continue;
      if (size == k && !math::neighbour_before(acc[j], static_cast<index_t>(l), worst_d, worst_i)) continue;
      math::heap_offer(acc[j], static_cast<index_t>(l), hd, hi, size, k);
      if (size == k) worst_d = hd[0], worst_i = hi[0];
    }
  }
  if (i < N) math::heap_sort_ascending(hd, hi, k);
}

}  // namespace

KnnGraph exact_knn(const MatrixD& X, int k, int device) {
  const index_t N = X.rows;
  if (k < 1 || k > N - 1)
    input_error("k: expected 1 <= k <= N - 1 = " + std::to_string(N - 1) + " neighbours, found " + std::to_string(k));
  ORRERY_CUDA_CHECK(cudaSetDevice(device));
  const size_t nk = static_cast<size_t>(N) * k;
  DeviceBuffer<double> x, dist2(nk);
  DeviceBuffer<index_t> index(nk);
  x.upload(X.data.data(), X.data.size());
  const int blocks = static_cast<int>((N + kQueries - 1) / kQueries);
  knn_kernel<<<blocks, kQueries>>>(x.get(), static_cast<int>(X.cols), N, k, dist2.get(), index.get());
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

}  // namespace orrery::cuda
