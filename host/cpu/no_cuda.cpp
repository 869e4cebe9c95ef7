// Built instead of kernels/ when orrery is configured without CUDA: there is no CUDA backend to
// make, so every family's CUDA path is unreachable through Backend.
#include "orrery/backend.hpp"
#include "orrery/error.hpp"

namespace orrery {

bool cuda_built() { return false; }
std::vector<DeviceInfo> cuda_devices() { return {}; }
std::string cuda_status() { return "not built with CUDA (configure with -DORRERY_CUDA=ON and nvcc on PATH)"; }
std::unique_ptr<Backend> make_cuda_backend(int) {
  throw Error(ErrorKind::cuda, "device: CUDA requested, but this orrery was " + cuda_status());
}
std::string device_guard_violations() { return ""; }

}  // namespace orrery
