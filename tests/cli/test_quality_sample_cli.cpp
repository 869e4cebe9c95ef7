// The quality measures' subsample on the command line: `orrery evaluate --sample/--seed` and an
// NE run's `output.quality_sample` describe the sample in their reports; bad values exit 2 naming
// the option or key.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "common/cli_runner.hpp"
#include "common/temp_dir.hpp"

using nlohmann::json;
using orrery::test::TempDir;

namespace {

// n points of two noisy clusters in 3-D (as CSV), their labels, and a 2-D map of them.
struct Files {
  std::string x, y, labels;
};

Files write_points(TempDir& tmp, int n) {
  std::mt19937_64 rng(9);
  std::normal_distribution<double> z(0, 1);
  std::ostringstream x, y, l;
  for (int i = 0; i < n; ++i) {
    const double shift = i % 2 ? 3.0 : 0.0;
    const double a = z(rng) + shift, b = z(rng), c = z(rng);
    x << a << "," << b << "," << c << "\n";
    y << a + 0.5 * z(rng) << "," << b + 0.5 * z(rng) << "\n";
    l << i % 2 << "\n";
  }
  return {tmp.write("x.csv", x.str()), tmp.write("y.csv", y.str()), tmp.write("l.csv", l.str())};
}

}  // namespace

TEST(QualitySampleCli, EvaluateReportsTheSample) {
  TempDir tmp;
  const Files f = write_points(tmp, 120);
  const std::string base = "evaluate --data " + f.x + " --embedding " + f.y + " --labels " + f.labels + " --k 3,7";
  auto o = orrery::test::run_orrery(base + " --sample 40 --seed 5 --out " + tmp.path("s.json"));
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("estimated from 40 seeded query points (seed 5)"), std::string::npos) << o.output;
  const json s = json::parse(std::ifstream(tmp.path("s.json")));
  EXPECT_EQ(s["points"], 120);
  EXPECT_EQ(s["sample"]["queries"], 40);
  EXPECT_EQ(s["sample"]["of"], 120);
  EXPECT_EQ(s["sample"]["seed"], 5);
  ASSERT_EQ(s["at_k"].size(), 2u);
  for (const auto& a : s["at_k"]) {
    EXPECT_GT(a["standard_error"]["trustworthiness"].get<double>(), 0.0);
    EXPECT_GT(a["standard_error"]["knn_accuracy"].get<double>(), 0.0);
  }
  // the same seed gives the same report; all points (the default at this size) has no sample
  ASSERT_EQ(orrery::test::run_orrery(base + " --sample 40 --seed 5 --quiet --out " + tmp.path("s2.json")).code, 0);
  EXPECT_EQ(json::parse(std::ifstream(tmp.path("s2.json")))["at_k"], s["at_k"]);
  ASSERT_EQ(orrery::test::run_orrery(base + " --quiet --out " + tmp.path("a.json")).code, 0);
  const json a = json::parse(std::ifstream(tmp.path("a.json")));
  EXPECT_FALSE(a.contains("sample"));
  EXPECT_FALSE(a["at_k"][0].contains("standard_error"));

  o = orrery::test::run_orrery(base + " --sample -3");
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_NE(o.output.find("--sample"), std::string::npos) << o.output;
}

TEST(QualitySampleCli, RunReportCarriesTheSampleDescription) {
  TempDir tmp;
  const Files f = write_points(tmp, 90);
  auto config = [&](const std::string& name, const json& quality_sample) {
    json out = {{"dir", tmp.path(name)}, {"svg", false}};
    if (!quality_sample.is_null()) out["quality_sample"] = quality_sample;
    return tmp.write(name + ".json", json({{"method", "hssne"},
                                           {"input", {{"vectors", f.x}, {"labels", f.labels}, {"perplexity", 5}}},
                                           {"params", {{"max_iter", 20}}},
                                           {"output", out},
                                           {"device", "cpu"},
                                           {"seed", 11}})
                                         .dump());
  };
  auto o = orrery::test::run_orrery("run " + config("sampled", 30) + " --quiet");
  ASSERT_EQ(o.code, 0) << o.output;
  const json r = json::parse(std::ifstream(tmp.path("sampled/report.json")));
  EXPECT_EQ(r["quality"]["sample"]["queries"], 30);
  EXPECT_EQ(r["quality"]["sample"]["of"], 90);
  EXPECT_EQ(r["quality"]["sample"]["seed"], 11);
  EXPECT_EQ(r["quality"]["at_k"].size(), 4u);  // K = 1, 5, 10, 20, as without a sample
  EXPECT_TRUE(r["quality"]["at_k"][1].contains("standard_error"));

  ASSERT_EQ(orrery::test::run_orrery("run " + config("all", 0) + " --quiet").code, 0);
  EXPECT_FALSE(json::parse(std::ifstream(tmp.path("all/report.json")))["quality"].contains("sample"));

  for (const json& bad : {json(-1), json("many"), json(2.5)}) {
    o = orrery::test::run_orrery("run " + config("bad", bad) + " --quiet");
    EXPECT_EQ(o.code, 2) << bad << ": " << o.output;
    EXPECT_NE(o.output.find("output.quality_sample"), std::string::npos) << o.output;
    EXPECT_FALSE(std::filesystem::exists(tmp.path("bad")));
  }
}
