// The neighbor-embedding configs run end to end on a Fashion-MNIST subset (limit lowered for
// test time): outputs complete, classes separated, bad input named with exit 2.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <tuple>
#include <vector>

#include "common/cli_runner.hpp"
#include "common/temp_dir.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

const char* kImages = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";

std::string patched(const orrery::test::TempDir& tmp, const std::string& name, const json& patch) {
  std::ifstream in(fs::path(ORRERY_SOURCE_DIR) / "configs" / name);
  json j = json::parse(in);
  j["output"]["dir"] = tmp.path("out");
  j.merge_patch(patch);
  return tmp.write(name, j.dump(2));
}

json report(const orrery::test::TempDir& tmp) {
  std::ifstream in(tmp.path("out/report.json"));
  return json::parse(in);
}

// out/embedding.csv holds two groups of `per` points, first one then the other: every point lies
// nearer its own group's centre than the other's.
void expect_two_groups(const std::string& csv, int per) {
  std::ifstream in(csv);
  std::vector<std::pair<double, double>> y;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || !(std::isdigit(static_cast<unsigned char>(line[0])) || line[0] == '-')) continue;
    std::istringstream ls(line);
    double a, b;
    char comma;
    ls >> a >> comma >> b;
    y.emplace_back(a, b);
  }
  ASSERT_EQ(y.size(), static_cast<size_t>(2 * per));
  double cx[2] = {0, 0}, cy[2] = {0, 0};
  for (int i = 0; i < 2 * per; ++i) cx[i / per] += y[i].first / per, cy[i / per] += y[i].second / per;
  for (int i = 0; i < 2 * per; ++i) {
    const int own = i / per, other = 1 - own;
    EXPECT_LT(std::hypot(y[i].first - cx[own], y[i].second - cy[own]),
              std::hypot(y[i].first - cx[other], y[i].second - cy[other]))
        << "point " << i;
  }
}
void expect_two_groups(const orrery::test::TempDir& tmp, int per) { expect_two_groups(tmp.path("out/embedding.csv"), per); }

class NeConfigs : public ::testing::TestWithParam<const char*> {};

}  // namespace

TEST_P(NeConfigs, RunsAndSeparatesClasses) {
  if (!fs::exists(kImages)) GTEST_SKIP() << "dataset-fashion-mnist is not installed (scripts/setup.sh installs it)";
  orrery::test::TempDir tmp;
  // supervised NeRV's map converges more slowly (its metric's neighborhoods are tight)
  const int iters = std::string(GetParam()).rfind("snerv", 0) == 0 ? 1000 : 150;
  json params = {{"max_iter", iters}};
  if (std::string(GetParam()).rfind("hssne", 0) == 0) params["exaggeration_iter"] = 50;  // within the 150
  const std::string cfg = patched(tmp, GetParam(), {{"input", {{"limit", 300}, {"perplexity", 20}}}, {"params", params}});
  const auto o = orrery::test::run_orrery("run " + cfg + " --quiet");
  ASSERT_EQ(o.code, 0) << o.output;
  for (const char* f : {"embedding.npy", "embedding.csv", "report.json", "map.svg"})
    EXPECT_TRUE(fs::exists(tmp.path(std::string("out/") + f))) << f;
  const json r = report(tmp);
  EXPECT_EQ(r["input"]["points"], 300);
  // 10 classes, 300 images: a faithful map keeps most nearest neighbors in class (raw pixels
  // give ~0.7 by 1-NN in the input space itself).
  EXPECT_GT(r["quality"]["homogeneity_1nn"].get<double>(), 0.55) << GetParam();
  EXPECT_GT(r["quality"]["at_k"][2]["trustworthiness"].get<double>(), 0.85) << GetParam();
  const auto& trace = r["trace"];
  ASSERT_GE(trace.size(), 2u);
  EXPECT_LT(trace.back().get<double>(), trace.front().get<double>());
}

INSTANTIATE_TEST_SUITE_P(Configs, NeConfigs,
                         ::testing::Values("hssne_tsne_fashion.json", "hssne_tsne_fashion_10k.json", "hssne_alpha0_fashion.json",
                                           "hssne_alpha0_5_fashion.json", "hssne_semisupervised_fashion.json",
                                           "nerv_lambda03_fashion.json", "snerv_lambda03_fashion.json"),
                         [](const ::testing::TestParamInfo<const char*>& p) {
                           std::string s = p.param;
                           s = s.substr(0, s.find('.'));
                           for (char& c : s)
                             if (c == '-') c = '_';
                           return s;
                         });

TEST(NeCli, BadInputIsNamed) {
  orrery::test::TempDir tmp;
  const std::string x = tmp.write("x.csv", "0,0\n1,0\n0,1\nnan,2\n3,3\n");
  const std::string base = tmp.write("c.json", json({{"method", "hssne"},
                                                      {"input", {{"vectors", x}, {"perplexity", 2}}},
                                                      {"output", {{"dir", tmp.path("out")}}}})
                                                   .dump());
  auto o = orrery::test::run_orrery("run " + base + " --quiet");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("row 4"), std::string::npos) << o.output;
  const std::string small = tmp.write("s.csv", "0,0\n1,0\n0,1\n2,2\n");
  const std::string perp = tmp.write("p.json", json({{"method", "nerv"},
                                                      {"input", {{"vectors", small}, {"perplexity", 30}}},
                                                      {"output", {{"dir", tmp.path("out")}}}})
                                                   .dump());
  o = orrery::test::run_orrery("run " + perp + " --quiet");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("input.perplexity"), std::string::npos) << o.output;
  const std::string dup = tmp.write("d.csv", "0,0\n1,0\n0,1\n1,0\n2,2\n3,1\n");
  const std::string dupc = tmp.write("dc.json", json({{"method", "hssne"},
                                                      {"input", {{"vectors", dup}, {"perplexity", 2}, {"duplicates", "refuse"}}},
                                                      {"output", {{"dir", tmp.path("out")}}}})
                                                   .dump());
  o = orrery::test::run_orrery("run " + dupc + " --quiet");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("rows 2 and 4"), std::string::npos) << o.output;
  const std::string bad = tmp.write("b.json", json({{"method", "hssne"},
                                                    {"input", {{"vectors", small}, {"perplexity", 1.5}}},
                                                    {"params", {{"alpha", -1}}},
                                                    {"output", {{"dir", tmp.path("out")}}}})
                                                 .dump());
  o = orrery::test::run_orrery("run " + bad + " --quiet");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("params.alpha"), std::string::npos) << o.output;
  EXPECT_FALSE(fs::exists(tmp.path("out")));
}

TEST(NeCli, DistanceMatrixAndPcaInputs) {
  orrery::test::TempDir tmp;
  // 40 points on three well separated blobs in 6-D, as vectors and as a distance matrix
  std::ostringstream xs, ds, ls;
  std::vector<std::vector<double>> pts;
  for (int i = 0; i < 40; ++i) {
    std::vector<double> p(6);
    for (int c = 0; c < 6; ++c) p[c] = (c == i % 3 ? 20.0 : 0.0) + ((i * 7 + c * 3) % 11) * 0.1 + i * 0.013 * (c + 1);
    pts.push_back(p);
    for (int c = 0; c < 6; ++c) xs << (c ? "," : "") << p[c];
    xs << "\n";
    ls << i % 3 << "\n";
  }
  for (int i = 0; i < 40; ++i) {
    for (int j = 0; j < 40; ++j) {
      double s = 0;
      for (int c = 0; c < 6; ++c) s += (pts[i][c] - pts[j][c]) * (pts[i][c] - pts[j][c]);
      ds << (j ? "," : "") << std::sqrt(s);
    }
    ds << "\n";
  }
  const std::string x = tmp.write("x.csv", xs.str()), d = tmp.write("d.csv", ds.str()), l = tmp.write("l.csv", ls.str());
  for (const auto& input : {json{{"distances", d}, {"labels", l}, {"perplexity", 5}},
                            json{{"vectors", x}, {"pca", 3}, {"labels", l}, {"perplexity", 5}}}) {
    const std::string cfg = tmp.write("c.json", json({{"method", "nerv"}, {"input", input},
                                                      {"params", {{"max_iter", 60}}},
                                                      {"output", {{"dir", tmp.path("out")}}}})
                                                    .dump());
    const auto o = orrery::test::run_orrery("run " + cfg + " --quiet");
    ASSERT_EQ(o.code, 0) << o.output;
    const json r = report(tmp);
    EXPECT_EQ(r["input"]["source"], input.contains("distances") ? "distances" : "vectors");
    EXPECT_GE(r["quality"]["homogeneity_1nn"].get<double>(), 0.95) << input.dump();
    fs::remove_all(tmp.path("out"));
  }
}

// The paper's protocol where a learnt metric matters: three classes separated along one axis,
// buried under five noise axes of 4x the spread. With the test folds' labels hidden, supervised
// NeRV's map must classify the test points (5-NN) far better than unsupervised NeRV's.
TEST(NeCli, SupervisedNervBeatsNervInCrossValidation) {
  orrery::test::TempDir tmp;
  std::mt19937_64 rng(7);
  std::normal_distribution<double> z(0.0, 1.0);
  std::ostringstream xs, ys;
  for (int n = 0; n < 240; ++n) {
    const int c = n % 3;
    xs << 3.0 * c + 0.5 * z(rng);
    for (int j = 0; j < 5; ++j) xs << "," << 4.0 * z(rng);
    xs << "\n";
    ys << c << "\n";
  }
  const std::string x = tmp.write("x.csv", xs.str()), y = tmp.write("y.csv", ys.str());
  double err[2];
  for (int m = 0; m < 2; ++m) {
    json in = {{"vectors", x}, {"labels", y}, {"perplexity", 10}, {"cv_folds", 4}};
    if (m == 0) in["metric"] = {{"folds", 3}};
    const std::string cfg = tmp.write("c.json", json({{"method", m == 0 ? "snerv" : "nerv"},
                                                       {"input", in},
                                                       {"params", {{"max_iter", 1000}}},
                                                       {"output", {{"dir", tmp.path("out")}}},
                                                       {"device", "cpu"}})
                                                    .dump());
    const auto o = orrery::test::run_orrery("run " + cfg + " --quiet");
    ASSERT_EQ(o.code, 0) << o.output;
    const json r = report(tmp);
    ASSERT_EQ(r["cross_validation"]["knn5_test_error"].size(), 4u);
    err[m] = r["cross_validation"]["mean_knn5_test_error"].get<double>();
    if (m == 0) {
      EXPECT_GT(r["result"]["metric"]["components"].get<int>(), 0);
      EXPECT_FALSE(r["result"]["metric"]["selection"].empty());
    }
  }
  EXPECT_LT(err[0], 0.3) << "snerv";
  EXPECT_LT(err[0] + 0.2, err[1]) << "snerv " << err[0] << " vs nerv " << err[1];
}

TEST(NeCli, SupervisedNervNeedsLabels) {
  orrery::test::TempDir tmp;
  const std::string x = tmp.write("x.csv", "0,0\n1,0\n0,1\n2,2\n3,1\n1,3\n");
  const std::string cfg = tmp.write("c.json", json({{"method", "snerv"},
                                                     {"input", {{"vectors", x}, {"perplexity", 2}}},
                                                     {"output", {{"dir", tmp.path("out")}}}})
                                                  .dump());
  const auto o = orrery::test::run_orrery("run " + cfg + " --quiet");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("input.labels"), std::string::npos) << o.output;
  EXPECT_FALSE(fs::exists(tmp.path("out/report.json")));
}

// HSSNE from a precomputed sparse affinity matrix: two cliques of 12 points with no edge between
// them must come out as two groups (every point nearer its own clique's centre).
TEST(NeCli, HssneTakesAPrecomputedAffinityMatrix) {
  orrery::test::TempDir tmp;
  std::ostringstream m;
  int entries = 0;
  std::ostringstream body;
  for (int g = 0; g < 2; ++g)
    for (int a = 0; a < 12; ++a)
      for (int b = 0; b < 12; ++b)
        if (a != b) body << g * 12 + a + 1 << " " << g * 12 + b + 1 << " " << 1.0 + 0.1 * ((a + b) % 3) << "\n", ++entries;
  m << "%%MatrixMarket matrix coordinate real general\n24 24 " << entries << "\n" << body.str();
  const std::string mtx = tmp.write("a.mtx", m.str());
  const std::string cfg = tmp.write("c.json", json({{"method", "hssne"},
                                                     {"input", {{"affinity_matrix", mtx}}},
                                                     {"params", {{"max_iter", 200}}},
                                                     {"output", {{"dir", tmp.path("out")}, {"format", "csv"}}},
                                                     {"device", "cpu"}})
                                                  .dump());
  const auto o = orrery::test::run_orrery("run " + cfg + " --quiet");
  ASSERT_EQ(o.code, 0) << o.output;
  const json r = report(tmp);
  EXPECT_EQ(r["input"]["source"], "affinity_matrix");
  EXPECT_EQ(r["input"]["points"], 24);
  expect_two_groups(tmp, 12);
  // the precomputed input goes with hssne only, and without vector options
  const std::string bad = tmp.write("b.json", json({{"method", "nerv"},
                                                     {"input", {{"affinity_matrix", mtx}}},
                                                     {"output", {{"dir", tmp.path("out2")}}}})
                                                  .dump());
  const auto e = orrery::test::run_orrery("run " + bad + " --quiet");
  EXPECT_EQ(e.code, 2);
  EXPECT_NE(e.output.find("input.affinity_matrix"), std::string::npos) << e.output;
}

// HSSNE from a kNN distance graph (input.neighbor_graph): two groups of 15 points on two lines, each
// point listing its 8 nearest in its own group (rows of unequal length: point 1 lists 3), calibrated
// at perplexity 5. The map keeps the groups apart; the report counts the short row; the graph goes
// with hssne only, without the vector options, and a negative distance is refused by its entry with
// nothing written.
TEST(NeCli, HssneTakesAKnnDistanceGraph) {
  orrery::test::TempDir tmp;
  std::ostringstream body;
  int entries = 0;
  for (int g = 0; g < 2; ++g)
    for (int a = 0; a < 15; ++a) {
      std::vector<std::pair<double, int>> nb;
      for (int b = 0; b < 15; ++b)
        if (b != a) nb.emplace_back(std::abs(a - b) * (1.0 + 0.1 * g), b);
      std::sort(nb.begin(), nb.end());
      const int keep = g == 0 && a == 0 ? 3 : 8;
      for (int l = 0; l < keep; ++l, ++entries)
        body << g * 15 + a + 1 << " " << g * 15 + nb[l].second + 1 << " " << nb[l].first << "\n";
    }
  std::ostringstream m;
  m << "%%MatrixMarket matrix coordinate real general\n30 30 " << entries << "\n" << body.str();
  const std::string mtx = tmp.write("g.mtx", m.str());
  const auto config = [&](const std::string& method, const json& extra, const std::string& graph) {
    json in = {{"neighbor_graph", graph}, {"perplexity", 5}};
    in.update(extra);
    return tmp.write(method + std::to_string(entries++) + ".json",
                     json({{"method", method},
                           {"input", in},
                           {"params", {{"max_iter", 300}}},
                           {"output", {{"dir", tmp.path("out")}, {"format", "csv"}}},
                           {"device", "cpu"}})
                         .dump());
  };
  const auto o = orrery::test::run_orrery("run " + config("hssne", json::object(), mtx) + " --quiet");
  ASSERT_EQ(o.code, 0) << o.output;
  const json r = report(tmp);
  EXPECT_EQ(r["input"]["source"], "neighbor_graph");
  EXPECT_EQ(r["input"]["points"], 30);
  EXPECT_EQ(r["input"]["neighbor_graph"]["min_neighbors"], 3);
  EXPECT_EQ(r["input"]["neighbor_graph"]["max_neighbors"], 8);
  EXPECT_EQ(r["input"]["neighbor_graph"]["rows_below_perplexity"], 1);
  EXPECT_EQ(r["input"]["neighbor_graph"]["reachable_perplexity"], 3.0);
  expect_two_groups(tmp, 15);
  fs::remove_all(tmp.path("out"));
  for (const auto& [method, extra, key] :
       {std::tuple<std::string, json, std::string>{"nerv", json::object(), "input.neighbor_graph"},
        {"hssne", json{{"pca", 2}}, "input.pca"},
        {"hssne", json{{"neighbors", "exact"}}, "input.neighbors"},
        {"hssne", json{{"metric", "cosine"}}, "input.metric: cosine compares vectors"}}) {
    const auto e = orrery::test::run_orrery("run " + config(method, extra, mtx) + " --quiet");
    EXPECT_EQ(e.code, 2) << key;
    EXPECT_NE(e.output.find(key), std::string::npos) << e.output;
  }
  const std::string negative = tmp.write("neg.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 3\n"
                                                    "1 2 1.0\n2 3 -1.0\n3 1 1.0\n");
  const auto e = orrery::test::run_orrery("run " + config("hssne", json::object(), negative) + " --quiet");
  EXPECT_EQ(e.code, 2);
  EXPECT_NE(e.output.find("neg.mtx: entry (2, 3)"), std::string::npos) << e.output;
  EXPECT_FALSE(fs::exists(tmp.path("out")));
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// params.init: a given start (a file) or the vectors' principal components replace the seeded
// Gaussian, so the seed no longer changes the map (tests/run/test_hssne_start.cpp checks the pca
// start's scale); a start of the wrong shape, and pca without vectors, are refused naming params.init.
TEST(NeCli, HssneStartsFromAGivenMapOrThePrincipalComponents) {
  orrery::test::TempDir tmp;
  std::mt19937_64 rng(5);
  std::normal_distribution<double> z(0.0, 1.0);
  std::ostringstream x, y0, bad;
  for (int i = 0; i < 60; ++i) {
    for (int c = 0; c < 4; ++c) x << (c ? "," : "") << z(rng) + (i < 30 ? 0.0 : 6.0) * (c == 1);
    x << "\n";
    y0 << z(rng) << "," << z(rng) << "\n";
    if (i < 59) bad << 0.5 << "," << 0.5 << "\n";
  }
  const std::string xs = tmp.write("x.csv", x.str()), starts = tmp.write("y0.csv", y0.str()),
                    bads = tmp.write("bad.csv", bad.str());
  int n = 0;
  const auto run = [&](const std::string& init, int seed, const json& in_extra = json::object()) {
    json in = {{"vectors", xs}, {"perplexity", 10}};
    in.update(in_extra);
    const std::string dir = tmp.path("out" + std::to_string(++n));
    const std::string cfg = tmp.write("c" + std::to_string(n) + ".json",
                                      json({{"method", "hssne"},
                                            {"input", in},
                                            {"params", {{"max_iter", 60}, {"init", init}}},
                                            {"seed", seed},
                                            {"output", {{"dir", dir}, {"format", "csv"}}},
                                            {"device", "cpu"}})
                                          .dump());
    const auto o = orrery::test::run_orrery("run " + cfg + " --quiet");
    return std::make_pair(o, dir);
  };
  const auto [r1, d1] = run("random", 1);
  const auto [r2, d2] = run("random", 2);
  const auto [g1, e1] = run(starts, 1);
  const auto [g2, e2] = run(starts, 2);
  const auto [p1, f1] = run("pca", 1);
  const auto [p2, f2] = run("pca", 2);
  const auto [s1, h1] = run("spectral", 1);
  const auto [s2, h2] = run("spectral", 2);
  for (const auto* o : {&r1, &r2, &g1, &g2, &p1, &p2, &s1, &s2}) ASSERT_EQ(o->code, 0) << o->output;
  EXPECT_NE(slurp(d1 + "/embedding.csv"), slurp(d2 + "/embedding.csv"));
  EXPECT_EQ(slurp(e1 + "/embedding.csv"), slurp(e2 + "/embedding.csv"));
  EXPECT_EQ(slurp(f1 + "/embedding.csv"), slurp(f2 + "/embedding.csv"));
  EXPECT_EQ(slurp(h1 + "/embedding.csv"), slurp(h2 + "/embedding.csv"));
  EXPECT_NE(slurp(e1 + "/embedding.csv"), slurp(f1 + "/embedding.csv"));
  EXPECT_NE(slurp(h1 + "/embedding.csv"), slurp(f1 + "/embedding.csv"));
  expect_two_groups(h1 + "/embedding.csv", 30);
  std::ifstream rep(f1 + "/report.json");
  EXPECT_EQ(json::parse(rep)["params"]["init"], "pca");

  const auto [w, wd] = run(bads, 1);
  EXPECT_EQ(w.code, 2);
  EXPECT_NE(w.output.find("params.init: " + bads + " holds 59 x 2 values"), std::string::npos) << w.output;
  EXPECT_FALSE(fs::exists(wd));
  const std::string dist = tmp.write("d.csv", "0,1,2,3\n1,0,1,2\n2,1,0,1\n3,2,1,0\n");
  const auto [v, vd] = run("pca", 1, json{{"vectors", ""}, {"distances", dist}, {"perplexity", 1.5}});
  EXPECT_EQ(v.code, 2);
  EXPECT_NE(v.output.find("params.init: pca needs input vectors"), std::string::npos) << v.output;
  // spectral reads the affinities, so it starts from a distance matrix too
  const auto [sd, sdd] = run("spectral", 1, json{{"vectors", ""}, {"distances", dist}, {"perplexity", 1.5}});
  EXPECT_EQ(sd.code, 0) << sd.output;
  const auto [typo, typod] = run("spectrum", 1);
  EXPECT_EQ(typo.code, 2);
  EXPECT_NE(typo.output.find("expected random, pca, spectral or an N x dim array file"), std::string::npos) << typo.output;
}

// NeRV and supervised NeRV take the same starts: pca and spectral (scaled to init_scale) and a
// given array, taken as it is in the map's units: a map continued from a finished one descends from
// the cost the first ended with (the trace starts after the first step). NeRV's seed then no longer
// matters (supervised NeRV's class model is seeded, so its affinities are not).
TEST(NeCli, NervAndSnervStartFromAGivenMapSpectralOrPca) {
  orrery::test::TempDir tmp;
  std::mt19937_64 rng(8);
  std::normal_distribution<double> z(0.0, 1.0);
  std::ostringstream x, labels;
  for (int i = 0; i < 60; ++i) {
    for (int c = 0; c < 4; ++c) x << (c ? "," : "") << 100.0 * (z(rng) + (i < 30 ? 0.0 : 6.0) * (c == 1));
    x << "\n";
    labels << (i < 30 ? 0 : 1) << "\n";
  }
  const std::string xs = tmp.write("x.csv", x.str()), ls = tmp.write("l.csv", labels.str());
  int n = 0;
  const auto run = [&](const std::string& method, const json& init, int seed, int iters) {
    json params = {{"max_iter", iters}};
    if (!init.is_null()) params["init"] = init;
    json in = {{"vectors", xs}, {"perplexity", 8}};
    if (method == "snerv") in["labels"] = ls;
    const std::string dir = tmp.path("out" + std::to_string(++n));
    const std::string cfg = tmp.write("c" + std::to_string(n) + ".json",
                                      json({{"method", method},
                                            {"input", in},
                                            {"params", params},
                                            {"seed", seed},
                                            {"output", {{"dir", dir}, {"format", "both"}}},
                                            {"device", "cpu"}})
                                          .dump());
    const auto o = orrery::test::run_orrery("run " + cfg + " --quiet");
    EXPECT_EQ(o.code, 0) << method << " " << init << ": " << o.output;
    std::ifstream rep(dir + "/report.json");
    return std::make_pair(dir, o.code == 0 ? json::parse(rep) : json());
  };
  for (const std::string method : {"nerv", "snerv"}) {
    const bool seeded = method == "snerv";
    const auto [first, r0] = run(method, nullptr, 1, 15);
    const auto [cont, r1] = run(method, first + "/embedding.npy", seeded ? 1 : 2, 15);
    const auto [cont2, r2] = run(method, first + "/embedding.npy", seeded ? 1 : 3, 15);
    const auto [fresh, rf] = run(method, nullptr, 1, 15);
    ASSERT_FALSE(r0.is_null() || r1.is_null() || r2.is_null() || rf.is_null());
    const double ended = r0["result"]["objective"], began = r1["trace"][0];
    EXPECT_LE(began, ended) << method << ": the continued map did not start where the first ended";
    EXPECT_GT(rf["trace"][0].get<double>(), ended) << method;
    EXPECT_EQ(slurp(cont + "/embedding.csv"), slurp(cont2 + "/embedding.csv")) << method;
    for (const char* init : {"spectral", "pca"}) {
      const auto [a, ra] = run(method, init, 1, 40);
      const auto [b, rb] = run(method, init, seeded ? 1 : 2, 40);
      EXPECT_EQ(slurp(a + "/embedding.csv"), slurp(b + "/embedding.csv")) << method << " " << init;
      EXPECT_NE(slurp(a + "/embedding.csv"), slurp(first + "/embedding.csv")) << method << " " << init;
      expect_two_groups(a + "/embedding.csv", 30);
      EXPECT_EQ(ra["params"]["init"], init);
    }
  }
}

// Memory is planned before any large allocation: dense affinities for 200,000 points (about 600 GiB)
// are refused by validate and by run with exit 2, naming the key and the way out; "auto" (the
// default) chooses sparse affinities for them, and dense ones for a small input.
TEST(NeCli, MemoryIsPlannedBeforeTheRun) {
  orrery::test::TempDir tmp;
  std::mt19937_64 rng(3);
  std::normal_distribution<double> z(0.0, 1.0);
  std::ostringstream big;
  for (int i = 0; i < 200000; ++i) big << z(rng) << ',' << z(rng) << '\n';
  const std::string x = tmp.write("big.csv", big.str());
  auto config = [&](const std::string& name, const json& input) {
    json in = {{"vectors", x}};
    in.merge_patch(input);
    return tmp.write(name, json({{"method", "hssne"}, {"input", in}, {"output", {{"dir", tmp.path("out")}}},
                                 {"device", "cpu"}})
                               .dump());
  };
  const std::string dense = config("dense.json", {{"affinities", "dense"}});
  for (const char* cmd : {"validate ", "run "}) {
    const auto o = orrery::test::run_orrery(cmd + dense + " --quiet");
    EXPECT_EQ(o.code, 2) << cmd << o.output;
    for (const char* part : {"input.affinities", "GiB", "is available", "\"sparse\""})
      EXPECT_NE(o.output.find(part), std::string::npos) << cmd << part << "\n" << o.output;
  }
  EXPECT_FALSE(fs::exists(tmp.path("out")));
  const auto automatic = orrery::test::run_orrery("validate " + config("auto.json", json::object()));
  EXPECT_EQ(automatic.code, 0) << automatic.output;
  EXPECT_NE(automatic.output.find("200000 points"), std::string::npos) << automatic.output;
  EXPECT_NE(automatic.output.find("sparse (auto) affinities"), std::string::npos) << automatic.output;

  const std::string small = tmp.write("small.csv", big.str().substr(0, big.str().find('\n', 0) + 1) + "1,2\n2,1\n3,3\n0.5,4\n4,0.5\n");
  const auto s = orrery::test::run_orrery(
      "run " + tmp.write("s.json", json({{"method", "hssne"}, {"input", {{"vectors", small}, {"perplexity", 2}}},
                                         {"params", {{"max_iter", 5}}}, {"output", {{"dir", tmp.path("small_out")}}},
                                         {"device", "cpu"}})
                                       .dump()) +
      " --quiet");
  ASSERT_EQ(s.code, 0) << s.output;
  std::ifstream in(tmp.path("small_out/report.json"));
  const json r = json::parse(in);
  EXPECT_EQ(r["input"]["affinities"], "dense");
  EXPECT_EQ(r["input"]["affinities_requested"], "auto");
  EXPECT_GT(r["memory"]["host_peak_bytes"].get<double>(), 0.0);
  EXPECT_GT(r["memory"]["host_available_bytes"].get<double>(), r["memory"]["host_peak_bytes"].get<double>());
}

// A value of the wrong enum, or an integer that would wrap, is named with its key and range.
TEST(NeCli, EnumsAndIntegersAreCheckedBeforeUse) {
  orrery::test::TempDir tmp;
  const std::string x = tmp.write("x.csv", "0,0\n1,0\n0,1\n2,2\n3,1\n");
  auto run = [&](const json& input, const json& params) {
    json in = {{"vectors", x}, {"perplexity", 2}};
    in.merge_patch(input);
    return orrery::test::run_orrery(
        "validate " + tmp.write("c.json", json({{"method", "hssne"}, {"input", in}, {"params", params},
                                                {"output", {{"dir", tmp.path("out")}}}})
                                              .dump()));
  };
  auto o = run(json::object(), {{"optimizer", "newton"}});
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("params.optimizer: expected one of auto | fixed_point | gradient, found \"newton\""),
            std::string::npos) << o.output;
  o = run({{"pca", 4294967298LL}}, json::object());
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("input.pca"), std::string::npos) << o.output;
  o = run({{"cv_folds", 4294967296LL}}, json::object());
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("input.cv_folds"), std::string::npos) << o.output;
  o = run({{"affinities", "sparse"}, {"class_names", "names.txt"}}, json::object());
  EXPECT_EQ(o.code, 2) << "a missing class-name file is read by validate";
  EXPECT_NE(o.output.find("names.txt"), std::string::npos) << o.output;
}
