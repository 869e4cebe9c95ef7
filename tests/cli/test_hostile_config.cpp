// Classes of hostile run configurations found by fuzzing the config reader (fuzz/fuzz_config.cpp),
// one test per class: `orrery validate` must answer exit 2 with a message naming the config file.
#include <gtest/gtest.h>

#include <string>

#include "common/cli_runner.hpp"
#include "common/temp_dir.hpp"

using orrery::test::run_orrery;
using orrery::test::TempDir;

// The JSON library throws more than parse errors while reading: a number beyond a double's range
// is an out_of_range exception. Before: "error: [json.exception.out_of_range.406] ...", exit 1.
TEST(HostileConfig, JsonReaderExceptionsAreInputErrorsNamingTheFile) {
  TempDir tmp;
  const std::string config = tmp.write("overflow.json", R"({"method": "pe", "seed": 1e999})");
  const auto r = run_orrery("validate '" + config + "'");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("overflow.json: not a usable JSON value"), std::string::npos) << r.output;
}
