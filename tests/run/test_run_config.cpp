// The run layer's one config reader takes a config as text (a file, `orrery run`) or as a JSON value a
// program built (the Python module from an estimator's keyword arguments, the benches): both read the
// same, with the same errors.
#include <gtest/gtest.h>

#include <string>

#include "orrery/error.hpp"
#include "run/run_config.hpp"

using namespace orrery;

namespace {

std::string message_of(const json& config) {
  try {
    pipeline::run_config_from_json(config, "built");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(RunConfig, ABuiltConfigReadsAsItsText) {
  // nlohmann keeps an int from C++ as a signed integer; parsed text gives the same number unsigned
  const json built = {{"method", "hssne"},
                      {"input", {{"vectors", "x.npy"}}},
                      {"output", {{"dir", "out"}}},
                      {"threads", 2},
                      {"seed", 7}};
  ASSERT_TRUE(built["threads"].is_number_integer() && !built["threads"].is_number_unsigned());
  const pipeline::RunConfig a = pipeline::run_config_from_json(built, "built");
  const pipeline::RunConfig b = pipeline::parse_run_config(built.dump(), "text");
  EXPECT_EQ(a.threads, 2);
  EXPECT_EQ(a.seed, 7u);
  EXPECT_EQ(a.threads, b.threads);
  EXPECT_EQ(a.seed, b.seed);
  EXPECT_EQ(a.method, b.method);
  EXPECT_EQ(a.output.dir, b.output.dir);
}

TEST(RunConfig, ABuiltConfigIsRefusedAsItsTextWouldBe) {
  const json base = {{"method", "hssne"}, {"input", {{"vectors", "x.npy"}}}, {"output", {{"dir", "out"}}}};
  json c = base;
  c["threads"] = -1;
  EXPECT_NE(message_of(c).find("threads: expected an integer in [0, 4096]"), std::string::npos) << message_of(c);
  c = base;
  c["seed"] = -3;
  EXPECT_NE(message_of(c).find("seed: expected a non-negative integer"), std::string::npos) << message_of(c);
  c = base;
  c["threads"] = 1.5;
  EXPECT_NE(message_of(c).find("threads:"), std::string::npos) << message_of(c);
  c = base;
  c["colour"] = "red";
  EXPECT_NE(message_of(c).find("colour"), std::string::npos) << message_of(c);
}
