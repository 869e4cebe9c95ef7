// Labels that only name groups work end to end whatever their values: huge integers and names
// become classes 0..C-1 with the original values in the legend and report; a negative label other
// than -1 and a name that is not UTF-8 are refused by validate with exit 2, naming file and row.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "common/cli_runner.hpp"
#include "common/temp_dir.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// Two well separated groups of 12 points in 3-D.
std::string two_groups(const orrery::test::TempDir& tmp) {
  std::string x;
  for (int i = 0; i < 24; ++i) {
    const double base = i < 12 ? 0.0 : 10.0;
    x += std::to_string(base + 0.1 * (i % 4)) + "," + std::to_string(base + 0.13 * (i % 3)) + "," +
         std::to_string(0.07 * (i % 5)) + "\n";
  }
  return tmp.write("x.csv", x);
}

std::string config(const orrery::test::TempDir& tmp, const std::string& method, const std::string& labels) {
  return tmp.write(method + ".json", json({{"method", method},
                                           {"input", {{"vectors", two_groups(tmp)}, {"labels", labels}, {"perplexity", 4}}},
                                           {"params", {{"max_iter", 5}}},
                                           {"output", {{"dir", tmp.path("out")}}}})
                                         .dump());
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST(LabelsCli, AnyIntegerOrNameIsAClass) {
  orrery::test::TempDir tmp;
  std::string ints, names;
  for (int i = 0; i < 24; ++i) {
    ints += i == 5 ? "-1\n" : i < 12 ? "2147483647\n" : "100000000\n";
    names += i < 12 ? "caf\xC3\xA9 <&>\n" : "tea\n";
  }
  const auto snerv = orrery::test::run_orrery("run " + config(tmp, "snerv", tmp.write("ints.csv", ints)) + " --quiet");
  ASSERT_EQ(snerv.code, 0) << snerv.output;
  const std::string svg = slurp(tmp.path("out/map.svg"));
  EXPECT_NE(svg.find("label 100000000"), std::string::npos);
  EXPECT_NE(svg.find("label 2147483647"), std::string::npos);

  const auto nerv = orrery::test::run_orrery("run " + config(tmp, "nerv", tmp.write("names.txt", names)) + " --quiet");
  ASSERT_EQ(nerv.code, 0) << nerv.output;
  const std::string named = slurp(tmp.path("out/map.svg"));
  EXPECT_NE(named.find("caf\xC3\xA9 &lt;&amp;&gt;"), std::string::npos);
  std::ifstream rep(tmp.path("out/report.json"));
  EXPECT_NO_THROW(json::parse(rep));

  const auto eval = orrery::test::run_orrery("evaluate --data " + tmp.path("x.csv") + " --embedding " +
                                             tmp.path("out/embedding.npy") + " --labels " + tmp.path("names.txt") +
                                             " --k 3 --quiet --out " + tmp.path("q.json"));
  ASSERT_EQ(eval.code, 0) << eval.output;
  std::ifstream q(tmp.path("q.json"));
  EXPECT_GT(json::parse(q)["at_k"][0]["knn_accuracy"].get<double>(), 0.9);
}

TEST(LabelsCli, BadLabelsAreRefusedByValidate) {
  orrery::test::TempDir tmp;
  std::string neg, latin1;
  for (int i = 0; i < 24; ++i) {
    neg += i == 7 ? "-3\n" : "1\n";
    latin1 += i == 9 ? "caf\xE9\n" : "tea\n";
  }
  const auto n = orrery::test::run_orrery("validate " + config(tmp, "nerv", tmp.write("neg.csv", neg)));
  EXPECT_EQ(n.code, 2) << n.output;
  EXPECT_NE(n.output.find("neg.csv' row 8"), std::string::npos) << n.output;
  const auto l = orrery::test::run_orrery("validate " + config(tmp, "nerv", tmp.write("latin1.txt", latin1)));
  EXPECT_EQ(l.code, 2) << l.output;
  EXPECT_NE(l.output.find("latin1.txt' row 10"), std::string::npos) << l.output;
  EXPECT_NE(l.output.find("UTF-8"), std::string::npos) << l.output;

  // PE's labels are class indices: one beyond the K classes is refused before anything is sized by it.
  std::string pe_labels;
  for (int i = 0; i < 400; ++i) pe_labels += i == 3 ? "2147483647\n" : "0\n";
  std::ifstream in(fs::path(ORRERY_SOURCE_DIR) / "configs/pe_planted_csv.json");
  json pe = json::parse(in);
  pe["input"]["labels"] = tmp.write("pe_labels.csv", pe_labels);
  pe["output"]["dir"] = tmp.path("pe_out");
  const auto p = orrery::test::run_orrery("validate " + tmp.write("pe.json", pe.dump()));
  EXPECT_EQ(p.code, 2) << p.output;
  EXPECT_NE(p.output.find("pe_labels.csv: label 4 is 2147483647"), std::string::npos) << p.output;
}
