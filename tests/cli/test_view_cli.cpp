// `orrery view` and output.html on the command line: a run's map.html and `view` of its directory
// are the same bytes; a moved input leaves its part out with a warning; what view refuses (no run
// directory, unknown options) exits 2 naming it, and writes nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "common/cli_runner.hpp"
#include "common/temp_dir.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;
using orrery::test::run_orrery;
using orrery::test::slurp;

namespace {

// 90 points in three 5-D classes, their labels and names; an hssne run over them with output.html.
std::string hssne_run(const orrery::test::TempDir& tmp, bool html) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> z(0, 1);
  std::ostringstream x, y, names;
  for (int i = 0; i < 90; ++i) {
    for (int d = 0; d < 5; ++d) x << (d ? "," : "") << (d == i % 3 ? 6.0 : 0.0) + z(rng);
    x << "\n";
    y << i % 3 << "\n";
    names << "item " << i << "\n";
  }
  json c = {{"method", "hssne"},
            {"input",
             {{"vectors", tmp.write("x.csv", x.str())},
              {"labels", tmp.write("y.txt", y.str())},
              {"names", tmp.write("names.txt", names.str())},
              {"perplexity", 10}}},
            {"params", {{"max_iter", 50}}},
            {"output", {{"dir", tmp.path("run")}, {"html", html}}},
            {"device", "cpu"},
            {"seed", 2}};
  return tmp.write("run.json", c.dump());
}

TEST(ViewCli, TheRunsPageAndViewOfItsDirectoryAreTheSameBytes) {
  orrery::test::TempDir tmp;
  const auto r = run_orrery("run " + hssne_run(tmp, true) + " --quiet");
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string page = slurp(tmp.path("run") + "/map.html");
  ASSERT_FALSE(page.empty());
  EXPECT_NE(page.find("\"item 17\""), std::string::npos);
  const json report = json::parse(slurp(tmp.path("run") + "/report.json"));
  EXPECT_EQ(report["outputs"]["map_html"], tmp.path("run") + "/map.html");
  const auto v = run_orrery("view " + tmp.path("run") + " -o " + tmp.path("again.html"));
  ASSERT_EQ(v.code, 0) << v.output;
  EXPECT_NE(v.output.find("bytes per point"), std::string::npos) << v.output;
  EXPECT_EQ(slurp(tmp.path("again.html")), page);
}

TEST(ViewCli, AMovedInputIsLeftOutWithAWarning) {
  orrery::test::TempDir tmp;
  ASSERT_EQ(run_orrery("run " + hssne_run(tmp, false) + " --quiet").code, 0);
  EXPECT_FALSE(fs::exists(tmp.path("run") + "/map.html"));  // output.html is off by default
  fs::remove(tmp.path("names.txt"));
  const auto v = run_orrery("view " + tmp.path("run"));
  ASSERT_EQ(v.code, 0) << v.output;
  EXPECT_NE(v.output.find("names (" + tmp.path("names.txt") + ") left out"), std::string::npos) << v.output;
  const std::string page = slurp(tmp.path("run") + "/map.html");
  EXPECT_EQ(page.find("\"item 17\""), std::string::npos);
  EXPECT_NE(page.find("\"groups\":[\"label 0\",\"label 1\",\"label 2\"]"), std::string::npos);
}

TEST(ViewCli, RefusalsNameWhatIsWrongAndWriteNothing) {
  orrery::test::TempDir tmp;
  auto o = run_orrery("view " + tmp.path(""));
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("holds no report.json"), std::string::npos) << o.output;
  o = run_orrery("view");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("missing RUN_DIR"), std::string::npos) << o.output;
  o = run_orrery("view " + tmp.path("") + " --colour red");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("unknown option '--colour'"), std::string::npos) << o.output;
  fs::create_directories(tmp.path("bad"));
  tmp.write("bad/report.json", "{\"method\": \"hssne\"}");
  o = run_orrery("view " + tmp.path("bad"));
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("not an orrery run report"), std::string::npos) << o.output;
  EXPECT_FALSE(fs::exists(tmp.path("bad") + "/map.html"));
  // a wrong names file fails the run before it fits, naming the key and the counts
  std::ostringstream few;
  for (int i = 0; i < 10; ++i) few << "n" << i << "\n";
  const std::string cfg = hssne_run(tmp, true);
  tmp.write("names.txt", few.str());
  o = run_orrery("run " + cfg + " --quiet");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("input.names"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("10 names for the 90 points"), std::string::npos) << o.output;
  EXPECT_FALSE(fs::exists(tmp.path("run")));
}

}  // namespace
