#include "orrery/affinity.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <string>

#include "orrery/error.hpp"
#include "orrery/knn.hpp"
#include "orrery/math/affinity.hpp"
#include "orrery/math/distance.hpp"
#include "prep/clones.hpp"

namespace orrery {
namespace {

constexpr double kEntropyTol = 1e-10;  // |H - log(perplexity)| reached by the bisection
constexpr int kBisectionSteps = 200;

void check_points(const MatrixD& X) {
  for (index_t n = 0; n < X.rows; ++n)
    for (index_t c = 0; c < X.cols; ++c)
      if (!std::isfinite(X(n, c)))
        input_error("vectors: row " + std::to_string(n + 1) + ", column " + std::to_string(c + 1) +
                    " is not a finite number");
}

// Duplicate points are legal: their distance-0 neighbors get the largest probabilities. Only a
// point whose every candidate neighbor (`candidates`: all other points, or its k nearest) is an
// identical copy has no neighborhood to calibrate.
[[noreturn]] void no_neighborhood_error(index_t row, const std::string& candidates) {
  input_error("vectors: row " + std::to_string(row + 1) + ": " + candidates +
              " identical to it, so its neighbor probabilities are not defined; remove duplicates" +
              (candidates.rfind("every other", 0) == 0 ? "" : " or lower the perplexity"));
}

int threads_or_default(int threads) { return threads > 0 ? threads : omp_get_max_threads(); }

}  // namespace

double SparseAffinity::at(index_t i, index_t j) const {
  const auto b = col.begin() + row_ptr[static_cast<size_t>(i)], e = col.begin() + row_ptr[static_cast<size_t>(i) + 1];
  const auto it = std::lower_bound(b, e, j);
  return it != e && *it == j ? val[static_cast<size_t>(it - col.begin())] : 0.0;
}

namespace {

// Row i's bandwidth (returned) and conditional probabilities p[l] = p_{l|i} (p[i] = 0) from its
// squared distances d2 (N entries). Cloned: the perplexity search is N exps per step, which run
// four to a vector with AVX2.
ORRERY_CLONES double calibrate_row(const double* d2, index_t N, index_t i, double perplexity, double* p) {
  const double beta =
      math::bandwidth_for_perplexity<double, index_t>(d2, N, i, perplexity, kEntropyTol, kBisectionSteps);
  double log_z, shift;
  math::row_entropy<double, index_t>(d2, N, i, beta, &log_z, &shift);
  // -beta (d2 - shift) <= 0 and log Z >= 0 (the nearest point contributes exp(0) = 1 to Z).
#pragma omp simd
  for (index_t l = 0; l < N; ++l) p[l] = math::exp_nonpositive(-beta * (d2[l] - shift) - log_z);
  p[i] = 0.0;
  return beta;
}

// d2[l] = |q - x_l|^2 for every point l of row-major X (n x d); cloned like calibrate_row.
ORRERY_CLONES void squared_distances_row(const double* X, index_t n, int d, const double* q, double* d2) {
  for (index_t l = 0; l < n; ++l) d2[l] = math::squared_distance(q, X + l * d, d);
}

// Dense affinities from rows of squared distances: row(i, d2) fills d2 (N entries) for point i.
template <class Row>
AffinityResult dense_from_rows(index_t N, double perplexity, int threads, const Row& row) {
  if (N < 3 || !(perplexity > 1.0) || !(perplexity < static_cast<double>(N - 1)))
    input_error("perplexity: expected 1 < perplexity < N - 1 = " + std::to_string(N - 1) + " for " +
                std::to_string(N) + " points, found " + std::to_string(perplexity));
  AffinityResult res;
  res.beta.assign(static_cast<size_t>(N), 0.0);
  MatrixD cond(N, N, 0.0);
  index_t lonely = N;  // the first row with no positive distance (reported after the parallel loop)
#pragma omp parallel num_threads(threads_or_default(threads))
  {
    std::vector<double> d2(static_cast<size_t>(N));
#pragma omp for schedule(dynamic, 16) reduction(min : lonely)
    for (index_t i = 0; i < N; ++i) {
      row(i, d2);
      if (std::all_of(d2.begin(), d2.end(), [](double v) { return v == 0.0; })) lonely = std::min(lonely, i);
      res.beta[static_cast<size_t>(i)] = calibrate_row(d2.data(), N, i, perplexity, cond.row(i));
    }
  }
  if (lonely < N) no_neighborhood_error(lonely, "every other point is");
  res.dense = MatrixD(N, N, 0.0);
  const double scale = 0.5 / static_cast<double>(N);
  for (index_t i = 0; i < N; ++i)
    for (index_t j = 0; j < N; ++j) res.dense(i, j) = (cond(i, j) + cond(j, i)) * scale;
  res.conditional = std::move(cond);
  return res;
}

}  // namespace

AffinityResult affinities_dense(const MatrixD& X, double perplexity, int threads) {
  return affinities_dense_paired(X, X, perplexity, threads);
}

AffinityResult affinities_dense_paired(const MatrixD& R, const MatrixD& Q, double perplexity, int threads) {
  check_points(R);
  if (&Q != &R) check_points(Q);
  if (Q.rows != R.rows || Q.cols != R.cols)
    internal_error("affinities_dense_paired: queries and reference differ in shape");
  const int d = static_cast<int>(R.cols);
  return dense_from_rows(R.rows, perplexity, threads, [&](index_t i, std::vector<double>& d2) {
    squared_distances_row(R.data.data(), R.rows, d, Q.row(i), d2.data());
  });
}

AffinityResult affinities_from_distances(const MatrixD& D, double perplexity, int threads) {
  const index_t N = D.rows;
  if (D.cols != N)
    input_error("distances: expected a square N x N matrix, found " + std::to_string(D.rows) + " x " +
                std::to_string(D.cols));
  for (index_t i = 0; i < N; ++i)
    for (index_t j = 0; j < N; ++j) {
      const double v = D(i, j);
      if (!std::isfinite(v) || v < 0)
        input_error("distances: row " + std::to_string(i + 1) + ", column " + std::to_string(j + 1) +
                    ": expected a finite non-negative distance, found " + std::to_string(v));
      if (i == j && v != 0)
        input_error("distances: row " + std::to_string(i + 1) + " has a non-zero diagonal entry " + std::to_string(v));
      if (std::abs(v - D(j, i)) > 1e-9 * std::max(1.0, v))
        input_error("distances: not symmetric at rows " + std::to_string(i + 1) + " and " + std::to_string(j + 1));
    }
  return dense_from_rows(N, perplexity, threads, [&](index_t i, std::vector<double>& d2) {
    for (index_t l = 0; l < N; ++l) d2[l] = D(i, l) * D(i, l);
  });
}

namespace {

void check_sparse_perplexity(index_t N, double perplexity) {
  const double k_real = sparse_neighbors(perplexity);
  if (N < 3 || !(perplexity > 1.0) || k_real > static_cast<double>(N - 1))
    input_error("perplexity: sparse affinities use k = ceil(3 perplexity) neighbors, so perplexity must be in (1, " +
                std::to_string((N - 1) / 3.0) + "] for " + std::to_string(N) + " points; found " +
                std::to_string(perplexity));
}

// Transpose of a CSR matrix; walking rows in order leaves every transposed row's columns ascending.
SparseAffinity transpose(const SparseAffinity& A) {
  const auto n = static_cast<size_t>(A.num_points);
  SparseAffinity T;
  T.num_points = A.num_points;
  T.row_ptr.assign(n + 1, 0);
  for (index_t j : A.col) ++T.row_ptr[static_cast<size_t>(j) + 1];
  for (size_t i = 0; i < n; ++i) T.row_ptr[i + 1] += T.row_ptr[i];
  T.col.resize(A.col.size());
  T.val.resize(A.val.size());
  std::vector<index_t> next(T.row_ptr.begin(), T.row_ptr.end() - 1);
  for (size_t i = 0; i < n; ++i)
    for (index_t q = A.row_ptr[i]; q < A.row_ptr[i + 1]; ++q) {
      const auto at = static_cast<size_t>(next[static_cast<size_t>(A.col[static_cast<size_t>(q)])]++);
      T.col[at] = static_cast<index_t>(i);
      T.val[at] = A.val[static_cast<size_t>(q)];
    }
  return T;
}

// scale (A + B) for CSR matrices with ascending columns: rows merged in parallel (sizes first).
SparseAffinity scaled_sum(const SparseAffinity& A, const SparseAffinity& B, double scale, int threads) {
  const index_t N = A.num_points;
  const auto n = static_cast<size_t>(N);
  SparseAffinity S;
  S.num_points = N;
  S.row_ptr.assign(n + 1, 0);
  // merge(i, emit) walks both rows of i in column order; emit(col, value) once per distinct column
  auto merge = [&](index_t i, auto&& emit) {
    const auto r = static_cast<size_t>(i);
    index_t p = A.row_ptr[r], pe = A.row_ptr[r + 1], q = B.row_ptr[r], qe = B.row_ptr[r + 1];
    while (p < pe || q < qe) {
      const index_t ca = p < pe ? A.col[static_cast<size_t>(p)] : N, cb = q < qe ? B.col[static_cast<size_t>(q)] : N;
      if (ca == cb) emit(ca, (A.val[static_cast<size_t>(p++)] + B.val[static_cast<size_t>(q++)]) * scale);
      else if (ca < cb) emit(ca, A.val[static_cast<size_t>(p++)] * scale);
      else emit(cb, B.val[static_cast<size_t>(q++)] * scale);
    }
  };
#pragma omp parallel for schedule(static) num_threads(threads_or_default(threads))
  for (index_t i = 0; i < N; ++i) {
    index_t m = 0;
    merge(i, [&](index_t, double) { ++m; });
    S.row_ptr[static_cast<size_t>(i) + 1] = m;
  }
  for (size_t i = 0; i < n; ++i) S.row_ptr[i + 1] += S.row_ptr[i];
  S.col.resize(static_cast<size_t>(S.row_ptr[n]));
  S.val.resize(S.col.size());
#pragma omp parallel for schedule(static) num_threads(threads_or_default(threads))
  for (index_t i = 0; i < N; ++i) {
    auto at = static_cast<size_t>(S.row_ptr[static_cast<size_t>(i)]);
    merge(i, [&](index_t c, double v) {
      S.col[at] = c;
      S.val[at++] = v;
    });
  }
  return S;
}

}  // namespace

ConditionalRows conditional_rows(const KnnGraph& g, double perplexity, int threads,
                                 const std::function<void(index_t, index_t)>& progress) {
  const index_t N = g.num_points;
  const int k = g.k;
  if (!(perplexity > 1.0) || !(perplexity < k)) internal_error("conditional_rows: perplexity outside (1, k)");
  ConditionalRows rows;
  rows.beta.assign(static_cast<size_t>(N), 0.0);
  rows.p.resize(static_cast<size_t>(N) * k);
  std::atomic<index_t> done{0};
#pragma omp parallel for schedule(static) num_threads(threads_or_default(threads))
  for (index_t i = 0; i < N; ++i) {
    const index_t n = ++done;  // reported from thread 0 only, so the callback needs no lock
    if (progress && omp_get_thread_num() == 0 && n % 1024 == 0) progress(n, N);
    const double* d2 = g.distances2(i);
    // the neighbor list excludes the point itself, so no entry is skipped (skip = -1)
    const double beta = math::bandwidth_for_perplexity<double, index_t>(d2, k, -1, perplexity, kEntropyTol,
                                                                         kBisectionSteps);
    double log_z, shift;
    math::row_entropy<double, index_t>(d2, k, -1, beta, &log_z, &shift);
    rows.beta[static_cast<size_t>(i)] = beta;
    for (int l = 0; l < k; ++l) rows.p[static_cast<size_t>(i * k + l)] = std::exp(-beta * (d2[l] - shift) - log_z);
  }
  return rows;
}

AffinityResult affinities_from_knn(const KnnGraph& g, double perplexity, int threads,
                                   const std::function<void(index_t, index_t)>& progress) {
  const index_t N = g.num_points;
  const int k = g.k;
  check_sparse_perplexity(N, perplexity);
  if (k < sparse_neighbors(perplexity))
    internal_error("affinities_from_knn: the graph has fewer than ceil(3 perplexity) neighbors");
  AffinityResult res;
  for (index_t i = 0; i < N; ++i) {
    const double* d2 = g.distances2(i);
    if (std::all_of(d2, d2 + k, [](double v) { return v == 0.0; }))
      no_neighborhood_error(i, "each of its k = ceil(3 perplexity) = " + std::to_string(k) + " nearest neighbors is");
  }
  ConditionalRows rows = conditional_rows(g, perplexity, threads, progress);
  res.beta = std::move(rows.beta);
  const std::vector<double>& cond = rows.p;
  // Unsymmetrised rows p_{j|i} (NeRV): each neighbor list sorted by column.
  SparseAffinity& C = res.sparse_conditional;
  C.num_points = N;
  C.row_ptr.resize(static_cast<size_t>(N) + 1);
  for (index_t i = 0; i <= N; ++i) C.row_ptr[static_cast<size_t>(i)] = i * k;
  C.col.resize(static_cast<size_t>(N) * k);
  C.val.resize(C.col.size());
#pragma omp parallel num_threads(threads_or_default(threads))
  {
    std::vector<int> order(static_cast<size_t>(k));
#pragma omp for schedule(static)
    for (index_t i = 0; i < N; ++i) {
      const index_t* nb = g.neighbors(i);
      for (int l = 0; l < k; ++l) order[static_cast<size_t>(l)] = l;
      std::sort(order.begin(), order.end(), [&](int x, int y) { return nb[x] < nb[y]; });
      for (int l = 0; l < k; ++l) {
        C.col[static_cast<size_t>(i * k + l)] = nb[order[static_cast<size_t>(l)]];
        C.val[static_cast<size_t>(i * k + l)] = cond[static_cast<size_t>(i * k + order[static_cast<size_t>(l)])];
      }
    }
  }
  // Symmetrise: (p_{j|i} + p_{i|j}) / 2N over the union of both neighbor lists.
  res.sparse = scaled_sum(C, transpose(C), 0.5 / static_cast<double>(N), threads);
  return res;
}

AffinityResult affinities_sparse(const MatrixD& X, double perplexity, int threads) {
  check_points(X);
  check_sparse_perplexity(X.rows, perplexity);
  return affinities_from_knn(exact_knn(X, sparse_neighbors(perplexity), threads), perplexity,
                             threads);
}

double input_scale(MatrixViewD X, bool distance_matrix) {
  const index_t N = X.rows, d = X.cols;
  // Deviations from the column means (vectors) or the off-diagonal distances themselves, divided
  // by their largest magnitude before squaring, so no square overflows or underflows.
  std::vector<double> mean(static_cast<size_t>(d), 0.0);
  if (!distance_matrix)
    for (index_t n = 0; n < N; ++n)
      for (index_t c = 0; c < d; ++c) mean[static_cast<size_t>(c)] += X(n, c) / static_cast<double>(N);
  auto each = [&](auto&& f) {
    for (index_t n = 0; n < N; ++n)
      for (index_t c = 0; c < d; ++c)
        if (!distance_matrix || c != n) f(X(n, c) - mean[static_cast<size_t>(c)]);
  };
  double top = 0.0, count = 0.0;
  each([&](double v) { top = std::max(top, std::abs(v)), count += 1.0; });
  if (!(top > 0.0) || !std::isfinite(top)) return 1.0;
  double sum = 0.0;
  each([&](double v) { sum += (v / top) * (v / top); });
  const double scale = top * std::sqrt(sum / count);
  return scale > 0.0 && std::isfinite(scale) ? scale : 1.0;  // non-finite input is the caller's to report
}

int float_safe_exponent(MatrixViewD X, bool distance_matrix) {
  const int e = std::ilogb(input_scale(X, distance_matrix));
  return std::abs(e) > 16 ? e : 0;
}

int double_safe_exponent(MatrixViewD X, bool distance_matrix) {
  const int e = std::ilogb(input_scale(X, distance_matrix));
  return std::abs(e) > kDoubleSafeExponent ? e : 0;
}

MatrixD times_power_of_two(MatrixViewD X, int e) {
  MatrixD U(X.rows, X.cols);
  for (index_t i = 0; i < X.rows; ++i)
    for (index_t j = 0; j < X.cols; ++j) U(i, j) = std::ldexp(X(i, j), e);
  return U;
}

DuplicatePoints find_duplicates(MatrixViewD X, bool distance_matrix) {
  const index_t N = X.rows;
  DuplicatePoints r;
  auto note = [&r](index_t first, index_t second) {
    ++r.count;
    if (r.second < 0 || second < r.second || (second == r.second && first < r.first)) r.first = first, r.second = second;
  };
  if (distance_matrix) {
    for (index_t j = 0; j < N; ++j)
      for (index_t i = 0; i < j; ++i)
        if (X(i, j) == 0.0) {
          note(i, j);
          break;
        }
    return r;
  }
  // Rows sorted lexicographically (ties by row number): identical rows are adjacent, the first
  // of each run the earliest.
  std::vector<index_t> order(static_cast<size_t>(N));
  for (index_t i = 0; i < N; ++i) order[static_cast<size_t>(i)] = i;
  auto same = [&](index_t a, index_t b) { return std::equal(X.row(a), X.row(a) + X.cols, X.row(b)); };
  std::stable_sort(order.begin(), order.end(), [&](index_t a, index_t b) {
    return std::lexicographical_compare(X.row(a), X.row(a) + X.cols, X.row(b), X.row(b) + X.cols);
  });
  for (size_t q = 1, head = 0; q < order.size(); ++q) {
    if (same(order[head], order[q])) note(order[head], order[q]);
    else head = q;
  }
  return r;
}

SparseAffinity affinities_from_entries(index_t N, index_t cols, const std::vector<index_t>& row,
                                       const std::vector<index_t>& col, const std::vector<double>& val,
                                       const std::string& what, int threads) {
  if (N != cols)
    input_error(what + ": expected a square N x N affinity matrix, found " + std::to_string(N) + " x " +
                std::to_string(cols));
  if (N < 3) input_error(what + ": needs at least 3 points");
  double total = 0.0;
  for (size_t q = 0; q < val.size(); ++q) {
    if (val[q] < 0)
      input_error(what + ": entry (" + std::to_string(row[q] + 1) + ", " + std::to_string(col[q] + 1) +
                  ") is negative");
    if (row[q] == col[q] && val[q] != 0)
      input_error(what + ": diagonal entry at row " + std::to_string(row[q] + 1) + " (a point is not its own neighbor)");
    total += val[q];
  }
  if (!(total > 0)) input_error(what + ": all entries are zero");
  // A point without a single nonzero affinity has no attraction and no defined place on the map.
  // Checked by count before anything is sized by N, so a header declaring 2^31 points over a few
  // entries is refused without allocating for them; the per-point check follows the symmetrisation.
  if (static_cast<double>(N) > 2.0 * static_cast<double>(val.size()))
    input_error(what + ": declares " + std::to_string(N) + " points but holds " + std::to_string(val.size()) +
                " entries, so some point has no affinity; every point needs at least one nonzero entry");
  // rows by a counting sort, columns sorted and repeats summed within each row
  const auto n = static_cast<size_t>(N);
  SparseAffinity A;
  A.num_points = N;
  A.row_ptr.assign(n + 1, 0);
  for (index_t r : row) ++A.row_ptr[static_cast<size_t>(r) + 1];
  for (size_t i = 0; i < n; ++i) A.row_ptr[i + 1] += A.row_ptr[i];
  std::vector<std::pair<index_t, double>> e(val.size());
  {
    std::vector<index_t> next(A.row_ptr.begin(), A.row_ptr.end() - 1);
    for (size_t q = 0; q < val.size(); ++q) e[static_cast<size_t>(next[static_cast<size_t>(row[q])]++)] = {col[q], val[q]};
  }
  std::vector<index_t> ptr(1, 0);
  for (size_t i = 0; i < n; ++i) {
    auto b = e.begin() + A.row_ptr[i], f = e.begin() + A.row_ptr[i + 1];
    std::stable_sort(b, f, [](const auto& x, const auto& y) { return x.first < y.first; });
    for (auto it = b; it != f; ++it) {
      if (it->second == 0.0 || it->first == static_cast<index_t>(i)) continue;
      if (static_cast<index_t>(A.col.size()) > ptr.back() && A.col.back() == it->first) A.val.back() += it->second;
      else A.col.push_back(it->first), A.val.push_back(it->second);
    }
    ptr.push_back(static_cast<index_t>(A.col.size()));
  }
  A.row_ptr = std::move(ptr);
  SparseAffinity P = scaled_sum(A, transpose(A), 0.5 / total, threads);
  for (index_t i = 0; i < N; ++i)
    if (P.row_ptr[static_cast<size_t>(i) + 1] == P.row_ptr[static_cast<size_t>(i)])
      input_error(what + ": point " + std::to_string(i + 1) +
                  " has no nonzero affinity (its row and column are empty); every point needs at least one");
  return P;
}

SparseAffinity affinities_from_neighbor_graph(index_t N, index_t cols, const std::vector<index_t>& row,
                                              const std::vector<index_t>& col, const std::vector<double>& dist,
                                              double perplexity, const std::string& what, int threads,
                                              NeighborGraphSummary* summary) {
  if (N != cols)
    input_error(what + ": expected a square N x N neighbor graph, found " + std::to_string(N) + " x " +
                std::to_string(cols));
  if (N < 3) input_error(what + ": needs at least 3 points");
  if (!(perplexity > 1.0)) internal_error("affinities_from_neighbor_graph: perplexity must exceed 1");
  // the same guard as affinities_from_entries: a header declaring far more points than entries
  if (static_cast<double>(N) > static_cast<double>(dist.size()))
    input_error(what + ": declares " + std::to_string(N) + " points but lists " + std::to_string(dist.size()) +
                " neighbor pairs, so some row has no neighbor; every point needs at least one");
  const auto n = static_cast<size_t>(N);
  // rows by a counting sort (diagonal entries left out), then each row's columns sorted
  std::vector<index_t> ptr(n + 1, 0);
  for (size_t q = 0; q < dist.size(); ++q) {
    if (!(dist[q] >= 0.0) || !std::isfinite(dist[q]))
      input_error(what + ": entry (" + std::to_string(row[q] + 1) + ", " + std::to_string(col[q] + 1) + "): distance " +
                  std::to_string(dist[q]) + " is not a finite non-negative number");
    if (row[q] != col[q]) ++ptr[static_cast<size_t>(row[q]) + 1];
  }
  for (size_t i = 0; i < n; ++i) ptr[i + 1] += ptr[i];
  std::vector<std::pair<index_t, double>> e(static_cast<size_t>(ptr[n]));
  {
    std::vector<index_t> next(ptr.begin(), ptr.end() - 1);
    for (size_t q = 0; q < dist.size(); ++q)
      if (row[q] != col[q]) e[static_cast<size_t>(next[static_cast<size_t>(row[q])]++)] = {col[q], dist[q] * dist[q]};
  }
  NeighborGraphSummary s;
  s.entries = ptr[n];
  s.min_neighbors = N;
  for (size_t i = 0; i < n; ++i) {
    const index_t m = ptr[i + 1] - ptr[i];
    if (m == 0)
      input_error(what + ": row " + std::to_string(i + 1) + " lists no neighbor (diagonal entries do not count); every "
                  "point needs at least one");
    s.min_neighbors = std::min(s.min_neighbors, m);
    s.max_neighbors = std::max(s.max_neighbors, m);
    if (static_cast<double>(m) <= perplexity) ++s.short_rows;
    auto b = e.begin() + ptr[i], f = e.begin() + ptr[i + 1];
    std::sort(b, f, [](const auto& x, const auto& y) { return x.first < y.first; });
    for (auto it = b + 1; it < f; ++it)
      if (it->first == (it - 1)->first)
        input_error(what + ": the pair (" + std::to_string(i + 1) + ", " + std::to_string(it->first + 1) +
                    ") is listed twice");
    if (std::all_of(b, f, [](const auto& x) { return x.second == 0.0; }))
      input_error(what + ": row " + std::to_string(i + 1) + ": every listed neighbor is at distance 0 (identical to "
                  "it), so its neighbor probabilities are not defined; remove duplicates or list more neighbors");
  }
  s.reachable_perplexity = std::min(perplexity, static_cast<double>(s.min_neighbors));
  // each row's p_{j|i}, calibrated on its own list: rows that cannot reach the perplexity are uniform
  std::vector<index_t> rows_out(e.size()), cols_out(e.size());
  std::vector<double> p(e.size());
#pragma omp parallel num_threads(threads_or_default(threads))
  {
    std::vector<double> d2;
#pragma omp for schedule(dynamic, 256)
    for (index_t i = 0; i < N; ++i) {
      const index_t lo = ptr[static_cast<size_t>(i)], m = ptr[static_cast<size_t>(i) + 1] - lo;
      d2.resize(static_cast<size_t>(m));
      for (index_t l = 0; l < m; ++l) d2[static_cast<size_t>(l)] = e[static_cast<size_t>(lo + l)].second;
      const double beta = static_cast<double>(m) <= perplexity
                              ? 0.0
                              : math::bandwidth_for_perplexity<double, index_t>(d2.data(), m, -1, perplexity,
                                                                                 kEntropyTol, kBisectionSteps);
      double log_z, shift;
      math::row_entropy<double, index_t>(d2.data(), m, -1, beta, &log_z, &shift);
      for (index_t l = 0; l < m; ++l) {
        const auto q = static_cast<size_t>(lo + l);
        rows_out[q] = i;
        cols_out[q] = e[q].first;
        p[q] = std::exp(-beta * (d2[static_cast<size_t>(l)] - shift) - log_z);
      }
    }
  }
  if (summary) *summary = s;
  return affinities_from_entries(N, N, rows_out, cols_out, p, what, threads);
}

}  // namespace orrery
