#include "run/ne_config.hpp"

#include <cstdio>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "run/run_common.hpp"
#include "io/memory_inputs.hpp"
#include "io/readers.hpp"
#include "orrery/knn.hpp"
#include "orrery/error.hpp"
#include "orrery/pca.hpp"
#include "report/svg_map.hpp"

namespace orrery::pipeline {

namespace {

// params.init: a start the method names (`fallback` is its default) or an array file that exists
void check_start(const std::string& init, const std::string& fallback, const NeInputSpec& in) {
  if (init == fallback) return;
  if (!in.model.empty()) input_error("params.init: does not apply to a placement into input.model");
  const MapStart s = map_start(init);
  if (s == MapStart::pca && in.vectors.empty())
    input_error("params.init: pca needs input vectors, not " +
                std::string(!in.distances.empty()        ? "a distance matrix"
                            : !in.neighbor_graph.empty() ? "a neighbor graph"
                                                         : "affinities") +
                " (spectral starts from any input)");
  if (s == MapStart::given && !io::is_memory_path(init) && !std::filesystem::exists(init))
    input_error("params.init: expected " + std::string(fallback == "auto" ? "auto, " : "") +
                "random, pca, spectral or an N x dim array file (npy, csv/tsv/txt), found '" + init + "' (no such file)");
}

}  // namespace

NeRunConfig read_ne_config(const RunConfig& run) {
  NeRunConfig cfg;
  cfg.run = run;
  cfg.seed = run.seed;
  const std::string& m = run.method;
  bool known = false;
  for (const NeMethod nm : {NeMethod::hssne, NeMethod::nerv, NeMethod::snerv})
    if (m == ne_method_name(nm)) cfg.method = nm, known = true;
  if (!known) internal_error("read_ne_config: '" + m + "' is not a neighbor-embedding method");
  const bool hssne = cfg.method == NeMethod::hssne, snerv = cfg.method == NeMethod::snerv;
  NeInputSpec& in = cfg.input;
  in = ne_input_defaults(cfg.method);
  // Keys another neighbor method takes: say why not here, before the table's "unknown key".
  if (!hssne && run.input.contains("affinity_matrix"))
    input_error("input.affinity_matrix: only hssne takes precomputed affinities");
  if (!hssne && run.input.contains("neighbor_graph"))
    input_error("input.neighbor_graph: only hssne takes a precomputed neighbor graph");
  if (snerv && run.input.contains("distances"))
    input_error("input.distances: snerv needs vectors (its metric is learnt)");
  read_fields(run.input, in, ne_input_fields(cfg.method), "input");
  if (in.vectors.empty() + in.distances.empty() + in.affinity_matrix.empty() + in.neighbor_graph.empty() != 3)
    input_error(snerv ? "input.vectors: required (N x d points)"
                             : "input: give exactly one of 'vectors' (N x d points: npy, csv/tsv/txt or IDX), 'distances' "
                               "(a symmetric N x N distance matrix)" +
                                   std::string(hssne ? ", 'neighbor_graph' (a sparse N x N Matrix Market file of kNN "
                                                       "distances) or 'affinity_matrix' (a sparse N x N Matrix Market "
                                                       "file of affinities)"
                                                     : ""));
  if (!in.affinity_matrix.empty())
    for (const char* k :
         {"pca", "perplexity", "affinities", "limit", "duplicates", "neighbors", "neighbor_ef", "neighbor_recall_target"})
      if (run.input.contains(k)) input_error(std::string("input.") + k + ": does not apply to a precomputed affinity_matrix");
  if (!in.neighbor_graph.empty())
    for (const char* k : {"pca", "affinities", "limit", "duplicates", "neighbors", "neighbor_ef", "neighbor_recall_target"})
      if (run.input.contains(k))
        input_error(std::string("input.") + k + ": does not apply to a precomputed neighbor_graph (its lists are the "
                    "neighbors; input.perplexity calibrates them)");
  if (in.pca > 0 && !in.distances.empty()) input_error("input.pca: applies to vectors, not to a distance matrix");
  if (!snerv && in.vector_metric != VectorMetric::euclidean && in.vectors.empty())
    input_error("input.metric: " + enum_name(in.vector_metric) + " compares vectors; a distance matrix, a neighbor "
                "graph or affinities are given already in their own metric");
  if (in.vector_metric == VectorMetric::inner_product && in.pca > 0)
    input_error("input.pca: does not apply with input.metric inner_product (the projection centres the rows, which "
                "changes their inner products); project the vectors first, without centring, if they need it");
  if (!snerv && run.input.contains("metric") && !in.model.empty())
    input_error("input.metric: does not apply to a placement into input.model (the model's metric is used)");
  if (!in.model.empty()) {
    if (in.vectors.empty()) input_error("input.model: places new points given as input.vectors");
    for (const char* k : {"pca", "affinities", "cv_folds"})
      if (run.input.contains(k))
        input_error(std::string("input.") + k + ": does not apply to a placement into input.model (" +
                    (std::string(k) == "pca" ? "the model's own projection is used" : "its affinities are sparse") + ")");
  }
  if (snerv && in.perplexity != 0.0 && !(in.perplexity > 1.0))
    input_error("input.perplexity: expected 0 (the paper's 0.5 N / K) or a value > 1, found " +
                detail::number_text(in.perplexity));
  if (in.cv_folds == 1) input_error("input.cv_folds: expected 0 (off) or at least 2 folds");
  if (in.cv_folds > 0 && in.labels.empty()) input_error("input.cv_folds: needs input.labels");
  if (in.affinities == AffinityMode::sparse && !in.distances.empty())
    input_error("input.affinities: sparse affinities need vectors (their neighbor search), not distances");
  for (const char* k : {"neighbor_ef", "neighbor_recall_target"})
    if (run.input.contains(k) && in.neighbors == NeighborsMode::exact)
      input_error(std::string("input.") + k + ": applies to the approximate search, and input.neighbors is exact");
  if (in.neighbors == NeighborsMode::approximate && !in.distances.empty())
    input_error("input.neighbors: approximate searches vectors, not a distance matrix");
  if (in.neighbors == NeighborsMode::approximate && in.affinities == AffinityMode::dense)
    input_error("input.neighbors: approximate needs sparse affinities (input.affinities is dense: every pair, no search)");
  if (hssne) {
    read_fields(run.params, cfg.hssne, hssne_fields(), "params");
    const HssneParams& p = cfg.hssne;
    if (p.rho > 0 && !in.model.empty()) input_error("params.rho: does not apply to a placement into input.model");
    if (p.rho > 0 && in.labels.empty()) input_error("params.rho > 0 needs input.labels (-1 for unknown)");
    if (p.rho > 0 && (in.affinities == AffinityMode::sparse || given_affinities(in)))
      input_error("params.rho: semi-supervised mixing needs dense affinities (input.affinities)");
    if (needs_sparse_affinities(p.repulsion)) {
      const std::string what = "params.repulsion: " + enum_name(p.repulsion) + " repulsion needs sparse affinities";
      if (in.affinities == AffinityMode::dense) input_error(what + ", but input.affinities is dense");
      if (!in.distances.empty()) input_error(what + ", which a distance matrix does not give");
      if (p.rho > 0) input_error(what + ", but params.rho > 0 needs dense ones");
    }
    check_tree_optimizer(p);
    check_start(p.init, "random", in);
    if (p.rho > 0 && in.neighbors == NeighborsMode::approximate)
      input_error("params.rho: semi-supervised mixing needs dense affinities, which input.neighbors approximate excludes");
  } else {
    read_fields(run.params, cfg.nerv, nerv_fields(), "params");
    check_start(cfg.nerv.init, "auto", in);
    if (snerv && in.labels.empty() && in.model.empty())
      input_error("input.labels: snerv needs labels (-1 for unknown)");
    if (snerv && in.metric.candidates > 0 && in.neighbors == NeighborsMode::exact)
      input_error("input.metric.candidates: applies to input.neighbors approximate (candidate re-ranking), and "
                  "input.neighbors is exact");
  }
  check_keys(run.output_extra, "output", {"dir", "format", "svg", "html", "quality_sample"});
  cfg.quality_sample = get_count(run.output_extra, "quality_sample", "output", -1, 0);
  return cfg;
}

NeLabels read_ne_labels(const NeInputSpec& in, index_t n, const std::string& source) {
  NeLabels d;
  d.class_names = in.class_names.path.empty()
                      ? in.class_names.values
                      : read_keyed("input.class_names", [&] { return io::read_names(in.class_names.path); });
  if (in.labels.empty()) return d;
  io::Categories cat = read_keyed("input.labels", [&] { return io::read_categories(in.labels, in.limit); });
  d.labels = std::move(cat.index);
  if (static_cast<index_t>(d.labels.size()) != n)
    input_error(in.labels + ": " + std::to_string(d.labels.size()) + " labels for " + std::to_string(n) + " points in " +
                source);
  if (!cat.numeric && !d.class_names.empty())
    input_error("input.class_names: the labels in " + in.labels + " are names already; class_names names numeric labels");
  // class_names[v] names the label value v; values without one keep their number.
  for (size_t c = 0; c < cat.names.size(); ++c) {
    const long long v = cat.numeric ? cat.values[c] : -1;
    d.legend.push_back(v >= 0 && v < static_cast<long long>(d.class_names.size()) ? d.class_names[static_cast<size_t>(v)]
                       : cat.numeric                                             ? "label " + cat.names[c]
                                                                                 : cat.names[c]);
  }
  return d;
}

MatrixD given_start(const std::string& init, index_t N, int dim) {
  MatrixD Y = read_keyed("params.init", [&] { return io::read_matrix(init); });
  if (Y.rows != N || Y.cols != dim)
    input_error("params.init: " + init + " holds " + std::to_string(Y.rows) + " x " + std::to_string(Y.cols) +
                " values; the start needs one row per point and params.dim columns, " + std::to_string(N) + " x " +
                std::to_string(dim));
  for (index_t i = 0; i < N; ++i)
    for (index_t c = 0; c < Y.cols; ++c)
      if (!std::isfinite(Y(i, c)))
        input_error("params.init: " + init + ": row " + std::to_string(i + 1) + ", column " + std::to_string(c + 1) +
                    " is not a finite number");
  return Y;
}

void unit_rows(MatrixD& X, VectorMetric metric, const std::string& what) {
  for (index_t i = 0; i < X.rows; ++i) {
    double* x = X.row(i);
    const double n = static_cast<double>(X.cols);
    if (metric == VectorMetric::correlation) {
      double mean = 0;
      for (index_t c = 0; c < X.cols; ++c) mean += x[c] / n;
      for (index_t c = 0; c < X.cols; ++c) x[c] -= mean;
    }
    // the length in two passes, scaled by the largest entry, so that no square overflows or underflows
    double top = 0;
    for (index_t c = 0; c < X.cols; ++c) top = std::max(top, std::abs(x[c]));
    if (!(top > 0) || !std::isfinite(top))
      input_error(what + ": row " + std::to_string(i + 1) +
                  (!std::isfinite(top) ? " holds a value that is not a finite number"
                   : metric == VectorMetric::correlation ? " is constant, so its correlation with any row is not defined"
                                                        : " is zero, so its cosine with any row is not defined"));
    double ss = 0;
    for (index_t c = 0; c < X.cols; ++c) ss += (x[c] / top) * (x[c] / top);
    const double inv = 1.0 / (top * std::sqrt(ss));
    for (index_t c = 0; c < X.cols; ++c) x[c] *= inv;
  }
}

namespace {

// The standard deviation of Y's first coordinate.
double first_sd(const MatrixD& Y) {
  const index_t N = Y.rows;
  double mean = 0, ss = 0;
  for (index_t i = 0; i < N; ++i) mean += Y(i, 0) / static_cast<double>(N);
  for (index_t i = 0; i < N; ++i) ss += (Y(i, 0) - mean) * (Y(i, 0) - mean);
  return std::sqrt(ss / static_cast<double>(N));
}

// Scales Y so that its first coordinate has standard deviation sd (pca and spectral starts).
void scale_start(MatrixD& Y, double sd) {
  const double f = sd / first_sd(Y);
  for (double& v : Y.data) v *= f;
}

}  // namespace

MatrixD hssne_start(const HssneParams& p, const NeData& d, int threads) {
  const index_t N = d.points();
  if (p.init == "pca") {
    MatrixD Y = pca_project(d.X, p.dim, threads);
    // (constant vectors project to rounding noise, not to zero)
    if (!(first_sd(Y) > 1e-12 * input_scale(d.X)))
      input_error("params.init: pca: the input vectors do not vary, so they give no start");
    scale_start(Y, p.init_scale);
    return Y;
  }
  return given_start(p.init, N, p.dim);
}

MatrixD fit_start(const NeRunConfig& cfg, const NeData& d, const AffinityResult& a, bool sparse, int threads) {
  const auto spectral = [&](const SparseAffinity& S, const MatrixD& dense) {
    return sparse ? spectral_start(S, cfg.method == NeMethod::hssne ? cfg.hssne.dim : cfg.nerv.dim, threads)
                  : spectral_start(largest_entries(dense, sparse_neighbors(cfg.input.perplexity)),
                                   cfg.method == NeMethod::hssne ? cfg.hssne.dim : cfg.nerv.dim, threads);
  };
  if (cfg.method == NeMethod::hssne) {
    if (map_start(cfg.hssne.init) != MapStart::spectral) return d.start;
    MatrixD Y = spectral(a.sparse, a.dense);
    scale_start(Y, cfg.hssne.init_scale);
    return Y;
  }
  const NervParams& p = cfg.nerv;
  switch (nerv_start(p, nerv_approximate(p, d.points(), sparse), !cfg.input.vectors.empty())) {
    case MapStart::pca: return pca_project(d.X, p.dim, threads);  // (fit_nerv scales it)
    case MapStart::spectral: return spectral(a.sparse_conditional, a.conditional);
    case MapStart::given: return d.scale_exponent != 0 ? times_power_of_two(d.start, -d.scale_exponent) : d.start;
    case MapStart::random: break;
  }
  return MatrixD();
}

NeData load_ne_data(const NeRunConfig& cfg, std::optional<int> model_exponent) {
  const NeInputSpec& in = cfg.input;
  NeData d;
  const std::string source = ne_input_source(in);
  const std::string key = !in.vectors.empty()          ? "input.vectors"
                          : !in.distances.empty()      ? "input.distances"
                          : !in.neighbor_graph.empty() ? "input.neighbor_graph"
                                                       : "input.affinity_matrix";
  // In-memory vectors to project (io/memory_inputs.hpp) are read in place by the duplicate check and
  // the PCA: only their projection is stored, never a copy of the caller's array.
  MatrixViewD raw;
  const bool in_place = in.pca > 0 && !in.vectors.empty() && io::memory_view(in.vectors, raw);
  if (in_place) {
    if (in.limit > 0 && in.limit < raw.rows) raw.rows = in.limit;
    d.X.rows = raw.rows, d.X.cols = raw.cols;  // (no values: replaced by the projection below)
  } else if (!in.affinity_matrix.empty()) {
    const io::SparseTriples t = read_keyed(key, [&] { return io::read_mtx(in.affinity_matrix); });
    d.given = affinities_from_entries(t.rows, t.cols, t.row, t.col, t.val, "input.affinity_matrix " + in.affinity_matrix);
    d.X = MatrixD(t.rows, 0);
  } else if (!in.neighbor_graph.empty()) {
    const io::SparseTriples t = read_keyed(key, [&] { return io::read_mtx(in.neighbor_graph); });
    d.given = affinities_from_neighbor_graph(t.rows, t.cols, t.row, t.col, t.val, in.perplexity,
                                             "input.neighbor_graph " + in.neighbor_graph, cfg.run.threads, &d.graph);
    d.X = MatrixD(t.rows, 0);
  } else {
    d.X = read_keyed(key, [&] { return io::read_matrix(source, in.limit); });
  }
  if (!in.distances.empty() && in.limit > 0 && d.X.cols > d.X.rows) {  // the first `limit` points: a square block
    MatrixD block(d.X.rows, d.X.rows);
    for (index_t i = 0; i < d.X.rows; ++i)
      for (index_t j = 0; j < d.X.rows; ++j) block(i, j) = d.X(i, j);
    d.X = std::move(block);
  }
  if (!in.distances.empty() && d.X.cols != d.X.rows)
    input_error(in.distances + ": expected a square N x N distance matrix, found " + std::to_string(d.X.rows) + " x " +
                std::to_string(d.X.cols));
  if (!in_place) raw = d.X;
  if (scales_rows(in.vector_metric) && !in.vectors.empty()) {
    MatrixD U(raw.rows, raw.cols);
    std::copy(raw.values, raw.values + raw.rows * raw.cols, U.data.begin());
    unit_rows(U, in.vector_metric, key + " " + source);
    d.X = std::move(U);
    raw = d.X;
  }
  if (!given_affinities(in)) {
    // Squares of the input overflow or underflow in double beyond a scale of about 2^+-500, and
    // every step below squares it: data of an extreme scale (beyond 2^+-64) is taken in units of
    // 2^e (an exact scaling; a copy of an in-place view), which no step's result depends on. A placement takes
    // its model's units, so that its new points meet the model's points in them.
    const int e = model_exponent ? *model_exponent : double_safe_exponent(raw, !in.distances.empty());
    if (e != 0) {
      d.X = times_power_of_two(raw, -e);
      raw = d.X;
      d.scale_exponent = e;
    }
  }
  if (!given_affinities(in)) {
    d.duplicates = find_duplicates(raw, !in.distances.empty());
    if (in.duplicates == DuplicatesMode::refuse && d.duplicates.count > 0)
      input_error("input.duplicates: refuse: rows " + std::to_string(d.duplicates.first + 1) + " and " +
                  std::to_string(d.duplicates.second + 1) + " of " + source +
                  (in.distances.empty() ? " are identical points" : " are at distance 0") + " (" +
                  std::to_string(d.duplicates.count) + " duplicate points in all)");
  }
  if (in.pca > 0) {
    d.pca = pca_fit(raw, in.pca, cfg.run.threads);
    d.X = pca_apply(d.pca, raw, cfg.run.threads);
  }
  if (cfg.method == NeMethod::hssne && in.model.empty() &&
      (map_start(cfg.hssne.init) == MapStart::pca || map_start(cfg.hssne.init) == MapStart::given))
    d.start = hssne_start(cfg.hssne, d, cfg.run.threads);
  if (cfg.method != NeMethod::hssne && in.model.empty() && cfg.nerv.init != "auto" &&
      map_start(cfg.nerv.init) == MapStart::given)
    d.start = given_start(cfg.nerv.init, d.X.rows, cfg.nerv.dim);
  NeLabels L = read_ne_labels(in, d.X.rows, source);
  d.labels = std::move(L.labels);
  d.class_names = std::move(L.class_names);
  d.legend = std::move(L.legend);
  read_keyed("input.names", [&] {  // checked now, read again by the map page
    return read_point_names(in.names, d.X.rows, in.limit, "input.names", source);
  });
  // (a placement's perplexity is checked against the model's points instead)
  if (in.model.empty() && !given_affinities(in)) check_perplexity_bound(in.perplexity, d.X.rows, source);
  return d;
}

QualityRequest ne_quality_request(const NeRunConfig& cfg, index_t N, int threads) {
  QualityRequest req;
  req.ks = {1, 5, 10, 20};
  for (int& k : req.ks) k = static_cast<int>(std::min<index_t>(k, N - 1));
  req.curve = false;
  req.threads = threads;
  req.queries = cfg.quality_sample;  // above kQualitySampleAbove points a seeded subsample by default
  req.seed = cfg.run.seed;
  req.inner_product = cfg.input.vector_metric == VectorMetric::inner_product;
  return req;
}

void add_ne_map_svg(io::OutputSet& out, json& outputs, const RunConfig& run, const MatrixD& Y, const NeData& d,
                    const std::string& title) {
  if (!run.output.svg) return;
  report::MapPicture pic;
  pic.objects = Y;
  pic.colour_index = d.labels;
  pic.legend = d.legend;
  pic.title = title;
  pic.subtitle = d.labels.empty() ? "no labels given" : "coloured by label";
  pic.seed = run.seed;
  const std::string p = (std::filesystem::path(run.output.dir) / "map.svg").string();
  out.add(p, report::render_map_svg(pic));
  outputs["map_svg"] = p;
}

}  // namespace orrery::pipeline
