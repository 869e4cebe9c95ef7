#include "cli/ne_config.hpp"

#include <cstdio>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "cli/run_common.hpp"
#include "io/memory_inputs.hpp"
#include "io/readers.hpp"
#include "orrery/knn.hpp"
#include "orrery/error.hpp"
#include "orrery/pca.hpp"
#include "report/svg_map.hpp"

namespace orrery::cli {
namespace {

using F = Field<NeInputSpec>;

std::vector<F> input_table(const std::string& method) {
  const bool hssne = method == "hssne", snerv = method == "snerv";
  std::vector<F> t;
  t.push_back({"vectors", &NeInputSpec::vectors,
               snerv ? "N x d points: npy, csv/tsv/txt (optionally .gz) or IDX. Required."
                     : "N x d points: npy, csv/tsv/txt (optionally .gz) or IDX. Give exactly one of vectors, distances"
                       "" + std::string(hssne ? ", affinity_matrix." : ".")});
  if (!snerv)
    t.push_back({"distances", &NeInputSpec::distances,
                 "A symmetric N x N distance matrix (zero diagonal) instead of vectors; dense affinities."});
  if (hssne)
    t.push_back({"affinity_matrix", &NeInputSpec::affinity_matrix,
                 "Precomputed affinities: a sparse N x N Matrix Market coordinate file (.mtx[.gz]; real, integer or "
                 "pattern; general or symmetric), made symmetric as (A + A') / 2 and scaled to sum 1."});
  if (hssne)
    t.push_back({"model", &NeInputSpec::model,
                 "An earlier hssne run's output directory (made from vectors): place the points of input.vectors into "
                 "its map, which stays fixed, instead of making a new map. Each new point's neighbours among the "
                 "run's points give its affinities (perplexity 5 unless input.perplexity is given); it is "
                 "projected by the run's input.pca first. The run's params.alpha and params.dim apply."});
  else
    t.push_back({"model", &NeInputSpec::model,
                 "An earlier " + method + " run's output directory (made from vectors): place the points of "
                 "input.vectors into its map, which stays fixed, instead of making a new map. Each new point's "
                 "ceil(3 perplexity) nearest among the run's points (Euclidean" +
                     std::string(snerv ? ", not the learning metric" : "") +
                     ", after the run's input.pca) give its probabilities at the run's perplexity, and it takes the "
                     "place minimising its own NeRV cost against the whole map. The run's params.lambda and "
                     "params.dim apply; params.max_iter caps each point's Newton steps."});
  t.push_back({"labels", &NeInputSpec::labels,
               snerv ? "One label per point, any integer or name (-1 unknown): the class-posterior model's targets. Required (not for a placement into input.model)."
                     : "One label per point, any integer or name (-1 unknown): colours, k-NN accuracy, cv_folds" +
                           std::string(hssne ? ", params.rho." : ".")});
  t.push_back({"class_names", &NeInputSpec::class_names,
               "Names of numeric labels 0, 1, ... for the map's legend: a list or a file."});
  t.push_back({"names", &NeInputSpec::names,
               "One name per point, a text file of one line each: the interactive map's tooltips and search "
               "(output.html, orrery view)."});
  t.push_back({"limit", &NeInputSpec::limit,
               snerv ? "Use the first N rows only; 0 = all."
                     : "Use the first N rows only (a distance matrix: its first N x N block); 0 = all.",
               0, 1e12});
  t.push_back({"pca", &NeInputSpec::pca, "Project the vectors onto this many principal components first; 0 = off.", 0,
               1e6});
  if (snerv)
    t.push_back({"perplexity", &NeInputSpec::perplexity,
                 "Effective number of neighbours of the affinities; 0 = the paper's 0.5 N / K (K the model's "
                 "components), clamped to [2, min((N - 1) / 3, 50)] (the cap keeps each point's ceil(3 perplexity) "
                 "neighbours bounded on large N). Otherwise > 1.",
                 0, 1e9});
  else
    t.push_back({"perplexity", &NeInputSpec::perplexity,
                 "Effective number of neighbours of the affinities (< N - 1; sparse: <= (N - 1) / 3).", 1, 1e9, true});
  t.push_back({"affinities", &NeInputSpec::affinities,
               snerv ? "sparse: each point's ceil(3 perplexity) nearest in the metric, NeRV's floor elsewhere; dense: "
                       "every pair; auto = sparse."
                     : "dense: every pair (O(N^2) memory); sparse: each point's ceil(3 perplexity) nearest "
                       "neighbours (input.neighbors); auto: dense up to 10,000 points when that fits in half the memory "
                       "available, sparse above or with neighbors approximate (distances: dense)."});
  if (snerv)
    t.push_back({"neighbors", &NeInputSpec::neighbors,
                 "How each point's nearest in the learnt metric are found. exact: the metric's distance for every "
                 "pair (N x N doubles, O(N^2) path integrals); approximate: each point's input.metric.candidates "
                 "nearest Euclidean neighbours re-ranked by the metric (no N x N matrix; the Euclidean search is exact "
                 "up to 5,000 points on the CPU and on a GPU, HNSW above; the quality measures then compare the map "
                 "with the input vectors); auto: exact up to 2,000 points or with dense affinities, approximate "
                 "above. approximate needs sparse affinities."});
  else
    t.push_back({"neighbors", &NeInputSpec::neighbors,
                 "The sparse affinities' neighbour search. exact: every pair, O(N^2 d); approximate: an HNSW graph "
                 "(hnswlib, M 16, ef_construction 100, ef 150; reproducible for any thread count), its recall "
                 "estimated on 1,000 seeded points and written in the report as input.neighbor_recall; auto: exact "
                 "up to 5,000 points on the CPU (where the two cost the same), approximate above (2 cores, "
                 "Fashion-MNIST: 1.8x faster at 10,000 points, 9x at 70,000, recall@90 0.999), exact on a GPU "
                 "(tiled double-precision GEMMs, the candidates re-ranked by the exact distances). approximate with "
                 "affinities auto selects sparse affinities."});
  if (snerv)
    t.push_back({"neighbor_ef", &NeInputSpec::neighbor_ef,
                 "The approximate (HNSW) Euclidean candidate search's list per query (hnswlib ef; at least the "
                 "candidates + 1 is used).",
                 1, 100000});
  else
    t.push_back({"neighbor_ef", &NeInputSpec::neighbor_ef,
                 "The approximate search's candidate list per query (hnswlib ef; at least k + 1 is used): raise it "
                 "when the report's neighbor_recall is too low (data of high intrinsic dimension: a 50-D Gaussian "
                 "mixture of 10^6 points gave 0.83 at 150); the query time grows about in proportion.",
                 1, 100000});
  t.push_back({"duplicates", &NeInputSpec::duplicates,
               std::string("accept: identical points are data (each one's copies are its nearest neighbours), counted in "
                           "the report as input.duplicate_points; refuse: an error naming the first two identical rows. "
                           "Either way a point whose every candidate neighbour is a copy of it is an error.") +
                   (hssne ? " Not with affinity_matrix." : "")});
  if (snerv)
    t.push_back({"metric", sub_table(&NeInputSpec::metric, "metric", &class_mixture_fields),
                 "The class-posterior model behind the learning metric."});
  t.push_back({"cv_folds", &NeInputSpec::cv_folds,
               "0 = off, else k >= 2: the labelled points in k seeded folds; each fold's labels hidden, the map made "
               "without them and its points classified by 5-NN among the other labelled points.",
               0, 1000});
  return t;
}

}  // namespace

const std::vector<Field<NeInputSpec>>& ne_input_fields(const std::string& method) {
  static const std::vector<F> hssne = input_table("hssne"), nerv = input_table("nerv"), snerv = input_table("snerv");
  return method == "hssne" ? hssne : method == "snerv" ? snerv : nerv;
}

const NeInputSpec& ne_input_defaults(const std::string& method) {
  static const NeInputSpec common;
  static const NeInputSpec snerv = [] {
    NeInputSpec s;
    s.perplexity = 0.0;
    return s;
  }();
  return method == "snerv" ? snerv : common;
}

NeRunConfig read_ne_config(const RunConfig& run) {
  NeRunConfig cfg;
  cfg.run = run;
  const std::string& m = run.method;
  NeInputSpec& in = cfg.input;
  in = ne_input_defaults(m);
  // Keys another neighbour method takes: say why not here, before the table's "unknown key".
  if (m != "hssne" && run.input.contains("affinity_matrix"))
    input_error("input.affinity_matrix: only hssne takes precomputed affinities");
  if (m != "snerv" && run.input.contains("metric")) input_error("input.metric: applies to method snerv only");
  if (m == "snerv" && run.input.contains("distances"))
    input_error("input.distances: snerv needs vectors (its metric is learnt)");
  read_fields(run.input, in, ne_input_fields(m), "input");
  if (in.vectors.empty() + in.distances.empty() + in.affinity_matrix.empty() != 2)
    input_error(m == "snerv" ? "input.vectors: required (N x d points)"
                             : "input: give exactly one of 'vectors' (N x d points: npy, csv/tsv/txt or IDX), 'distances' "
                               "(a symmetric N x N distance matrix)" +
                                   std::string(m == "hssne" ? " or 'affinity_matrix' (a sparse N x N Matrix Market file)" : ""));
  if (!in.affinity_matrix.empty())
    for (const char* k : {"pca", "perplexity", "affinities", "limit", "duplicates", "neighbors", "neighbor_ef"})
      if (run.input.contains(k)) input_error(std::string("input.") + k + ": does not apply to a precomputed affinity_matrix");
  if (in.pca > 0 && !in.distances.empty()) input_error("input.pca: applies to vectors, not to a distance matrix");
  if (!in.model.empty()) {
    if (in.vectors.empty()) input_error("input.model: places new points given as input.vectors");
    for (const char* k : {"pca", "affinities", "cv_folds"})
      if (run.input.contains(k))
        input_error(std::string("input.") + k + ": does not apply to a placement into input.model (" +
                    (std::string(k) == "pca" ? "the model's own projection is used" : "its affinities are sparse") + ")");
  }
  if (m == "snerv" && in.perplexity != 0.0 && !(in.perplexity > 1.0))
    input_error("input.perplexity: expected 0 (the paper's 0.5 N / K) or a value > 1, found " +
                detail::number_text(in.perplexity));
  if (in.cv_folds == 1) input_error("input.cv_folds: expected 0 (off) or at least 2 folds");
  if (in.cv_folds > 0 && in.labels.empty()) input_error("input.cv_folds: needs input.labels");
  if (in.affinities == AffinityMode::sparse && !in.distances.empty())
    input_error("input.affinities: sparse affinities need vectors (their neighbour search), not distances");
  if (run.input.contains("neighbor_ef") && in.neighbors == NeighborsMode::exact)
    input_error("input.neighbor_ef: applies to the approximate search, and input.neighbors is exact");
  if (in.neighbors == NeighborsMode::approximate && !in.distances.empty())
    input_error("input.neighbors: approximate searches vectors, not a distance matrix");
  if (in.neighbors == NeighborsMode::approximate && in.affinities == AffinityMode::dense)
    input_error("input.neighbors: approximate needs sparse affinities (input.affinities is dense: every pair, no search)");
  if (m == "hssne") {
    read_fields(run.params, cfg.hssne, hssne_fields(), "params");
    const HssneParams& p = cfg.hssne;
    if (p.rho > 0 && !in.model.empty()) input_error("params.rho: does not apply to a placement into input.model");
    if (p.rho > 0 && in.labels.empty()) input_error("params.rho > 0 needs input.labels (-1 for unknown)");
    if (p.rho > 0 && (in.affinities == AffinityMode::sparse || !in.affinity_matrix.empty()))
      input_error("params.rho: semi-supervised mixing needs dense affinities (input.affinities)");
    if (p.repulsion == HssneRepulsionMode::interpolated) {
      if (in.affinities == AffinityMode::dense)
        input_error("params.repulsion: interpolated repulsion needs sparse affinities, but input.affinities is dense");
      if (!in.distances.empty())
        input_error("params.repulsion: interpolated repulsion needs sparse affinities, which a distance matrix does not give");
      if (p.rho > 0)
        input_error("params.repulsion: interpolated repulsion needs sparse affinities, but params.rho > 0 needs dense ones");
    }
    if (p.rho > 0 && in.neighbors == NeighborsMode::approximate)
      input_error("params.rho: semi-supervised mixing needs dense affinities, which input.neighbors approximate excludes");
  } else {
    read_fields(run.params, cfg.nerv, nerv_fields(), "params");
    if (cfg.nerv.init == NervInit::pca && !in.distances.empty())
      input_error("params.init: pca needs input vectors, not a distance matrix");
    if (m == "snerv" && in.labels.empty() && in.model.empty())
      input_error("input.labels: snerv needs labels (-1 for unknown)");
    if (m == "snerv" && in.metric.candidates > 0 && in.neighbors == NeighborsMode::exact)
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

NeData load_ne_data(const NeRunConfig& cfg, std::optional<int> model_exponent) {
  const NeInputSpec& in = cfg.input;
  NeData d;
  const std::string source = !in.vectors.empty() ? in.vectors : !in.distances.empty() ? in.distances : in.affinity_matrix;
  const std::string key = !in.vectors.empty() ? "input.vectors" : !in.distances.empty() ? "input.distances" : "input.affinity_matrix";
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
  if (in.affinity_matrix.empty()) {
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
  if (in.affinity_matrix.empty()) {
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
  NeLabels L = read_ne_labels(in, d.X.rows, source);
  d.labels = std::move(L.labels);
  d.class_names = std::move(L.class_names);
  d.legend = std::move(L.legend);
  read_keyed("input.names", [&] {  // checked now, read again by the map page
    return read_point_names(in.names, d.X.rows, in.limit, "input.names", source);
  });
  const double perplexity = in.perplexity;
  // (a placement's perplexity is checked against the model's points instead)
  if (in.model.empty() && in.affinity_matrix.empty() && perplexity > 0 &&
      !(perplexity < static_cast<double>(d.X.rows - 1)))
    input_error("input.perplexity: expected < N - 1 = " + std::to_string(d.X.rows - 1) + " for the " +
                std::to_string(d.X.rows) + " points in " + source + ", found " + detail::number_text(perplexity));
  return d;
}

namespace {

NeMethod ne_method(const std::string& m) {
  return m == "hssne" ? NeMethod::hssne : m == "snerv" ? NeMethod::snerv : NeMethod::nerv;
}

}  // namespace

NePlan plan_ne_run(const NeRunConfig& cfg, index_t N, const MemoryInfo& available, bool device, index_t dims) {
  const NeInputSpec& in = cfg.input;
  NePlanInput p;
  p.method = ne_method(cfg.run.method);
  p.points = N;
  p.perplexity = in.perplexity > 0 ? in.perplexity : std::max(2.0, static_cast<double>(N - 1) / 3.0);
  if (p.method == NeMethod::snerv && in.perplexity <= 0)  // the default's largest value (snerv_perplexity)
    p.perplexity = std::max(2.0, std::min(static_cast<double>(N - 1) / 3.0, kSnervMaxDefaultPerplexity));
  p.nerv_double = cfg.nerv.precision == NervPrecision::float64;
  p.mixing = p.method == NeMethod::hssne && cfg.hssne.rho > 0;
  p.from_distances = !in.distances.empty();
  NePlan plan;
  if (!in.affinity_matrix.empty()) {
    plan.sparse = true;
  } else if (in.affinities == AffinityMode::automatic) {
    plan.automatic = true;
    if (p.method == NeMethod::snerv) {
      plan.sparse = true;
    } else if (p.from_distances || p.mixing) {
      plan.sparse = false;  // distances have no neighbour search; mixing needs dense P
    } else if (p.method == NeMethod::hssne && cfg.hssne.repulsion == HssneRepulsionMode::interpolated) {
      plan.sparse = true;  // the grid replaces the all-pairs repulsion of sparse P only
    } else if (in.neighbors == NeighborsMode::approximate) {
      plan.sparse = true;  // asked for a neighbour search: only sparse affinities have one
    } else if (p.method == NeMethod::nerv && cfg.nerv.pairs == NervPairs::approximate) {
      plan.sparse = true;  // the truncated cost sums sparse rows only
    } else {
      p.dense = true;
      const MemoryPlan dense = plan_neighbour_embedding(p, device);
      const double host = dense.host_peak() + (device ? 0.0 : dense.device_peak());
      const bool fits = 2.0 * host <= available.host_bytes && (!device || 2.0 * dense.device_peak() <= available.device_bytes);
      plan.sparse = !(N <= kDenseAutoMaxPoints && fits);
    }
  } else {
    plan.sparse = in.affinities == AffinityMode::sparse;
  }
  p.dense = !plan.sparse;
  // snerv's perplexity 0 (its default) resolves after the model's fit, to at least 2
  if (p.method == NeMethod::snerv && in.perplexity <= 0) snerv_perplexity(0.0, N, 1);
  if (plan.sparse && in.affinity_matrix.empty() && (p.method != NeMethod::snerv || in.perplexity > 0) &&
      in.distances.empty() && static_cast<index_t>(sparse_neighbours(in.perplexity)) > N - 1)
    input_error("input.perplexity: sparse affinities search k = ceil(3 perplexity) = " +
                std::to_string(sparse_neighbours(in.perplexity)) + " neighbours of each point, which needs k <= N - 1 = " +
                std::to_string(N - 1) + " for the " + std::to_string(N) + " points; found perplexity " +
                detail::number_text(in.perplexity));
  plan.approximate = plan.sparse && in.affinity_matrix.empty() && p.method != NeMethod::snerv &&
                     (in.neighbors == NeighborsMode::approximate ||
                      (in.neighbors == NeighborsMode::automatic && !device && N > kExactNeighborsMaxPoints));
  // snerv: approximate = the metric's candidate re-ranking, whose Euclidean search is HNSW where
  // nerv's auto would take it; without the N x N distances its memory is NeRV's plus the candidates
  plan.metric_candidates =
      p.method == NeMethod::snerv && snerv_uses_candidates(snerv_neighbors(in.neighbors), N, plan.sparse);
  if (plan.metric_candidates) {
    plan.approximate = !device && N > kExactNeighborsMaxPoints;
    p.method = NeMethod::nerv;
  }
  p.grid_engine = p.method == NeMethod::hssne && plan.sparse &&
                  (cfg.hssne.repulsion == HssneRepulsionMode::interpolated ||
                   (cfg.hssne.repulsion == HssneRepulsionMode::automatic && N >= kInterpolatedRepulsionMinPoints));
  p.grid_nodes = cfg.hssne.interp_nodes;
  p.nerv_approximate = p.method != NeMethod::hssne && nerv_approximate(cfg.nerv, N, plan.sparse);
  plan.memory = plan_neighbour_embedding(p, device);
  if (plan.metric_candidates) {
    if (in.metric.candidates > 0)  // refused before the model's fit where it can be (k needs a given perplexity)
      snerv_candidates(in.metric.candidates, in.perplexity > 0 ? sparse_neighbours(in.perplexity) : 1, N);
    const double c = in.metric.candidates > 0 ? in.metric.candidates
                                               : std::min<double>(static_cast<double>(N - 1),
                                                                  3.0 * sparse_neighbours(p.perplexity));
    plan.memory.add({"the metric's candidates: their lists and metric distances, 24 N c bytes", "input.metric.candidates",
                     "fewer candidates or a smaller perplexity", 24.0 * static_cast<double>(N) * c,
                     device ? 16.0 * static_cast<double>(N) * c : 0.0});
  }
  if (plan.approximate) {
    // hnswlib's layer 0 (2 M links, a float copy of the point, its label) and the upper layers (M
    // links on 1 / M of the points per layer, so about M / (M - 1) of one layer's links in all)
    const double M = ApproxKnnParams{}.M;
    plan.memory.add({"the approximate search's HNSW index, about N (12 M + 4 d + 16) bytes", "input.neighbors",
                     "use \"exact\" (slower, no index)",
                     static_cast<double>(N) * (12.0 * M + 4.0 * static_cast<double>(dims) + 16.0), 0.0});
  }
  if (!in.affinity_matrix.empty()) plan.memory = MemoryPlan();  // the given P is read already
  return plan;
}

// Affinities of hssne and nerv: given, from a distance matrix, sparse (neighbours on the backend's
// device, rows on the host) or dense from vectors.
AffinityResult ne_affinities(const NeRunConfig& cfg, const NeData& d, const NePlan& plan, Backend& backend, bool quiet,
                             NeighbourSearch* search) {
  const NeInputSpec& in = cfg.input;
  const int threads = backend.threads();
  AffinityResult a;
  if (!in.affinity_matrix.empty()) a.sparse = d.given;
  else if (!in.distances.empty()) a = affinities_from_distances(d.X, in.perplexity, threads);
  else if (plan.sparse) {
    // the neighbour search may square coordinates in float (CUDA, HNSW): it runs at unit scale, and
    // beta is taken back to input units (scaling by 2^-e is exact; beta scales by 4^-e)
    const int e = float_safe_exponent(d.X);
    const MatrixD unit = e ? times_power_of_two(d.X, -e) : MatrixD();
    const MatrixD& X = e ? unit : d.X;
    const int k = sparse_neighbours(in.perplexity);
    const std::string& tag = cfg.run.method;
    const auto t0 = Clock::now();
    NeighbourSearch s;
    s.approximate = plan.approximate;
    KnnGraph g;
    if (plan.approximate) {
      ApproxKnnParams prm;
      prm.ef_search = in.neighbor_ef;
      g = approximate_knn(X, k, cfg.run.seed, threads, prm, StageProgress{tag, "approximate neighbours", quiet});
      const KnnRecall r = estimate_knn_recall(X, g, kNeighborRecallSample, cfg.run.seed, threads);
      s.recall = r.recall;
      s.recall_sample = r.sample;
    } else {
      g = backend.knn_reporting(X, k, StageProgress{tag, "exact neighbours", quiet});
    }
    s.seconds = seconds_since(t0);
    if (!quiet)
      std::fprintf(stderr, "[%s] %s neighbours (k = %d): %s%s\n", tag.c_str(), s.approximate ? "approximate" : "exact",
                   k, format_seconds(s.seconds).c_str(),
                   s.approximate ? (", estimated recall " + detail::number_text(s.recall)).c_str() : "");
    if (search) *search = s;
    a = affinities_from_knn(g, in.perplexity, threads, StageProgress{tag, "affinity rows", quiet});
    for (double& b : a.beta) b = std::ldexp(b, -2 * e);
  } else a = affinities_dense(d.X, in.perplexity, threads);
  return a;
}

QualityRequest ne_quality_request(const NeRunConfig& cfg, index_t N, int threads) {
  QualityRequest req;
  req.ks = {1, 5, 10, 20};
  for (int& k : req.ks) k = static_cast<int>(std::min<index_t>(k, N - 1));
  req.curve = false;
  req.threads = threads;
  req.queries = cfg.quality_sample;  // above kQualitySampleAbove points a seeded subsample by default
  req.seed = cfg.run.seed;
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

SnervNeighbors snerv_neighbors(NeighborsMode mode) {
  return mode == NeighborsMode::exact         ? SnervNeighbors::exact
         : mode == NeighborsMode::approximate ? SnervNeighbors::candidates
                                              : SnervNeighbors::automatic;
}

SnervParams snerv_params(const NeRunConfig& cfg, const NePlan& plan, int scale_exponent) {
  SnervParams p;
  p.metric = cfg.input.metric;
  p.metric.width = std::ldexp(p.metric.width, -scale_exponent);  // exact; 0 (choose) stays 0
  p.nerv = cfg.nerv;
  p.perplexity = cfg.input.perplexity;
  p.sparse = plan.sparse;
  p.neighbors = snerv_neighbors(cfg.input.neighbors);
  p.approximate_candidates = plan.metric_candidates && plan.approximate;
  p.candidate_search.ef_search = cfg.input.neighbor_ef;
  return p;
}

}  // namespace orrery::cli
