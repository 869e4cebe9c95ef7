// CudaBackend: device discovery, and every family's engine and primitive on one device. Each
// family lives in its own .cu file (engines.cuh); this one also keeps the guard-byte checks of
// check.cuh.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "check.cuh"
#include "engines.cuh"
#include "orrery/backend.hpp"
#include "orrery/engines.hpp"
#include "orrery/knn.hpp"
#include "orrery/quality.hpp"

namespace orrery {
namespace cuda {
namespace {

std::mutex guard_mutex;
std::string guard_violation;  // the first one seen

}  // namespace

bool guards_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("ORRERY_GUARD_BUFFERS");
    return v && std::string(v) == "1";
  }();
  return on;
}

void check_guards(const void* base, size_t bytes) {
  std::vector<unsigned char> front(kGuardBytes), back(kGuardBytes);
  const auto* b = static_cast<const unsigned char*>(base);
  if (cudaMemcpy(front.data(), b, kGuardBytes, cudaMemcpyDeviceToHost) != cudaSuccess ||
      cudaMemcpy(back.data(), b + kGuardBytes + bytes, kGuardBytes, cudaMemcpyDeviceToHost) != cudaSuccess) {
    // Clears the copy's own failure, so the next launch check does not report it as its kernel's;
    // a sticky error (a kernel's fault) outlives this: every later call fails with it, and the next
    // checked one reports it.
    cudaGetLastError();
    return;
  }
  const char* side = nullptr;
  for (size_t q = 0; q < kGuardBytes && !side; ++q) {
    if (front[q] != kGuardByte) side = "before";
    else if (back[q] != kGuardByte) side = "after";
  }
  if (!side) return;
  const std::lock_guard<std::mutex> lock(guard_mutex);
  if (guard_violation.empty())
    guard_violation = std::string("a kernel wrote ") + side + " a device buffer of " + std::to_string(bytes) + " bytes";
}

}  // namespace cuda

std::string device_guard_violations() {
  const std::lock_guard<std::mutex> lock(cuda::guard_mutex);
  return cuda::guard_violation;
}

namespace {

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const DeviceInfo& info) : info_(info) {}
  std::string name() const override {
    char buf[256];
    std::snprintf(buf, sizeof buf, "cuda:%d %s (cc %d.%d)", info_.index, info_.name.c_str(), info_.cc_major,
                  info_.cc_minor);
    return buf;
  }
  MemoryInfo memory() const override {
    ORRERY_CUDA_CHECK(cudaSetDevice(info_.index));
    size_t free = 0, total = 0;
    ORRERY_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    return {available_host_memory(), static_cast<double>(free)};
  }

  // Device-to-device cudaMemcpy timed with events: the HBM figure kernels are compared with.
  double copy_bandwidth(size_t bytes) const override {
    ORRERY_CUDA_CHECK(cudaSetDevice(info_.index));
    cuda::DeviceBuffer<char> src(bytes), dst(bytes);
    ORRERY_CUDA_CHECK(cudaMemset(src.get(), 1, bytes));
    ORRERY_CUDA_CHECK(cudaMemset(dst.get(), 0, bytes));
    const cuda::Event start, stop;  // destroyed on every way out, a throwing check included
    float best_ms = 1e30f;
    for (int rep = 0; rep < 5; ++rep) {
      ORRERY_CUDA_CHECK(cudaEventRecord(start.get()));
      ORRERY_CUDA_CHECK(cudaMemcpy(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice));
      ORRERY_CUDA_CHECK(cudaEventRecord(stop.get()));
      ORRERY_CUDA_CHECK(cudaEventSynchronize(stop.get()));
      float ms = 0.f;
      ORRERY_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
      best_ms = ms < best_ms ? ms : best_ms;
    }
    return 2.0 * static_cast<double>(bytes) / (static_cast<double>(best_ms) * 1e-3);
  }
  std::unique_ptr<PeEngine> make_pe(const MatrixD& P, const std::vector<double>& log_priors, int dim,
                                    double eta_r) override {
    return cuda::make_pe_engine(info_.index, P, log_priors, dim, eta_r);
  }
  bool has_interpolated_repulsion() const override { return true; }
  std::unique_ptr<HssneEngine> make_hssne(const MatrixD& P, double alpha, int dim) override {
    return cuda::make_hssne_engine(info_.index, &P, nullptr, alpha, dim);
  }
  std::unique_ptr<HssneEngine> make_hssne(const SparseAffinity& P, double alpha, int dim,
                                          const HssneRepulsion& repulsion = {}) override {
    return cuda::make_hssne_engine(info_.index, nullptr, &P, alpha, dim, repulsion);
  }
  std::unique_ptr<PlacementEngine> make_placement(const MatrixD& reference, double alpha, const KnnGraph& to_reference,
                                                  const std::vector<double>& p,
                                                  const HssneRepulsion& repulsion) override {
    return cuda::make_placement_engine(info_.index, reference, alpha, to_reference, p, repulsion);
  }
  NervPlacementResult place_nerv(const MatrixD& reference_map, const KnnGraph& to_reference,
                                 const std::vector<double>& p, const std::vector<double>& beta, double lambda,
                                 const NervPlacementParams& params) const override {
    return cuda::place_nerv(info_.index, reference_map, to_reference, p, beta, lambda, params);
  }
  std::unique_ptr<NervEngine> make_nerv(const MatrixD& P, const std::vector<double>& beta,
                                        const NervOptions& options) override {
    return cuda::make_nerv_engine(info_.index, &P, nullptr, beta, options);
  }
  std::unique_ptr<NervEngine> make_nerv(const SparseAffinity& P, const std::vector<double>& beta,
                                        const NervOptions& options) override {
    return cuda::make_nerv_engine(info_.index, nullptr, &P, beta, options);
  }
  std::unique_ptr<PlsvEngine> make_plsv(const Corpus& corpus, int topics, int dim) override {
    return cuda::make_plsv_engine(info_.index, corpus, topics, dim);
  }
  KnnGraph knn(const MatrixD& X, int k) const override { return knn_reporting(X, k, {}); }
  KnnGraph knn_reporting(const MatrixD& X, int k, const KnnProgress& progress) const override {
    return cuda::exact_knn(X, k, info_.index, progress);
  }
  RankRows rank_rows(const MatrixD& X, const MatrixD& Y, int kmax, RankInput input,
                     const std::vector<index_t>& queries) const override {
    return cuda::rank_rows(X, Y, kmax, input, queries, info_.index);
  }
  MatrixD learning_metric_distances(const ClassMixture& model, const MatrixD& X, int pieces) const override {
    return cuda::learning_metric_distances(model, X, pieces, info_.index);
  }
  std::vector<double> learning_metric_pairs(const ClassMixture& model, const MatrixD& X, const KnnGraph& graph,
                                            int pieces) const override {
    return cuda::learning_metric_pairs(model, X, graph, pieces, info_.index);
  }

 private:
  DeviceInfo info_;
};

}  // namespace

bool cuda_built() { return true; }

std::vector<DeviceInfo> cuda_devices() {
  std::vector<DeviceInfo> out;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" status so later calls start clean
    return out;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    DeviceInfo d;
    d.index = i;
    d.name = prop.name;
    d.cc_major = prop.major;
    d.cc_minor = prop.minor;
    d.memory_gib = static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0);
    d.multiprocessors = prop.multiProcessorCount;
    out.push_back(d);
  }
  return out;
}

std::string cuda_status() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return std::string("built with CUDA ") + std::to_string(CUDART_VERSION / 1000) + "." +
           std::to_string(CUDART_VERSION % 1000 / 10) + ", no usable device (" + cudaGetErrorString(e) + ")";
  }
  return std::string("built with CUDA ") + std::to_string(CUDART_VERSION / 1000) + "." +
         std::to_string(CUDART_VERSION % 1000 / 10) + ", " + std::to_string(count) + " device(s)";
}

std::unique_ptr<Backend> make_cuda_backend(int device) {
  const auto devices = cuda_devices();
  if (devices.empty()) throw Error(ErrorKind::cuda, "device: CUDA requested, but " + cuda_status());
  if (device < 0 || device >= static_cast<int>(devices.size()))
    input_error("device: cuda:" + std::to_string(device) + " does not exist (" + std::to_string(devices.size()) +
                " device(s) present)");
  return std::make_unique<CudaBackend>(devices[static_cast<size_t>(device)]);
}

}  // namespace orrery
