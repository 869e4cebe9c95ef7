// `orrery check`: every method's primitives and a few iterations compared with the CPU reference
// under the parity tolerances. On a machine without a GPU it says so and exits 0; --device cpu
// checks one CPU thread against all, which must agree everywhere.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "common/check_configs.hpp"
#include "common/cli_runner.hpp"
#include "common/temp_dir.hpp"
#include "orrery/backend.hpp"

using json = nlohmann::json;
using orrery::test::expect_all_agree;
using orrery::test::run_orrery;

namespace {

json read_json(const std::string& p) {
  std::ifstream in(p);
  return json::parse(in);
}

}  // namespace

TEST(Check, WithoutADeviceItSaysSoAndPasses) {
  orrery::test::TempDir tmp;
  const auto o = run_orrery("check configs/pe_planted_csv.json --out " + tmp.path("c.json"));
  ASSERT_EQ(o.code, 0) << o.output;
  const json r = read_json(tmp.path("c.json"));
  EXPECT_EQ(r["method"], "pe");
  if (orrery::cuda_devices().empty()) {
    EXPECT_NE(o.output.find("no usable CUDA device"), std::string::npos) << o.output;
    EXPECT_TRUE(r["devices"].empty());
    EXPECT_NE(r["note"].get<std::string>().find("no usable CUDA device"), std::string::npos);
  } else {
    EXPECT_GT(expect_all_agree(r), 5u);
  }
}

// Every family's small config (common/check_configs.hpp; the gpu suite runs the same ones against
// the device, tests/cuda/test_check_device.cpp).
TEST(Check, OneCpuThreadAgreesWithAllForEveryMethod) {
  orrery::test::TempDir tmp;
  for (auto& [name, j] : orrery::test::check_configs(tmp)) {
    SCOPED_TRACE(name);
    const std::string cfg = tmp.write(name + ".json", j.dump());
    const auto o = run_orrery("check " + cfg + " --device cpu --iterations 3 --quiet");
    ASSERT_EQ(o.code, 0) << o.output;
    const json r = read_json(tmp.path(name + "/check.json"));
    ASSERT_EQ(r["devices"].size(), 1u);
    EXPECT_EQ(r["iterations"], 3);
    EXPECT_GE(expect_all_agree(r), 3u);
  }
}

TEST(Check, BadArgumentsAreNamed) {
  auto o = run_orrery("check configs/pe_planted_csv.json --iterations 0");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("--iterations"), std::string::npos) << o.output;
  o = run_orrery("check configs/pe_planted_csv.json --device tpu");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("device"), std::string::npos) << o.output;
  o = run_orrery("check");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("missing CONFIG.json"), std::string::npos) << o.output;
}
