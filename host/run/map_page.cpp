#include "run/map_page.hpp"

#include "run/methods.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numeric>

#include "run/ne_config.hpp"
#include "run/pe_config.hpp"
#include "run/plsv_run.hpp"
#include "run/run_common.hpp"
#include "io/memory_inputs.hpp"
#include "io/readers.hpp"
#include "orrery/error.hpp"
#include "orrery/math/pe.hpp"
#include "orrery/math/plsv.hpp"

namespace orrery::pipeline {
namespace {

namespace fs = std::filesystem;

constexpr int kTopMarkers = 3;    // classes or topics listed per point in its tooltip
constexpr int kDocumentWords = 8;  // a document's most frequent words in its tooltip

MatrixD read_coordinates(const OutputPath& output, const std::string& name) {
  for (const char* ext : {".npy", ".csv"}) {
    const std::string p = output(name + ext);
    if (p.empty()) continue;
    MatrixD M = io::read_matrix(p);
    if (M.cols != 2 && M.cols != 3)
      input_error(p + ": expected N x 2 or N x 3 coordinates, found " + std::to_string(M.rows) + " x " +
                  std::to_string(M.cols));
    return M;
  }
  input_error("the run's directory has no " + name + ".npy or " + name + ".csv (its map's coordinates)");
}

// PE's objects and classes, PLSV's documents and topics: of one dimension.
void read_points_and_markers(report::MapPage& page, const OutputPath& output, const std::string& points,
                             const std::string& markers) {
  page.points = read_coordinates(output, points);
  page.markers = read_coordinates(output, markers);
  if (page.markers.cols != page.points.cols)
    input_error(markers + " and " + points + " of the run differ in dimension (" + std::to_string(page.markers.cols) +
                " and " + std::to_string(page.points.cols) + ")");
}

// Runs f, which reads one of the run's inputs; an input error (a file moved or deleted since the run)
// becomes a warning and the page goes without what f would have added.
template <class F>
void optional_input(std::vector<std::string>* warnings, const std::string& what, F&& f) {
  try {
    f();
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::input) throw;
    if (warnings) warnings->push_back(what + " left out: " + e.what());
  }
}

// T, C and LCMC against K from the report's quality measures (the curve when there is one), or null.
json quality_series(const json& report) {
  if (!report.contains("quality") || !report["quality"].is_object()) return nullptr;
  const json* q = &report["quality"];
  if (!q->contains("at_k") && q->contains("map_vs_posteriors") && (*q)["map_vs_posteriors"].is_object())
    q = &(*q)["map_vs_posteriors"];
  const json* rows = nullptr;
  if (q->contains("curve") && (*q)["curve"].is_array() && !(*q)["curve"].empty()) rows = &(*q)["curve"];
  else if (q->contains("at_k") && (*q)["at_k"].is_array() && !(*q)["at_k"].empty()) rows = &(*q)["at_k"];
  if (!rows) return nullptr;
  json out = {{"k", json::array()}, {"trustworthiness", json::array()}, {"continuity", json::array()},
              {"lcmc", json::array()}};
  for (const json& r : *rows) {
    if (!r.is_object() || !r.contains("k")) continue;
    for (const char* key : {"k", "trustworthiness", "continuity", "lcmc"})
      out[key].push_back(r.contains(key) && r[key].is_number() ? r[key] : json(nullptr));
  }
  return out;
}

// Each point's m most probable of the K columns of P (rows of probabilities), descending; ties keep
// the lower index first.
void set_top(report::MapPage& page, const MatrixD& P) {
  const index_t n = P.rows, K = P.cols;
  const int m = static_cast<int>(std::min<index_t>(kTopMarkers, K));
  page.top_m = m;
  page.top_index.resize(static_cast<size_t>(n) * static_cast<size_t>(m));
  page.top_prob.resize(page.top_index.size());
  std::vector<int> order(static_cast<size_t>(K));
  for (index_t i = 0; i < n; ++i) {
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + m, order.end(), [&](int a, int b) {
      return P(i, a) > P(i, b) || (P(i, a) == P(i, b) && a < b);
    });
    for (int j = 0; j < m; ++j) {
      const size_t at = static_cast<size_t>(i) * static_cast<size_t>(m) + static_cast<size_t>(j);
      page.top_index[at] = static_cast<std::uint16_t>(order[static_cast<size_t>(j)]);
      page.top_prob[at] = static_cast<float>(P(i, order[static_cast<size_t>(j)]));
    }
  }
}

// The map's own posteriors of each point over the markers: PE's q(c|y) with the run's priors (the q
// of math::pe_object_eval; P does not enter it) or, without priors, PLSV's P(z|x)
// (math::plsv_topic_proportions).
template <int D>
MatrixD map_posteriors(const MatrixD& Y, const MatrixD& phi, const std::vector<double>* priors) {
  const index_t n = Y.rows;
  const int K = static_cast<int>(phi.rows);
  MatrixD P(n, K);
  std::vector<double> lp(static_cast<size_t>(K), 0.0), zeros(static_cast<size_t>(K), 0.0);
  if (priors && !priors->empty())
    for (int k = 0; k < K; ++k) lp[static_cast<size_t>(k)] = std::log((*priors)[static_cast<size_t>(k)]);
  for (index_t i = 0; i < n; ++i) {
    const double* y = &Y.data[static_cast<size_t>(i * D)];
    double* q = &P.data[static_cast<size_t>(i * K)];
    if (priors) math::pe_object_eval<double, D>(zeros.data(), lp.data(), phi.data.data(), K, y, 0.0, nullptr, nullptr, nullptr, q);
    else math::plsv_topic_proportions<double, D>(y, phi.data.data(), K, q);
  }
  return P;
}

MatrixD map_posteriors(const MatrixD& Y, const MatrixD& phi, const std::vector<double>* priors) {
  return Y.cols == 2 ? map_posteriors<2>(Y, phi, priors) : map_posteriors<3>(Y, phi, priors);
}

std::vector<int> argmax_groups(const report::MapPage& page) {
  std::vector<int> g(static_cast<size_t>(page.points.rows));
  for (size_t i = 0; i < g.size(); ++i) g[i] = page.top_index[i * static_cast<size_t>(page.top_m)];
  return g;
}

}  // namespace

void ne_page(report::MapPage& page, const RunConfig& run, const json& report, const OutputPath& output,
             std::vector<std::string>* warnings) {
  const NeRunConfig cfg = read_ne_config(run);
  const NeInputSpec& in = cfg.input;
  page.points = read_coordinates(output, "embedding");
  const index_t n = page.points.rows;
  const std::string source = ne_input_source(in);
  const bool hssne = cfg.method == NeMethod::hssne;
  page.title = std::string(ne_method_title(cfg.method)) +
               (in.model.empty() ? "" : " placement") + ": " + thousands(n) + " points";
  const json& params = report.value("params", json::object());
  if (hssne && params.contains("alpha")) page.subtitle = "alpha " + detail::number_text(params["alpha"].get<double>());
  if (!hssne && params.contains("lambda")) page.subtitle = "lambda " + detail::number_text(params["lambda"].get<double>());
  if (!in.labels.empty())
    optional_input(warnings, "labels (" + in.labels + ")", [&] {
      NeLabels L = read_ne_labels(in, n, source);
      page.group = std::move(L.labels);
      page.groups = std::move(L.legend);
      page.colour_by = "label";
    });
  if (!in.names.empty())
    optional_input(warnings, "names (" + in.names + ")",
                   [&] { page.names = read_point_names(in.names, n, in.limit, "input.names", source); });
}

void pe_page(report::MapPage& page, const RunConfig& run, const json& report, const OutputPath& output,
             std::vector<std::string>* warnings) {
  const PeRunConfig cfg = read_pe_config(run);
  read_points_and_markers(page, output, "objects", "classes");
  const index_t n = page.points.rows, K = page.markers.rows;
  page.title = "Parametric Embedding: " + thousands(n) + " objects, " + std::to_string(K) + " classes";
  page.marker_kind = "class";
  const json& echoed = report.value("input", json::object());
  if (echoed.contains("class_names") && echoed["class_names"].is_array() &&
      echoed["class_names"].size() == static_cast<size_t>(K))
    for (const json& c : echoed["class_names"]) page.marker_names.push_back(c.is_string() ? c.get<std::string>() : c.dump());
  else
    for (index_t k = 0; k < K; ++k) page.marker_names.push_back("class " + std::to_string(k));
  MatrixD posteriors;
  std::vector<double> priors;
  std::vector<int> labels;
  optional_input(warnings, "the run's inputs (" + (cfg.input.posteriors.empty() ? cfg.input.vectors : cfg.input.posteriors) + ")",
                 [&] {
                   PeRunData data = load_pe_data(cfg);
                   if (data.objects != n || data.classes != K)
                     input_error("the inputs give " + std::to_string(data.objects) + " objects and " +
                                 std::to_string(data.classes) + " classes, the run's map " + std::to_string(n) + " and " +
                                 std::to_string(K));
                   posteriors = std::move(data.pe.posteriors);
                   priors = std::move(data.pe.priors);
                   labels = std::move(data.labels);
                 });
  // The input's p(c|x) where the run read them from a file; the map's p(c|y) otherwise (a fitted
  // posterior model's are not kept), and the subtitle says which.
  const bool from_input = posteriors.rows == n && posteriors.cols == K;
  set_top(page, from_input ? posteriors : map_posteriors(page.points, page.markers, &priors));
  page.subtitle = from_input ? "tooltips: the input's p(c|x)" : "tooltips: the map's p(c|y)";
  if (!labels.empty()) {
    page.group = labels;
    page.groups = page.marker_names;
    page.colour_by = "label";
  } else {
    page.group = argmax_groups(page);
    page.groups = page.marker_names;
    page.colour_by = from_input ? "arg-max class" : "the map's arg-max class";
  }
  if (!cfg.input.names.empty())
    optional_input(warnings, "names (" + cfg.input.names + ")", [&] {
      page.names = read_point_names(cfg.input.names, n, cfg.input.limit, "input.names", cfg.input.names);
    });
}

void plsv_page(report::MapPage& page, const RunConfig& run, const json& report, const OutputPath& output,
               std::vector<std::string>* warnings) {
  read_points_and_markers(page, output, "documents", "topics");
  const index_t n = page.points.rows, Z = page.markers.rows;
  page.title = "PLSV: " + thousands(n) + " documents, " + std::to_string(Z) + " topics";
  page.marker_kind = "topic";
  // the topics' top words from the report (a fold-in's report has none: the model's run has them)
  const json topics = report.value("topics", json::array());
  for (index_t z = 0; z < Z; ++z) {
    std::vector<std::string> words;
    if (topics.is_array() && static_cast<size_t>(z) < topics.size() && topics[static_cast<size_t>(z)].contains("top_words"))
      for (const json& w : topics[static_cast<size_t>(z)]["top_words"])
        if (w.contains("word") && w["word"].is_string()) words.push_back(w["word"].get<std::string>());
    page.marker_names.push_back("topic " + std::to_string(z));  // its words are drawn beneath it
    page.marker_words.push_back(std::move(words));
  }
  set_top(page, map_posteriors(page.points, page.markers, nullptr));
  page.subtitle = "tooltips: P(z|x) of the map";
  optional_input(warnings, "the corpus", [&] {
    const Corpus c = read_plsv_setup(run).corpus;
    if (c.num_docs() != n)
      input_error("the corpus holds " + std::to_string(c.num_docs()) + " documents, the run's map " + std::to_string(n));
    page.names = c.doc_names;
    page.text.resize(static_cast<size_t>(n));
    for (index_t d = 0; d < n; ++d) {
      std::vector<index_t> e(static_cast<size_t>(c.row_ptr[static_cast<size_t>(d) + 1] - c.row_ptr[static_cast<size_t>(d)]));
      std::iota(e.begin(), e.end(), c.row_ptr[static_cast<size_t>(d)]);
      const size_t m = std::min<size_t>(kDocumentWords, e.size());
      std::partial_sort(e.begin(), e.begin() + static_cast<long>(m), e.end(), [&](index_t a, index_t b) {
        return c.count[static_cast<size_t>(a)] > c.count[static_cast<size_t>(b)] ||
               (c.count[static_cast<size_t>(a)] == c.count[static_cast<size_t>(b)] && a < b);
      });
      std::string& t = page.text[static_cast<size_t>(d)];
      for (size_t j = 0; j < m; ++j) {
        const int w = c.word[static_cast<size_t>(e[j])];
        t += (j ? " " : "") + (c.vocab.empty() ? "word " + std::to_string(w) : c.vocab[static_cast<size_t>(w)]);
      }
    }
    if (!c.labels.empty()) {
      page.group = c.labels;
      int top = -1;
      for (int l : c.labels) top = std::max(top, l);
      for (int l = 0; l <= top; ++l)
        page.groups.push_back(static_cast<size_t>(l) < c.label_names.size() ? c.label_names[static_cast<size_t>(l)]
                                                                            : "label " + std::to_string(l));
      page.colour_by = "label";
    }
  });
  if (page.group.empty()) {
    page.group = argmax_groups(page);
    page.groups = page.marker_names;
    page.colour_by = "dominant topic";
  }
}

report::MapPage map_page_of_run(const RunConfig& run, const json& report, const OutputPath& output,
                                std::vector<std::string>* warnings) {
  report::MapPage page;
  page.method = run.method;
  find_method(run.method)->page(page, run, report, output, warnings);
  if (page.groups.size() > static_cast<size_t>(report::kMaxPageGroups)) {
    if (warnings) warnings->push_back("colours left out: " + std::to_string(page.groups.size()) + " groups, at most " +
                                      std::to_string(report::kMaxPageGroups));
    page.group.clear(), page.groups.clear();
  }
  page.quality = quality_series(report);
  return page;
}

void add_map_html(io::OutputSet& out, json& report, const RunConfig& run) {
  // The outputs already in the set that the page asks for, read through in-memory inputs as the
  // files they will be (only those: a run's model files are not copied).
  io::MemoryInputs mem;
  // A run in process (run.result) hands its coordinates over as arrays, not files: the page reads
  // NAME.npy from them.
  const auto output = [&](const std::string& name) {
    for (const auto& [path, bytes] : out.files())
      if (fs::path(path).filename() == name) return mem.add_bytes(name, bytes);
    const fs::path n(name);
    if (run.result && n.extension() == ".npy") {
      const auto it = run.result->arrays.find(n.stem().string());
      if (it != run.result->arrays.end()) return mem.add_bytes(name, io::npy_bytes(it->second));
    }
    return std::string();
  };
  std::vector<std::string> warnings;
  const report::MapPage page = map_page_of_run(run, report, output, &warnings);
  for (const auto& w : warnings) progress_line("[%s] map.html: %s\n", run.method.c_str(), w.c_str());
  const std::string p = (fs::path(run.output.dir) / "map.html").string();
  out.add(p, report::render_map_html(page));
  report["outputs"]["map_html"] = p;
}

}  // namespace orrery::pipeline
