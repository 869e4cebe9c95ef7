// The orrery binary end to end: configs in configs/ run, outputs are complete and reproducible,
// and bad input exits 2 with a message naming the key, file or row and leaves no output.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "common/cli_runner.hpp"
#include "common/temp_dir.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

using orrery::test::Outcome;
using orrery::test::slurp;

Outcome run_cli(const std::string& args) { return orrery::test::run_orrery(args); }

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / (std::string("orrery-cli-") + info->name() + "-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A copy of configs/NAME with output.dir moved into the test's directory, plus edits.
  std::string config(const std::string& name, const std::string& out_name, const json& patch = json::object()) {
    json j = json::parse(slurp(fs::path(ORRERY_SOURCE_DIR) / "configs" / name), nullptr, true, true);
    j["output"]["dir"] = (dir_ / out_name).string();
    j.merge_patch(patch);
    const fs::path p = dir_ / (out_name + ".json");
    std::ofstream(p) << j.dump(2);
    return p.string();
  }
  std::string write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }
  // Expects exit 2, every fragment in the message, and no output directory left behind.
  void expect_input_error(const std::string& cfg, const std::vector<std::string>& fragments) {
    const Outcome o = run_cli("run " + cfg + " --quiet");
    EXPECT_EQ(o.code, 2) << o.output;
    EXPECT_EQ(o.output.rfind("error: ", 0), 0u) << o.output;
    for (const auto& f : fragments) EXPECT_NE(o.output.find(f), std::string::npos) << "missing '" << f << "' in: " << o.output;
    EXPECT_FALSE(fs::exists(dir_ / "out")) << "a failed run must not leave output";
  }
  fs::path dir_;
};

}  // namespace

TEST_F(Cli, DefaultsListsEveryParameter) {
  const Outcome o = run_cli("defaults pe");
  ASSERT_EQ(o.code, 0) << o.output;
  for (const char* key : {"dim", "eta_r", "eta_phi", "eps_r", "eps_phi", "max_iter", "class_init", "fit_classes"})
    EXPECT_NE(o.output.find(key), std::string::npos) << key;
  EXPECT_NE(o.output.find("0.1"), std::string::npos);
  EXPECT_NE(o.output.find("50"), std::string::npos);
  const Outcome md = run_cli("defaults pe --markdown");
  EXPECT_EQ(md.code, 0);
  EXPECT_NE(md.output.find("| `eta_phi` | number | `50` |"), std::string::npos) << md.output;
  EXPECT_EQ(run_cli("defaults umap").code, 2);
}

TEST_F(Cli, InfoReportsBuildAndCuda) {
  const Outcome o = run_cli("info");
  EXPECT_EQ(o.code, 0);
  EXPECT_NE(o.output.find("orrery 0."), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("cuda: "), std::string::npos) << o.output;
}

TEST_F(Cli, UnknownCommandIsAnInputError) {
  const Outcome o = run_cli("frobnicate");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("unknown command 'frobnicate'"), std::string::npos);
}

TEST_F(Cli, PlantedRunWritesEveryOutputAndIsReproducible) {
  const std::string cfg = config("pe_planted_csv.json", "a");
  const Outcome o = run_cli("run " + cfg);
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("[pe] iter"), std::string::npos) << "progress is shown on stderr";
  for (const char* f : {"objects.npy", "classes.npy", "objects.csv", "classes.csv", "report.json", "map.svg"})
    EXPECT_TRUE(fs::exists(dir_ / "a" / f)) << f;
  const json rep = json::parse(slurp(dir_ / "a" / "report.json"));
  EXPECT_EQ(rep["method"], "pe");
  EXPECT_EQ(rep["input"]["objects"], 400);
  EXPECT_EQ(rep["input"]["classes"], 6);
  EXPECT_EQ(rep["params"]["eta_r"], 0.1) << "defaults are echoed";
  EXPECT_EQ(rep["params"]["eta_phi"], 1.0) << "config values are echoed";
  EXPECT_TRUE(rep["result"]["objects_converged"].get<bool>());
  EXPECT_GT(rep["trace"].size(), 2u);
  // The planted labels are the generating clusters, which overlap (the input's own arg-max is right
  // only ~43% of the time): the map must reproduce the input's decisions, not the labels.
  EXPECT_GT(rep["quality"]["argmax_agreement_map_vs_input"].get<double>(), 0.75);
  EXPECT_NEAR(rep["quality"]["label_accuracy_of_map_argmax"].get<double>(),
              rep["quality"]["label_accuracy_of_input_argmax"].get<double>(), 0.05);
  EXPECT_TRUE(rep["quality"]["prec_h"].contains("10"));
  EXPECT_NE(slurp(dir_ / "a" / "map.svg").find("cluster A"), std::string::npos) << "class names label the map";

  const Outcome again = run_cli("run " + config("pe_planted_csv.json", "b") + " --quiet");
  ASSERT_EQ(again.code, 0) << again.output;
  EXPECT_TRUE(again.output.empty()) << "--quiet prints nothing: " << again.output;
  EXPECT_EQ(slurp(dir_ / "a" / "objects.npy"), slurp(dir_ / "b" / "objects.npy")) << "same seed, same bits";
  EXPECT_EQ(slurp(dir_ / "a" / "classes.npy"), slurp(dir_ / "b" / "classes.npy"));

  // Out-of-sample: place the same objects on the fitted classes; they land where the fit put them.
  const std::string place =
      config("pe_planted_place.json", "c", {{"input", {{"class_coords", (dir_ / "a" / "classes.csv").string()}}}});
  const Outcome p = run_cli("run " + place + " --quiet");
  ASSERT_EQ(p.code, 0) << p.output;
  EXPECT_EQ(slurp(dir_ / "c" / "classes.csv"), slurp(dir_ / "a" / "classes.csv"));
  const json prep = json::parse(slurp(dir_ / "c" / "report.json"));
  EXPECT_EQ(prep["result"]["stop_reason"], "classes_fixed");
}

TEST_F(Cli, EveryShippedConfigValidates) {
  for (const auto& entry : fs::directory_iterator(fs::path(ORRERY_SOURCE_DIR) / "configs")) {
    if (entry.path().extension() != ".json") continue;
    const std::string name = entry.path().filename().string();
    if (name == "pe_planted_place.json") continue;  // needs the classes of pe_planted_csv: run above
    if (name.find("fashion") != std::string::npos &&
        !fs::exists("/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz"))
      continue;
    // The Debian demo corpus is built by scripts/debian_corpus.sh; PlsvCli runs this config on a
    // generated corpus.
    if (name.find("debian") != std::string::npos &&
        !fs::exists(fs::path(ORRERY_SOURCE_DIR) / "data" / "debian" / "docs.txt"))
      continue;
    const Outcome o = run_cli("validate " + config(name, "v"));
    EXPECT_EQ(o.code, 0) << name << ": " << o.output;
    EXPECT_NE(o.output.find("valid"), std::string::npos) << name;
  }
}

TEST_F(Cli, FashionMnistDemoMapsTheClasses) {
  if (!fs::exists("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "dataset-fashion-mnist is not installed (scripts/setup.sh installs it)";
  const Outcome o = run_cli("run " + config("pe_fashion_mnist.json", "fm", {{"device", "cpu"}}) + " --quiet");
  ASSERT_EQ(o.code, 0) << o.output;
  const json rep = json::parse(slurp(dir_ / "fm" / "report.json"));
  EXPECT_EQ(rep["input"]["objects"], 10000);
  // A 10-examples-per-class nearest-neighbor model on Fashion-MNIST is right ~65-70% of the
  // time; the map's arg-max class reproduces most of the classifier's decisions (the priors
  // eta_r, eta_phi trade some fidelity for a compact map).
  EXPECT_GT(rep["quality"]["label_accuracy_of_input_argmax"].get<double>(), 0.55);
  EXPECT_GT(rep["quality"]["argmax_agreement_map_vs_input"].get<double>(), 0.75);
  EXPECT_GT(rep["posterior_model"]["width"].get<double>(), 0.0);
  EXPECT_TRUE(fs::exists(dir_ / "fm" / "map.svg"));
}

TEST_F(Cli, BadConfigsExitTwoNamingTheKey) {
  expect_input_error(config("pe_planted_csv.json", "out", {{"params", {{"etaa_r", 1}}}}), {"params", "etaa_r"});
  expect_input_error(config("pe_planted_csv.json", "out", {{"params", {{"eta_r", -1}}}}), {"params.eta_r"});
  expect_input_error(config("pe_planted_csv.json", "out", {{"params", {{"dim", 4}}}}), {"params.dim"});
  expect_input_error(config("pe_planted_csv.json", "out", {{"params", {{"class_init", "pca"}}}}),
                     {"params.class_init", "mds"});
  expect_input_error(config("pe_planted_csv.json", "out", {{"params", {{"fit_classes", false}}}}),
                     {"input.class_coords"});
  expect_input_error(config("pe_planted_csv.json", "out", {{"device", "gpu"}}), {"device"});
  expect_input_error(config("pe_planted_csv.json", "out", {{"seed", -3}}), {"seed"});
  expect_input_error(config("pe_planted_csv.json", "out", {{"output", {{"format", "parquet"}}}}), {"output.format"});
  expect_input_error(config("pe_planted_csv.json", "out", {{"colour", "red"}}), {"unknown key 'colour'"});
  expect_input_error(write("broken.json", "{\"method\": \"pe\", "), {"broken.json", "JSON"});
  expect_input_error(config("pe_planted_csv.json", "out", {{"method", "umap"}}), {"method"});
}

TEST_F(Cli, BadDataExitsTwoNamingFileAndRow) {
  const std::string rows = write("p.csv", "0.5,0.5\n0.2,0.8\n0.3,0.3\n");
  expect_input_error(config("pe_planted_csv.json", "out", {{"input", {{"posteriors", rows}, {"labels", nullptr},
                                                                       {"class_names", nullptr}}}}),
                     {"p.csv", "row 3", "sums to"});
  const std::string neg = write("n.csv", "0.5,0.5\n1.2,-0.2\n");
  expect_input_error(config("pe_planted_csv.json", "out", {{"input", {{"posteriors", neg}, {"labels", nullptr},
                                                                      {"class_names", nullptr}}}}),
                     {"n.csv", "row 2"});
  const std::string one = write("one.csv", "1\n1\n");
  expect_input_error(config("pe_planted_csv.json", "out", {{"input", {{"posteriors", one}, {"labels", nullptr},
                                                                      {"class_names", nullptr}}}}),
                     {"one.csv", "K >= 2"});
  expect_input_error(config("pe_planted_csv.json", "out", {{"input", {{"posteriors", "/nonexistent/p.npy"}}}}),
                     {"/nonexistent/p.npy"});
  expect_input_error(config("pe_planted_csv.json", "out", {{"input", {{"class_names", {"a", "b"}}}}}),
                     {"class_names", "expected 6"});
  const std::string short_labels = write("l.csv", "0\n1\n");
  expect_input_error(config("pe_planted_csv.json", "out", {{"input", {{"labels", short_labels}}}}),
                     {"l.csv", "2 labels", "400 rows"});
  expect_input_error(config("pe_planted_csv.json", "out", {{"input", {{"priors", {0.5, 0.5}}}}}),
                     {"priors", "expected 6"});
}

TEST_F(Cli, NormalizeRowsRescalesInsteadOfFailing) {
  const std::string rows = write("p.csv", "1,1\n2,6\n3,1\n5,5\n");
  const std::string cfg = config("pe_planted_csv.json", "ok",
                                 {{"input", {{"posteriors", rows}, {"normalize_rows", true}, {"labels", nullptr},
                                             {"class_names", nullptr}}}});
  const Outcome o = run_cli("run " + cfg + " --quiet");
  EXPECT_EQ(o.code, 0) << o.output;
  EXPECT_TRUE(fs::exists(dir_ / "ok" / "objects.npy"));
}

TEST_F(Cli, DocsParameterTablesMatchTheCode) {
  // Each generated table sits in its method's page of docs/ (scripts/readme_tables.sh fills them).
  struct Table {
    const char* marker;
    const char* method;
    const char* page;
  };
  for (const Table& t : {Table{"pe-params", "pe", "docs/pe.md"},
                         Table{"posterior-model-params", "posterior_model", "docs/pe.md"},
                         Table{"pe-input", "pe_input", "docs/pe.md"},
                         Table{"hssne-params", "hssne", "docs/hssne.md"},
                         Table{"hssne-input", "hssne_input", "docs/hssne.md"},
                         Table{"nerv-params", "nerv", "docs/nerv.md"},
                         Table{"snerv-input", "snerv_input", "docs/nerv.md"},
                         Table{"metric-params", "metric", "docs/nerv.md"},
                         Table{"plsv-params", "plsv", "docs/plsv.md"},
                         Table{"plsv-input", "plsv_input", "docs/plsv.md"},
                         Table{"text-input", "text", "docs/plsv.md"}}) {
    const std::string page = slurp(fs::path(ORRERY_SOURCE_DIR) / t.page);
    const std::string marker = t.marker;
    const Outcome o = run_cli(std::string("defaults ") + t.method + " --markdown");
    ASSERT_EQ(o.code, 0) << t.method;
    const auto begin = page.find("<!-- " + marker + ":begin");
    const auto end = page.find("<!-- " + marker + ":end -->");
    ASSERT_NE(begin, std::string::npos) << marker << " in " << t.page;
    ASSERT_NE(end, std::string::npos) << marker << " in " << t.page;
    const auto body_start = page.find('\n', begin) + 1;
    EXPECT_EQ(page.substr(body_start, end - body_start), o.output)
        << t.page << " (" << marker << ") is out of date: run bash scripts/readme_tables.sh";
  }
}

TEST_F(Cli, Float32RowsWithinRoundOffAreAccepted) {
  // Rows summing to 1 +- 5e-7 (what float32 softmax outputs look like) pass; 1 + 1e-3 does not.
  const std::string ok = write("f.csv", "0.3000002,0.7000003\n0.25,0.7499996\n");
  const Outcome o = run_cli("validate " + config("pe_planted_csv.json", "v", {{"input", {{"posteriors", ok},
                                                                                 {"labels", nullptr},
                                                                                 {"class_names", nullptr}}}}));
  EXPECT_EQ(o.code, 0) << o.output;
  const std::string bad = write("g.csv", "0.3,0.7\n0.25,0.751\n");
  expect_input_error(config("pe_planted_csv.json", "out", {{"input", {{"posteriors", bad}, {"labels", nullptr},
                                                                      {"class_names", nullptr}}}}),
                     {"g.csv", "row 2", "sums to 1.001"});
}

// validate reads and checks every input, the vectors of the posterior model too, but fits nothing:
// it names the classes the model would have and leaves no output.
TEST_F(Cli, ValidateReadsTheVectorsButFitsNoModel) {
  if (!fs::exists("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "dataset-fashion-mnist is not installed (scripts/setup.sh installs it)";
  const Outcome o = run_cli("validate " + config("pe_fashion_mnist.json", "v", {{"device", "cpu"}}));
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("10000 objects, 10 classes (posterior model to fit on the vectors)"), std::string::npos)
      << o.output;
  EXPECT_FALSE(fs::exists(dir_ / "v"));
  const std::string short_labels = write("y.csv", "0\n1\n");
  const Outcome bad =
      run_cli("validate " + config("pe_fashion_mnist.json", "v", {{"input", {{"vector_labels", short_labels}}}}));
  EXPECT_EQ(bad.code, 2) << bad.output;
  EXPECT_NE(bad.output.find("y.csv: 2 labels for 10000 vectors"), std::string::npos) << bad.output;
}
