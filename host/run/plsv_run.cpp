#include "run/plsv_run.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "run/run_common.hpp"
#include "io/corpus.hpp"
#include "io/memory_inputs.hpp"
#include "io/readers.hpp"
#include "io/writers.hpp"
#include "orrery/knn.hpp"
#include "orrery/memory_plan.hpp"
#include "orrery/plsv.hpp"
#include "orrery/quality.hpp"
#include "report/svg_map.hpp"

namespace orrery::pipeline {
namespace {

namespace fs = std::filesystem;
constexpr index_t kQualityMaxDocs = 200000;
constexpr index_t kMaxTopWords = 1000000;  // output.top_words: capped at the vocabulary anyway

}  // namespace

const std::vector<Field<io::TextOptions>>& text_fields() {
  static const std::vector<Field<io::TextOptions>> fields = {
      {"min_df", &io::TextOptions::min_df, "Keep words found in at least this many documents.", 0, 1e12},
      {"max_vocab", &io::TextOptions::max_vocab, "Then keep the most frequent ones; 0 = no limit.", 0, 1e12},
      {"min_token_length", &io::TextOptions::min_token_length, "Shorter tokens are dropped.", 1, 1000},
      {"stop_words", &io::TextOptions::stop_words, "Drop the built-in English stop words."},
  };
  return fields;
}

const std::vector<Field<PlsvInputSpec>>& plsv_input_fields() {
  static const std::vector<Field<PlsvInputSpec>> fields = {
      {"corpus", &PlsvInputSpec::corpus,
       "The corpus: a UCI docword file, SVMlight, Matrix Market counts, a text file (a document per line) or a "
       "directory of text files (.gz read too). Required."},
      {"format", &PlsvInputSpec::format,
       "auto: a directory is text, *.mtx mtx, docword* uci, *.svm/*.svmlight/*.libsvm svmlight, other files text."},
      {"vocab", &PlsvInputSpec::vocab, "uci, svmlight, mtx: the word list, one word per line."},
      {"labels", &PlsvInputSpec::labels, "One label per input document (numbers, or names): colours and k-NN accuracy."},
      {"ids_from_zero", &PlsvInputSpec::ids_from_zero, "svmlight: word ids start at 0 instead of 1."},
      {"text", sub_table(&PlsvInputSpec::text, "text", &text_fields), "text: the tokenizer and vocabulary pruning."},
      {"model", &PlsvInputSpec::model,
       "Fold-in: the output directory of a plsv run (topics.npy, theta.npy, vocab.txt); the documents are placed "
       "with that model fixed."},
  };
  return fields;
}

namespace {

struct PlsvRunInput {
  PlsvInputSpec input;
  io::CorpusSpec spec;
  PlsvParams params;
  int top_words = 10;
};

PlsvRunInput read_input(const RunConfig& run) {
  PlsvRunInput r;
  read_fields(run.input, r.input, plsv_input_fields(), "input");
  const PlsvInputSpec& in = r.input;
  if (in.corpus.empty()) input_error("input.corpus: required (a docword/svmlight/mtx file, a text file or a directory)");
  r.spec.path = in.corpus;
  r.spec.format = in.format;
  r.spec.vocab = in.vocab;
  r.spec.labels = in.labels;
  r.spec.ids_from_zero = in.ids_from_zero;
  r.spec.text = in.text;
  read_fields(run.params, r.params, plsv_fields(), "params");
  check_keys(run.output_extra, "output", {"dir", "format", "svg", "html", "top_words"});
  r.top_words = static_cast<int>(get_count(run.output_extra, "top_words", "output", 10, 0, kMaxTopWords));
  return r;
}

struct Loaded {
  Corpus corpus;
  PlsvModel model;  // fold-in only
  double seconds_read = 0.0;
};

// The corpus readers open up to three files and a fold-in up to three more: an input error about one
// of them names the key that points to it ("input.vocab: cannot open 'v.txt'"). The vocabulary and
// labels are tried first, as their paths may hold the corpus's (a directory) as a prefix.
template <class F>
auto naming_keys(const PlsvInputSpec& in, F&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const Error& e) {
    const std::string m = e.what();
    if (e.kind() == ErrorKind::input)
      for (const auto& [key, path] : {std::pair<std::string, std::string>{"input.vocab", in.vocab},
                                      {"input.labels", in.labels}, {"input.model", in.model},
                                      {"input.corpus", in.corpus}})
        if (!path.empty() && m.find(path) != std::string::npos) {
          if (m.compare(0, key.size(), key) == 0) throw;
          input_error(key + ": " + m);
        }
    throw;
  }
}

Loaded load_files(const PlsvRunInput& in) {
  const auto t0 = Clock::now();
  Loaded L;
  if (in.input.model.empty()) {
    L.corpus = io::read_corpus(in.spec);
  } else {
    const fs::path dir(in.input.model);
    L.model.topic_coords = io::read_matrix((dir / "topics.npy").string());
    L.model.theta = io::read_matrix((dir / "theta.npy").string());
    const fs::path vocab = dir / "vocab.txt";
    if (io::input_exists(vocab.string())) {  // the model may be a memory scope's (io/memory_inputs.hpp)
      L.corpus = io::read_corpus_with_vocab(in.spec, io::read_names(vocab.string()));
    } else {
      std::vector<std::string> ids(static_cast<size_t>(L.model.theta.cols));
      for (size_t w = 0; w < ids.size(); ++w) ids[w] = std::to_string(w);
      L.corpus = io::read_corpus_with_vocab(in.spec, ids);
      L.corpus.vocab.clear();
    }
    if (L.model.topic_coords.cols != 2 && L.model.topic_coords.cols != 3)
      input_error((dir / "topics.npy").string() + ": expected Z x 2 or Z x 3 topic coordinates, found " +
                  std::to_string(L.model.topic_coords.rows) + " x " + std::to_string(L.model.topic_coords.cols));
    if (L.model.theta.rows != L.model.topic_coords.rows)
      input_error((dir / "theta.npy").string() + ": " + std::to_string(L.model.theta.rows) + " rows, but topics.npy has " +
                  std::to_string(L.model.topic_coords.rows) + " topics");
    for (index_t z = 0; z < L.model.theta.rows; ++z)
      for (index_t w = 0; w < L.model.theta.cols; ++w)
        if (!(L.model.theta(z, w) > 0))
          input_error((dir / "theta.npy").string() + ": row " + std::to_string(z + 1) + ", column " +
                      std::to_string(w + 1) + ": expected a probability > 0, found " +
                      std::to_string(L.model.theta(z, w)));
  }
  L.seconds_read = seconds_since(t0);
  return L;
}

Loaded load(const PlsvRunInput& in) {
  return naming_keys(in.input, [&] { return load_files(in); });
}

// The run's memory plan, checked against what the backend has (an input error when short). When
// the vocabulary's arrays are what does not fit, the message says what set W: a sparse file's
// largest word id (2e9 in a file of a few words asks for tens of GiB), a header, the model's.
MemoryPlan check_plan(const PlsvRunInput& in, const Loaded& L, int topics, const Backend& backend,
                      const RunConfig& run) {
  const MemoryInfo mem = backend.memory();
  const bool device = mem.device_bytes > 0;
  const bool extrapolation = in.input.model.empty() && in.params.extrapolation == PlsvExtrapolation::squarem;
  const MemoryPlan plan =
      plan_plsv(L.corpus.num_docs(), L.corpus.num_words, topics, L.corpus.nnz(), device, extrapolation);
  try {
    check_rank_memory(plan, mem, device, run);
  } catch (const Error& e) {
    const std::string m = e.what();
    if (e.kind() != ErrorKind::input || m.compare(0, 13, "input.corpus:") != 0) throw;
    const std::string origin = in.input.model.empty()
                                   ? io::vocabulary_origin(in.spec, L.corpus)
                                   : "the vocabulary of input.model " + in.input.model + " (" +
                                         std::to_string(L.corpus.num_words) + " words)";
    input_error(m + "; W = " + std::to_string(L.corpus.num_words) + " words, set by " + origin);
  }
  return plan;
}

std::string word_name(const Corpus& c, int w) { return c.vocab.empty() ? "#" + std::to_string(w) : c.vocab[static_cast<size_t>(w)]; }

// Everything a run checks before it fits (keys, corpus or model, memory plan): `orrery validate`
// is this and nothing more.
struct PlsvPrepared {
  PlsvRunInput in;
  Loaded L;
  std::unique_ptr<Backend> backend;
  int topics = 0;
  MemoryPlan plan;
};

PlsvPrepared prepare_plsv(const RunConfig& run) {
  PlsvPrepared p;
  p.in = read_input(run);
  p.L = load(p.in);
  p.backend = make_backend(run.device, run.threads, run_comm(run));
  p.topics = p.in.input.model.empty() ? p.in.params.topics : static_cast<int>(p.L.model.topic_coords.rows);
  p.plan = check_plan(p.in, p.L, p.topics, *p.backend, run);
  return p;
}

}  // namespace

PlsvRunSetup read_plsv_setup(const RunConfig& run) {
  const PlsvRunInput in = read_input(run);
  Loaded L = load(in);
  return {std::move(L.corpus), in.params, in.input.model};
}

std::string validate_plsv(const RunConfig& run) {
  const PlsvPrepared p = prepare_plsv(run);
  const Corpus& c = p.L.corpus;
  return std::string(p.in.input.model.empty() ? "plsv" : "plsv fold-in") + ", " + std::to_string(c.num_docs()) +
         " documents, " + std::to_string(c.num_words) + " words, " + std::to_string(c.nnz()) +
         " nonzeros, Z = " + std::to_string(p.topics) +
         (c.skipped_empty ? ", " + std::to_string(c.skipped_empty) + " empty documents skipped" : "") +
         ", planned peak " + format_bytes(p.plan.host_peak()) + " host" +
         (p.plan.device_peak() > 0 ? " + " + format_bytes(p.plan.device_peak()) + " GPU" : "");
}

json run_plsv(const RunConfig& run, bool quiet, RunControl* control) {
  const auto t0 = Clock::now();
  Comm& comm = run_comm(run);
  // Rank 0 speaks for the run: the others fit their documents and stay silent.
  const bool lead = comm.rank() == 0;
  quiet = quiet || !lead;
  PlsvPrepared prep;
  on_every_rank(run, [&] { prep = prepare_plsv(run); });
  const PlsvRunInput& in = prep.in;
  const Loaded& L = prep.L;
  const Corpus& c = L.corpus;
  const bool fold = !in.input.model.empty();
  const std::unique_ptr<Backend>& backend = prep.backend;
  const int Z = prep.topics;
  const int D = fold ? static_cast<int>(L.model.topic_coords.cols) : in.params.dim;
  if (!quiet)
    progress_line("[plsv] %s%lld documents, %lld words, %lld nonzeros%s; Z = %d, D = %d on %s\n",
                 fold ? "fold-in of " : "", static_cast<long long>(c.num_docs()), static_cast<long long>(c.num_words),
                 static_cast<long long>(c.nnz()),
                 c.skipped_empty ? (" (" + std::to_string(c.skipped_empty) + " empty skipped)").c_str() : "", Z, D,
                 backend->name().c_str());
  double last_print = -1.0;
  auto progress = [&](const PlsvTraceEntry& e) {
    if (quiet || (e.iteration > 0 && e.seconds - last_print < 1.0)) return;
    last_print = e.seconds;
    progress_line("[plsv] iter %4d  log posterior %.10g  log likelihood %.10g  %s\n", e.iteration,
                 e.log_posterior, e.log_likelihood, format_seconds(e.seconds).c_str());
  };
  PlsvResult res;
  fit_on_every_rank(comm, [&] {
    res = fold ? fold_in_plsv(*backend, c, L.model, in.params, progress, control, &comm)
               : fit_plsv(*backend, c, in.params, run.seed, progress, control, &comm);
  });
  // rank 0 has the whole map and writes it; in process (Python) every rank keeps the map and the
  // report (no files)
  if (!lead && !run.result) return json::object();
  if (!quiet) {
    const auto& e = res.trace.back();
    progress_line("[plsv] stopped: %s after %d iterations, log posterior %.10g, %s\n", res.stop_reason.c_str(),
                 res.iterations, e.log_posterior, format_seconds(res.seconds_fit).c_str());
  }
  if (res.collapsed && lead)
    progress_line(
                 "[plsv] WARNING: the map collapsed: documents carry %.3g nats of topic information on average "
                 "(threshold %.3g); every document has nearly equal topic proportions. Try params.init = "
                 "\"documents\", a smaller params.beta_per_document or params.gamma_per_topic, or fewer topics.\n",
                 res.topic_information, kPlsvCollapseInformation);

  // Top words and quality.
  const auto top = plsv_top_words(res.model.theta, in.top_words);
  json topics = json::array();
  std::vector<std::string> topic_labels;
  for (int z = 0; z < Z; ++z) {
    json words = json::array();
    std::string label = std::to_string(z) + ":";
    for (size_t j = 0; j < top[static_cast<size_t>(z)].size(); ++j) {
      const int w = top[static_cast<size_t>(z)][j];
      words.push_back({{"word", word_name(c, w)}, {"p", res.model.theta(z, w)}});
      if (j < 3) label += " " + word_name(c, w);
    }
    topic_labels.push_back(label);
    json coords = json::array();
    for (int d = 0; d < D; ++d) coords.push_back(res.model.topic_coords(z, d));
    topics.push_back({{"topic", z}, {"coords", coords}, {"top_words", words}});
  }
  json quality = json::object();
  quality["topic_information"] = res.topic_information;
  quality["collapsed"] = res.collapsed;
  if (!c.labels.empty() && c.num_docs() > 10 && c.num_docs() <= kQualityMaxDocs) {
    const int kmax = 10;
    const KnnGraph g = exact_knn(res.doc_coords, kmax, run.threads);
    for (int k : {1, 5, 10})
      quality["knn_accuracy_" + std::to_string(k)] = knn_vote_accuracy(g.index, kmax, c.labels, k);
  }

  const auto t_write = Clock::now();
  const fs::path dir(run.output.dir);
  io::OutputSet out;
  json outputs = json::object();
  add_coordinates(out, outputs, run, "documents", res.doc_coords);
  add_coordinates(out, outputs, run, "topics", res.model.topic_coords);
  if (!fold) {
    check_finite_result(run, "theta", res.model.theta);
    out.add((dir / "theta.npy").string(), io::npy_bytes(res.model.theta));
    outputs["theta_npy"] = (dir / "theta.npy").string();
    if (!c.vocab.empty()) {
      std::string v;
      for (const auto& w : c.vocab) v += w + "\n";
      out.add((dir / "vocab.txt").string(), v);
      outputs["vocab"] = (dir / "vocab.txt").string();
    }
  }
  if (c.skipped_empty) {
    std::vector<int> idx(c.doc_index.begin(), c.doc_index.end());
    out.add((dir / "doc_index.npy").string(), io::npy_bytes(idx));
    outputs["doc_index_npy"] = (dir / "doc_index.npy").string();
  }
  if (run.output.svg && D >= 2) {
    report::MapPicture pic;
    pic.objects = res.doc_coords;
    if (!c.labels.empty()) {
      pic.colour_index = c.labels;
      int max_label = 0;
      for (int l : c.labels) max_label = std::max(max_label, l);
      for (int l = 0; l <= max_label; ++l)
        pic.legend.push_back(static_cast<size_t>(l) < c.label_names.size() ? c.label_names[static_cast<size_t>(l)]
                                                                           : "label " + std::to_string(l));
    }
    pic.classes = res.model.topic_coords;
    pic.class_names = topic_labels;
    pic.title = std::string("PLSV") + (fold ? " fold-in" : "") + ": " + std::to_string(c.num_docs()) + " documents, " +
                std::to_string(Z) + " topics";
    pic.subtitle = std::string(c.labels.empty() ? "documents" : "documents coloured by label") +
                   "; topics labelled by their top words" + (D == 3 ? "; first two of three coordinates" : "") +
                   (res.collapsed ? "; WARNING: collapsed map" : "");
    pic.seed = run.seed;
    out.add((dir / "map.svg").string(), report::render_map_svg(pic));
    outputs["map_svg"] = (dir / "map.svg").string();
  }

  json report = report_header(run, *backend);
  PlsvParams echoed = in.params;
  echoed.topics = Z;
  echoed.dim = D;
  report["params"] = fields_to_json(echoed, plsv_fields());
  report["params"]["beta"] = echoed.beta_per_document * static_cast<double>(c.num_docs());
  report["params"]["gamma"] = echoed.gamma_per_topic * Z;
  report["input"] = {{"corpus", in.spec.path},     {"documents", c.num_docs()}, {"words", c.num_words},
                     {"nonzeros", c.nnz()},        {"skipped_empty_documents", c.skipped_empty},
                     {"labels", !c.labels.empty()}, {"model", in.input.model}};
  json trace = json::array();
  for (const auto& e : res.trace)
    trace.push_back({{"iteration", e.iteration}, {"log_posterior", e.log_posterior},
                     {"log_likelihood", e.log_likelihood}, {"newton_steps", e.newton_steps},
                     {"relocated", e.relocated}, {"seconds", e.seconds}});
  report["result"] = {{"log_posterior", res.log_posterior}, {"stop_reason", res.stop_reason},
                      {"iterations", res.iterations},       {"collapsed", res.collapsed},
                      {"topic_information", res.topic_information},
                      {"extrapolation", {{"jumps", res.jumps}, {"kept", res.jumps_kept}}}};
  report["topics"] = topics;
  report["trace"] = trace;
  report["quality"] = quality;
  report["outputs"] = outputs;
  report["outputs"]["report"] = (dir / "report.json").string();
  report["comm"]["rows"] = res.rank_documents;
  report["comm"]["fit_seconds"] = res.rank_seconds_fit;
  report["timings"] = {{"read", L.seconds_read},   {"init", res.seconds_init}, {"fit", res.seconds_fit},
                       {"write", seconds_since(t_write)}, {"total", seconds_since(t0)}};
  commit_run(out, report, run);
  if (!quiet) {
    for (int z = 0; z < std::min(Z, 10); ++z) progress_line("[plsv] topic %s\n", topic_labels[static_cast<size_t>(z)].c_str());
    if (Z > 10) progress_line("[plsv] ... %d more topics in report.json\n", Z - 10);
    progress_line("[plsv] wrote %s (documents, topics%s, report.json%s)\n", run.output.dir.c_str(),
                 fold ? "" : ", theta", run.output.svg ? ", map.svg" : "");
  }
  return report;
}

}  // namespace orrery::pipeline
