// Approximate kNN with an HNSW graph (hnswlib, Debian's libhnswlib-dev, header-only), and the recall
// estimate that goes with it.
//
// hnswlib answers in float distances and in its own order; the lists are re-ranked here in double
// (exact_knn's squared_distance), so the distances and ties follow exact_knn's conventions and only
// the membership of a list can differ from the exact graph. Points are inserted in batches of fixed
// sizes (build_index: each batch searched in parallel against the graph of the points before it,
// then linked as hnswlib links them one by one; hnswlib's own concurrent insertion links points in
// whatever order the threads reach them), and queries are independent reads of the finished graph,
// so the result does not depend on threads.
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <queue>
#include <cstdint>
#include <atomic>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

// hnswlib.h defines non-inline functions: include it in this one translation unit only.
#include <hnswlib/hnswlib.h>

#include "orrery/error.hpp"
#include "orrery/knn.hpp"
#include "orrery/math/distance.hpp"
#include "prep/breadth_first.hpp"
#include "prep/clones.hpp"
#include "prep/knn_row.hpp"

namespace orrery {
namespace {

int threads_or_default(int threads) { return threads > 0 ? threads : omp_get_max_threads(); }

void to_float(const MatrixD& X, index_t i, std::vector<float>& row) {
  for (index_t c = 0; c < X.cols; ++c) row[static_cast<size_t>(c)] = static_cast<float>(X(i, c));
}

// Reports progress from thread 0 only, every 256 of its units, so the callback needs no lock.
struct ProgressTicker {
  const KnnProgress& progress;
  index_t total;
  std::atomic<index_t> done{0};
  void tick(index_t offset) {
    const index_t n = ++done;
    if (progress && omp_get_thread_num() == 0 && n % 256 == 0) progress(offset + n, total);
  }
};

// Squared Euclidean distance of two float rows, hnswlib's distance function, in the machine's vectors
// (ORRERY_CLONES): hnswlib's own L2Space picks AVX only when the build targets it, and this build
// targets the x86-64 baseline, so it ran in SSE, four floats at a time without FMA.
ORRERY_CLONES float l2_squared(const void* a, const void* b, const void* dim) {
  const float* __restrict x = static_cast<const float*>(a);
  const float* __restrict y = static_cast<const float*>(b);
  const size_t d = *static_cast<const size_t*>(dim);
  float s = 0.0f;
  ORRERY_SIMD(reduction(+ : s))
  for (size_t i = 0; i < d; ++i) {
    const float t = x[i] - y[i];
    s += t * t;
  }
  return s;
}

class L2Space final : public hnswlib::SpaceInterface<float> {
 public:
  explicit L2Space(size_t dim) : dim_(dim) {}
  size_t get_data_size() override { return dim_ * sizeof(float); }
  hnswlib::DISTFUNC<float> get_dist_func() override { return &l2_squared; }
  void* get_dist_func_param() override { return &dim_; }

 private:
  size_t dim_;
};

// An HNSW graph over the rows of X (the space must outlive it), points inserted in index order on
// one thread unless params.parallel_build; progress ticks once per point.
struct Index {
  L2Space space;
  std::unique_ptr<hnswlib::HierarchicalNSW<float>> graph;
  explicit Index(int d) : space(static_cast<size_t>(d)) {}
};

using Graph = hnswlib::HierarchicalNSW<float>;
using Node = hnswlib::tableint;
using Candidates = std::priority_queue<std::pair<float, Node>, std::vector<std::pair<float, Node>>, Graph::CompareByFirst>;

// The first points are inserted one at a time (hnswlib's addPoint); from there in batches of
// 1/kBatchFraction of the points already in the graph, at most kBatchMax. A point does not see the
// others of its batch while it searches (they are linked after), so a batch is kept a small part of
// the graph: recall at a given ef is that of the one-at-a-time build within 1e-3 (bench/README.md).
constexpr index_t kSequentialPoints = 2048;
constexpr index_t kBatchFraction = 32;
constexpr index_t kBatchMax = 4096;

// Points [b0, b1) into the graph of [0, b0): hnswlib's addPoint split in phases. Sequentially, in
// index order: each point's id (its index), level (the graph's level generator, drawn in index order
// as addPoint draws it), data and empty lists. In parallel: each point's descent and its search at
// each of its levels against the graph as it stood before the batch, and the neighbours hnswlib's
// heuristic selects from the candidates (mutuallyConnectNewElement's first half). In parallel over
// the points: their own lists. Then the reverse links: each neighbour's list gets the batch's points
// that selected it in index order, appended or re-selected by the heuristic as
// mutuallyConnectNewElement does; lists are independent, so they are updated in parallel, each in
// index order. Last, sequentially, the entry point and top level as addPoint leaves them. Every step
// is the same for any thread count.
void insert_batch(Graph& g, const MatrixD& X, index_t b0, index_t b1, int nt) {
  const index_t B = b1 - b0;
  const size_t d = static_cast<size_t>(X.cols);
  std::vector<int> level(static_cast<size_t>(B));
  {
    std::vector<float> row(d);
    for (index_t i = b0; i < b1; ++i) {
      const Node c = static_cast<Node>(g.cur_element_count++);
      if (static_cast<index_t>(c) != i) internal_error("approximate_knn: an HNSW id is not its row");
      g.label_lookup_[static_cast<hnswlib::labeltype>(i)] = c;
      const int l = g.getRandomLevel(g.mult_);
      level[static_cast<size_t>(i - b0)] = l;
      g.element_levels_[c] = l;
      std::memset(g.data_level0_memory_ + c * g.size_data_per_element_ + g.offsetLevel0_, 0, g.size_data_per_element_);
      const hnswlib::labeltype label = static_cast<hnswlib::labeltype>(i);
      std::memcpy(g.getExternalLabeLp(c), &label, sizeof(label));
      to_float(X, i, row);
      std::memcpy(g.getDataByInternalId(c), row.data(), g.data_size_);
      if (l > 0) {
        g.linkLists_[c] = static_cast<char*>(std::malloc(g.size_links_per_element_ * static_cast<size_t>(l) + 1));
        if (!g.linkLists_[c]) throw std::bad_alloc();
        std::memset(g.linkLists_[c], 0, g.size_links_per_element_ * static_cast<size_t>(l) + 1);
      }
    }
  }
  const Node entry = g.enterpoint_node_;
  const int top = g.maxlevel_;
  // selected[p][l]: point b0 + p's neighbours at level l, as mutuallyConnectNewElement orders them
  std::vector<std::vector<std::vector<Node>>> selected(static_cast<size_t>(B));
#pragma omp parallel for schedule(dynamic, 16) num_threads(nt)
  for (index_t p = 0; p < B; ++p) {
    const Node c = static_cast<Node>(b0 + p);
    const void* q = g.getDataByInternalId(c);
    const int l = level[static_cast<size_t>(p)];
    Node cur = entry;
    if (l < top) {
      float best = g.fstdistfunc_(q, g.getDataByInternalId(cur), g.dist_func_param_);
      for (int lev = top; lev > l; --lev)
        for (bool changed = true; changed;) {
          changed = false;
          const auto* list = g.get_linklist(cur, lev);
          const int size = g.getListCount(const_cast<hnswlib::linklistsizeint*>(list));
          const Node* nb = reinterpret_cast<const Node*>(list + 1);
          for (int j = 0; j < size; ++j) {
            const float dist = g.fstdistfunc_(q, g.getDataByInternalId(nb[j]), g.dist_func_param_);
            if (dist < best) best = dist, cur = nb[j], changed = true;
          }
        }
    }
    auto& mine = selected[static_cast<size_t>(p)];
    mine.resize(static_cast<size_t>(std::min(l, top) + 1));
    for (int lev = std::min(l, top); lev >= 0; --lev) {
      Candidates cand = g.searchBaseLayer(cur, q, lev);
      g.getNeighborsByHeuristic2(cand, g.M_);
      std::vector<Node>& s = mine[static_cast<size_t>(lev)];
      for (; !cand.empty(); cand.pop()) s.push_back(cand.top().second);
      cur = s.back();  // the nearest: the next level's entry, as mutuallyConnectNewElement returns it
    }
  }
  // their own lists, and the reverse links (neighbour, level, point) in the order the one-at-a-time
  // build makes them per neighbour
  struct Link {
    Node to;
    int lev;
    Node from;
  };
  std::vector<Link> links;
  for (index_t p = 0; p < B; ++p) {
    const Node c = static_cast<Node>(b0 + p);
    const auto& mine = selected[static_cast<size_t>(p)];
    for (int lev = 0; lev < static_cast<int>(mine.size()); ++lev) {
      const std::vector<Node>& s = mine[static_cast<size_t>(lev)];
      auto* ll = g.get_linklist_at_level(c, lev);
      g.setListCount(ll, static_cast<unsigned short>(s.size()));
      std::copy(s.begin(), s.end(), reinterpret_cast<Node*>(ll + 1));
      for (Node n : s) links.push_back({n, lev, c});
    }
  }
  std::stable_sort(links.begin(), links.end(),
                   [](const Link& a, const Link& b) { return a.lev != b.lev ? a.lev < b.lev : a.to < b.to; });
  std::vector<size_t> starts;
  for (size_t e = 0; e < links.size(); ++e)
    if (e == 0 || links[e].to != links[e - 1].to || links[e].lev != links[e - 1].lev) starts.push_back(e);
  starts.push_back(links.size());
  const index_t groups = static_cast<index_t>(starts.size()) - 1;
#pragma omp parallel for schedule(dynamic, 64) num_threads(nt)
  for (index_t gi = 0; gi < groups; ++gi)
    for (size_t e = starts[static_cast<size_t>(gi)]; e < starts[static_cast<size_t>(gi) + 1]; ++e) {
      const Link& k = links[e];
      const size_t cap = k.lev ? g.maxM_ : g.maxM0_;
      auto* ll = g.get_linklist_at_level(k.to, k.lev);
      Node* data = reinterpret_cast<Node*>(ll + 1);
      const size_t size = g.getListCount(ll);
      if (size < cap) {
        data[size] = k.from;
        g.setListCount(ll, static_cast<unsigned short>(size + 1));
        continue;
      }
      const char* at = g.getDataByInternalId(k.to);
      Candidates cand;
      cand.emplace(g.fstdistfunc_(g.getDataByInternalId(k.from), at, g.dist_func_param_), k.from);
      for (size_t j = 0; j < size; ++j)
        cand.emplace(g.fstdistfunc_(g.getDataByInternalId(data[j]), at, g.dist_func_param_), data[j]);
      g.getNeighborsByHeuristic2(cand, cap);
      int n = 0;
      for (; !cand.empty(); cand.pop()) data[n++] = cand.top().second;
      g.setListCount(ll, static_cast<unsigned short>(n));
    }
  for (index_t p = 0; p < B; ++p)
    if (level[static_cast<size_t>(p)] > g.maxlevel_) {
      g.enterpoint_node_ = static_cast<Node>(b0 + p);
      g.maxlevel_ = level[static_cast<size_t>(p)];
    }
}

std::unique_ptr<Index> build_index(const MatrixD& X, unsigned long long seed, int nt, const ApproxKnnParams& params,
                                   ProgressTicker& ticker) {
  const index_t N = X.rows;
  if (params.M < 2 || params.ef_construction < 1 || params.ef_search < 1)
    input_error("approximate_knn: expected M >= 2, ef_construction >= 1 and ef_search >= 1");
  if (N > static_cast<index_t>(UINT32_MAX))
    input_error("approximate_knn: at most 2^32 - 1 points (hnswlib's 32-bit ids), found " + std::to_string(N));
  const int d = static_cast<int>(X.cols);
  auto index = std::make_unique<Index>(d);
  index->graph = std::make_unique<hnswlib::HierarchicalNSW<float>>(
      &index->space, static_cast<size_t>(N), static_cast<size_t>(params.M), static_cast<size_t>(params.ef_construction),
      static_cast<size_t>(seed));
  {
    std::vector<float> row(static_cast<size_t>(d));
    to_float(X, 0, row);
    index->graph->addPoint(row.data(), 0);  // the entry point, as hnswlib's own parallel loader does
  }
  if (params.parallel_build) {
#pragma omp parallel num_threads(nt)
    {
      std::vector<float> row(static_cast<size_t>(d));
#pragma omp for schedule(dynamic, 64)
      for (index_t i = 1; i < N; ++i) {
        to_float(X, i, row);
        index->graph->addPoint(row.data(), static_cast<size_t>(i));
        ticker.tick(0);
      }
    }
    return index;
  }
  std::vector<float> row(static_cast<size_t>(d));
  index_t i = 1;
  for (; i < std::min(N, kSequentialPoints); ++i) {
    to_float(X, i, row);
    index->graph->addPoint(row.data(), static_cast<size_t>(i));
    ticker.tick(0);
  }
  while (i < N) {
    const index_t end = std::min(N, i + std::min(kBatchMax, std::max<index_t>(1, i / kBatchFraction)));
    insert_batch(*index->graph, X, i, end, nt);
    for (; i < end; ++i) ticker.tick(0);
  }
  return index;
}

// The indexed points [first, first + count) as offsets from first, in breadth-first order over the
// graph's bottom layer from the entry point (then from each point not reached, in index order):
// consecutive points are graph neighbours, near one another, so queries taken in this order read
// vectors and lists that the queries just before them brought into the cache. The order changes
// which query runs when, never what a query finds.
std::vector<index_t> locality_order(const Graph& g, index_t first, index_t count) {
  const index_t N = static_cast<index_t>(g.cur_element_count);
  const std::vector<index_t> bfs =
      breadth_first(N, static_cast<index_t>(g.enterpoint_node_), [&g](index_t v, const auto& visit) {
        const auto* list = g.get_linklist0(static_cast<Node>(v));
        const int size = g.getListCount(const_cast<hnswlib::linklistsizeint*>(list));
        const Node* nb = reinterpret_cast<const Node*>(list + 1);
        for (int j = 0; j < size; ++j) visit(static_cast<index_t>(nb[j]));
      });
  std::vector<index_t> order;
  order.reserve(static_cast<size_t>(count));
  for (const index_t v : bfs) {
    const auto label = static_cast<index_t>(g.getExternalLabel(static_cast<Node>(v)));
    if (label >= first && label < first + count) order.push_back(label - first);
  }
  return order;
}

// Each query row's k nearest among the indexed rows R, re-ranked in double; `self(i)` is the
// reference row query i must not list (-1: none). A query that reaches fewer than k is searched
// exactly. Queries run in `order` (positions into Q) when it is given, else in index order.
template <class Self>
KnnGraph query_index(Index& index, const MatrixD& R, const MatrixD& Q, int k, int nt, const ApproxKnnParams& params,
                     ProgressTicker& ticker, index_t offset, Self&& self, const std::vector<index_t>* order = nullptr) {
  const index_t M = Q.rows;
  const int d = static_cast<int>(R.cols);
  index.graph->setEf(static_cast<size_t>(std::max(params.ef_search, k + 1)));
  KnnGraph g = sized_graph(M, k);
#pragma omp parallel num_threads(nt)
  {
    std::vector<float> row(static_cast<size_t>(d));
    std::vector<std::pair<double, index_t>> found;
#pragma omp for schedule(dynamic, 64)
    for (index_t at = 0; at < M; ++at) {
      const index_t i = order ? (*order)[static_cast<size_t>(at)] : at;
      const index_t skip = self(i);
      to_float(Q, i, row);
      auto top = index.graph->searchKnn(row.data(), static_cast<size_t>(k) + (skip >= 0 ? 1 : 0));
      found.clear();
      for (; !top.empty(); top.pop()) {
        const auto j = static_cast<index_t>(top.top().second);
        if (j != skip) found.emplace_back(math::squared_distance(Q.row(i), R.row(j), d), j);
      }
      double* hd = g.dist2.data() + i * k;
      index_t* hi = g.index.data() + i * k;
      if (static_cast<int>(found.size()) < k) {
        // fewer than k reached (a part of the graph cut off from the search): this row exactly
        prep::nearest_rows(R, Q.row(i), skip, k, hd, hi);
      } else {
        // Without the query's own row among the k + 1 (many copies of it at distance 0), the
        // k + 1-th is dropped.
        std::sort(found.begin(), found.end());
        for (int l = 0; l < k; ++l) {
          hd[l] = found[static_cast<size_t>(l)].first;
          hi[l] = found[static_cast<size_t>(l)].second;
        }
      }
      ticker.tick(offset);
    }
  }
  return g;
}

// The recall estimate's query points (the first `sample` of a seeded Fisher-Yates shuffle of 0..N-1,
// all when sample >= N) and each one's exact k-th distance among the references (itself excluded).
struct RecallSample {
  std::vector<index_t> rows;
  std::vector<double> kth;
  int k = 0;
  index_t size() const { return static_cast<index_t>(rows.size()); }
  // The share of the sampled lists' entries within their exact k-th distance; listed(s): sample s's
  // k squared distances.
  template <class Listed>
  double recall(Listed&& listed) const {
    index_t found = 0;
    for (index_t s = 0; s < size(); ++s) {
      const double* l = listed(s);
      const double bound = kth[static_cast<size_t>(s)];
      found += std::count_if(l, l + k, [&](double v) { return v <= bound; });
    }
    return size() > 0 ? static_cast<double>(found) / (static_cast<double>(size()) * k) : 1.0;
  }
};

RecallSample recall_sample(const MatrixD& R, const MatrixD& Q, int k, index_t sample, unsigned long long seed, int nt) {
  const index_t N = R.rows;
  std::vector<index_t> order(static_cast<size_t>(N));
  for (index_t i = 0; i < N; ++i) order[static_cast<size_t>(i)] = i;
  const index_t S = std::min(sample, N);
  std::mt19937_64 rng(seed);
  for (index_t s = 0; s < S; ++s) {
    const index_t r = s + static_cast<index_t>(rng() % static_cast<unsigned long long>(N - s));
    std::swap(order[static_cast<size_t>(s)], order[static_cast<size_t>(r)]);
  }
  RecallSample rs;
  rs.rows.assign(order.begin(), order.begin() + S);
  rs.kth.assign(static_cast<size_t>(S), 0.0);
  rs.k = k;
#pragma omp parallel num_threads(nt)
  {
    std::vector<double> hd(static_cast<size_t>(k));
    std::vector<index_t> hi(static_cast<size_t>(k));
#pragma omp for schedule(dynamic, 4)
    for (index_t s = 0; s < S; ++s) {
      const index_t i = rs.rows[static_cast<size_t>(s)];
      prep::nearest_rows(R, Q.row(i), i, k, hd.data(), hi.data());
      rs.kth[static_cast<size_t>(s)] = hd[static_cast<size_t>(k) - 1];
    }
  }
  return rs;
}

// The ef a paired search runs at (ApproxKnnParams::target_recall): ef_search, doubled while the
// sampled queries' recall stays below the target, at most 16 ef_search.
int tuned_ef(Index& index, const MatrixD& R, const MatrixD& Q, int k, int nt, const ApproxKnnParams& params,
             unsigned long long seed, ApproxKnnTuning* tuning) {
  ApproxKnnTuning t;
  t.ef = params.ef_search;
  if (params.target_recall > 0.0) {
    const RecallSample rs = recall_sample(R, Q, k, params.recall_sample, seed, nt);
    MatrixD Qs(rs.size(), Q.cols);
    for (index_t s = 0; s < rs.size(); ++s)
      std::copy(Q.row(rs.rows[static_cast<size_t>(s)]), Q.row(rs.rows[static_cast<size_t>(s)]) + Q.cols, Qs.row(s));
    ApproxKnnParams p = params;
    const int cap = 16 * params.ef_search;
    for (;;) {
      ProgressTicker silent{{}, rs.size()};
      const KnnGraph gs = query_index(index, R, Qs, k, nt, p, silent, 0,
                                      [&](index_t s) { return rs.rows[static_cast<size_t>(s)]; });
      t.ef = p.ef_search;
      t.recall = rs.recall([&](index_t s) { return gs.distances2(s); });
      t.sample = rs.size();
      if (t.recall >= params.target_recall || p.ef_search >= cap) break;
      p.ef_search = std::min(cap, 2 * p.ef_search);
    }
  }
  if (tuning) *tuning = t;
  return t.ef;
}

}  // namespace

KnnGraph approximate_knn(const MatrixD& X, int k, unsigned long long seed, int threads, const ApproxKnnParams& params,
                         const KnnProgress& progress) {
  return approximate_knn_paired(X, X, k, seed, threads, params, progress);
}

KnnGraph approximate_knn_to(const MatrixD& R, const MatrixD& Q, int k, unsigned long long seed, int threads,
                            const ApproxKnnParams& params, const KnnProgress& progress) {
  if (k < 1 || k > R.rows)
    input_error("k: expected 1 <= k <= " + std::to_string(R.rows) + " reference points, found " + std::to_string(k));
  if (Q.cols != R.cols) internal_error("approximate_knn_to: queries and reference differ in dimension");
  const int nt = threads_or_default(threads);
  ProgressTicker ticker{progress, R.rows + Q.rows};
  auto index = build_index(R, seed, nt, params, ticker);
  ticker.done = 0;
  KnnGraph g = query_index(*index, R, Q, k, nt, params, ticker, R.rows, [](index_t) { return index_t(-1); });
  if (progress) progress(R.rows + Q.rows, R.rows + Q.rows);
  return g;
}

KnnGraph approximate_knn_paired(const MatrixD& R, const MatrixD& Q, int k, unsigned long long seed, int threads,
                                const ApproxKnnParams& params, const KnnProgress& progress, ApproxKnnTuning* tuning) {
  const index_t N = R.rows;
  check_knn_k(N, k);
  if (Q.rows != N || Q.cols != R.cols) internal_error("approximate_knn_paired: queries and reference differ in shape");
  const int nt = threads_or_default(threads);
  // The work is N insertions then N queries, of similar cost at ef_construction ~ ef_search.
  ProgressTicker ticker{progress, 2 * N};
  auto index = build_index(R, seed, nt, params, ticker);
  ticker.done = 0;
  ApproxKnnParams at = params;
  at.ef_search = tuned_ef(*index, R, Q, k, nt, params, seed, tuning);
  const std::vector<index_t> order = locality_order(*index->graph, 0, N);
  KnnGraph g = query_index(*index, R, Q, k, nt, at, ticker, N, [](index_t i) { return i; }, &order);
  if (progress) progress(2 * N, 2 * N);
  return g;
}

KnnGraph approximate_knn_paired_rows(const MatrixD& R, const MatrixD& Q, int k, index_t first, index_t count,
                                     unsigned long long seed, int threads, const ApproxKnnParams& params,
                                     const KnnProgress& progress, ApproxKnnTuning* tuning) {
  const index_t N = R.rows;
  check_knn_k(N, k);
  if (Q.rows != N || Q.cols != R.cols) internal_error("approximate_knn_paired_rows: queries and reference differ in shape");
  if (first < 0 || count < 0 || first + count > N) internal_error("approximate_knn_paired_rows: rows out of range");
  const int nt = threads_or_default(threads);
  ProgressTicker ticker{progress, N + count};
  auto index = build_index(R, seed, nt, params, ticker);
  ticker.done = 0;
  MatrixD mine(count, Q.cols);
  std::copy(Q.row(first), Q.row(first) + count * Q.cols, mine.data.begin());
  ApproxKnnParams at = params;
  at.ef_search = tuned_ef(*index, R, Q, k, nt, params, seed, tuning);  // alike on every rank
  const std::vector<index_t> order = locality_order(*index->graph, first, count);
  KnnGraph g = query_index(*index, R, mine, k, nt, at, ticker, N, [first](index_t i) { return first + i; }, &order);
  if (progress) progress(N + count, N + count);
  return g;
}

KnnRecall estimate_knn_recall(const MatrixD& X, const KnnGraph& g, index_t sample, unsigned long long seed,
                              int threads) {
  return estimate_knn_recall_paired(X, X, g, sample, seed, threads);
}

KnnRecall estimate_knn_recall_paired(const MatrixD& R, const MatrixD& Q, const KnnGraph& g, index_t sample,
                                     unsigned long long seed, int threads) {
  if (g.num_points != R.rows || Q.rows != R.rows)
    internal_error("estimate_knn_recall: the graph has another number of points than X");
  const RecallSample rs = recall_sample(R, Q, g.k, sample, seed, threads_or_default(threads));
  return {rs.recall([&](index_t s) { return g.distances2(rs.rows[static_cast<size_t>(s)]); }), rs.size()};
}

}  // namespace orrery
