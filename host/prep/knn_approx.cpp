// Approximate kNN with an HNSW graph (hnswlib, Debian's libhnswlib-dev, header-only), and the recall
// estimate that goes with it.
//
// hnswlib answers in float distances and in its own order; the lists are re-ranked here in double
// (exact_knn's squared_distance), so the distances and ties follow exact_knn's conventions and only
// the membership of a list can differ from the exact graph. Insertion runs on one thread in index
// order (hnswlib's concurrent insertion links points in whatever order the threads reach them), and
// queries are independent reads of the finished graph, so the result does not depend on threads.
#include <omp.h>

#include <algorithm>
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

// An HNSW graph over the rows of X (the space must outlive it), points inserted in index order on
// one thread unless params.parallel_build; progress ticks once per point.
struct Index {
  hnswlib::L2Space space;
  std::unique_ptr<hnswlib::HierarchicalNSW<float>> graph;
  explicit Index(int d) : space(static_cast<size_t>(d)) {}
};

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
#pragma omp parallel num_threads(params.parallel_build ? nt : 1)
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

// Each query row's k nearest among the indexed rows R, re-ranked in double; `self(i)` is the
// reference row query i must not list (-1: none). A query that reaches fewer than k is searched
// exactly.
template <class Self>
KnnGraph query_index(Index& index, const MatrixD& R, const MatrixD& Q, int k, int nt, const ApproxKnnParams& params,
                     ProgressTicker& ticker, index_t offset, Self&& self) {
  const index_t M = Q.rows;
  const int d = static_cast<int>(R.cols);
  index.graph->setEf(static_cast<size_t>(std::max(params.ef_search, k + 1)));
  KnnGraph g = sized_graph(M, k);
#pragma omp parallel num_threads(nt)
  {
    std::vector<float> row(static_cast<size_t>(d));
    std::vector<std::pair<double, index_t>> found;
#pragma omp for schedule(dynamic, 64)
    for (index_t i = 0; i < M; ++i) {
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
  KnnGraph g = query_index(*index, R, Q, k, nt, at, ticker, N, [](index_t i) { return i; });
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
  KnnGraph g = query_index(*index, R, mine, k, nt, at, ticker, N, [first](index_t i) { return first + i; });
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
