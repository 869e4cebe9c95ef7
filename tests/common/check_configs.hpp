// Small `orrery check` configurations of every family, self-contained: their data is generated into
// the test's own temporary directory (no file of the source tree is read, so a test binary copied to
// another machine runs them too). pe; hssne with sparse, dense and interpolated (grid) repulsion;
// nerv on sparse rows, exact and truncated (approximate pairs); snerv; plsv.
#pragma once
#include <cmath>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/temp_dir.hpp"
#include "orrery/plsv.hpp"

namespace orrery::test {

using CheckConfigs = std::vector<std::pair<std::string, nlohmann::json>>;

// n labelled vectors in three blobs (x.csv, y.csv); returns x.csv's path.
inline std::string write_blobs(const TempDir& tmp, int n) {
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

// n posteriors over k classes (softmax of seeded Gaussian scores, a class favoured per object) and
// their labels; returns the posteriors' path.
inline std::string write_posteriors(const TempDir& tmp, int n, int k) {
  std::mt19937_64 rng(6);
  std::normal_distribution<double> z(0.0, 1.0);
  std::ostringstream p, y;
  for (int c = 0; c < k; ++c) p << (c ? ",p" : "p") << c;
  p << "\n";
  p.precision(17);
  for (int i = 0; i < n; ++i) {
    std::vector<double> e(static_cast<size_t>(k));
    double total = 0.0;
    for (int c = 0; c < k; ++c) total += (e[static_cast<size_t>(c)] = std::exp(z(rng) + (c == i % k ? 2.5 : 0.0)));
    for (int c = 0; c < k; ++c) p << (c ? "," : "") << e[static_cast<size_t>(c)] / total;
    p << "\n";
    y << i % k << "\n";
  }
  tmp.write("pe_labels.csv", y.str());
  return tmp.write("posteriors.csv", p.str());
}

// A count corpus drawn from PLSV's own model (Matrix Market); returns its path.
inline std::string write_corpus(const TempDir& tmp) {
  const auto planted = sample_plsv_corpus(80, 60, 4, 2, 30, 3);
  std::ostringstream mtx;
  mtx << "%%MatrixMarket matrix coordinate integer general\n"
      << planted.corpus.num_docs() << " " << planted.corpus.num_words << " " << planted.corpus.nnz() << "\n";
  for (index_t n = 0; n < planted.corpus.num_docs(); ++n)
    for (auto i = planted.corpus.row_ptr[static_cast<size_t>(n)]; i < planted.corpus.row_ptr[static_cast<size_t>(n) + 1]; ++i)
      mtx << n + 1 << " " << planted.corpus.word[static_cast<size_t>(i)] + 1 << " "
          << planted.corpus.count[static_cast<size_t>(i)] << "\n";
  return tmp.write("c.mtx", mtx.str());
}

// One config per family and variant, each writing its outputs under tmp/<name>.
inline CheckConfigs check_configs(const TempDir& tmp) {
  using json = nlohmann::json;
  const std::string x = write_blobs(tmp, 240), y = tmp.path("y.csv");
  const json v = {{"vectors", x}, {"perplexity", 10}};
  json dense = v, sparse = v;
  dense["affinities"] = "dense";
  sparse["affinities"] = "sparse";
  CheckConfigs configs = {
      {"pe",
       {{"method", "pe"},
        {"input", {{"posteriors", write_posteriors(tmp, 200, 4)}, {"labels", tmp.path("pe_labels.csv")}}},
        {"params", {{"dim", 2}}}}},
      {"hssne", {{"method", "hssne"}, {"input", v}}},
      {"hssne_dense", {{"method", "hssne"}, {"input", dense}}},
      {"hssne_grid", {{"method", "hssne"}, {"input", v}, {"params", {{"repulsion", "interpolated"}}}}},
      {"nerv", {{"method", "nerv"}, {"input", sparse}}},
      {"nerv_truncated", {{"method", "nerv"}, {"input", sparse}, {"params", {{"pairs", "approximate"}}}}},
      {"snerv",
       {{"method", "snerv"},
        {"input", {{"vectors", x}, {"labels", y}, {"metric", {{"components", 6}, {"width", 2.0}}}}}}},
      {"plsv", {{"method", "plsv"}, {"input", {{"corpus", write_corpus(tmp)}}}, {"params", {{"topics", 4}}}}},
  };
  for (auto& [name, j] : configs) j["output"] = {{"dir", tmp.path(name)}};
  return configs;
}

// Every output of every primitive in a check report agrees and compares something; returns how many
// outputs there were.
inline size_t expect_all_agree(const nlohmann::json& r) {
  EXPECT_TRUE(r["agrees"].get<bool>()) << r.dump(1);
  size_t outputs = 0;
  for (const auto& d : r["devices"]) {
    if (d.contains("guard_violation")) {
      EXPECT_EQ(d["guard_violation"].get<std::string>(), "") << d["device"];
    }
    for (const auto& g : d["checks"])
      for (const auto& o : g["outputs"]) {
        ++outputs;
        EXPECT_TRUE(o["agrees"].get<bool>()) << o["detail"];
        EXPECT_GT(o["entries"].get<size_t>(), 0u) << o["detail"];
      }
  }
  return outputs;
}

}  // namespace orrery::test
