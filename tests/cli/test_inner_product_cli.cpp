// input.metric inner_product end to end: a map of two groups of vectors that differ in direction
// (not in length) keeps them apart, with the exact and the approximate search; the model places new
// points by inner product; what cannot honour the metric is refused with exit 2 naming the key.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>

#include "common/cli_runner.hpp"
#include "common/map_checks.hpp"
#include "common/run_files.hpp"
#include "common/temp_dir.hpp"
#include "io/readers.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// n 6-D points, point i of group i % 2: its group's direction (axis 0 or 1) plus noise 0.2 per
// coordinate, times a length spread evenly in log from 0.01 to 3, so that the groups meet near the
// origin in Euclidean distance but not in direction. CSV, with the labels.
void write_directions(const orrery::test::TempDir& tmp, const std::string& name, int n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0, 0.2);
  std::uniform_real_distribution<double> len(std::log(0.01), std::log(3.0));
  double s = 1.0;  // the row's length, drawn before its coordinates
  orrery::test::write_labelled_points(tmp, name, n, 6, 2, [&](int i, int d) {
    if (d == 0) s = std::exp(len(rng));
    return s * ((d == i % 2 ? 1.0 : 0.0) + z(rng));
  });
}

std::string config(const orrery::test::TempDir& tmp, const std::string& method, const std::string& name,
                   const json& input, const std::string& out, const json& params = json::object()) {
  return orrery::test::write_run_config(tmp, name, method, input, out, params);
}

json report(const orrery::test::TempDir& tmp, const std::string& out) {
  return json::parse(std::ifstream(tmp.path(out + "/report.json")));
}

double knn5(const json& r) {
  for (const auto& q : r["quality"]["at_k"])
    if (q["k"] == 5) return q["knn_accuracy"].get<double>();
  return -1.0;
}

}  // namespace

TEST(InnerProductCli, MapsKeepGroupsOfOneDirectionApart) {
  orrery::test::TempDir tmp;
  write_directions(tmp, "x", 200, 1);
  const json in = {{"vectors", tmp.path("x.csv")}, {"labels", tmp.path("x_labels.txt")}, {"metric", "inner_product"},
                   {"perplexity", 10}};
  int n = 0;
  for (const auto& [method, extra, params] :
       {std::tuple<std::string, json, json>{"hssne", json::object(), {{"max_iter", 300}}},
        {"hssne", {{"neighbors", "approximate"}}, {{"max_iter", 300}}},
        {"nerv", json::object(), {{"max_iter", 60}}}}) {
    json input = in;
    input.update(extra);
    const std::string out = "out" + std::to_string(++n);
    const auto o = orrery::test::run_orrery("run " + config(tmp, method, "c.json", input, out, params) + " --quiet");
    ASSERT_EQ(o.code, 0) << o.output;
    const json r = report(tmp, out);
    EXPECT_EQ(r["input"]["metric"], "inner_product");
    EXPECT_GE(knn5(r), 0.95) << method << " " << extra.dump();
    if (extra.contains("neighbors")) {
      EXPECT_EQ(r["input"]["neighbors"], "approximate");
      EXPECT_GE(r["input"]["neighbor_recall"].get<double>(), 0.9);
    }
  }
  // the metric reaches the search: the same run by Euclidean distance makes another map
  const auto o = orrery::test::run_orrery(
      "run " + config(tmp, "hssne", "e.json", {{"vectors", tmp.path("x.csv")}, {"labels", tmp.path("x_labels.txt")},
                                               {"perplexity", 10}},
                      "euclid", {{"max_iter", 300}}) +
      " --quiet");
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_EQ(report(tmp, "euclid")["input"]["metric"], "euclidean");
  EXPECT_NE(orrery::io::read_matrix(tmp.path("euclid/embedding.npy")).data,
            orrery::io::read_matrix(tmp.path("out1/embedding.npy")).data);
}

TEST(InnerProductCli, PlacementSearchesTheModelByInnerProduct) {
  orrery::test::TempDir tmp;
  write_directions(tmp, "ref", 200, 2);
  write_directions(tmp, "new", 40, 3);
  auto o = orrery::test::run_orrery(
      "run " + config(tmp, "hssne", "ref.json", {{"vectors", tmp.path("ref.csv")}, {"metric", "inner_product"},
                                                  {"perplexity", 10}},
                      "ref_out", {{"max_iter", 300}}) +
      " --quiet");
  ASSERT_EQ(o.code, 0) << o.output;
  o = orrery::test::run_orrery(
      "run " + config(tmp, "hssne", "new.json", {{"vectors", tmp.path("new.csv")}, {"model", tmp.path("ref_out")}},
                      "new_out") +
      " --quiet");
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_EQ(report(tmp, "new_out")["input"]["metric"], "inner_product");
  const orrery::MatrixD Y = orrery::io::read_matrix(tmp.path("ref_out/embedding.npy"));
  const orrery::MatrixD Z = orrery::io::read_matrix(tmp.path("new_out/embedding.npy"));
  ASSERT_EQ(Z.rows, 40);
  EXPECT_GE(orrery::test::nearest_of_class(Z, Y, 2), 38)
      << "new points whose nearest model point in the map is of their group";
}

TEST(InnerProductCli, WhatCannotHonourTheMetricIsRefused) {
  orrery::test::TempDir tmp;
  write_directions(tmp, "x", 60, 4);
  const std::string x = tmp.path("x.csv");
  for (const auto& [input, key] :
       {std::pair<json, std::string>{{{"vectors", x}, {"metric", "dot"}}, "input.metric"},
        {{{"vectors", x}, {"metric", "inner_product"}, {"pca", 3}},
         "input.pca: does not apply with input.metric inner_product"},
        {{{"distances", x}, {"metric", "inner_product"}}, "input.metric: inner_product compares vectors"}}) {
    const auto o = orrery::test::run_orrery("run " + config(tmp, "hssne", "c.json", input, "out") + " --quiet");
    EXPECT_EQ(o.code, 2) << o.output;
    EXPECT_NE(o.output.find(key), std::string::npos) << o.output;
    EXPECT_FALSE(fs::exists(tmp.path("out")));
  }
  std::string rows;
  for (int i = 0; i < 60; ++i) rows += "0,0,0\n";
  const std::string zero = tmp.write("zero.csv", rows);
  const json in = {{"vectors", zero}, {"metric", "inner_product"}, {"perplexity", 5}};
  const auto o = orrery::test::run_orrery("run " + config(tmp, "hssne", "z.json", in, "out") + " --quiet");
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_NE(o.output.find("input.metric: inner_product: every row"), std::string::npos) << o.output;
}
