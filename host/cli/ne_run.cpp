#include "cli/ne_run.hpp"

#include <cmath>
#include <cstdio>
#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <random>

#include "cli/evaluate.hpp"
#include "cli/run_common.hpp"
#include "io/readers.hpp"
#include "io/writers.hpp"
#include "orrery/affinity.hpp"
#include "orrery/error.hpp"
#include "orrery/hssne.hpp"
#include "orrery/knn.hpp"
#include "orrery/nerv.hpp"
#include "orrery/pca.hpp"
#include "orrery/quality.hpp"
#include "orrery/snerv.hpp"
#include "report/svg_map.hpp"

namespace orrery::cli {
namespace {

struct NeInput {
  MatrixD X;
  std::vector<int> labels;
  std::vector<std::string> class_names;
  double perplexity = 30.0;
  bool sparse = false;
  bool distances = false;  // X is an N x N distance matrix
  bool perplexity_given = false;
  int pca = 0;
  int cv_folds = 0;  // k-fold protocol: test labels hidden, 5-NN of test points in the map
  ClassMixtureParams metric;  // snerv: the class-posterior model behind the learning metric
  bool given = false;         // hssne: a precomputed sparse affinity matrix (X is then N x 0)
  SparseAffinity given_P;
};

NeInput load(const RunConfig& run, bool read_files) {
  const json& in = run.input;
  check_keys(in, "input", {"vectors", "distances", "affinity_matrix", "pca", "labels", "class_names", "limit",
                           "perplexity", "affinities", "metric", "cv_folds"});
  const std::string vectors_path = get_path(in, "vectors", "input"), distances_path = get_path(in, "distances", "input"),
                    affinity_path = get_path(in, "affinity_matrix", "input");
  if (vectors_path.empty() + distances_path.empty() + affinity_path.empty() != 2)
    input_error("input: give exactly one of 'vectors' (N x d points: npy, csv/tsv/txt or IDX), 'distances' "
                "(a symmetric N x N distance matrix) or, for hssne, 'affinity_matrix' (a sparse N x N Matrix Market file)");
  const std::string vectors = !vectors_path.empty() ? vectors_path : !distances_path.empty() ? distances_path : affinity_path;
  NeInput d;
  d.given = !affinity_path.empty();
  if (d.given) {
    if (run.method != "hssne") input_error("input.affinity_matrix: only hssne takes precomputed affinities");
    for (const char* k : {"pca", "perplexity", "affinities", "limit"})
      if (in.contains(k)) input_error(std::string("input.") + k + ": does not apply to a precomputed affinity_matrix");
  }
  d.distances = !distances_path.empty();
  d.pca = static_cast<int>(get_count(in, "pca", "input", 0));
  if (d.pca > 0 && d.distances) input_error("input.pca: applies to vectors, not to a distance matrix");
  if (in.contains("perplexity")) {
    if (!in["perplexity"].is_number() || !(in["perplexity"].get<double>() > 1.0))
      input_error("input.perplexity: expected a number > 1, found " + in["perplexity"].dump());
    d.perplexity = in["perplexity"].get<double>();
    d.perplexity_given = true;
  }
  d.cv_folds = static_cast<int>(get_count(in, "cv_folds", "input", 0));
  if (d.cv_folds > 0 && get_path(in, "labels", "input").empty()) input_error("input.cv_folds: needs input.labels");
  if (d.cv_folds == 1) input_error("input.cv_folds: expected 0 (off) or at least 2 folds");
  if (in.contains("metric")) {
    if (run.method != "snerv") input_error("input.metric: applies to method snerv only");
    read_fields(in["metric"], d.metric, class_mixture_fields(), "input.metric");
  }
  d.sparse = run.method == "snerv";  // snerv: sparse unless asked otherwise
  if (in.contains("affinities")) {
    const json& a = in["affinities"];
    if (!a.is_string() || (a != "dense" && a != "sparse"))
      input_error("input.affinities: expected dense | sparse, found " + a.dump());
    d.sparse = a == "sparse";
    if (d.sparse && !distances_path.empty())
      input_error("input.affinities: sparse affinities need vectors (their neighbour search), not distances");

  }
  if (in.contains("class_names")) {
    if (!in["class_names"].is_array()) input_error("input.class_names: expected a list of strings");
    for (const auto& v : in["class_names"]) {
      if (!v.is_string()) input_error("input.class_names: expected strings, found " + v.dump());
      d.class_names.push_back(v.get<std::string>());
    }
  }
  const index_t limit = get_count(in, "limit", "input", 0);
  const std::string labels = get_path(in, "labels", "input");
  if (run.method == "hssne") {
    HssneParams p;
    read_fields(run.params, p, hssne_fields(), "params");
    if (p.rho > 0 && labels.empty()) input_error("params.rho > 0 needs input.labels (-1 for unknown)");
    if (p.exaggeration != 1.0 && p.exaggeration_iter >= p.max_iter)
      std::fprintf(stderr,
                   "[hssne] WARNING: params.exaggeration_iter (%d) >= params.max_iter (%d): every iteration runs with "
                   "P exaggerated, so the map does not minimise KL(P || Q); lower exaggeration_iter or set "
                   "exaggeration to 1\n",
                   p.exaggeration_iter, p.max_iter);
  } else {
    NervParams p;
    read_fields(run.params, p, nerv_fields(), "params");
    if (p.init == NervInit::pca && (d.distances || d.given)) input_error("params.init: pca needs input vectors");
    if (run.method == "snerv" && labels.empty()) input_error("input.labels: snerv needs labels (-1 for unknown)");
    if (run.method == "snerv" && d.distances) input_error("input.distances: snerv needs vectors (its metric is learnt)");
  }
  check_keys(run.output_extra, "output", {"dir", "format", "svg"});
  if (!read_files) return d;
  if (d.given) {
    const io::SparseTriples t = io::read_mtx(affinity_path);
    d.given_P = affinities_from_entries(t.rows, t.cols, t.row, t.col, t.val, "input.affinity_matrix " + affinity_path);
    d.X = MatrixD(t.rows, 0);
    d.sparse = true;
  } else {
    d.X = io::read_matrix(vectors, limit);
  }
  if (d.distances && limit > 0 && d.X.cols > d.X.rows) {  // the first `limit` points: a square block
    MatrixD block(d.X.rows, d.X.rows);
    for (index_t i = 0; i < d.X.rows; ++i)
      for (index_t j = 0; j < d.X.rows; ++j) block(i, j) = d.X(i, j);
    d.X = std::move(block);
  }
  if (d.pca > 0) d.X = pca_project(d.X, d.pca);
  if (!labels.empty()) {
    d.labels = io::read_labels(labels, limit);
    if (static_cast<index_t>(d.labels.size()) != d.X.rows)
      input_error(labels + ": " + std::to_string(d.labels.size()) + " labels for " + std::to_string(d.X.rows) +
                  " vectors in " + vectors);
  }
  if (!d.given && !(d.perplexity < static_cast<double>(d.X.rows - 1)))
    input_error("input.perplexity: expected < N - 1 = " + std::to_string(d.X.rows - 1) + " for the " +
                std::to_string(d.X.rows) + " vectors in " + vectors + ", found " + std::to_string(d.perplexity));
  return d;
}

}  // namespace

std::string validate_ne(const RunConfig& run) {
  const NeInput d = load(run, true);
  return run.method + ", " + std::to_string(d.X.rows) + " points" +
         (d.given       ? " (precomputed affinities)"
          : d.distances ? " (distance matrix)"
                        : " of dimension " + std::to_string(d.X.cols));
}

namespace {

// Affinities of the run: learning-metric distances (snerv), a distance matrix, sparse (kNN on the
// backend's device, rows on the host) or dense from vectors.
struct Affinities {
  AffinityResult aff;
  MatrixD metric_distances;  // snerv: the learning-metric distances (also the quality's input)
  ClassMixture model;        // snerv
  double perplexity = 0.0;
};

Affinities make_affinities(const std::string& method, const NeInput& in, const std::vector<int>& labels,
                           Backend& backend, unsigned long long seed) {
  const int threads = backend.threads();
  Affinities a;
  a.perplexity = in.perplexity;
  if (in.given) {
    a.aff.sparse = in.given_P;
  } else if (method == "snerv") {
    a.model = fit_class_mixture(in.X, labels, in.metric, seed, threads);
    a.metric_distances = backend.learning_metric_distances(a.model, in.X, in.metric.pieces);
    // the paper's effective number of neighbours, 0.5 N / K, unless given
    if (!in.perplexity_given)
      a.perplexity = std::clamp(0.5 * static_cast<double>(in.X.rows) / static_cast<double>(a.model.centres.rows), 2.0,
                                static_cast<double>(in.X.rows - 1) / 3.0);
    // sparse by default: each point's ceil(3 perplexity) nearest in the metric, the rest at the
    // row-relative floor (NeRV's sparse input); dense keeps every pair's probability
    a.aff = in.sparse ? affinities_from_knn(knn_from_distance_matrix(a.metric_distances,
                                                                     static_cast<int>(std::ceil(3.0 * a.perplexity)), threads),
                                            a.perplexity, threads)
                      : affinities_from_distances(a.metric_distances, a.perplexity, threads);
  } else if (in.distances) {
    a.aff = affinities_from_distances(in.X, in.perplexity, threads);
  } else if (in.sparse) {
    const int k = static_cast<int>(std::ceil(3.0 * in.perplexity));
    a.aff = affinities_from_knn(backend.knn(in.X, k), in.perplexity, threads);
  } else {
    a.aff = affinities_dense(in.X, in.perplexity, threads);
  }
  return a;
}

// params.init = "pca": the input vectors' first D principal components as the start.
NervResult run_nerv_fit(const NervParams& p, const Affinities& a, const NeInput& in, unsigned long long seed,
                        Backend& backend, const std::function<void(int, double)>& progress) {
  MatrixD start;
  if (p.init == NervInit::pca) {
    if (in.distances) input_error("params.init: pca needs input vectors, not a distance matrix");
    start = pca_project(in.X, p.dim, backend.threads());
  }
  const MatrixD* s = p.init == NervInit::pca ? &start : nullptr;
  return in.sparse ? fit_nerv(a.aff.sparse_conditional, a.aff.beta, p, seed, backend, progress, s)
                   : fit_nerv(a.aff.conditional, a.aff.beta, p, seed, backend, progress, s);
}

// 5-NN classification of the test points by the training points in the map: the error rate.
double knn5_test_error(const MatrixD& Y, const std::vector<int>& train_labels, const std::vector<index_t>& test,
                       const std::vector<int>& truth) {
  constexpr int k = 5;
  index_t wrong = 0;
  for (index_t t : test) {
    std::vector<std::pair<double, index_t>> best;
    for (index_t j = 0; j < Y.rows; ++j) {
      if (train_labels[static_cast<size_t>(j)] < 0) continue;
      double d2 = 0;
      for (index_t c = 0; c < Y.cols; ++c) d2 += (Y(t, c) - Y(j, c)) * (Y(t, c) - Y(j, c));
      best.emplace_back(d2, j);
    }
    const size_t m = std::min<size_t>(k, best.size());
    std::partial_sort(best.begin(), best.begin() + static_cast<long>(m), best.end());
    std::map<int, int> votes;
    int vote = -1, top = 0;
    for (size_t q = 0; q < m; ++q) {  // majority; a tie goes to the label met first (nearest)
      const int l = train_labels[static_cast<size_t>(best[q].second)];
      if (++votes[l] > top) top = votes[l], vote = l;
    }
    wrong += vote != truth[static_cast<size_t>(t)];
  }
  return test.empty() ? 0.0 : static_cast<double>(wrong) / static_cast<double>(test.size());
}

// The paper's protocol: the labelled points split into k folds (seeded); for each fold its labels
// are hidden, the map is made (snerv: model and metric learnt without them; nerv and hssne do not
// use labels, so their map is the run's own), and its points are classified by 5-NN among the
// other labelled points of the map.
json cross_validate(const RunConfig& run, const NeInput& in, const MatrixD& run_map, Backend& backend, bool quiet) {
  std::vector<index_t> labelled;
  for (index_t n = 0; n < in.X.rows; ++n)
    if (in.labels[static_cast<size_t>(n)] >= 0) labelled.push_back(n);
  if (static_cast<index_t>(labelled.size()) < in.cv_folds)
    input_error("input.cv_folds: " + std::to_string(in.cv_folds) + " folds for " + std::to_string(labelled.size()) +
                " labelled points");
  std::mt19937_64 rng(run.seed ^ 0xc0ffeeULL);
  std::shuffle(labelled.begin(), labelled.end(), rng);
  json errors = json::array();
  double sum = 0.0;
  for (int f = 0; f < in.cv_folds; ++f) {
    std::vector<int> train = in.labels;
    std::vector<index_t> test;
    for (size_t q = 0; q < labelled.size(); ++q)
      if (static_cast<int>(q % static_cast<size_t>(in.cv_folds)) == f) {
        test.push_back(labelled[q]);
        train[static_cast<size_t>(labelled[q])] = -1;
      }
    MatrixD Y = run_map;
    if (run.method == "snerv") {
      NervParams p;
      read_fields(run.params, p, nerv_fields(), "params");
      const Affinities a = make_affinities(run.method, in, train, backend, run.seed);
      Y = run_nerv_fit(p, a, in, run.seed, backend, {}).coords;
    }
    const double e = knn5_test_error(Y, train, test, in.labels);
    errors.push_back(e);
    sum += e;
    if (!quiet) std::fprintf(stderr, "[%s] fold %d/%d: 5-NN test error %.4f\n", run.method.c_str(), f + 1, in.cv_folds, e);
  }
  return {{"folds", in.cv_folds}, {"knn5_test_error", errors}, {"mean_knn5_test_error", sum / in.cv_folds}};
}

}  // namespace

json run_ne(const RunConfig& run, bool quiet) {
  const auto t0 = Clock::now();
  NeInput in = load(run, true);
  const index_t N = in.X.rows;
  auto backend = make_backend(run.device, run.threads);
  const double t_read = seconds_since(t0);
  const auto t1 = Clock::now();
  const Affinities A = make_affinities(run.method, in, in.labels, *backend, run.seed);
  const AffinityResult& aff = A.aff;
  const double t_aff = seconds_since(t1);
  if (!quiet && run.method == "snerv")
    std::fprintf(stderr, "[snerv] class model: K = %lld, s = %.4g, training log-likelihood %.4f; perplexity %.4g\n",
                 static_cast<long long>(A.model.centres.rows), A.model.width, A.model.train_loglik, A.perplexity);
  const auto t2 = Clock::now();
  auto progress = [&](int it, double J) {
    if (!quiet && (it % 50 == 0))
      std::fprintf(stderr, "[%s] iter %5d  cost %.8g  %s\n", run.method.c_str(), it, J,
                   format_seconds(seconds_since(t2)).c_str());
  };
  MatrixD Y;
  json params, result;
  std::vector<double> trace;
  if (run.method == "hssne") {
    HssneParams p;
    read_fields(run.params, p, hssne_fields(), "params");
    const HssneResult r = in.sparse ? fit_hssne(aff.sparse, p, run.seed, *backend, progress)
                                    : fit_hssne(aff.dense, in.labels, p, run.seed, *backend, progress);
    Y = r.coords;
    trace = r.objective_trace;
    params = fields_to_json(p, hssne_fields());
    result = {{"iterations", r.iterations}, {"evaluations", r.evaluations}, {"stop_reason", r.stop_reason},
              {"restarts", r.restarts}, {"damped_steps", r.damped_steps},
              {"objective", trace.empty() ? 0.0 : trace.back()}};
  } else {
    NervParams p;
    read_fields(run.params, p, nerv_fields(), "params");
    const NervResult r = run_nerv_fit(p, A, in, run.seed, *backend, progress);
    Y = r.coords;
    trace = r.objective_trace;
    params = fields_to_json(p, nerv_fields());
    result = {{"iterations", r.iterations}, {"evaluations", r.evaluations}, {"stop_reason", r.stop_reason},
              {"objective", trace.empty() ? 0.0 : trace.back()}};
    if (run.method == "snerv") {
      json sel = json::array();
      for (const auto& v : A.model.selection)
        sel.push_back({{"components", v.components}, {"width", v.width}, {"validation_loglik", v.loglik}});
      result["metric"] = {{"components", A.model.centres.rows}, {"width", A.model.width},
                          {"train_loglik", A.model.train_loglik}, {"iterations", A.model.iterations},
                          {"perplexity", A.perplexity}, {"selection", sel},
                          {"params", fields_to_json(in.metric, class_mixture_fields())}};
    }
  }
  const double t_fit = seconds_since(t2);
  if (!quiet)
    std::fprintf(stderr, "[%s] %lld points: %s after %d iterations, %s\n", run.method.c_str(),
                 static_cast<long long>(N), result["stop_reason"].get<std::string>().c_str(),
                 result["iterations"].get<int>(), format_seconds(t_fit).c_str());

  const auto t3 = Clock::now();
  QualityRequest req;
  req.ks = {1, 5, 10, 20};
  for (int& k : req.ks) k = static_cast<int>(std::min<index_t>(k, N - 1));
  req.curve = false;
  req.threads = backend->threads();
  req.input_is_distance_matrix = in.distances || run.method == "snerv";
  // with precomputed affinities there is no input space to compare the map with
  const json quality = in.given ? json()
                                : quality_json(evaluate_quality(run.method == "snerv" ? A.metric_distances : in.X, Y,
                                                                in.labels, req, backend.get()));
  const json cv = in.cv_folds > 0 ? cross_validate(run, in, Y, *backend, quiet) : json();
  const double t_eval = seconds_since(t3);

  io::OutputSet out;
  json outputs = json::object();
  add_coordinates(out, outputs, run, "embedding", Y);
  namespace fs = std::filesystem;
  const fs::path dir(run.output.dir);
  if (run.output.svg) {
    report::MapPicture pic;
    pic.objects = Y;
    pic.colour_index = in.labels;
    int max_label = -1;
    for (int l : in.labels) max_label = std::max(max_label, l);
    for (int l = 0; l <= max_label; ++l)
      pic.legend.push_back(l < static_cast<int>(in.class_names.size()) ? in.class_names[static_cast<size_t>(l)]
                                                                        : "label " + std::to_string(l));
    pic.title = std::string(run.method == "hssne" ? "HSSNE" : run.method == "snerv" ? "Supervised NeRV" : "NeRV") +
                ": " + std::to_string(N) + " points";
    pic.subtitle = in.labels.empty() ? "no labels given" : "coloured by label";
    pic.seed = run.seed;
    const std::string p = (dir / "map.svg").string();
    out.add(p, report::render_map_svg(pic));
    outputs["map_svg"] = p;
  }
  json report = report_header(run, *backend);
  report["params"] = params;
  report["input"] = {{"points", N}, {"dims", in.X.cols}, {"perplexity", A.perplexity}, {"affinities", in.sparse ? "sparse" : "dense"},
                     {"source", in.given ? "affinity_matrix" : in.distances ? "distances" : "vectors"}, {"pca", in.pca}};
  report["result"] = result;
  report["trace"] = trace;
  report["quality"] = quality;
  if (!cv.is_null()) report["cross_validation"] = cv;
  report["timings"] = {{"read", t_read}, {"affinities", t_aff}, {"fit", t_fit}, {"evaluate", t_eval},
                       {"total", seconds_since(t0)}};
  outputs["report"] = (dir / "report.json").string();
  report["outputs"] = outputs;
  out.add((dir / "report.json").string(), report.dump(2) + "\n");
  out.commit();
  if (!quiet) std::fprintf(stderr, "[%s] wrote %s\n", run.method.c_str(), run.output.dir.c_str());
  return report;
}

}  // namespace orrery::cli
