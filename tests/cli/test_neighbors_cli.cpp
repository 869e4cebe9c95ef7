// input.neighbors end to end: the approximate search's recall in the run report, auto's choice,
// and the settings it refuses (exit 2 naming the key).
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

const char* kImages = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";

std::string config(const orrery::test::TempDir& tmp, const std::string& name, const std::string& method,
                   const json& input, const json& params = json::object()) {
  return tmp.write(name, json({{"method", method},
                               {"input", input},
                               {"params", params},
                               {"output", {{"dir", tmp.path("out")}, {"svg", false}}},
                               {"device", "cpu"},
                               {"seed", 3}})
                             .dump());
}

json report(const orrery::test::TempDir& tmp) {
  std::ifstream in(tmp.path("out/report.json"));
  return json::parse(in);
}

// 60 points in 4 dimensions, two blobs.
std::string small_points(const orrery::test::TempDir& tmp) {
  std::mt19937_64 rng(2);
  std::normal_distribution<double> z(0, 1);
  std::ostringstream s;
  for (int i = 0; i < 60; ++i) s << z(rng) + 8 * (i % 2) << "," << z(rng) << "," << z(rng) << "," << z(rng) << "\n";
  return tmp.write("x.csv", s.str());
}

void expect_refused(const std::string& cfg, const std::string& key) {
  const auto o = orrery::test::run_orrery("run " + cfg + " --quiet");
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_NE(o.output.find(key), std::string::npos) << o.output;
}

}  // namespace

TEST(NeighborsCli, ApproximateRunReportsItsRecall) {
  if (!fs::exists(kImages)) GTEST_SKIP() << "dataset-fashion-mnist is not installed (scripts/setup.sh installs it)";
  orrery::test::TempDir tmp;
  const json input = {{"vectors", kImages}, {"limit", 400},      {"pca", 20},
                      {"perplexity", 20}, {"neighbors", "approximate"}, {"neighbor_ef", 200}};
  const std::string cfg = config(tmp, "a.json", "hssne", input, {{"max_iter", 30}});
  const auto o = orrery::test::run_orrery("run " + cfg + " --quiet");
  ASSERT_EQ(o.code, 0) << o.output;
  const json r = report(tmp);
  EXPECT_EQ(r["input"]["neighbors_requested"], "approximate");
  EXPECT_EQ(r["input"]["neighbors"], "approximate");
  EXPECT_EQ(r["input"]["neighbor_ef"], 200);
  EXPECT_EQ(r["input"]["affinities"], "sparse");  // auto affinities follow the neighbor search
  EXPECT_EQ(r["input"]["neighbor_recall_sample"], 400);  // every point: fewer than the sample's 1,000
  const double recall = r["input"]["neighbor_recall"].get<double>();
  EXPECT_GE(recall, 0.97);
  EXPECT_LE(recall, 1.0);
  EXPECT_EQ(r["input"]["neighbor_recall_target"], 0.95);
  EXPECT_EQ(r["input"]["neighbor_ef_used"], 200) << "the first list already reaches the target";
  EXPECT_GE(r["input"]["neighbor_seconds"].get<double>(), 0.0);
  bool index_planned = false;
  for (const auto& item : r["memory"]["items"])
    index_planned |= item["what"].get<std::string>().find("HNSW index") != std::string::npos &&
                     item["host_bytes"].get<double>() >= 400.0 * 20 * 4;  // at least the points' float copy
  EXPECT_TRUE(index_planned) << r["memory"].dump();
  const auto v = orrery::test::run_orrery("validate " + cfg);
  ASSERT_EQ(v.code, 0) << v.output;
  EXPECT_NE(v.output.find("sparse (auto) affinities (approximate neighbors)"), std::string::npos) << v.output;
}

TEST(NeighborsCli, AutoSearchesSmallSetsExactly) {
  orrery::test::TempDir tmp;
  const std::string x = small_points(tmp);
  const std::string cfg =
      config(tmp, "n.json", "nerv", {{"vectors", x}, {"perplexity", 5}, {"affinities", "sparse"}}, {{"max_iter", 5}});
  const auto o = orrery::test::run_orrery("run " + cfg + " --quiet");
  ASSERT_EQ(o.code, 0) << o.output;
  const json r = report(tmp);
  EXPECT_EQ(r["input"]["neighbors_requested"], "auto");
  EXPECT_EQ(r["input"]["neighbors"], "exact");
  EXPECT_FALSE(r["input"].contains("neighbor_recall"));
}

TEST(NeighborsCli, RefusedSettingsNameTheKey) {
  orrery::test::TempDir tmp;
  const std::string x = small_points(tmp);
  expect_refused(config(tmp, "bad.json", "hssne", {{"vectors", x}, {"perplexity", 5}, {"neighbors", "fast"}}),
                 "input.neighbors");
  expect_refused(config(tmp, "dense.json", "hssne",
                        {{"vectors", x}, {"perplexity", 5}, {"affinities", "dense"}, {"neighbors", "approximate"}}),
                 "input.neighbors");
  expect_refused(config(tmp, "ef.json", "hssne", {{"vectors", x}, {"perplexity", 5}, {"neighbor_ef", 0}}),
                 "input.neighbor_ef");
  expect_refused(config(tmp, "efx.json", "nerv",
                        {{"vectors", x}, {"perplexity", 5}, {"neighbors", "exact"}, {"neighbor_ef", 300}}),
                 "input.neighbor_ef");
  expect_refused(config(tmp, "rt.json", "hssne", {{"vectors", x}, {"perplexity", 5}, {"neighbor_recall_target", 1.5}}),
                 "input.neighbor_recall_target");
  expect_refused(config(tmp, "rtx.json", "hssne",
                        {{"vectors", x}, {"perplexity", 5}, {"neighbors", "exact"}, {"neighbor_recall_target", 0.9}}),
                 "input.neighbor_recall_target");
  std::ostringstream labels;
  for (int i = 0; i < 60; ++i) labels << i % 2 << "\n";
  const std::string y = tmp.write("y.csv", labels.str());
  expect_refused(config(tmp, "snerv.json", "snerv", {{"vectors", x}, {"labels", y}, {"neighbors", "fast"}}),
                 "input.neighbors");
  // k = ceil(3 perplexity) = 60 neighbors among 60 points
  expect_refused(config(tmp, "k.json", "nerv", {{"vectors", x}, {"perplexity", 20}, {"neighbors", "approximate"}}),
                 "input.perplexity");
  EXPECT_FALSE(fs::exists(tmp.path("out")));
}

// Interpolated repulsion needs sparse affinities: the settings that give dense ones are refused
// naming params.repulsion; with affinities auto it selects sparse ones and the report says it ran.
TEST(NeighborsCli, InterpolatedRepulsionNeedsSparseAffinities) {
  orrery::test::TempDir tmp;
  const std::string x = small_points(tmp);
  const json interp = {{"repulsion", "interpolated"}, {"max_iter", 20}};
  expect_refused(config(tmp, "dense.json", "hssne", {{"vectors", x}, {"perplexity", 5}, {"affinities", "dense"}}, interp),
                 "params.repulsion");
  expect_refused(config(tmp, "bad.json", "hssne", {{"vectors", x}, {"perplexity", 5}}, {{"repulsion", "fft"}}),
                 "params.repulsion");
  EXPECT_FALSE(fs::exists(tmp.path("out")));
  const auto o = orrery::test::run_orrery("run " + config(tmp, "ok.json", "hssne", {{"vectors", x}, {"perplexity", 5}}, interp) +
                                          " --quiet");
  ASSERT_EQ(o.code, 0) << o.output;
  const json r = report(tmp);
  EXPECT_EQ(r["input"]["affinities"], "sparse");
  EXPECT_EQ(r["result"]["repulsion"], "interpolated");
  EXPECT_EQ(r["result"]["interpolation"]["nodes"], 4);
}

// The tree too: dense affinities and the fixed point are refused naming the key, before any output;
// with affinities auto it selects sparse ones, and the report says the tree ran, with its angle.
TEST(NeighborsCli, TreeRepulsionNeedsSparseAffinitiesAndTheGradientMethod) {
  orrery::test::TempDir tmp;
  const std::string x = small_points(tmp);
  const json tree = {{"repulsion", "tree"}, {"max_iter", 20}};
  expect_refused(config(tmp, "dense.json", "hssne", {{"vectors", x}, {"perplexity", 5}, {"affinities", "dense"}}, tree),
                 "params.repulsion");
  json fixed = tree;
  fixed["optimizer"] = "fixed_point";
  expect_refused(config(tmp, "fixed.json", "hssne", {{"vectors", x}, {"perplexity", 5}}, fixed), "params.optimizer");
  EXPECT_FALSE(fs::exists(tmp.path("out")));
  const auto o = orrery::test::run_orrery("run " + config(tmp, "ok.json", "hssne", {{"vectors", x}, {"perplexity", 5}}, tree) +
                                          " --quiet");
  ASSERT_EQ(o.code, 0) << o.output;
  const json r = report(tmp);
  EXPECT_EQ(r["input"]["affinities"], "sparse");
  EXPECT_EQ(r["result"]["repulsion"], "tree");
  EXPECT_EQ(r["result"]["optimizer"], "gradient");
  EXPECT_DOUBLE_EQ(r["result"]["tree_angle"].get<double>(), 0.4);
}
