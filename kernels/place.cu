// Out-of-sample placement on the device (orrery/hssne.hpp, PlacementEngine; the CPU's engine is
// host/cpu/place_engine.cpp): the reference map, the new points' neighbor lists and probabilities
// and every point's state (place, gradient, step length, cost, steps) stay on the device; per step
// only the count of points still moving comes back.
//   start:  a thread per point: the weighted-median start and first step length (math::place_start,
//           math::place_first_step); then the sums there and the cost and gradient (math::place_cost).
//   step:   a thread per moving point: its trial place (math::place_trial); the sums there; a thread
//           per moving point: the cost there and the step rule (math::place_accept); the moving points
//           kept in index order by a stable selection (cub::DeviceSelect::Flagged).
//   sums:   from the frozen grid (DeviceGrid::freeze / sums_at) where it reaches, and for the other
//           points (all of them with exact repulsion) over every reference point, a block per point
//           with a fixed-shape reduction (block_exact_sums).
// Everything is double, every sum in a fixed order: the same input gives the same bits on one device.
// Against the CPU the sums differ by the transforms' rounding (cuFFT against FFTW), the exact loop's
// order (strided, then a block reduction) and fused multiply-adds, ~1e-13 relative (the starts are
// the same reference coordinates, picked by the same comparisons); a trial whose cost lies that close
// to the point's cost can be taken on one side and refused on the other, after which the two step
// lengths differ (the parity tests bound the end places by the stopping tolerance).
#include <cub/device/device_select.cuh>

#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "check.cuh"
#include "engines.cuh"
#include "exact_sums.cuh"
#include "interp.cuh"
#include "orrery/engines.hpp"
#include "orrery/error.hpp"
#include "orrery/knn.hpp"
#include "orrery/math/place.hpp"
#include "orrery/memory_plan.hpp"

namespace orrery::cuda {
namespace {

constexpr int kThreads = 128;       // per-point kernels
constexpr int kExactThreads = 256;  // a block per point summed exactly

int blocks_for(long long n) { return static_cast<int>(n > 0 ? (n + kThreads - 1) / kThreads : 1); }

// The new points' lists on the device, as the kernels read them.
struct PlaceInput {
  const double* ref;    // N x D
  const index_t* nb;    // M x k
  const double* p;      // M x k
  int k;
  double alpha;
};

// Point i's start, its first step length, and active[i] = i (every point moving).
template <int D>
__global__ void start_kernel(PlaceInput in, long long M, double* __restrict__ y, double* __restrict__ eta,
                             index_t* __restrict__ active) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= M) return;
  const index_t* nb = in.nb + i * in.k;
  const double* p = in.p + i * in.k;
  math::place_start<D>(in.ref, nb, p, in.k, y + i * D);
  eta[i] = math::place_first_step<D>(y + i * D, in.ref, nb, p, in.k, in.alpha);
  active[i] = i;
}

// Position a's sums over every reference point where the grid did not give them (inside null: no
// grid), and its point marked as summed exactly (exact null: not counted). Block-uniform exit.
template <int D>
__global__ void __launch_bounds__(kExactThreads)
    exact_kernel(const double* __restrict__ q, long long count, const double* __restrict__ ref, long long N,
                 double alpha, const unsigned char* __restrict__ inside, const index_t* __restrict__ active,
                 unsigned char* __restrict__ exact, double* __restrict__ sums) {
  const long long a = blockIdx.x;
  if (inside && inside[a]) return;
  block_exact_sums<D, kExactThreads>(q + a * D, ref, N, -1, alpha, sums + a, count);
  if (exact && threadIdx.x == 0) exact[active[a]] = 1;
}

// The cost and gradient of every point at its start (position i is point i).
template <int D>
__global__ void start_cost_kernel(PlaceInput in, long long M, const double* __restrict__ y,
                                  const double* __restrict__ sums, double* __restrict__ cost,
                                  double* __restrict__ grad) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= M) return;
  double hsy[D];
  for (int d = 0; d < D; ++d) hsy[d] = sums[(2 + d) * M + i];
  cost[i] = math::place_cost<D>(y + i * D, in.ref, in.nb + i * in.k, in.p + i * in.k, in.k, in.alpha, sums[i],
                                sums[M + i], hsy, grad + i * D);
}

// The trial place of the moving point at position a.
template <int D>
__global__ void trial_kernel(const index_t* __restrict__ active, long long A, const double* __restrict__ y,
                             const double* __restrict__ grad, const double* __restrict__ eta,
                             double* __restrict__ trial) {
  const long long a = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (a >= A) return;
  const index_t i = active[a];
  math::place_trial<D>(y + i * D, grad + i * D, eta[i], trial + a * D);
}

// The cost at the trial of position a and the step rule; moving[a] whether its point goes on.
template <int D>
__global__ void accept_kernel(PlaceInput in, const index_t* __restrict__ active, long long A,
                              const double* __restrict__ trial, const double* __restrict__ sums, double tol,
                              double* __restrict__ y, double* __restrict__ grad, double* __restrict__ eta,
                              double* __restrict__ cost, int* __restrict__ steps, unsigned char* __restrict__ moving) {
  const long long a = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (a >= A) return;
  const index_t i = active[a];
  double hsy[D], gt[D];
  for (int d = 0; d < D; ++d) hsy[d] = sums[(2 + d) * A + a];
  const double c = math::place_cost<D>(trial + a * D, in.ref, in.nb + i * in.k, in.p + i * in.k, in.k, in.alpha,
                                       sums[a], sums[A + a], hsy, gt);
  ++steps[i];
  moving[a] = math::place_accept<D>(c, trial + a * D, gt, tol, cost[i], y + i * D, grad + i * D, eta[i]) ? 1 : 0;
}

class CudaPlacementEngine final : public PlacementEngine {
 public:
  CudaPlacementEngine(int device, const MatrixD& R, double alpha, const KnnGraph& g, const std::vector<double>& p,
                      const HssneRepulsion& repulsion)
      : device_(device), D_(static_cast<int>(R.cols)), N_(R.rows), M_(g.num_points), k_(g.k), alpha_(alpha) {
    ORRERY_CUDA_CHECK(cudaSetDevice(device_));
    cudaDeviceProp prop{};
    ORRERY_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
    name_ = "cuda:" + std::to_string(device_) + " " + prop.name;
    check_memory();
    ref_.upload(R.data.data(), R.data.size());
    nb_.upload(g.index.data(), g.index.size());
    p_.upload(p.data(), p.size());
    const size_t m = static_cast<size_t>(M_), md = m * static_cast<size_t>(D_);
    for (auto* b : {&y_, &grad_, &trial_}) b->resize(md);
    eta_.resize(m);
    cost_.resize(m);
    sums_.resize(m * static_cast<size_t>(2 + D_));
    steps_.resize(m);
    for (auto* b : {&exact_, &inside_, &moving_}) b->resize(m);
    active_.resize(m);
    next_.resize(m);
    count_.resize(1);
    if (repulsion.interpolated) grid_ = std::make_unique<DeviceGrid>(D_, alpha, repulsion.grid, N_);
  }

  std::string name() const override { return name_; }

  void start() override {
    A_ = 0;
    if (M_ == 0) return;
    ORRERY_CUDA_CHECK(cudaSetDevice(device_));
    ORRERY_CUDA_CHECK(cudaMemset(steps_.get(), 0, steps_.size() * sizeof(int)));
    ORRERY_CUDA_CHECK(cudaMemset(exact_.get(), 0, exact_.size()));
    if (D_ == 2) start_points<2>();
    else start_points<3>();
    A_ = M_;
  }

  index_t step(double tol) override {
    if (A_ == 0) return 0;
    ORRERY_CUDA_CHECK(cudaSetDevice(device_));
    if (D_ == 2) step_points<2>(tol);
    else step_points<3>(tol);
    // the moving points, in index order, become the active list
    scratch_.run([&](void* tmp, size_t& bytes) {
      return cub::DeviceSelect::Flagged(tmp, bytes, active_.get(), moving_.get(), next_.get(), count_.get(),
                                        static_cast<int>(A_));
    });
    active_.swap(next_);
    int moving = 0;
    count_.download(&moving, 1);
    A_ = moving;
    return A_;
  }

  PlacementResult result() const override {
    ORRERY_CUDA_CHECK(cudaSetDevice(device_));
    PlacementResult r;
    r.coords = MatrixD(M_, D_);
    r.cost.resize(static_cast<size_t>(M_));
    r.steps.resize(static_cast<size_t>(M_));
    y_.download(r.coords.data.data(), r.coords.data.size());
    cost_.download(r.cost.data(), r.cost.size());
    steps_.download(r.steps.data(), r.steps.size());
    if (grid_) {
      std::vector<unsigned char> exact(static_cast<size_t>(M_));
      exact_.download(exact.data(), exact.size());
      r.exact_points = std::accumulate(exact.begin(), exact.end(), index_t(0));
    } else {
      r.exact_points = M_;
    }
    r.interpolated = grid_ != nullptr;
    return r;
  }

 private:
  PlaceInput input() const { return {ref_.get(), nb_.get(), p_.get(), k_, alpha_}; }

  // Refused before anything is allocated: the reference, the lists and the per-point state (the
  // frozen grid checks its own arrays when it is shaped).
  void check_memory() const {
    const double m = static_cast<double>(M_), d = D_;
    // per point: place, gradient, trial (3 D), step length, cost, sums (2 + D) doubles; steps (int);
    // three flags; the active list and its successor
    const double per_point = 8.0 * (3 * d + 2 + 2 + d) + 4 + 3 + 16;
    const double bytes = 8.0 * static_cast<double>(N_) * d + 16.0 * m * k_ + m * per_point;
    size_t free_bytes = 0, total = 0;
    ORRERY_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
    if (bytes > static_cast<double>(free_bytes))
      input_error("input.vectors: placing " + std::to_string(M_) + " points with " + std::to_string(k_) +
                  " neighbors each needs " + format_bytes(bytes) + " of device memory, more than the " +
                  format_bytes(static_cast<double>(free_bytes)) + " free; place fewer points at once");
  }

  template <int D>
  void start_points() {
    start_kernel<D><<<blocks_for(M_), kThreads>>>(input(), M_, y_.get(), eta_.get(), active_.get());
    ORRERY_CUDA_LAUNCHED("start_kernel");
    if (grid_) grid_->freeze(ref_.get(), kPlacementGridMargin);
    evaluate<D>(y_.get(), M_);
    start_cost_kernel<D><<<blocks_for(M_), kThreads>>>(input(), M_, y_.get(), sums_.get(), cost_.get(), grad_.get());
    ORRERY_CUDA_LAUNCHED("start_cost_kernel");
  }

  template <int D>
  void step_points(double tol) {
    trial_kernel<D><<<blocks_for(A_), kThreads>>>(active_.get(), A_, y_.get(), grad_.get(), eta_.get(), trial_.get());
    ORRERY_CUDA_LAUNCHED("trial_kernel");
    evaluate<D>(trial_.get(), A_);
    accept_kernel<D><<<blocks_for(A_), kThreads>>>(input(), active_.get(), A_, trial_.get(), sums_.get(), tol,
                                                   y_.get(), grad_.get(), eta_.get(), cost_.get(), steps_.get(),
                                                   moving_.get());
    ORRERY_CUDA_LAUNCHED("accept_kernel");
  }

  // The sums at the `count` places q (position a: the point active_[a]) into sums_ (2 + D rows of
  // count): from the grid where it reaches, else exactly.
  template <int D>
  void evaluate(const double* q, long long count) {
    if (grid_) grid_->sums_at(q, count, sums_.get(), inside_.get());
    exact_kernel<D><<<static_cast<int>(count), kExactThreads>>>(q, count, ref_.get(), N_, alpha_,
                                                                grid_ ? inside_.get() : nullptr, active_.get(),
                                                                grid_ ? exact_.get() : nullptr, sums_.get());
    ORRERY_CUDA_LAUNCHED("exact_kernel");
  }

  int device_, D_;
  long long N_, M_;
  int k_;
  double alpha_;
  std::string name_;
  long long A_ = 0;  // points still moving (the first A_ entries of active_)
  DeviceBuffer<double> ref_, p_, y_, grad_, trial_, eta_, cost_, sums_;
  DeviceBuffer<index_t> nb_, active_, next_;
  DeviceBuffer<int> steps_, count_;
  DeviceBuffer<unsigned char> exact_, inside_, moving_;
  CubScratch scratch_;
  std::unique_ptr<DeviceGrid> grid_;  // null: exact sums
};

}  // namespace

std::unique_ptr<PlacementEngine> make_placement_engine(int device, const MatrixD& R, double alpha, const KnnGraph& g,
                                                       const std::vector<double>& p, const HssneRepulsion& repulsion) {
  check_placement_input(R, g, p);
  if (g.num_points > std::numeric_limits<int>::max())
    input_error("input.vectors: at most 2^31 - 1 new points can be placed at once on a device");
  return std::make_unique<CudaPlacementEngine>(device, R, alpha, g, p, repulsion);
}

}  // namespace orrery::cuda
