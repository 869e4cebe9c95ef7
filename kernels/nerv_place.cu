// Placement into a frozen NeRV map on the device (orrery/nerv_place.hpp, Backend::place_nerv; the
// CPU's is host/cpu/nerv_place_engine.cpp). A block per new point runs that point's whole
// minimisation (math::nerv_place_minimise): each pass over the reference map is strided over the
// block's threads (math::nerv_place_*_part) and reduced in shared memory by a fixed tree, so every
// thread holds the same sums and takes the same steps. The map, lists, probabilities and precisions
// go up once; the places, costs and step counts come back once.
// Everything is double. Against the CPU the sums differ in their order (strided, then the tree,
// against reference order) and in exp (the device's against math::exp_nonpositive's polynomial),
// ~1e-13 relative; a line search whose decision lies that close can differ, after which the two
// paths differ by at most what the stopping tolerance allows (the parity test bounds the places).
#include <limits>
#include <string>
#include <vector>

#include "check.cuh"
#include "engines.cuh"
#include "orrery/engines.hpp"
#include "orrery/error.hpp"
#include "orrery/knn.hpp"
#include "orrery/math/nerv_place.hpp"
#include "orrery/memory_plan.hpp"

namespace orrery::cuda {
namespace {

constexpr int kThreads = 128;  // per block (one new point); a power of two for the tree

// One pass over the reference by the whole block, reduced into `out` for every thread. Host-device so
// that math::nerv_place_minimise (host-device) may call it; it runs on the device only.
template <int D>
struct BlockReduce {
  math::NervPlaceRow<double, index_t> r;
  double* buf;  // shared: kThreads x NervPlaceSizes<D>::moments, entry i of thread t at i * kThreads + t

  ORRERY_HD void operator()(int pass, const double* z, double m, const math::NervRow<double>& row,
                            double* out) const {
#if defined(__CUDA_ARCH__)
    constexpr int W = math::NervPlaceSizes<D>::moments;
    const int t = static_cast<int>(threadIdx.x);
    const int n = pass == 0 ? 1 : pass == 1 ? math::NervPlaceSizes<D>::row : W;
    double part[W];
    for (int i = 0; i < W; ++i) part[i] = 0.0;
    if (pass == 0) {
      part[0] = std::numeric_limits<double>::infinity();
      math::nerv_place_min_part<D>(r, z, t, kThreads, part);
    } else if (pass == 1) {
      math::nerv_place_row_part<D>(r, z, m, t, kThreads, part);
    } else {
      math::nerv_place_moment_part<D>(r, row, z, t, kThreads, part);
    }
    for (int i = 0; i < n; ++i) buf[i * kThreads + t] = part[i];
    __syncthreads();
    for (int s = kThreads / 2; s > 0; s >>= 1) {
      if (t < s)
        for (int i = 0; i < n; ++i) {
          const double a = buf[i * kThreads + t], b = buf[i * kThreads + t + s];
          buf[i * kThreads + t] = pass == 0 ? (b < a ? b : a) : a + b;
        }
      __syncthreads();
    }
    for (int i = 0; i < n; ++i) out[i] = buf[i * kThreads];
    __syncthreads();  // the buffer is free again for the next pass
#else
    (void)pass, (void)z, (void)m, (void)row, (void)out;
#endif
  }
};

// Point blockIdx.x, from its start to the end of its minimisation.
template <int D>
__global__ void __launch_bounds__(kThreads)
    place_kernel(const double* __restrict__ ref, long long N, const index_t* __restrict__ nb,
                 const double* __restrict__ p, const double* __restrict__ beta, int k, double lambda, int max_iter,
                 double tol, double* __restrict__ y_out, double* __restrict__ cost, int* __restrict__ steps) {
  __shared__ double buf[kThreads * math::NervPlaceSizes<D>::moments];
  const long long i = blockIdx.x;
  const index_t* nbi = nb + i * k;
  const double* pi = p + i * k;
  const math::NervPlaceRow<double, index_t> r = math::nerv_place_row(ref, N, nbi, pi, k, beta[i], lambda);
  double y[D];
  math::nerv_place_start<D>(ref, nbi, pi, k, y);
  const math::NervPlaceOutcome<double> o = math::nerv_place_minimise<D>(r, y, max_iter, tol, BlockReduce<D>{r, buf});
  if (threadIdx.x == 0) {
    for (int d = 0; d < D; ++d) y_out[i * D + d] = y[d];
    cost[i] = o.cost;
    steps[i] = o.steps;
  }
}

}  // namespace

NervPlacementResult place_nerv(int device, const MatrixD& R, const KnnGraph& g, const std::vector<double>& p,
                               const std::vector<double>& beta, double lambda, const NervPlacementParams& prm) {
  check_nerv_placement_input(R, g, p, beta, lambda);
  const long long M = g.num_points, N = R.rows;
  const int D = static_cast<int>(R.cols), k = g.k;
  if (M > std::numeric_limits<int>::max())
    input_error("input.vectors: at most 2^31 - 1 new points can be placed at once on a device");
  NervPlacementResult res;
  res.coords = MatrixD(M, D);
  res.cost.assign(static_cast<size_t>(M), 0.0);
  res.steps.assign(static_cast<size_t>(M), 0);
  if (M == 0) return res;
  ORRERY_CUDA_CHECK(cudaSetDevice(device));
  // refused before anything is allocated: the map, the lists and probabilities, per point beta,
  // place, cost and steps
  const double bytes = 8.0 * static_cast<double>(N) * D + 16.0 * static_cast<double>(M) * k +
                       static_cast<double>(M) * (8.0 * (D + 2) + 4.0);
  size_t free_bytes = 0, total = 0;
  ORRERY_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
  if (bytes > static_cast<double>(free_bytes))
    input_error("input.vectors: placing " + std::to_string(M) + " points with " + std::to_string(k) +
                " neighbors each needs " + format_bytes(bytes) + " of device memory, more than the " +
                format_bytes(static_cast<double>(free_bytes)) + " free; place fewer points at once");
  DeviceBuffer<double> ref, pd, bd, y, cost;
  DeviceBuffer<index_t> nb;
  DeviceBuffer<int> steps;
  ref.upload(R.data.data(), R.data.size());
  nb.upload(g.index.data(), g.index.size());
  pd.upload(p.data(), p.size());
  bd.upload(beta.data(), beta.size());
  y.resize(static_cast<size_t>(M * D));
  cost.resize(static_cast<size_t>(M));
  steps.resize(static_cast<size_t>(M));
  const auto grid = static_cast<unsigned>(M);
  if (D == 2)
    place_kernel<2><<<grid, kThreads>>>(ref.get(), N, nb.get(), pd.get(), bd.get(), k, lambda, prm.max_iter, prm.tol,
                                        y.get(), cost.get(), steps.get());
  else
    place_kernel<3><<<grid, kThreads>>>(ref.get(), N, nb.get(), pd.get(), bd.get(), k, lambda, prm.max_iter, prm.tol,
                                        y.get(), cost.get(), steps.get());
  ORRERY_CUDA_LAUNCHED("nerv place_kernel");
  y.download(res.coords.data.data(), res.coords.data.size());
  cost.download(res.cost.data(), res.cost.size());
  steps.download(res.steps.data(), res.steps.size());
  return res;
}

}  // namespace orrery::cuda
