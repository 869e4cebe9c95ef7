// hssne with input.model end to end: a run writes what placement needs, a later run places new
// points into its map (with the run's PCA), and the settings a placement refuses (exit 2 naming the
// key, nothing written).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "common/cli_runner.hpp"
#include "common/map_checks.hpp"
#include "common/run_files.hpp"
#include "common/temp_dir.hpp"
#include "io/readers.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// n points in three 6-D Gaussian classes (class i % 3, centres 8 apart), as CSV, with labels.
void write_classes(const orrery::test::TempDir& tmp, const std::string& name, int n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0, 1);
  orrery::test::write_labelled_points(tmp, name, n, 6, 3,
                                      [&](int i, int d) { return (d == i % 3 ? 8.0 : 0.0) + z(rng); });
}

std::string config(const orrery::test::TempDir& tmp, const std::string& name, const json& input,
                   const std::string& out, const json& params = json::object()) {
  return orrery::test::write_run_config(tmp, name, "hssne", input, out, params);
}

TEST(PlacementCli, NewPointsLandAmongTheirClassInTheSavedMap) {
  orrery::test::TempDir tmp;
  write_classes(tmp, "ref", 300, 1);
  write_classes(tmp, "new", 45, 2);
  const std::string ref = config(tmp, "ref.json",
                                 {{"vectors", tmp.path("ref.csv")}, {"labels", tmp.path("ref_labels.txt")},
                                  {"pca", 4}, {"perplexity", 15}},
                                 "ref_out", {{"max_iter", 300}});
  auto o = orrery::test::run_orrery("run " + ref + " --quiet");
  ASSERT_EQ(o.code, 0) << o.output;
  for (const char* f : {"model_reference.npy", "model_map.npy", "model_pca_mean.npy", "model_pca_components.npy"})
    EXPECT_TRUE(fs::exists(tmp.path(std::string("ref_out/") + f))) << f;
  const std::string place = config(tmp, "new.json",
                                   {{"vectors", tmp.path("new.csv")}, {"labels", tmp.path("new_labels.txt")},
                                    {"model", tmp.path("ref_out")}},
                                   "new_out");
  o = orrery::test::run_orrery("run " + place + " --quiet");
  ASSERT_EQ(o.code, 0) << o.output;
  const orrery::MatrixD Y = orrery::io::read_matrix(tmp.path("ref_out/embedding.npy"));
  const orrery::MatrixD Z = orrery::io::read_matrix(tmp.path("new_out/embedding.npy"));
  ASSERT_EQ(Z.rows, 45);
  ASSERT_EQ(Z.cols, 2);
  EXPECT_GE(orrery::test::nearest_of_class(Z, Y, 3), 44) << "new points whose nearest reference point in the map is of their class";
  std::ifstream in(tmp.path("new_out/report.json"));
  const json r = json::parse(in);
  EXPECT_EQ(r["result"]["reference_points"], 300);
  EXPECT_EQ(r["input"]["perplexity"], 5.0) << "placement's own default";
  EXPECT_EQ(r["input"]["neighbors"], "exact");
  EXPECT_GT(r["quality"]["at_k"][1]["knn_accuracy"].get<double>(), 0.95);
  // the same run on one thread (and params.dim given, equal to the model's): the same bits
  const json one = {{"method", "hssne"},
         {"input", {{"vectors", tmp.path("new.csv")}, {"model", tmp.path("ref_out")}}},
         {"params", {{"dim", 2}}},
         {"output", {{"dir", tmp.path("again_out")}, {"svg", false}}},
         {"device", "cpu"},
         {"threads", 1},
         {"seed", 3}};
  const std::string again = tmp.write("again.json", one.dump());
  o = orrery::test::run_orrery("run " + again + " --quiet");
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_EQ(orrery::io::read_matrix(tmp.path("again_out/embedding.npy")).data, Z.data);
}

TEST(PlacementCli, RefusesWhatItCannotPlaceNamingTheKey) {
  orrery::test::TempDir tmp;
  write_classes(tmp, "ref", 90, 1);
  const std::string ref = config(tmp, "ref.json", {{"vectors", tmp.path("ref.csv")}, {"perplexity", 5}}, "ref_out",
                                 {{"max_iter", 50}});
  ASSERT_EQ(orrery::test::run_orrery("run " + ref + " --quiet").code, 0);
  const std::string nerv = tmp.write("nerv.json", json({{"method", "nerv"},
                                                        {"input", {{"vectors", tmp.path("ref.csv")}, {"perplexity", 5}}},
                                                        {"params", {{"max_iter", 5}}},
                                                        {"output", {{"dir", tmp.path("nerv_out")}, {"svg", false}}},
                                                        {"device", "cpu"}})
                                                      .dump());
  ASSERT_EQ(orrery::test::run_orrery("run " + nerv + " --quiet").code, 0);
  tmp.write("narrow.csv", "1,2,3\n4,5,6\n7,8,9\n");
  struct Case {
    json input, params;
    std::string key;
  };
  const std::vector<Case> cases = {
      {{{"vectors", tmp.path("ref.csv")}, {"model", tmp.path("nerv_out")}}, json::object(), "input.model"},
      {{{"vectors", tmp.path("ref.csv")}, {"model", tmp.path("nowhere")}}, json::object(), "input.model"},
      {{{"vectors", tmp.path("narrow.csv")}, {"model", tmp.path("ref_out")}}, json::object(), "input.vectors"},
      {{{"vectors", tmp.path("ref.csv")}, {"model", tmp.path("ref_out")}}, {{"dim", 3}}, "params.dim"},
      {{{"vectors", tmp.path("ref.csv")}, {"model", tmp.path("ref_out")}}, {{"alpha", 0.5}}, "params.alpha"},
      {{{"vectors", tmp.path("ref.csv")}, {"model", tmp.path("ref_out")}, {"perplexity", 40}}, json::object(),
       "input.perplexity"},
      {{{"vectors", tmp.path("ref.csv")}, {"model", tmp.path("ref_out")}, {"pca", 2}}, json::object(), "input.pca"},
      {{{"model", tmp.path("ref_out")}, {"distances", tmp.path("ref.csv")}}, json::object(), "input.model"},
  };
  for (const Case& c : cases) {
    const std::string cfg = config(tmp, "bad.json", c.input, "bad_out", c.params);
    const auto o = orrery::test::run_orrery("run " + cfg + " --quiet");
    EXPECT_EQ(o.code, 2) << c.key << ": " << o.output;
    EXPECT_NE(o.output.find(c.key), std::string::npos) << c.key << ": " << o.output;
    EXPECT_FALSE(fs::exists(tmp.path("bad_out"))) << c.key;
  }
}

}  // namespace
