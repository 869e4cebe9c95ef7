// `orrery check --device cuda:0` on a small config of every family (pe; hssne sparse, dense and on
// the grid; nerv sparse and truncated; snerv; plsv): every primitive and a few iterations agree with
// the CPU reference under the parity tolerances, and no guard byte was written. The configs and their
// data are generated into a temporary directory and the CLI is the one ORRERY_CLI names (else this
// build's), so the test runs from a copy of the build at another path (scripts/gpu_check.sh).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "common/check_configs.hpp"
#include "common/cli_runner.hpp"
#include "common/require_cuda.hpp"
#include "common/temp_dir.hpp"

using json = nlohmann::json;

namespace {

// Runs `orrery check` on every config against `device`; each must agree everywhere.
void check_every_family(const std::string& device) {
  orrery::test::TempDir tmp;
  for (auto& [name, config] : orrery::test::check_configs(tmp)) {
    SCOPED_TRACE(name + " on " + device);
    const std::string cfg = tmp.write(name + ".json", config.dump()), out = tmp.path(name + "_check.json");
    const auto o = orrery::test::run_orrery("check '" + cfg + "' --device " + device + " --iterations 3 --quiet --out '" +
                                            out + "'");
    EXPECT_EQ(o.code, 0) << o.output;
    std::ifstream in(out);
    ASSERT_TRUE(in.good()) << "no report at " << out << ": " << o.output;
    const json r = json::parse(in);
    EXPECT_EQ(r["method"], config["method"]);
    ASSERT_EQ(r["devices"].size(), 1u) << r.dump(1);
    EXPECT_EQ(r["iterations"], 3);
    EXPECT_GE(orrery::test::expect_all_agree(r), 3u);
  }
}

}  // namespace

TEST(CheckOnTheDevice, EveryFamilyAgreesWithTheCpu) {
  ORRERY_REQUIRE_CUDA();
  check_every_family("cuda:0");
}

// The same configs with one CPU thread as the device (which must agree with all threads
// everywhere): the configs themselves are valid and each family's check compares something,
// wherever this suite runs.
TEST(CheckOnTheDevice, TheConfigsCheckOneCpuThreadAgainstAll) { check_every_family("cpu"); }
