// `orrery evaluate` end to end: the table, the JSON and the chart, and errors with exit 2.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/cli_runner.hpp"
#include "common/temp_dir.hpp"

using orrery::test::TempDir;

namespace {

orrery::test::Outcome run(const std::string& args) { return orrery::test::run_orrery("evaluate " + args); }

}  // namespace

TEST(Evaluate, PerfectMapTableJsonAndChart) {
  TempDir tmp;
  const std::string x = tmp.write("x.csv", "0,0\n1,0\n0,2\n5,5\n6,5\n9,1\n");
  const std::string y = tmp.write("y.csv", "0,0\n2,0\n0,4\n10,10\n12,10\n18,2\n");  // x scaled by 2
  const std::string l = tmp.write("l.csv", "0\n0\n0\n1\n1\n1\n");
  const auto o = run("--data " + x + " --embedding " + y + " --labels " + l + " --k 1,2,4 --out " +
                        tmp.path("q.json") + " --svg " + tmp.path("q.svg"));
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("trust"), std::string::npos);
  const auto j = nlohmann::json::parse(std::ifstream(tmp.path("q.json")));
  ASSERT_EQ(j["at_k"].size(), 3u);
  for (const auto& q : j["at_k"]) {
    EXPECT_EQ(q["trustworthiness"], 1.0);
    EXPECT_EQ(q["continuity"], 1.0);
  }
  EXPECT_EQ(j["homogeneity_1nn"], 1.0);
  EXPECT_NE(std::ifstream(tmp.path("q.svg")).peek(), EOF);
}

TEST(Evaluate, BadInputExitsTwoAndWritesNothing) {
  TempDir tmp;
  const std::string x = tmp.write("x.csv", "0,0\n1,0\n0,2\n5,5\n");
  const std::string y3 = tmp.write("y.csv", "0,0\n2,0\n0,4\n");
  auto o = run("--data " + x + " --embedding " + y3 + " --out " + tmp.path("q.json"));
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_NE(o.output.find("4 rows"), std::string::npos) << o.output;
  const std::string y = tmp.write("y4.csv", "0,0\n2,0\n0,4\n1,1\n");
  o = run("--data " + x + " --embedding " + y + " --k 4 --out " + tmp.path("q.json"));
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_NE(o.output.find("N - 1 = 3"), std::string::npos) << o.output;
  o = run("--data " + x + " --embedding " + y + " --k five");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("--k"), std::string::npos) << o.output;
  o = run("--embedding " + y);
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("--data"), std::string::npos) << o.output;
  EXPECT_FALSE(std::filesystem::exists(tmp.path("q.json")));
}
