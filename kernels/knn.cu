// Exact kNN on the GPU by a tiled distance GEMM, in three steps per batch of queries:
//   1. for each tile of candidates, the dot products of the batch against the tile (cublasDgemm, in
//      double) turn into expanded squared distances |x|^2 + |y|^2 - 2 x.y (math/knn_gemm.hpp) of
//      shifted points, and a warp per query keeps the best k + m of them (math::knn_kept) in a
//      bounded heap under the neighbor order (distance, then index);
//   2. the kept candidates are re-ranked by the exact squared distance of the points as given,
//      coordinate by coordinate (math::nearest_candidates, the CPU's distance and order), so the
//      result equals the CPU's exact search whenever the GEMM's rounding leaves its k nearest inside
//      the k + m (always for integer-valued points, whose expanded distances are exact);
//   3. the batch's k neighbors come back to the host, and progress is reported.
// No N x N array exists: a tile's dot products take batch x tile doubles, sized to the free memory.
// This replaces a thread-per-query scan: the GEMM path does the O(N^2 d) work on the matrix units,
// and one search written twice (tiny N, large N) would be two codes to keep in step for nothing,
// since the GEMM path also serves small N (a few launches) and k near N (m shrinks to fit).
//
// Determinism: cuBLAS's DGEMM gives the same bits for the same shapes on the same device; each
// heap receives its candidates in a fixed order; and the kept set is the unique best k + m under a
// total order anyway. Batch and tile sizes are fixed unless memory is short (math::plan_knn_tiling).
#include <cublas_v2.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "check.cuh"
#include "engines.cuh"
#include "orrery/error.hpp"
#include "orrery/knn.hpp"
#include "orrery/math/knn_gemm.hpp"
#include "orrery/math/select.hpp"
#include "orrery/memory_plan.hpp"

namespace orrery::cuda {
namespace {

constexpr int kWarp = 32;
constexpr int kSelectThreads = 256;  // 8 warps, so 8 queries per block in the selection
constexpr int kThreads = 128;
// Default sizes: 8192 x 16384 dot products are 1 GiB, large enough for DGEMM to run near its peak
// and for the selection to fill the device (a warp per query); smaller only when memory is short.
constexpr long long kBatch = 8192;
constexpr long long kTile = 16384;
// Left free beside the plan: cuBLAS's workspace, the context's own growth, allocation granularity.
constexpr double kReserveBytes = 256.0 * 1024 * 1024;
constexpr unsigned kAllLanes = 0xffffffffu;

void cublas_check(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw Error(ErrorKind::cuda, std::string(call) + ": " + cublasGetStatusString(status) + " at " + file + ":" +
                                     std::to_string(line));
}
#define ORRERY_CUBLAS_CHECK(call) cublas_check((call), #call, __FILE__, __LINE__)

// One cuBLAS handle for one search, on the default stream (ordered with the kernels below), in the
// default math mode: IEEE double products and sums, never the fixed-point FP64 emulation.
// The handle belongs to the device current at its creation, and is destroyed there.
class CublasHandle {
 public:
  CublasHandle() : device_(current_device()) {
    ORRERY_CUBLAS_CHECK(cublasCreate(&handle_));
    const cublasStatus_t mode = cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH);
    if (mode != CUBLAS_STATUS_SUCCESS) cublasDestroy(handle_);  // the constructor throws: no destructor
    cublas_check(mode, "cublasSetMathMode", __FILE__, __LINE__);
  }
  ~CublasHandle() {
    const ScopedDevice on(device_);
    cublasDestroy(handle_);
  }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  cublasHandle_t get() const { return handle_; }

 private:
  int device_;
  cublasHandle_t handle_ = nullptr;
};

// Thread i writes row i shifted, xc_i = x_i - c, and its squared norm.
__global__ void shift_rows_kernel(const double* __restrict__ X, const double* __restrict__ shift, int d, long long N,
                                  double* __restrict__ xc, double* __restrict__ norms) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= N) return;
  for (int j = 0; j < d; ++j) xc[i * d + j] = X[i * d + j] - shift[j];
  norms[i] = math::squared_norm(xc + i * d, d);
}

// Warp w offers query q0 + w's expanded distances to the tile's candidates l0 .. l0 + nt - 1 (itself
// excluded) to its heap of `kept` entries. The lanes read 32 consecutive dot products at a time
// (coalesced); the ones that beat the heap's worst entry (all while it is not full) go in lane order,
// so candidate order, through lane 0's heap_offer; the worst entry is then broadcast again. After
// the first tiles few candidates beat it, so the warp mostly streams its column of G.
__global__ void __launch_bounds__(kSelectThreads)
    select_tile_kernel(const double* __restrict__ G, const double* __restrict__ norms, long long q0, long long nb,
                       long long l0, int nt, int kept, double* __restrict__ heap_d, index_t* __restrict__ heap_i,
                       int* __restrict__ heap_size) {
  const long long w = static_cast<long long>(blockIdx.x) * (kSelectThreads / kWarp) + threadIdx.x / kWarp;
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  if (w >= nb) return;  // whole warps only
  const index_t q = q0 + w;
  const double nq = norms[q];
  const double* gq = G + w * nt;
  double* hd = heap_d + w * kept;
  index_t* hi = heap_i + w * kept;
  int size = heap_size[w];
  double worst_d = size == kept ? hd[0] : 0.0;
  index_t worst_i = size == kept ? hi[0] : 0;
  for (int t0 = 0; t0 < nt; t0 += kWarp) {
    const int t = t0 + lane;
    const index_t l = l0 + t;
    double key = 0.0;
    bool offer = false;
    if (t < nt && l != q) {
      key = math::gemm_squared_distance(nq, norms[l], gq[t]);
      offer = size < kept || math::neighbor_before(key, l, worst_d, worst_i);
    }
    unsigned pending = __ballot_sync(kAllLanes, offer);
    if (!pending) continue;
    while (pending) {
      const int src = __ffs(pending) - 1;
      pending &= pending - 1;
      const double d_src = __shfl_sync(kAllLanes, key, src);
      const index_t l_src = __shfl_sync(kAllLanes, l, src);
      if (lane == 0) math::heap_offer(d_src, l_src, hd, hi, size, kept);
    }
    double wd = 0.0;
    index_t wi = 0;
    if (lane == 0 && size == kept) wd = hd[0], wi = hi[0];
    size = __shfl_sync(kAllLanes, size, 0);
    worst_d = __shfl_sync(kAllLanes, wd, 0);
    worst_i = __shfl_sync(kAllLanes, wi, 0);
  }
  if (lane == 0) heap_size[w] = size;
}

// Thread w re-ranks query q0 + w's kept candidates by the exact distance into its k results.
__global__ void rerank_kernel(const double* __restrict__ X, int d, long long q0, long long nb, int kept, int k,
                              const index_t* __restrict__ heap_i, double* __restrict__ out_d,
                              index_t* __restrict__ out_i) {
  const long long w = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (w >= nb) return;
  math::nearest_candidates(X, d, static_cast<index_t>(q0 + w), heap_i + w * kept, kept, k, out_d + w * k,
                           out_i + w * k);
}

int blocks_for(long long items, int per_block) { return static_cast<int>((items + per_block - 1) / per_block); }

// ORRERY_KNN_TILING=<queries>x<candidates> lowers the batch and tile sizes (tests use it to run
// several of each on small inputs); unset, the defaults. Read on every search.
void tiling_caps(long long& batch, long long& tile) {
  batch = kBatch, tile = kTile;
  const char* v = std::getenv("ORRERY_KNN_TILING");
  if (!v || !*v) return;
  char* end = nullptr;
  const long long b = std::strtoll(v, &end, 10);
  char* end2 = nullptr;
  const long long t = *end == 'x' ? std::strtoll(end + 1, &end2, 10) : 0;
  if (b < 1 || t < 1 || !end2 || *end2)
    input_error(std::string("ORRERY_KNN_TILING: expected <queries>x<candidates>, both at least 1 (e.g. 64x256), ") +
                "found '" + v + "'");
  batch = std::min(b, kBatch), tile = std::min(t, kTile);
}

// The batch and tile sizes for this search on the current device, from what is free once the cuBLAS
// handle exists; an input error naming the sizes when even one query against the smallest tile
// does not fit.
math::KnnTiling device_tiling(index_t N, int d, int k, int kept, int device) {
  long long max_batch = 0, max_tile = 0;
  tiling_caps(max_batch, max_tile);
  size_t free = 0, total = 0;
  ORRERY_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  const double reserve = std::max(kReserveBytes, static_cast<double>(free) / 16);
  const math::KnnTiling plan = math::plan_knn_tiling(N, d, k, kept, static_cast<double>(free) - reserve, max_batch,
                                                     max_tile);
  if (!plan.fits)
    input_error("device: the exact k-nearest-neighbor search needs " + format_bytes(plan.bytes) +
                " of GPU memory for " + std::to_string(N) + " points of " + std::to_string(d) +
                " coordinates with k = " + std::to_string(k) + " (the points twice, their norms, and one query " +
                "against " + std::to_string(plan.tile) + " candidates), but cuda:" + std::to_string(device) +
                " has " + format_bytes(static_cast<double>(free)) + " free, of which " + format_bytes(reserve) +
                " stays for cuBLAS and the context; use device \"cpu\", fewer points or a smaller k");
  return plan;
}

}  // namespace

KnnGraph exact_knn(const MatrixD& X, int k, int device, const std::function<void(index_t, index_t)>& progress) {
  const index_t N = X.rows;
  check_knn_k(N, k);
  const int d = static_cast<int>(X.cols);
  const int kept = math::knn_kept(k, N);
  ORRERY_CUDA_CHECK(cudaSetDevice(device));
  const CublasHandle cublas;  // before the memory query: its workspace is then already taken
  const math::KnnTiling plan = device_tiling(N, d, k, kept, device);
  const long long B = plan.batch, T = plan.tile;

  DeviceBuffer<double> x, shift, xc(static_cast<size_t>(N) * d), norms(static_cast<size_t>(N));
  x.upload(X.data.data(), X.data.size());
  const std::vector<double> c = math::gemm_shifts(X.data.data(), N, d);
  shift.upload(c.data(), c.size());
  shift_rows_kernel<<<blocks_for(N, kThreads), kThreads>>>(x.get(), shift.get(), d, N, xc.get(), norms.get());
  ORRERY_CUDA_LAUNCHED("shift_rows_kernel");

  DeviceBuffer<double> G(static_cast<size_t>(B * T)), heap_d(static_cast<size_t>(B) * kept),
      out_d(static_cast<size_t>(B) * k);
  DeviceBuffer<index_t> heap_i(static_cast<size_t>(B) * kept), out_i(static_cast<size_t>(B) * k);
  DeviceBuffer<int> heap_size(static_cast<size_t>(B));
  KnnGraph g = sized_graph(N, k);
  const double one = 1.0, zero = 0.0;
  for (long long q0 = 0; q0 < N; q0 += B) {
    const long long nb = std::min(B, N - q0);
    ORRERY_CUDA_CHECK(cudaMemset(heap_size.get(), 0, static_cast<size_t>(nb) * sizeof(int)));
    for (long long l0 = 0; l0 < N; l0 += T) {
      const int nt = static_cast<int>(std::min(T, N - l0));
      // G (nt x nb, column-major) = tile^T batch: column b holds query q0 + b's dots with the tile.
      if (d > 0)
        ORRERY_CUBLAS_CHECK(cublasDgemm(cublas.get(), CUBLAS_OP_T, CUBLAS_OP_N, nt, static_cast<int>(nb), d, &one,
                                        xc.get() + l0 * d, d, xc.get() + q0 * d, d, &zero, G.get(), nt));
      else
        ORRERY_CUDA_CHECK(cudaMemset(G.get(), 0, static_cast<size_t>(nt * nb) * sizeof(double)));
      select_tile_kernel<<<blocks_for(nb, kSelectThreads / kWarp), kSelectThreads>>>(
          G.get(), norms.get(), q0, nb, l0, nt, kept, heap_d.get(), heap_i.get(), heap_size.get());
      ORRERY_CUDA_LAUNCHED("select_tile_kernel");
    }
    rerank_kernel<<<blocks_for(nb, kThreads), kThreads>>>(x.get(), d, q0, nb, kept, k, heap_i.get(), out_d.get(),
                                                          out_i.get());
    ORRERY_CUDA_LAUNCHED("rerank_kernel");
    out_d.download(g.dist2.data() + q0 * k, static_cast<size_t>(nb) * k);
    out_i.download(g.index.data() + q0 * k, static_cast<size_t>(nb) * k);
    if (progress) progress(q0 + nb, N);
  }
  return g;
}

}  // namespace orrery::cuda
