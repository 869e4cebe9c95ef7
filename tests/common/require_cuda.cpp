#include "common/require_cuda.hpp"

#include "orrery/backend.hpp"

namespace orrery::test {

const std::string& require_cuda() {
  // Cached: a process without a GPU would otherwise re-run the failing driver query per test.
  static const std::string reason =
      cuda_devices().empty() ? "no usable CUDA device: " + cuda_status() : std::string();
  return reason;
}

}  // namespace orrery::test
