// CudaBackend: device discovery and the factory for CUDA engines. Each method family's engine
// lives in its own .cu file (pe_engine.cu, ...).
#include <cuda_runtime.h>

#include <cstdio>

#include "check.cuh"
#include "orrery/backend.hpp"
#include "pe_engine.cuh"

namespace orrery {
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
  bool is_cuda() const override { return true; }
  int device_index() const override { return info_.index; }

  // Device-to-device cudaMemcpy timed with events: the HBM figure kernels are compared with.
  double copy_bandwidth(size_t bytes) const override {
    ORRERY_CUDA_CHECK(cudaSetDevice(info_.index));
    cuda::DeviceBuffer<char> src(bytes), dst(bytes);
    ORRERY_CUDA_CHECK(cudaMemset(src.get(), 1, bytes));
    ORRERY_CUDA_CHECK(cudaMemset(dst.get(), 0, bytes));
    cudaEvent_t start, stop;
    ORRERY_CUDA_CHECK(cudaEventCreate(&start));
    ORRERY_CUDA_CHECK(cudaEventCreate(&stop));
    float best_ms = 1e30f;
    for (int rep = 0; rep < 5; ++rep) {
      ORRERY_CUDA_CHECK(cudaEventRecord(start));
      ORRERY_CUDA_CHECK(cudaMemcpy(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice));
      ORRERY_CUDA_CHECK(cudaEventRecord(stop));
      ORRERY_CUDA_CHECK(cudaEventSynchronize(stop));
      float ms = 0.f;
      ORRERY_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
      best_ms = ms < best_ms ? ms : best_ms;
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    return 2.0 * static_cast<double>(bytes) / (static_cast<double>(best_ms) * 1e-3);
  }
  std::unique_ptr<PeEngine> make_pe(const MatrixD& P, const std::vector<double>& log_priors, int dim,
                                    double eta_r) override {
    ORRERY_CUDA_CHECK(cudaSetDevice(info_.index));
    return cuda::make_pe_engine(P, log_priors, dim, eta_r);
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

std::unique_ptr<Backend> make_cuda_backend(int device_index) {
  const auto devices = cuda_devices();
  if (devices.empty()) throw Error(ErrorKind::cuda, "device: CUDA requested, but " + cuda_status());
  if (device_index < 0 || device_index >= static_cast<int>(devices.size()))
    input_error("device: cuda:" + std::to_string(device_index) + " does not exist (" +
                std::to_string(devices.size()) + " device(s) present)");
  return std::make_unique<CudaBackend>(devices[static_cast<size_t>(device_index)]);
}

}  // namespace orrery
