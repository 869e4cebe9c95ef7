// `orrery check`: every method's primitives and a few iterations compared with the CPU reference
// under the parity tolerances. On a machine without a GPU it says so and exits 0; --device cpu
// checks one CPU thread against all, which must agree everywhere.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "common/cli_runner.hpp"
#include "common/temp_dir.hpp"
#include "orrery/backend.hpp"
#include "orrery/plsv.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;
using orrery::test::run_orrery;

namespace {

json read_json(const std::string& p) {
  std::ifstream in(p);
  return json::parse(in);
}

// Every output of every primitive agrees; returns how many there were.
size_t expect_all_agree(const json& r) {
  EXPECT_TRUE(r["agrees"].get<bool>()) << r.dump(1);
  size_t outputs = 0;
  for (const auto& d : r["devices"])
    for (const auto& g : d["checks"])
      for (const auto& o : g["outputs"]) {
        ++outputs;
        EXPECT_TRUE(o["agrees"].get<bool>()) << o["detail"];
        EXPECT_GT(o["entries"].get<size_t>(), 0u) << o["detail"];
      }
  return outputs;
}

// Small labelled vectors in three blobs.
std::string blobs(const orrery::test::TempDir& tmp, int n) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> z(0.0, 1.0);
  std::ostringstream x, y;
  for (int i = 0; i < n; ++i) {
    for (int d = 0; d < 4; ++d) x << (d ? "," : "") << z(rng) + (d == i % 3 ? 5.0 : 0.0);
    x << "\n";
    y << i % 3 << "\n";
  }
  tmp.write("y.csv", y.str());
  return tmp.write("x.csv", x.str());
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

TEST(Check, OneCpuThreadAgreesWithAllForEveryMethod) {
  orrery::test::TempDir tmp;
  const std::string x = blobs(tmp, 240);
  std::vector<std::pair<std::string, json>> configs = {
      {"pe", json::parse(std::ifstream(fs::path(ORRERY_SOURCE_DIR) / "configs/pe_planted_csv.json"))},
      {"hssne", {{"method", "hssne"}, {"input", {{"vectors", x}, {"perplexity", 10}}}}},
      {"hssne_dense", {{"method", "hssne"}, {"input", {{"vectors", x}, {"perplexity", 10}, {"affinities", "dense"}}}}},
      {"nerv", {{"method", "nerv"}, {"input", {{"vectors", x}, {"perplexity", 10}, {"affinities", "sparse"}}}}},
      {"snerv",
       {{"method", "snerv"},
        {"input", {{"vectors", x}, {"labels", tmp.path("y.csv")}, {"metric", {{"components", 6}, {"width", 2.0}}}}}}},
  };
  // PLSV on a corpus drawn from its own model (Matrix Market counts).
  const auto planted = orrery::sample_plsv_corpus(80, 60, 4, 2, 30, 3);
  std::ostringstream mtx;
  mtx << "%%MatrixMarket matrix coordinate integer general\n"
      << planted.corpus.num_docs() << " " << planted.corpus.num_words << " " << planted.corpus.nnz() << "\n";
  for (orrery::index_t n = 0; n < planted.corpus.num_docs(); ++n)
    for (auto i = planted.corpus.row_ptr[n]; i < planted.corpus.row_ptr[n + 1]; ++i)
      mtx << n + 1 << " " << planted.corpus.word[i] + 1 << " " << planted.corpus.count[i] << "\n";
  configs.push_back({"plsv", {{"method", "plsv"}, {"input", {{"corpus", tmp.write("c.mtx", mtx.str())}}},
                              {"params", {{"topics", 4}}}}});
  for (auto& [name, j] : configs) {
    SCOPED_TRACE(name);
    j["output"] = {{"dir", tmp.path(name)}};
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
