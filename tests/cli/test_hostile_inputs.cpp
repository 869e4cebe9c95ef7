// Inputs at the edge of what the runs take: data of extreme magnitude (squares that overflow or
// underflow in double) gives the map of the same data at unit scale, bit for bit; values and files
// no run can use exit 2 with a message naming the key, file, row or value, and write nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/cli_runner.hpp"
#include "common/temp_dir.hpp"
#include "io/readers.hpp"
#include "io/writers.hpp"
#include "orrery/affinity.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;
using orrery::MatrixD;

namespace {

// 60 points in 4 dimensions, three clusters, taken to an input scale in [1, 2): the scale exponent
// 0, so the run takes them as they are, and X 2^e (exact) is the same data at another scale.
MatrixD unit_points(int n = 60, unsigned seed = 5) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0, 1);
  MatrixD X(n, 4);
  for (int i = 0; i < n; ++i)
    for (int c = 0; c < 4; ++c) X(i, c) = (c == i % 3 ? 4.0 : 0.0) + z(rng);
  return orrery::times_power_of_two(X, -std::ilogb(orrery::input_scale(X)));
}

MatrixD distances_of(const MatrixD& X) {
  MatrixD D(X.rows, X.rows);
  for (orrery::index_t i = 0; i < X.rows; ++i)
    for (orrery::index_t j = 0; j < X.rows; ++j) {
      double s = 0;
      for (orrery::index_t c = 0; c < X.cols; ++c) s += (X(i, c) - X(j, c)) * (X(i, c) - X(j, c));
      D(i, j) = std::sqrt(s);
    }
  return orrery::times_power_of_two(D, -std::ilogb(orrery::input_scale(D, true)));
}

std::string labels_text(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += std::to_string(i % 3) + "\n";
  return s;
}

json run_config(const orrery::test::TempDir& tmp, const std::string& method, const std::string& out, const json& input,
                const json& params) {
  return {{"method", method},
          {"input", input},
          {"params", params},
          {"output", {{"dir", tmp.path(out)}, {"svg", false}}},
          {"device", "cpu"},
          {"seed", 2}};
}

// Runs the config; its embedding and report.
struct RunOut {
  MatrixD Y;
  json report;
};
RunOut run(const orrery::test::TempDir& tmp, const std::string& name, const json& cfg) {
  const auto o = orrery::test::run_orrery("run " + tmp.write(name + ".json", cfg.dump()) + " --quiet");
  EXPECT_EQ(o.code, 0) << name << ": " << o.output;
  if (o.code != 0) return {};
  const std::string dir = cfg["output"]["dir"];
  std::ifstream f(dir + "/report.json");
  return {orrery::io::read_matrix(dir + "/embedding.npy"), json::parse(f)};
}

// Exit 2, every part named in the message, and nothing in the output directory.
void expect_refused(const orrery::test::TempDir& tmp, const std::string& name, const json& cfg,
                    const std::vector<std::string>& parts) {
  for (const char* command : {"validate ", "run "}) {
    const auto o = orrery::test::run_orrery(command + tmp.write(name + ".json", cfg.dump()) + " --quiet");
    EXPECT_EQ(o.code, 2) << name << ": " << o.output;
    for (const std::string& p : parts) EXPECT_NE(o.output.find(p), std::string::npos) << name << ", " << p << ": " << o.output;
  }
  EXPECT_FALSE(fs::exists(cfg["output"]["dir"].get<std::string>())) << name;
}

struct ScaleCase {
  const char* name;
  const char* method;
  bool distances;
  const char* affinities;
};

class ExtremeScale : public ::testing::TestWithParam<ScaleCase> {};

// Before: squared distances of data near 1e180 overflowed before any rescale, so HSSNE made another
// map silently and NeRV exited 1 ("the median input bandwidth is not positive").
TEST_P(ExtremeScale, TheMapIsTheUnitScaleMapBitForBit) {
  const ScaleCase& c = GetParam();
  orrery::test::TempDir tmp;
  const MatrixD X = c.distances ? distances_of(unit_points()) : unit_points();
  const std::string key = c.distances ? "distances" : "vectors";
  const bool nerv = std::string(c.method) == "nerv";
  const json params = nerv ? json{{"max_iter", 25}} : json{{"max_iter", 60}};
  auto input = [&](const std::string& file) {
    json in = {{key, file}, {"perplexity", 5}, {"affinities", c.affinities}};
    if (std::string(c.method) == "snerv")
      in = {{key, file}, {"perplexity", 5}, {"labels", tmp.write("y.txt", labels_text(60))}, {"metric", {{"components", 3}}}};
    return in;
  };
  const RunOut unit = run(tmp, "unit", run_config(tmp, c.method, "unit", input(tmp.write("x.npy", orrery::io::npy_bytes(X))), params));
  ASSERT_EQ(unit.report["input"]["scale_exponent"], 0);
  std::vector<int> exponents = {600, -600};
  if (nerv && !c.distances) exponents.push_back(990);  // vectors near 1e300
  for (int e : exponents) {
    SCOPED_TRACE("2^" + std::to_string(e));
    const std::string tag = "e" + std::to_string(e + 2000);
    const MatrixD Xe = orrery::times_power_of_two(X, e);
    const json in = input(tmp.write(tag + ".npy", orrery::io::npy_bytes(Xe)));
    const RunOut big = run(tmp, tag, run_config(tmp, c.method, tag, in, params));
    ASSERT_FALSE(big.Y.empty());
    EXPECT_EQ(big.report["input"]["scale_exponent"], e);
    // NeRV's map is at the input's length scale, in its units; the others' maps have none
    const MatrixD expect = nerv ? orrery::times_power_of_two(unit.Y, e) : unit.Y;
    EXPECT_EQ(big.Y.data, expect.data);
    EXPECT_EQ(big.report["quality"]["at_k"], unit.report["quality"]["at_k"]);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cli, ExtremeScale,
    ::testing::Values(ScaleCase{"hssne_dense", "hssne", false, "dense"}, ScaleCase{"hssne_sparse", "hssne", false, "sparse"},
                      ScaleCase{"hssne_distances", "hssne", true, "dense"}, ScaleCase{"nerv_dense", "nerv", false, "dense"},
                      ScaleCase{"nerv_sparse", "nerv", false, "sparse"}, ScaleCase{"nerv_distances", "nerv", true, "dense"},
                      ScaleCase{"snerv", "snerv", false, "sparse"}),
    [](const ::testing::TestParamInfo<ScaleCase>& i) { return std::string(i.param.name); });

// A placement takes its new points in its model's units: a map of data at 2^600 and new points at
// 2^600 give the places that the same data at unit scale gives.
TEST(ExtremeScalePlacement, NewPointsMeetTheModelInItsUnits) {
  orrery::test::TempDir tmp;
  const MatrixD all = unit_points(70, 8);
  MatrixD ref(60, 4), add(10, 4);
  for (int i = 0; i < 70; ++i)
    for (int c = 0; c < 4; ++c) (i < 60 ? ref(i, c) : add(i - 60, c)) = all(i, c);
  const int k = std::ilogb(orrery::input_scale(ref));  // the model's points at scale exponent 0
  ref = orrery::times_power_of_two(ref, -k), add = orrery::times_power_of_two(add, -k);
  for (const char* method : {"hssne", "nerv"}) {
    SCOPED_TRACE(method);
    const bool nerv = std::string(method) == "nerv";
    std::vector<MatrixD> places;
    for (int e : {0, 600}) {
      const std::string tag = std::string(method) + std::to_string(e);
      const json params = nerv ? json{{"max_iter", 25}} : json{{"max_iter", 60}};
      const std::string r = tmp.write(tag + "_ref.npy", orrery::io::npy_bytes(orrery::times_power_of_two(ref, e)));
      const std::string a = tmp.write(tag + "_add.npy", orrery::io::npy_bytes(orrery::times_power_of_two(add, e)));
      run(tmp, tag + "_model", run_config(tmp, method, tag + "_model", {{"vectors", r}, {"perplexity", 5}, {"pca", 3}}, params));
      json pp = nerv ? json{{"max_iter", 50}} : json{{"max_iter", 100}};
      const RunOut p =
          run(tmp, tag + "_place", run_config(tmp, method, tag + "_place", {{"vectors", a}, {"model", tmp.path(tag + "_model")}}, pp));
      ASSERT_FALSE(p.Y.empty());
      EXPECT_EQ(p.report["input"]["scale_exponent"], e);
      places.push_back(p.Y);
    }
    EXPECT_EQ(places[1].data, (nerv ? orrery::times_power_of_two(places[0], 600) : places[0]).data);
  }
}

// The smoothed measures use the input's bandwidth in both spaces: (X, Y) and (2^600 X, 2^600 Y) are
// the same pair of spaces. Before, the squares overflowed and the measures were written as null.
TEST(ExtremeScaleEvaluate, SmoothedMeasuresAreThoseOfTheCommonUnitScale) {
  orrery::test::TempDir tmp;
  const MatrixD X = unit_points();
  MatrixD Y(60, 2);
  for (int i = 0; i < 60; ++i) Y(i, 0) = X(i, 0) + 0.1 * X(i, 2), Y(i, 1) = X(i, 1) - 0.2 * X(i, 3);
  auto evaluate = [&](const std::string& tag, const MatrixD& A, const MatrixD& B) {
    const std::string a = tmp.write(tag + "_x.npy", orrery::io::npy_bytes(A)), b = tmp.write(tag + "_y.npy", orrery::io::npy_bytes(B));
    const auto o = orrery::test::run_orrery("evaluate --data " + a + " --embedding " + b + " --perplexity 5 --out " +
                                            tmp.path(tag + ".json") + " --quiet");
    EXPECT_EQ(o.code, 0) << o.output;
    std::ifstream f(tmp.path(tag + ".json"));
    return json::parse(f);
  };
  const json unit = evaluate("unit", X, Y);
  ASSERT_TRUE(unit["smoothed_precision"].is_number());
  for (int e : {600, -600, 1000}) {
    SCOPED_TRACE(e);
    const json big = evaluate("e" + std::to_string(e + 2000), orrery::times_power_of_two(X, e), orrery::times_power_of_two(Y, e));
    EXPECT_EQ(big["smoothed_precision"], unit["smoothed_precision"]);
    EXPECT_EQ(big["smoothed_recall"], unit["smoothed_recall"]);
    EXPECT_EQ(big["at_k"], unit["at_k"]);
  }
  // a unit-scale map of data at 2^600: collapsed at the input's bandwidth (every q_i uniform), and
  // finite; a map 2^600 times the data's: each q_i on its nearest, finite too
  for (const auto& [A, B] : {std::pair<MatrixD, MatrixD>{orrery::times_power_of_two(X, 600), Y},
                             std::pair<MatrixD, MatrixD>{X, orrery::times_power_of_two(Y, 600)}}) {
    const json r = evaluate(A.data[0] == X.data[0] ? "map_big" : "data_big", A, B);
    EXPECT_TRUE(r["smoothed_precision"].is_number()) << r["smoothed_precision"];
    EXPECT_TRUE(r["smoothed_recall"].is_number()) << r["smoothed_recall"];
  }
}

// 30 objects' posteriors over 3 classes.
std::string posteriors(const orrery::test::TempDir& tmp) {
  std::ostringstream s;
  for (int i = 0; i < 30; ++i) {
    const double a = 0.6 + 0.01 * (i % 10);
    s << (i % 3 == 0 ? a : (1 - a) / 2) << "," << (i % 3 == 1 ? a : (1 - a) / 2) << "," << (i % 3 == 2 ? a : (1 - a) / 2) << "\n";
  }
  return tmp.write("p.csv", s.str());
}

TEST(HostileInputs, PeClassCoordinatesBeyondTheMapsRangeAreRefused) {
  orrery::test::TempDir tmp;
  const std::string p = posteriors(tmp);
  // before: exit 1, "PE objective became non-finite"
  const std::string coords = tmp.write("phi.csv", "0,0\n1e200,3\n-2,1\n");
  expect_refused(tmp, "phi", run_config(tmp, "pe", "out", {{"posteriors", p}, {"class_coords", coords}}, {{"fit_classes", false}}),
                 {"input.class_coords", "phi.csv", "row 2, column 1", "1e+200"});
  const std::string start = tmp.write("start.csv", "0,0\n3,-2e6\n-2,1\n");
  expect_refused(tmp, "start", run_config(tmp, "pe", "out", {{"posteriors", p}, {"class_coords", start}}, {{"class_init", "file"}}),
                 {"input.class_coords", "row 2, column 2", "[-1e6, 1e6]"});
  // the largest accepted coordinate runs to a finite map
  const std::string edge = tmp.write("edge.csv", "0,0\n1e6,0\n-2,1\n");
  const json cfg = run_config(tmp, "pe", "edge", {{"posteriors", p}, {"class_coords", edge}}, {{"fit_classes", false}});
  const auto o = orrery::test::run_orrery("run " + tmp.write("edge.json", cfg.dump()) + " --quiet");
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_EQ(orrery::io::read_matrix(tmp.path("edge/objects.npy")).rows, 30);
}

TEST(HostileInputs, PeLabelsBelowMinusOneAreRefusedBeforeTheRun) {
  orrery::test::TempDir tmp;
  std::string labels;
  for (int i = 0; i < 30; ++i) labels += (i == 7 ? "-5" : std::to_string(i % 3)) + "\n";
  // before: validate passed and the SVG writer failed the run with exit 1
  expect_refused(tmp, "labels", run_config(tmp, "pe", "out", {{"posteriors", posteriors(tmp)}, {"labels", tmp.write("l.txt", labels)}}, json::object()),
                 {"l.txt", "label 8 is -5", "-1 unknown"});
}

TEST(HostileInputs, SupervisedNervOnTooFewPointsNamesThePerplexity) {
  orrery::test::TempDir tmp;
  const std::string x = tmp.write("x.csv", "0,0\n1,0\n0,2\n"), y = tmp.write("y.txt", "0\n1\n0\n");
  // before: "k: expected 1 <= k <= N - 1" (the default perplexity 0) or a fold count under params
  expect_refused(tmp, "default", run_config(tmp, "snerv", "out", {{"vectors", x}, {"labels", y}}, json::object()),
                 {"input.perplexity", "at least 7 points", "found 3"});
  expect_refused(tmp, "given", run_config(tmp, "snerv", "out", {{"vectors", x}, {"labels", y}, {"perplexity", 1.5}}, json::object()),
                 {"input.perplexity", "k = ceil(3 perplexity) = 5", "N - 1 = 2"});
}

TEST(HostileInputs, AMissingFileIsNamedByItsKey) {
  orrery::test::TempDir tmp;
  const MatrixD X = unit_points();
  const std::string x = tmp.write("x.npy", orrery::io::npy_bytes(X)), y = tmp.write("y.txt", labels_text(60));
  const std::string names = tmp.path("names.txt");  // absent
  expect_refused(tmp, "ne_class_names",
                 run_config(tmp, "hssne", "out", {{"vectors", x}, {"labels", y}, {"class_names", names}, {"perplexity", 5}}, json::object()),
                 {"input.class_names: cannot open", "names.txt"});
  expect_refused(tmp, "ne_names", run_config(tmp, "nerv", "out", {{"vectors", x}, {"names", names}, {"perplexity", 5}}, json::object()),
                 {"input.names: cannot open", "names.txt"});
  expect_refused(tmp, "ne_vectors", run_config(tmp, "hssne", "out", {{"vectors", tmp.path("none.npy")}}, json::object()),
                 {"input.vectors: cannot open", "none.npy"});
  const std::string p = posteriors(tmp);
  expect_refused(tmp, "pe_class_names", run_config(tmp, "pe", "out", {{"posteriors", p}, {"class_names", names}}, json::object()),
                 {"input.class_names: cannot open", "names.txt"});
  expect_refused(tmp, "pe_labels", run_config(tmp, "pe", "out", {{"posteriors", p}, {"labels", tmp.path("l.txt")}}, json::object()),
                 {"input.labels: cannot open", "l.txt"});
  const std::string docs = tmp.write("docs.txt", "alpha beta gamma\nbeta gamma delta\ngamma delta alpha\n");
  expect_refused(tmp, "plsv_corpus", run_config(tmp, "plsv", "out", {{"corpus", tmp.path("none.txt")}}, {{"topics", 2}}),
                 {"input.corpus: cannot open", "none.txt"});
  expect_refused(tmp, "plsv_labels",
                 run_config(tmp, "plsv", "out", {{"corpus", docs}, {"labels", tmp.path("l.txt")}}, {{"topics", 2}}),
                 {"input.labels: cannot open", "l.txt"});
  expect_refused(tmp, "plsv_model",
                 run_config(tmp, "plsv", "out", {{"corpus", docs}, {"model", tmp.path("no_model")}}, {{"topics", 2}}),
                 {"input.model: cannot open", "no_model"});
  const auto o = orrery::test::run_orrery("evaluate --data " + x + " --embedding " + tmp.path("none.npy") + " --quiet");
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_NE(o.output.find("--embedding: cannot open"), std::string::npos) << o.output;
}

// A sparse corpus's vocabulary size is its largest word id (svmlight) or the size it declares
// (Matrix Market): a refused memory plan names that id or line, not only the topics.
TEST(HostileInputs, AHugeWordIdIsNamedWhenTheMemoryPlanRefusesIt) {
  orrery::test::TempDir tmp;
  const std::string svm = tmp.write("c.svm", "0 1:2 5:1\n1 2:1 2000000000:3\n0 3:1 7:2\n");
  expect_refused(tmp, "svm", run_config(tmp, "plsv", "out", {{"corpus", svm}}, {{"topics", 10}}),
                 {"input.corpus", "GiB", "c.svm', line 2, word id 2000000000", "W = 2000000000"});
  const std::string mtx = tmp.write("c.mtx",
                                    "%%MatrixMarket matrix coordinate integer general\n% a comment\n3 2000000001 4\n"
                                    "1 1 2\n2 2 1\n3 3 1\n3 7 2\n");
  expect_refused(tmp, "mtx", run_config(tmp, "plsv", "out", {{"corpus", mtx}}, {{"topics", 10}}),
                 {"input.corpus", "GiB", "c.mtx', line 3, the size line, which declares 2000000001 columns",
                  "the largest word id used is 7"});
}

}  // namespace
