// GPU tests start with ORRERY_REQUIRE_CUDA(): without a usable CUDA device (or in a build without
// CUDA) the test is skipped, visibly, with the reason, so `ctest -L gpu` on a machine without a GPU
// reports skips rather than passes.
#pragma once
#include <gtest/gtest.h>

#include <string>

namespace orrery::test {

// Empty when a CUDA device is usable; otherwise why not (from cuda_status()). The device query
// runs once per test process.
const std::string& require_cuda();

}  // namespace orrery::test

#define ORRERY_REQUIRE_CUDA()                                          \
  do {                                                                 \
    const std::string& orrery_skip_reason = ::orrery::test::require_cuda(); \
    if (!orrery_skip_reason.empty()) GTEST_SKIP() << orrery_skip_reason;    \
  } while (0)
