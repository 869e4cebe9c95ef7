#include "orrery/ne_input.hpp"

#include <cstdio>

#include <algorithm>
#include <cmath>

#include "orrery/clock.hpp"
#include "orrery/comm.hpp"
#include "orrery/engines.hpp"
#include "orrery/error.hpp"
#include "orrery/inner_product.hpp"
#include "orrery/knn.hpp"

namespace orrery {
namespace {

using F = Field<NeInputSpec>;

std::vector<F> input_table(NeMethod m) {
  const bool hssne = m == NeMethod::hssne, snerv = m == NeMethod::snerv;
  const std::string method = ne_method_name(m);
  std::vector<F> t;
  t.push_back({"vectors", &NeInputSpec::vectors,
               snerv ? "N x d points: npy, csv/tsv/txt (optionally .gz) or IDX. Required."
                     : "N x d points: npy, csv/tsv/txt (optionally .gz) or IDX. Give exactly one of vectors, distances"
                       "" + std::string(hssne ? ", neighbor_graph, affinity_matrix." : ".")});
  if (!snerv)
    t.push_back({"distances", &NeInputSpec::distances,
                 "A symmetric N x N distance matrix (zero diagonal) instead of vectors; dense affinities."});
  if (hssne)
    t.push_back({"neighbor_graph", &NeInputSpec::neighbor_graph,
                 "A kNN graph of distances (not squared) instead of vectors: a sparse N x N Matrix Market coordinate "
                 "file (.mtx[.gz]), row i listing point i's neighbors at their distances, rows of any length (scikit-"
                 "learn's kneighbors_graph(mode=\"distance\"), Scanpy's obsp[\"distances\"]). Each row is calibrated "
                 "to input.perplexity on its own list, then made symmetric as the sparse affinities are; a row of at "
                 "most perplexity neighbors gets uniform probabilities, and the report's input.neighbor_graph counts "
                 "such rows and the perplexity every row reaches."});
  if (hssne)
    t.push_back({"affinity_matrix", &NeInputSpec::affinity_matrix,
                 "Precomputed affinities: a sparse N x N Matrix Market coordinate file (.mtx[.gz]; real, integer or "
                 "pattern; general or symmetric), made symmetric as (A + A') / 2 and scaled to sum 1."});
  if (hssne)
    t.push_back({"model", &NeInputSpec::model,
                 "An earlier hssne run's output directory (made from vectors): place the points of input.vectors into "
                 "its map, which stays fixed, instead of making a new map. Each new point's neighbors among the "
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
  if (!snerv)
    t.push_back({"metric", &NeInputSpec::vector_metric,
                 "How vectors are compared: euclidean, cosine (1 - cos, for text and image embeddings), "
                 "correlation (cosine of the centred rows) or inner_product (the dot product <x, y>, a similarity: "
                 "a point's neighbors are the rows of largest inner product with it, for embeddings scored by dot "
                 "products). cosine and correlation scale each row to unit length (centred first for correlation) "
                 "before input.pca and every neighbor search, so the neighbors, the affinities and the quality "
                 "measures' ranks are the metric's; a row of zero length (correlation: a constant row) is an error. "
                 "inner_product keeps the rows as given and searches each point [x, 0] among the points "
                 "[y, sqrt(M^2 - |y|^2)] (M the largest row norm), itself excluded: the squared distance "
                 "|x|^2 + M^2 - 2 <x, y> ranks by inner product and is what the affinities calibrate, so "
                 "p(j|i) ~ exp(2 beta_i <x_i, x_j>); it takes no input.pca (which centres the rows), and its "
                 "neighbor search runs on the host on every device (input.neighbors auto as on the CPU). A "
                 "placement into input.model takes the model's metric."});
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
                 "Effective number of neighbors of the affinities; 0 = the paper's 0.5 N / K (K the model's "
                 "components), clamped to [2, min((N - 1) / 3, 50)] (the cap keeps each point's ceil(3 perplexity) "
                 "neighbors bounded on large N). Otherwise > 1.",
                 0, 1e9});
  else
    t.push_back({"perplexity", &NeInputSpec::perplexity,
                 "Effective number of neighbors of the affinities (< N - 1; sparse: <= (N - 1) / 3).", 1, 1e9, true});
  t.push_back({"affinities", &NeInputSpec::affinities,
               snerv ? "sparse: each point's ceil(3 perplexity) nearest in the metric, NeRV's floor elsewhere; dense: "
                       "every pair; auto = sparse."
                     : "dense: every pair (O(N^2) memory); sparse: each point's ceil(3 perplexity) nearest "
                       "neighbors (input.neighbors); auto: sparse, but dense where it fits in half the memory available "
                       "and (hssne) the sparse lists would hold every pair anyway, N - 1 <= 3 perplexity, or (nerv) "
                       "N <= 10,000; sparse with neighbors approximate, dense from distances."});
  if (snerv)
    t.push_back({"neighbors", &NeInputSpec::neighbors,
                 "How each point's nearest in the learnt metric are found. exact: the metric's distance for every "
                 "pair (N x N doubles, O(N^2) path integrals); approximate: each point's input.metric.candidates "
                 "nearest Euclidean neighbors re-ranked by the metric (no N x N matrix; the Euclidean search is exact "
                 "up to 5,000 points on the CPU and on a GPU, HNSW above; the quality measures then compare the map "
                 "with the input vectors); auto: exact up to 2,000 points or with dense affinities, approximate "
                 "above. approximate needs sparse affinities."});
  else
    t.push_back({"neighbors", &NeInputSpec::neighbors,
                 "The sparse affinities' neighbor search. exact: every pair, O(N^2 d); approximate: an HNSW graph "
                 "(hnswlib, M 48, ef_construction 50, built in parallel batches, reproducible for any thread count; "
                 "queried at neighbor_ef, raised to neighbor_recall_target), its recall "
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
  else {
    t.push_back({"neighbor_ef", &NeInputSpec::neighbor_ef,
                 "The approximate search's first candidate list per query (hnswlib ef; at least k + 1 is used); the "
                 "search doubles it, up to 16 times, until neighbor_recall_target is reached; the query time grows "
                 "about in proportion.",
                 1, 100000});
    t.push_back({"neighbor_recall_target", &NeInputSpec::neighbor_recall_target,
                 "The approximate search's recall, estimated before the search on 1,000 seeded points against their "
                 "exact neighbors, that the query list (neighbor_ef) is raised to reach; the report's "
                 "input.neighbor_recall and input.neighbor_ef_used say what was reached and at which list (a 50-D "
                 "Gaussian mixture of 10^6 points gave 0.94 at 200). 0: the list is neighbor_ef as given.",
                 0, 1});
  }
  t.push_back({"duplicates", &NeInputSpec::duplicates,
               std::string("accept: identical points are data (each one's copies are its nearest neighbors), counted in "
                           "the report as input.duplicate_points; refuse: an error naming the first two identical rows. "
                           "Either way a point whose every candidate neighbor is a copy of it is an error.") +
                   (hssne ? " Not with affinity_matrix or neighbor_graph." : "")});
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

const char* ne_method_name(NeMethod method) {
  return method == NeMethod::hssne ? "hssne" : method == NeMethod::snerv ? "snerv" : "nerv";
}

const char* ne_method_title(NeMethod method) {
  return method == NeMethod::hssne ? "HSSNE" : method == NeMethod::snerv ? "Supervised NeRV" : "NeRV";
}

const std::vector<Field<NeInputSpec>>& ne_input_fields(NeMethod method) {
  static const std::vector<F> hssne = input_table(NeMethod::hssne), nerv = input_table(NeMethod::nerv),
                              snerv = input_table(NeMethod::snerv);
  return method == NeMethod::hssne ? hssne : method == NeMethod::snerv ? snerv : nerv;
}

const NeInputSpec& ne_input_defaults(NeMethod method) {
  static const NeInputSpec common;
  static const NeInputSpec snerv = [] {
    NeInputSpec s;
    s.perplexity = 0.0;
    s.neighbor_ef = ApproxKnnParams{}.ef_search;  // the candidate search's graph has the default 16 links
    return s;
  }();
  return method == NeMethod::snerv ? snerv : common;
}

NePlan plan_ne_run(const NeSpec& cfg, index_t N, const MemoryInfo& available, bool device, index_t dims, int ranks) {
  const NeInputSpec& in = cfg.input;
  NePlanInput p;
  p.method = cfg.method;
  p.points = N;
  p.ranks = ranks;
  p.perplexity = in.perplexity > 0 ? in.perplexity : std::max(2.0, static_cast<double>(N - 1) / 3.0);
  if (p.method == NeMethod::snerv && in.perplexity <= 0)  // the default's largest value (snerv_perplexity)
    p.perplexity = std::max(2.0, std::min(static_cast<double>(N - 1) / 3.0, kSnervMaxDefaultPerplexity));
  p.nerv_double = cfg.nerv.precision == NervPrecision::float64;
  p.mixing = p.method == NeMethod::hssne && cfg.hssne.rho > 0;
  p.from_distances = !in.distances.empty();
  NePlan plan;
  if (given_affinities(in)) {
    plan.sparse = true;
  } else if (in.affinities == AffinityMode::automatic) {
    plan.automatic = true;
    if (p.method == NeMethod::snerv) {
      plan.sparse = true;
    } else if (p.from_distances || p.mixing) {
      plan.sparse = false;  // distances have no neighbor search; mixing needs dense P
    } else if (p.method == NeMethod::hssne && needs_sparse_affinities(cfg.hssne.repulsion)) {
      plan.sparse = true;  // the grid and the tree replace the all-pairs repulsion of sparse P only
    } else if (in.neighbors == NeighborsMode::approximate) {
      plan.sparse = true;  // asked for a neighbor search: only sparse affinities have one
    } else if (p.method == NeMethod::nerv && cfg.nerv.pairs == NervPairs::approximate) {
      plan.sparse = true;  // the truncated cost sums sparse rows only
    } else {
      const bool small = p.method == NeMethod::hssne
                             ? N - 1 <= static_cast<index_t>(sparse_neighbors(p.perplexity))  // every pair a neighbor
                             : N <= kDenseAutoMaxPoints;
      // dense where the size rule allows it and its plan fits in half the memory available
      const auto fits = [&] {
        p.dense = true;
        const MemoryPlan dense = plan_neighbor_embedding(p, device);
        const double host = dense.host_peak() + (device ? 0.0 : dense.device_peak());
        return 2.0 * host <= available.host_bytes && (!device || 2.0 * dense.device_peak() <= available.device_bytes);
      };
      plan.sparse = !(small && fits());
    }
  } else {
    plan.sparse = in.affinities == AffinityMode::sparse;
  }
  p.dense = !plan.sparse;
  // snerv's perplexity 0 (its default) resolves after the model's fit, to at least 2
  if (p.method == NeMethod::snerv && in.perplexity <= 0) snerv_perplexity(0.0, N, 1);
  if (plan.sparse && !given_affinities(in) && (p.method != NeMethod::snerv || in.perplexity > 0) &&
      in.distances.empty() && static_cast<index_t>(sparse_neighbors(in.perplexity)) > N - 1)
    input_error("input.perplexity: sparse affinities search k = ceil(3 perplexity) = " +
                std::to_string(sparse_neighbors(in.perplexity)) + " neighbors of each point, which needs k <= N - 1 = " +
                std::to_string(N - 1) + " for the " + std::to_string(N) + " points; found perplexity " +
                detail::number_text(in.perplexity));
  // inner_product searches on the host on every backend (orrery/inner_product.hpp: a paired
  // query/reference search, which no device offers), so its auto follows the CPU's rule
  const bool inner = in.vector_metric == VectorMetric::inner_product;
  plan.approximate = plan.sparse && !given_affinities(in) && p.method != NeMethod::snerv &&
                     (in.neighbors == NeighborsMode::approximate ||
                      (in.neighbors == NeighborsMode::automatic && (!device || inner) && N > kExactNeighborsMaxPoints));
  // snerv: approximate = the metric's candidate re-ranking, whose Euclidean search is HNSW where
  // nerv's auto would take it; without the N x N distances its memory is NeRV's plus the candidates
  plan.metric_candidates =
      p.method == NeMethod::snerv && snerv_uses_candidates(snerv_neighbors(in.neighbors), N, plan.sparse);
  if (plan.metric_candidates) {
    plan.approximate = !device && N > kExactNeighborsMaxPoints;
    p.method = NeMethod::nerv;
  }
  const HssneRepulsionMode repulsion = auto_repulsion(cfg.hssne, N, true, !device);
  p.grid_engine = p.method == NeMethod::hssne && plan.sparse && repulsion == HssneRepulsionMode::interpolated;
  p.tree_engine = p.method == NeMethod::hssne && plan.sparse && repulsion == HssneRepulsionMode::tree;
  p.grid_nodes = cfg.hssne.interp_nodes;
  p.repulsion_auto = cfg.hssne.repulsion == HssneRepulsionMode::automatic;
  p.nerv_approximate = p.method != NeMethod::hssne && nerv_approximate(cfg.nerv, N, plan.sparse);
  plan.memory = plan_neighbor_embedding(p, device);
  if (plan.metric_candidates) {
    if (in.metric.candidates > 0)  // refused before the model's fit where it can be (k needs a given perplexity)
      snerv_candidates(in.metric.candidates, in.perplexity > 0 ? sparse_neighbors(in.perplexity) : 1, N);
    const double c = in.metric.candidates > 0 ? in.metric.candidates
                                               : std::min<double>(static_cast<double>(N - 1),
                                                                  3.0 * sparse_neighbors(p.perplexity));
    plan.memory.add({"the metric's candidates: their lists and metric distances, 24 N c bytes", "input.metric.candidates",
                     "fewer candidates or a smaller perplexity", 24.0 * static_cast<double>(N) * c,
                     device ? 16.0 * static_cast<double>(N) * c : 0.0});
  }
  if (plan.approximate) {
    // hnswlib's layer 0 (2 M links, a float copy of the point, its label) and the upper layers (M
    // links on 1 / M of the points per layer, so about M / (M - 1) of one layer's links in all)
    const double M = kAffinityLinks;
    plan.memory.add({"the approximate search's HNSW index, about N (12 M + 4 d + 16) bytes", "input.neighbors",
                     "use \"exact\" (slower, no index)",
                     static_cast<double>(N) * (12.0 * M + 4.0 * static_cast<double>(dims) + 16.0), 0.0});
  }
  if (inner && dims > 0 && !given_affinities(in))
    plan.memory.add({"input.metric inner_product's references and queries, 16 N (d + 1) bytes", "input.metric",
                     "fewer points (input.limit)", 16.0 * static_cast<double>(N) * (static_cast<double>(dims) + 1.0),
                     0.0});
  if (dims > 0 && in.distances.empty())  // the quality measures' rank rows read both spaces by dimension
    plan.memory.add({"the quality measures' copies of the input and the map by dimension, N (d + 3) doubles",
                     "input.pca", "a smaller input.pca or fewer points (input.limit)",
                     8.0 * static_cast<double>(N) * (static_cast<double>(dims) + 3.0), 0.0});
  if (given_affinities(in)) plan.memory = MemoryPlan();  // the given P is read already
  return plan;
}

// Affinities of hssne and nerv: given, from a distance matrix, sparse (neighbors on the backend's
// device, rows on the host) or dense from vectors.
namespace {

// A rank's rows of a sharded search, every rank's gathered in rank order: the whole graph.
KnnGraph gathered_graph(const KnnGraph& mine, index_t N, Comm& comm) {
  KnnGraph g = sized_graph(N, mine.k);
  std::vector<std::size_t> counts(static_cast<size_t>(comm.size()));
  for (int r = 0; r < comm.size(); ++r)
    counts[static_cast<size_t>(r)] = static_cast<std::size_t>(hssne_rank_block(N, r, comm.size()).count * mine.k);
  comm.allgatherv(mine.index.data(), mine.index.size(), g.index.data(), counts);
  comm.allgatherv(mine.dist2.data(), mine.dist2.size(), g.dist2.data(), counts);
  return g;
}

}  // namespace

AffinityResult ne_affinities(const NeSpec& cfg, const NeData& d, const NePlan& plan, Backend& backend,
                             const NeStageProgress& progress, NeighborSearch* search, Comm* comm) {
  const auto stage = [&](const char* what) { return progress ? progress(what) : std::function<void(index_t, index_t)>(); };
  const NeInputSpec& in = cfg.input;
  const int threads = backend.threads();
  AffinityResult a;
  if (given_affinities(in)) a.sparse = d.given;
  else if (!in.distances.empty()) a = affinities_from_distances(d.X, in.perplexity, threads);
  else if (plan.sparse) {
    // the neighbor search may square coordinates in float (CUDA, HNSW): it runs at unit scale, and
    // beta is taken back to input units (scaling by 2^-e is exact; beta scales by 4^-e)
    const int e = float_safe_exponent(d.X);
    const MatrixD unit = e ? times_power_of_two(d.X, -e) : MatrixD();
    const MatrixD& X = e ? unit : d.X;
    const int k = sparse_neighbors(in.perplexity);
    // inner_product: each point [x, 0] among the points [y, sqrt(M^2 - |y|^2)], itself excluded
    // (orrery/inner_product.hpp); every other metric: the rows among themselves
    const bool inner = in.vector_metric == VectorMetric::inner_product;
    const MatrixD R = inner ? inner_product_references(X) : MatrixD(), Q = inner ? inner_product_queries(X) : MatrixD();
    const MatrixD& Xr = inner ? R : X;
    const MatrixD& Xq = inner ? Q : X;
    const auto t0 = Clock::now();
    NeighborSearch s;
    s.approximate = plan.approximate;
    KnnGraph g;
    const ApproxKnnParams prm = affinity_search_params(in);
    ApproxKnnTuning tuning;
    if (comm && comm->size() > 1) {  // this rank's rows (the same bits as one process's), then all of them
      const RowBlock mine = hssne_rank_block(X.rows, comm->rank(), comm->size());
      g = gathered_graph(plan.approximate ? approximate_knn_paired_rows(Xr, Xq, k, mine.first, mine.count, cfg.seed,
                                                                        threads, prm, stage("approximate neighbors"),
                                                                        &tuning)
                                          : exact_knn_paired_rows(Xr, Xq, k, mine.first, mine.count, threads,
                                                                  stage("exact neighbors")),
                         X.rows, *comm);
    } else if (plan.approximate) {
      g = approximate_knn_paired(Xr, Xq, k, cfg.seed, threads, prm, stage("approximate neighbors"), &tuning);
    } else if (inner) {
      g = exact_knn_paired(R, Q, k, threads, stage("exact neighbors"));
    } else {
      g = backend.knn_reporting(X, k, stage("exact neighbors"));
    }
    if (plan.approximate) {
      s.ef = tuning.ef;
      if (tuning.sample > 0) {  // estimated before the search, at the ef it ran at: the same figure
        s.recall = tuning.recall;
        s.recall_sample = tuning.sample;
      } else {
        const KnnRecall r = estimate_knn_recall_paired(Xr, Xq, g, kNeighborRecallSample, cfg.seed, threads);
        s.recall = r.recall;
        s.recall_sample = r.sample;
      }
    }
    s.seconds = seconds_since(t0);
    if (search) *search = s;
    a = affinities_from_knn(g, in.perplexity, threads, stage("affinity rows"));
    for (double& b : a.beta) b = std::ldexp(b, -2 * e);
  } else if (in.vector_metric == VectorMetric::inner_product) {
    a = affinities_dense_paired(inner_product_references(d.X), inner_product_queries(d.X), in.perplexity, threads);
  } else a = affinities_dense(d.X, in.perplexity, threads);
  return a;
}

void check_perplexity_bound(double perplexity, index_t N, const std::string& source) {
  if (perplexity > 0 && !(perplexity < static_cast<double>(N - 1)))
    input_error("input.perplexity: expected < N - 1 = " + std::to_string(N - 1) + " for the " + std::to_string(N) +
                " points in " + source + ", found " + detail::number_text(perplexity));
}

SnervNeighbors snerv_neighbors(NeighborsMode mode) {
  return mode == NeighborsMode::exact         ? SnervNeighbors::exact
         : mode == NeighborsMode::approximate ? SnervNeighbors::candidates
                                              : SnervNeighbors::automatic;
}

SnervParams snerv_params(const NeSpec& cfg, const NePlan& plan, int scale_exponent) {
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

}  // namespace orrery
