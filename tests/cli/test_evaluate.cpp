// `orrery evaluate` end to end: the table, the JSON and the chart, and errors with exit 2.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
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

// --metric cosine: points on rays from the origin rank by angle, not by distance. Four rays at
// 0, 10, 90 and 100 degrees, two points on each (lengths 1 and 10): by cosine a point's nearest is
// its own ray's other point, as in a map of the angles (K = 1 is perfect); by Euclidean distance a
// short point's nearest is the short point of the next ray, and the map is not. A zero row and
// --metric with --distances are refused.
TEST(Evaluate, CosineRanksByAngle) {
  TempDir tmp;
  std::ostringstream x, y;
  for (const double deg : {0.0, 10.0, 90.0, 100.0})
    for (const double len : {1.0, 10.0}) {
      const double a = deg * 3.14159265358979 / 180.0;
      x << len * std::cos(a) << "," << len * std::sin(a) << "\n";
      y << deg + 0.01 * len << ",0\n";
    }
  const std::string xs = tmp.write("x.csv", x.str()), ys = tmp.write("y.csv", y.str());
  for (const char* metric : {"cosine", "euclidean"}) {
    const auto o = run("--data " + xs + " --embedding " + ys + " --k 1 --metric " + metric + " --quiet --out " +
                       tmp.path(std::string(metric) + ".json"));
    ASSERT_EQ(o.code, 0) << o.output;
  }
  const auto c = nlohmann::json::parse(std::ifstream(tmp.path("cosine.json")));
  const auto e = nlohmann::json::parse(std::ifstream(tmp.path("euclidean.json")));
  EXPECT_EQ(c["at_k"][0]["trustworthiness"], 1.0);
  EXPECT_LT(e["at_k"][0]["trustworthiness"], 1.0);
  const std::string zero = tmp.write("z.csv", "1,0\n0,1\n0,0\n1,1\n");
  const std::string y4 = tmp.write("y4.csv", "0,0\n1,0\n2,0\n3,0\n");
  auto o = run("--data " + zero + " --embedding " + y4 + " --k 1 --metric cosine");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("row 3 is zero"), std::string::npos) << o.output;
  o = run("--data " + zero + " --embedding " + y4 + " --k 1 --metric correlation --distances");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("--metric"), std::string::npos) << o.output;
}

// --metric inner_product: a point's input neighbors are the rows of largest inner product, itself
// excluded. Points on the x axis at lengths 1, 2, 3, 4 and on the y axis the same: by inner product
// the nearest of each of the three shorter points is the longest point of its axis, and the
// longest's is the next longest; a map putting each axis's longest point at the centre of the
// others (at 1, 1 and 0.9) is perfect at K = 1 by inner product, and not by Euclidean distance
// (where a point's nearest is its neighbor on the axis). Every row zero, --distances and an
// unknown metric are refused naming the metric.
TEST(Evaluate, InnerProductRanksByTheLargestInnerProduct) {
  TempDir tmp;
  std::ostringstream x, y;
  const double pi = 3.14159265358979;
  for (int axis = 0; axis < 2; ++axis)
    for (int len = 1; len <= 4; ++len) {
      x << (axis == 0 ? len : 0) << "," << (axis == 1 ? len : 0) << "\n";
      const double r = len == 4 ? 0.0 : len == 3 ? 0.9 : 1.0, a = 2.0 * pi * (len - 1) / 3.0;
      y << 100 * axis + r * std::cos(a) << "," << r * std::sin(a) << "\n";
    }
  const std::string xs = tmp.write("x.csv", x.str()), ys = tmp.write("y.csv", y.str());
  for (const char* metric : {"inner_product", "euclidean"}) {
    const auto o = run("--data " + xs + " --embedding " + ys + " --k 1 --metric " + metric + " --quiet --out " +
                       tmp.path(std::string(metric) + ".json"));
    ASSERT_EQ(o.code, 0) << o.output;
  }
  const auto ip = nlohmann::json::parse(std::ifstream(tmp.path("inner_product.json")));
  const auto e = nlohmann::json::parse(std::ifstream(tmp.path("euclidean.json")));
  EXPECT_EQ(ip["at_k"][0]["trustworthiness"], 1.0);
  EXPECT_EQ(ip["at_k"][0]["continuity"], 1.0);
  EXPECT_LT(e["at_k"][0]["trustworthiness"], 1.0);
  const std::string zero = tmp.write("z.csv", "0,0\n0,0\n0,0\n0,0\n");
  const std::string y4 = tmp.write("y4.csv", "0,0\n1,0\n2,0\n3,0\n");
  auto o = run("--data " + zero + " --embedding " + y4 + " --k 1 --metric inner_product");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("metric: inner_product: every row"), std::string::npos) << o.output;
  o = run("--data " + zero + " --embedding " + y4 + " --k 1 --metric inner_product --distances");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("--metric"), std::string::npos) << o.output;
  o = run("--data " + xs + " --embedding " + ys + " --k 1 --metric dot");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("--metric"), std::string::npos) << o.output;
}
