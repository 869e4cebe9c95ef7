// Supervised NeRV's scalable path end to end: input.neighbors approximate (Euclidean candidates
// re-ranked by the metric, no N x N matrix) runs, says so in its report and in what its quality
// measures compared; its new keys' bad values exit 2 naming the key.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "common/cli_runner.hpp"
#include "common/temp_dir.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::string config(const orrery::test::TempDir& tmp, const std::string& name, const json& input,
                   const json& params = {{"max_iter", 200}}) {
  return tmp.write(name, json({{"method", "snerv"},
                               {"input", input},
                               {"params", params},
                               {"output", {{"dir", tmp.path("out")}, {"svg", false}}},
                               {"device", "cpu"},
                               {"seed", 3}})
                             .dump());
}

// 90 points in 5 dimensions, three classes along the first axis under noise.
json small_input(const orrery::test::TempDir& tmp) {
  std::mt19937_64 rng(4);
  std::normal_distribution<double> z(0, 1);
  std::ostringstream xs, ys;
  for (int i = 0; i < 90; ++i) {
    xs << 3.0 * (i % 3) + 0.5 * z(rng);
    for (int j = 0; j < 4; ++j) xs << "," << 2.0 * z(rng);
    xs << "\n";
    ys << i % 3 << "\n";
  }
  return {{"vectors", tmp.write("x.csv", xs.str())},
          {"labels", tmp.write("y.csv", ys.str())},
          {"perplexity", 5},
          {"metric", {{"components", 6}, {"folds", 3}}}};
}

void expect_refused(const std::string& cfg, const std::string& key) {
  const auto o = orrery::test::run_orrery("run " + cfg + " --quiet");
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_NE(o.output.find(key), std::string::npos) << key << ": " << o.output;
}

}  // namespace

TEST(SnervScaleCli, CandidatePathRunsWithoutTheMatrixAndSaysSo) {
  orrery::test::TempDir tmp;
  json in = small_input(tmp);
  in["neighbors"] = "approximate";
  in["metric"]["candidates"] = 40;
  in["metric"]["fit_sample"] = 60;
  in["cv_folds"] = 3;
  const auto o = orrery::test::run_orrery("run " + config(tmp, "a.json", in) + " --quiet");
  ASSERT_EQ(o.code, 0) << o.output;
  std::ifstream f(tmp.path("out/report.json"));
  const json r = json::parse(f);
  EXPECT_EQ(r["input"]["neighbors_requested"], "approximate");
  EXPECT_EQ(r["input"]["neighbors"], "approximate");
  EXPECT_EQ(r["result"]["metric"]["neighbors"], "candidates");
  EXPECT_EQ(r["result"]["metric"]["candidates"], 40);
  EXPECT_EQ(r["result"]["metric"]["candidate_search"], "exact");
  EXPECT_EQ(r["result"]["metric"]["params"]["fit_sample"], 60);
  EXPECT_NE(r["quality_input"].get<std::string>().find("euclidean vectors"), std::string::npos);
  EXPECT_EQ(r["cross_validation"]["knn5_test_error"].size(), 3u);
  EXPECT_LT(r["cross_validation"]["mean_knn5_test_error"].get<double>(), 0.4);
  for (const auto& item : r["memory"]["items"])
    EXPECT_EQ(item["what"].get<std::string>().find("learning-metric distances, N^2"), std::string::npos) << item;
  // the exact path on the same input: the metric's own matrix is the quality measures' input
  in["neighbors"] = "exact";
  in["metric"].erase("candidates");
  in.erase("cv_folds");
  const auto e = orrery::test::run_orrery("run " + config(tmp, "e.json", in) + " --quiet");
  ASSERT_EQ(e.code, 0) << e.output;
  std::ifstream g(tmp.path("out/report.json"));
  const json re = json::parse(g);
  EXPECT_EQ(re["result"]["metric"]["neighbors"], "exact");
  EXPECT_EQ(re["input"]["neighbors"], "exact");
  EXPECT_NE(re["quality_input"].get<std::string>().find("N x N"), std::string::npos);
}

TEST(SnervScaleCli, BadValuesOfTheNewKeysNameTheKey) {
  orrery::test::TempDir tmp;
  const json base = small_input(tmp);
  auto with = [&](const json& patch) {
    json in = base;
    in.merge_patch(patch);
    return in;
  };
  expect_refused(config(tmp, "n.json", with({{"neighbors", "fast"}})), "input.neighbors");
  expect_refused(config(tmp, "d.json", with({{"neighbors", "approximate"}, {"affinities", "dense"}})),
                 "input.neighbors");
  expect_refused(config(tmp, "s.json", with({{"metric", {{"fit_sample", -1}}}})), "fit_sample");
  expect_refused(config(tmp, "s2.json", with({{"metric", {{"fit_sample", "many"}}}})), "fit_sample");
  expect_refused(config(tmp, "c.json", with({{"metric", {{"candidates", -3}}}})), "candidates");
  expect_refused(config(tmp, "c2.json", with({{"neighbors", "exact"}, {"metric", {{"candidates", 30}}}})),
                 "input.metric.candidates");
  // more candidates than other points, and fewer than the k = 15 neighbors kept
  expect_refused(config(tmp, "c3.json", with({{"neighbors", "approximate"}, {"metric", {{"candidates", 500}}}})),
                 "input.metric.candidates");
  expect_refused(config(tmp, "c4.json", with({{"neighbors", "approximate"}, {"metric", {{"candidates", 10}}}})),
                 "input.metric.candidates");
  expect_refused(config(tmp, "ef.json", with({{"neighbors", "exact"}, {"neighbor_ef", 300}})), "input.neighbor_ef");
  EXPECT_FALSE(fs::exists(tmp.path("out/report.json")));
}
