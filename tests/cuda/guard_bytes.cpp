// The guard bytes of every device buffer (ORRERY_GUARD_BUFFERS=1, which CMake sets for the gpu
// suite and scripts/gpu_check.sh for a copied build) checked after every test of test_cuda, in this
// one place, so that no test can forget: a test during which a kernel wrote past either end of a
// buffer fails, naming the buffer's size and the side. The library keeps only the first violation
// of the process, so a later test can be blamed only when none came before; the failure says so.
#include <gtest/gtest.h>

#include <string>

#include "orrery/backend.hpp"

namespace {

class GuardBytesChecked final : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo&) override { before_ = orrery::device_guard_violations(); }
  // A failure added here is the ending test's (gtest calls this listener before the printer's
  // OnTestEnd, as for the leak checker of its own samples).
  void OnTestEnd(const ::testing::TestInfo& info) override {
    const std::string after = orrery::device_guard_violations();
    if (after != before_)
      ADD_FAILURE() << info.test_suite_name() << "." << info.name() << ": " << after
                    << " (the guard bytes after the test; later tests of this process are not checked)";
  }
  std::string before_;
};

// Appended once the flags are parsed (an environment's SetUp runs inside RUN_ALL_TESTS), after
// whichever result printer they chose, so that its OnTestEnd, called in reverse order, comes after ours.
class GuardBytesEnvironment final : public ::testing::Environment {
  void SetUp() override {
    static bool appended = false;  // once, under --gtest_repeat too
    if (!appended) ::testing::UnitTest::GetInstance()->listeners().Append(new GuardBytesChecked);
    appended = true;
  }
};

[[maybe_unused]] ::testing::Environment* const guard_bytes_environment =
    ::testing::AddGlobalTestEnvironment(new GuardBytesEnvironment);

}  // namespace
