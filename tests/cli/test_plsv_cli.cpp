// PLSV end to end: configs/plsv_debian.json on a generated text corpus of short labelled
// documents (topics recovered as word groups, labels separated in the map), fold-in of the same
// documents into the saved model, and bad input named with exit code 2 and no output left.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/cli_runner.hpp"
#include "common/temp_dir.hpp"
#include "io/readers.hpp"
#include "orrery/plsv.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;
using orrery::test::run_orrery;

namespace {

// Word id -> a lower-case token the tokenizer keeps ("qa", "qb", ... "qbaa"): letters only.
std::string token(int w) {
  std::string s = "q";
  do {
    s += static_cast<char>('a' + w % 26);
    w /= 26;
  } while (w > 0);
  return s + "x";
}

// Documents from PLSV's model with 4 topics; each document's label is its most probable planted
// topic, written as text lines with a parallel labels file.
void write_corpus(const fs::path& dir, int docs, unsigned long long seed) {
  const auto planted = orrery::sample_plsv_corpus(docs, 120, 4, 2, 40, seed, 3.0, 1.5, 0.05);
  const orrery::MatrixD P = orrery::plsv_topic_proportions(planted.doc_coords, planted.model.topic_coords);
  std::ofstream text(dir / "docs.txt"), labels(dir / "labels.txt");
  const auto& c = planted.corpus;
  for (orrery::index_t n = 0; n < c.num_docs(); ++n) {
    for (orrery::index_t i = c.row_ptr[n]; i < c.row_ptr[n + 1]; ++i)
      for (int k = 0; k < static_cast<int>(c.count[i]); ++k) text << token(c.word[i]) << ' ';
    text << "\n";
    int best = 0;
    for (int z = 1; z < 4; ++z)
      if (P(n, z) > P(n, best)) best = z;
    labels << "topic" << static_cast<char>('a' + best) << "\n";
  }
}

std::string config(const fs::path& dir, const json& patch) {
  std::ifstream in(fs::path(ORRERY_SOURCE_DIR) / "configs" / "plsv_debian.json");
  json j = json::parse(in);
  j["input"]["corpus"] = (dir / "docs.txt").string();
  j["input"]["labels"] = (dir / "labels.txt").string();
  j["input"]["text"]["min_df"] = 1;
  j["params"]["topics"] = 4;
  j["output"]["dir"] = (dir / "out").string();
  j["device"] = "cpu";
  j.merge_patch(patch);
  const fs::path p = dir / ("run" + std::to_string(std::hash<std::string>()(patch.dump())) + ".json");
  std::ofstream(p) << j.dump(2);
  return p.string();
}

json read_json(const fs::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}

}  // namespace

TEST(PlsvCli, ConfigFitsShortDocumentsThenFoldsThemIn) {
  orrery::test::TempDir tmp;
  write_corpus(tmp.dir(), 600, 5);
  const auto fit = run_orrery("run " + config(tmp.dir(), json::object()) + " --quiet");
  ASSERT_EQ(fit.code, 0) << fit.output;
  const fs::path out = tmp.dir() / "out";
  for (const char* f : {"documents.npy", "topics.npy", "theta.npy", "vocab.txt", "report.json", "map.svg"})
    EXPECT_TRUE(fs::exists(out / f)) << f;
  const json rep = read_json(out / "report.json");
  EXPECT_FALSE(rep["result"]["collapsed"].get<bool>());
  EXPECT_GT(rep["quality"]["knn_accuracy_5"].get<double>(), 0.8) << rep["quality"].dump();
  ASSERT_EQ(rep["topics"].size(), 4u);
  EXPECT_EQ(rep["topics"][0]["top_words"].size(), 10u);
  const auto trace = rep["trace"];
  for (size_t i = 1; i < trace.size(); ++i)
    EXPECT_GE(trace[i]["log_posterior"].get<double>(),
              trace[i - 1]["log_posterior"].get<double>() - 1e-9 * std::abs(trace[i]["log_posterior"].get<double>()));
  const std::string svg = [&] {
    std::ifstream in(out / "map.svg");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }();
  EXPECT_NE(svg.find(rep["topics"][0]["top_words"][0]["word"].get<std::string>()), std::string::npos)
      << "topics are labelled by their top words";

  // Fold-in of the training documents into the saved model lands near their fitted coordinates.
  fs::rename(out, tmp.dir() / "model");
  const auto fold = run_orrery(
      "run " + config(tmp.dir(), {{"input", {{"model", (tmp.dir() / "model").string()}}}}) + " --quiet");
  ASSERT_EQ(fold.code, 0) << fold.output;
  const orrery::MatrixD a = orrery::io::read_matrix((tmp.dir() / "model" / "documents.npy").string());
  const orrery::MatrixD b = orrery::io::read_matrix((out / "documents.npy").string());
  ASSERT_EQ(a.data.size(), b.data.size());
  size_t near = 0;
  for (orrery::index_t n = 0; n < a.rows; ++n)
    near += std::hypot(a(n, 0) - b(n, 0), a(n, 1) - b(n, 1)) < 0.1;
  EXPECT_GT(near, static_cast<size_t>(0.9 * a.rows)) << "documents within 0.1 of their fitted position";
  EXPECT_FALSE(fs::exists(out / "theta.npy")) << "fold-in leaves the model as it is";
}

TEST(PlsvCli, BadInputIsNamedWithExitTwoAndNoOutput) {
  orrery::test::TempDir tmp;
  write_corpus(tmp.dir(), 50, 7);
  auto expect = [&](const json& patch, const std::vector<std::string>& fragments) {
    const auto o = run_orrery("run " + config(tmp.dir(), patch) + " --quiet");
    EXPECT_EQ(o.code, 2) << o.output;
    for (const auto& f : fragments) EXPECT_NE(o.output.find(f), std::string::npos) << f << " in " << o.output;
    EXPECT_FALSE(fs::exists(tmp.dir() / "out"));
  };
  expect({{"params", {{"topics", 1}}}}, {"params.topics"});
  expect({{"params", {{"init", "spectral"}}}}, {"params.init"});
  expect({{"input", {{"corpus", (tmp.dir() / "missing.txt").string()}}}}, {"missing.txt"});
  expect({{"input", {{"colour", 1}}}}, {"input", "colour"});
  {
    std::ofstream(tmp.dir() / "bad.svm") << "1 1:2 3:1\n2 2:1.5\n";
    expect({{"input", {{"corpus", (tmp.dir() / "bad.svm").string()}, {"format", "svmlight"}, {"labels", nullptr}}}},
           {"bad.svm", "2", "1.5"});
  }
}
