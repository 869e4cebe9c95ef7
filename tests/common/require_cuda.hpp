// GPU tests start with ORRERY_REQUIRE_CUDA(): without a usable CUDA device (or in a build without
// CUDA) the test is skipped, visibly, with the reason.
#pragma once
#include <gtest/gtest.h>

#include "orrery/backend.hpp"

#define ORRERY_REQUIRE_CUDA()                                                     \
  do {                                                                            \
    if (::orrery::cuda_devices().empty()) GTEST_SKIP() << ::orrery::cuda_status(); \
  } while (0)
