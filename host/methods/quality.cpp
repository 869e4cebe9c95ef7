// Quality measures by rows: each point's kmax nearest in each space and the ranks that link the two
// spaces come from Backend::rank_rows (host/cpu/rank_rows.cpp: each point's distances to all others
// computed once, O(N) scratch; kernels/quality.cu: a thread per point); the measures are then sums
// over those rows, integers exactly and reals per chunk in chunk order.
// Total O(Q N (d + D)) time for Q query points (Q = N below the subsample size) and O(Q K_max)
// memory; no N x N array exists.
#include "orrery/quality.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>
#include <random>
#include <string>

#include "orrery/affinity.hpp"
#include "orrery/comm.hpp"
#include "orrery/error.hpp"
#include "orrery/inner_product.hpp"
#include "orrery/math/affinity.hpp"
#include "orrery/backend.hpp"
#include "orrery/math/distance.hpp"
#include "orrery/math/select.hpp"
#include "methods/random.hpp"

namespace orrery {
namespace {

constexpr index_t kChunk = 64;  // rows per reduction chunk (fixed: results independent of threads)
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// Sorted grid of K values: the requested ones plus, for curves, 1..10 and a log-spaced tail.
std::vector<int> k_grid(const QualityRequest& req, int kmax) {
  std::vector<int> g(req.ks.begin(), req.ks.end());
  if (req.curve) {
    for (int k = 1; k <= std::min(kmax, 10); ++k) g.push_back(k);
    for (double k = 10; k < kmax; k *= 1.25) g.push_back(static_cast<int>(std::lround(k)));
    g.push_back(kmax);
  }
  std::sort(g.begin(), g.end());
  g.erase(std::unique(g.begin(), g.end()), g.end());
  return g;
}

void validate(const MatrixD& X, const MatrixD& Y, const std::vector<int>& labels, const QualityRequest& req) {
  const index_t N = Y.rows;
  if (X.rows != N)
    input_error("input has " + std::to_string(X.rows) + " rows but the embedding has " + std::to_string(N));
  if (req.input_is_distance_matrix && req.inner_product)
    internal_error("evaluate_quality: a distance matrix is not ranked by inner product");
  if (req.input_is_distance_matrix && X.cols != N)
    input_error("distance matrix: expected " + std::to_string(N) + " x " + std::to_string(N) + ", found " +
                std::to_string(X.rows) + " x " + std::to_string(X.cols));
  if (N < 3) input_error("quality measures need at least 3 points, found " + std::to_string(N));
  if (req.ks.empty()) input_error("k: give at least one neighborhood size");
  for (int k : req.ks)
    if (k < 1 || k > N - 1)
      input_error("k: expected 1 <= K <= N - 1 = " + std::to_string(N - 1) + ", found " + std::to_string(k));
  if (req.kmax != 0 && (req.kmax < 1 || req.kmax > N - 1))
    input_error("kmax: expected 1 <= K_max <= N - 1 = " + std::to_string(N - 1) + ", found " + std::to_string(req.kmax));
  if (req.perplexity < 0 || (req.perplexity > 0 && !(req.perplexity < N - 1)))
    input_error("perplexity: expected 0 < perplexity < N - 1 = " + std::to_string(N - 1) + ", found " +
                std::to_string(req.perplexity));
  if (!labels.empty() && static_cast<index_t>(labels.size()) != N)
    input_error("labels: " + std::to_string(labels.size()) + " labels for " + std::to_string(N) + " points");
  for (const MatrixD* M : {&X, &Y})
    for (index_t n = 0; n < M->rows; ++n)
      for (index_t c = 0; c < M->cols; ++c)
        if (!std::isfinite((*M)(n, c)) || (req.input_is_distance_matrix && M == &X && (*M)(n, c) < 0))
          input_error(std::string(M == &X ? "input" : "embedding") + ": row " + std::to_string(n + 1) + ", column " +
                      std::to_string(c + 1) + " is not a finite" +
                      (req.input_is_distance_matrix && M == &X ? " non-negative distance" : " number"));
}

// Mean smoothed precision/recall terms of one row: KL(q_i || p_i) and KL(p_i || q_i) with the
// input bandwidth used in both spaces (NeRV).
void smoothed_terms(const std::vector<double>& din, const std::vector<double>& dout, index_t self, double perplexity,
                    double* kl_qp, double* kl_pq) {
  const index_t N = static_cast<index_t>(din.size());
  const double beta = math::bandwidth_for_perplexity<double, index_t>(din.data(), N, self, perplexity, 1e-10, 200);
  double lzp, sp, lzq, sq;
  math::row_entropy<double, index_t>(din.data(), N, self, beta, &lzp, &sp);
  math::row_entropy<double, index_t>(dout.data(), N, self, beta, &lzq, &sq);
  double a = 0, b = 0;
  for (index_t j = 0; j < N; ++j) {
    if (j == self) continue;
    const double lp = -beta * (din[j] - sp) - lzp, lq = -beta * (dout[j] - sq) - lzq;
    a += std::exp(lq) * (lq - lp);
    b += std::exp(lp) * (lp - lq);
  }
  *kl_qp = a;
  *kl_pq = b;
}

// The spaces in which the smoothed measures square distances. They use the input's bandwidth in
// both spaces, so they are unchanged by a common scaling of X and Y only: when the input's squares
// would overflow or underflow in double (double_safe_exponent), both are taken in units of 2^e of
// the input's scale, exactly. A map 2^400 times the input's scale or more (whose squares could
// overflow) puts each q_i on its nearest map neighbors at that and at every larger scale alike
// (beta times a gap between its squared distances exceeds 746, where exp(-x) is 0, unless the gap
// is below 10^-230 of them), so it is taken at 2^400 of the input's. Data of ordinary
// scales is not copied (empty matrices: X and Y as given) and gives the same bits as ever.
struct SmoothedUnits {
  MatrixD X, Y;
};
SmoothedUnits smoothed_units(const MatrixD& X, const MatrixD& Y, bool distance_matrix) {
  constexpr int kMapExponent = 400;
  const int e = double_safe_exponent(X, distance_matrix);
  const int ey = std::ilogb(input_scale(Y)) - e;  // the map's scale in the input's units
  const int shift = e + std::max(0, ey - kMapExponent);
  SmoothedUnits u;
  if (e != 0) u.X = times_power_of_two(X, -e);
  if (shift != 0) u.Y = times_power_of_two(Y, -shift);
  return u;
}

// Standard error of a measure m = a + scale * (sum over the Q queries of a per-point term x), from
// the sums of x and x^2, for a uniform sample without replacement of Q of N points.
double standard_error(double scale, double sum, double sum_sq, index_t Q, index_t N) {
  if (Q < 2 || Q >= N) return 0.0;
  const double q = static_cast<double>(Q), var = std::max(0.0, (sum_sq - sum * sum / q) / (q - 1));
  return std::abs(scale) * std::sqrt(q * var * (1.0 - q / static_cast<double>(N)));
}

// Standard error of a proportion p over the n labelled points of a sample of Q of N points.
double proportion_se(double p, index_t n, index_t Q, index_t N) {
  if (!std::isfinite(p)) return kNaN;
  if (n < 2 || Q >= N) return 0.0;
  return std::sqrt(p * (1 - p) / static_cast<double>(n - 1) * (1.0 - static_cast<double>(Q) / static_cast<double>(N)));
}

}  // namespace

std::vector<index_t> quality_queries(index_t N, const QualityRequest& req) {
  const index_t want = req.queries < 0 ? (N > req.sample_above ? req.sample_queries : 0) : req.queries;
  if (want == 0 || want >= N) return {};
  // Selection sampling (Knuth's Algorithm S): point i is taken with probability
  // (still wanted) / (still to see), which gives a uniform sample, already sorted.
  std::mt19937_64 rng(req.seed ^ 0x5ca1ab1e0ddba11ULL);
  std::vector<index_t> q;
  q.reserve(static_cast<size_t>(want));
  for (index_t i = 0; i < N && static_cast<index_t>(q.size()) < want; ++i)
    if (uniform01(rng) * static_cast<double>(N - i) < static_cast<double>(want - static_cast<index_t>(q.size())))
      q.push_back(i);
  return q;
}

namespace {

// The rows [first, end) of the Q query rows that rank `rank` of `ranks` takes: whole chunks of kChunk
// rows, as even as they can be (a rank may take none).
std::pair<index_t, index_t> query_block(index_t Q, int rank, int ranks) {
  const index_t chunks = (Q + kChunk - 1) / kChunk;
  const auto edge = [&](int r) { return std::min(Q, chunks * r / ranks * kChunk); };
  return {edge(rank), edge(rank + 1)};
}

// The chunks [first, end) that a block of query rows covers (none for an empty block).
std::pair<index_t, index_t> block_chunks(std::pair<index_t, index_t> rows) {
  const index_t first = rows.first / kChunk;
  return {first, rows.first == rows.second ? first : (rows.second + kChunk - 1) / kChunk};
}

// Every rank's block of `mine` (rows x width items each), all-gathered in rank order.
template <class T>
std::vector<T> gathered_rows(Comm& comm, const std::vector<T>& mine, index_t Q, std::size_t width) {
  std::vector<std::size_t> counts(static_cast<std::size_t>(comm.size()));
  for (int r = 0; r < comm.size(); ++r) {
    const auto b = query_block(Q, r, comm.size());
    counts[static_cast<std::size_t>(r)] = static_cast<std::size_t>(b.second - b.first) * width;
  }
  std::vector<T> all(static_cast<std::size_t>(Q) * width);
  comm.allgatherv(mine.data(), mine.size(), all.data(), counts);
  return all;
}

}  // namespace

QualityReport evaluate_quality(const MatrixD& X, const MatrixD& Y, const std::vector<int>& labels,
                               const QualityRequest& req, const Backend& backend, Comm* comm) {
  validate(X, Y, labels, req);
  if (req.queries < -1) input_error("queries: expected -1 (the default rule), 0 (all points) or a count, found " +
                                    std::to_string(req.queries));
  const index_t N = Y.rows;
  const int kmax = req.kmax > 0 ? std::max(req.kmax, *std::max_element(req.ks.begin(), req.ks.end()))
                                : *std::max_element(req.ks.begin(), req.ks.end());
  if (kmax > N - 1) input_error("kmax: must not exceed N - 1 = " + std::to_string(N - 1));
  const int threads = req.threads > 0 ? req.threads : omp_get_max_threads();
  const std::vector<index_t> queries = quality_queries(N, req);
  const index_t Q = queries.empty() ? N : static_cast<index_t>(queries.size());
  auto point = [&](index_t row) { return queries.empty() ? row : queries[static_cast<size_t>(row)]; };
  // ranks do not depend on the scale of either space: each at unit scale for a float backend (under
  // inner_product the references are made at that scale, where their squares are safe)
  const int ex = float_safe_exponent(X, req.input_is_distance_matrix), ey = float_safe_exponent(Y);
  const MatrixD Xu = ex ? times_power_of_two(X, -ex) : MatrixD(), Yu = ey ? times_power_of_two(Y, -ey) : MatrixD();
  const MatrixD Xr = req.inner_product ? inner_product_references(ex ? Xu : X, "metric") : MatrixD();
  const RankInput input = rank_input(req.input_is_distance_matrix, req.inner_product);
  const MatrixD& Xrank = req.inner_product ? Xr : ex ? Xu : X;
  const MatrixD& Yrank = ey ? Yu : Y;
  const bool sharded = comm && comm->size() > 1;
  // this rank's query rows (all of them in one process)
  const std::pair<index_t, index_t> block =
      sharded ? query_block(Q, comm->rank(), comm->size()) : std::pair<index_t, index_t>{0, Q};
  const index_t first = block.first, end = block.second;
  RankRows rows;
  if (!sharded) {
    rows = backend.rank_rows(Xrank, Yrank, kmax, input, queries);
  } else {
    std::vector<index_t> mine(static_cast<size_t>(end - first));
    for (index_t r = first; r < end; ++r) mine[static_cast<size_t>(r - first)] = point(r);
    RankRows part;
    // an empty list asks rank_rows for every point: a rank without rows asks for none
    if (!mine.empty()) part = backend.rank_rows(Xrank, Yrank, kmax, input, mine);
    const auto width = static_cast<std::size_t>(kmax);
    rows.num_points = N;
    rows.kmax = kmax;
    rows.queries = queries;
    rows.map_neighbors = gathered_rows(*comm, part.map_neighbors, Q, width);
    rows.input_rank_of_map_nb = gathered_rows(*comm, part.input_rank_of_map_nb, Q, width);
    rows.map_rank_of_input_nb = gathered_rows(*comm, part.map_rank_of_input_nb, Q, width);
  }
  const std::vector<int> grid = k_grid(req, kmax);
  const size_t G = grid.size();
  const index_t chunks = (Q + kChunk - 1) / kChunk;
  // Integer sums are exact in any order; real ones are summed per chunk, then in chunk order.
  // Per chunk and K: the MRRE sums, then the sums of squares of the five per-point terms
  // (trustworthiness, continuity, overlap, MRRE_n, MRRE_v) for the standard errors.
  constexpr size_t kParts = 7;
  std::vector<std::int64_t> t_sum(G, 0), c_sum(G, 0), overlap(G, 0);
  std::vector<double> part(static_cast<size_t>(chunks) * G * kParts, 0.0);
  std::vector<std::int64_t> coranking(static_cast<size_t>(kmax) * kmax, 0);
#pragma omp parallel num_threads(threads)
  {
    std::vector<std::int64_t> t_loc(G, 0), c_loc(G, 0), ov_loc(G, 0), q_loc(coranking.size(), 0);
#pragma omp for schedule(static)
    for (index_t ch = 0; ch < chunks; ++ch) {
      for (index_t i = ch * kChunk; i < std::min(Q, (ch + 1) * kChunk); ++i) {
        const std::int64_t* rho_out = rows.input_rank_of_map_nb.data() + i * kmax;
        const std::int64_t* r_in = rows.map_rank_of_input_nb.data() + i * kmax;
        for (size_t g = 0; g < G; ++g) {
          const int K = grid[g];
          double wn = 0, wv = 0;
          std::int64_t t = 0, c = 0, ov = 0;
          for (int l = 0; l < K; ++l) {
            const std::int64_t rho = rho_out[l], r = r_in[l], own = l + 1;
            if (rho > K) t += rho - K;
            else ++ov;
            if (r > K) c += r - K;
            wn += static_cast<double>(std::abs(rho - own)) / static_cast<double>(own);
            wv += static_cast<double>(std::abs(r - own)) / static_cast<double>(own);
          }
          t_loc[g] += t;
          c_loc[g] += c;
          ov_loc[g] += ov;
          double* p = part.data() + (static_cast<size_t>(ch) * G + g) * kParts;
          const double td = static_cast<double>(t), cd = static_cast<double>(c), od = static_cast<double>(ov);
          p[0] += wn;
          p[1] += wv;
          p[2] += td * td;
          p[3] += cd * cd;
          p[4] += od * od;
          p[5] += wn * wn;
          p[6] += wv * wv;
        }
        for (int l = 0; l < kmax; ++l)
          if (rho_out[l] <= kmax) ++q_loc[static_cast<size_t>((rho_out[l] - 1) * kmax + l)];
      }
    }
#pragma omp critical
    {
      for (size_t g = 0; g < G; ++g) {
        t_sum[g] += t_loc[g];
        c_sum[g] += c_loc[g];
        overlap[g] += ov_loc[g];
      }
      for (size_t q = 0; q < coranking.size(); ++q) coranking[q] += q_loc[q];
    }
  }
  std::vector<index_t> out_neighbors(rows.map_neighbors.begin(), rows.map_neighbors.end());
  index_t known = 0;  // labelled query points: the k-NN accuracy's denominator
  for (index_t row = 0; row < Q && !labels.empty(); ++row) known += labels[static_cast<size_t>(point(row))] >= 0;

  QualityReport rep;
  rep.num_points = N;
  rep.queries = Q;
  rep.seed = req.seed;
  rep.kmax = kmax;
  rep.coranking = std::move(coranking);
  // Each normaliser's factor that counts the points summed over is Q; the ones bounding ranks are N.
  const double Nd = static_cast<double>(N), Qd = static_cast<double>(Q);
  auto sums = [&](size_t g) {
    std::vector<double> s(kParts, 0.0);
    for (index_t ch = 0; ch < chunks; ++ch)
      for (size_t p = 0; p < kParts; ++p) s[p] += part[(static_cast<size_t>(ch) * G + g) * kParts + p];
    return s;
  };
  auto G_K = [&](int K) {
    const double Kd = K;
    return 2 * K < N ? Qd * Kd * (2 * Nd - 3 * Kd - 1) : Qd * (Nd - Kd) * (Nd - Kd - 1);
  };
  auto H_K = [&](int K) {
    double H = 0;
    for (int k = 1; k <= K; ++k) H += std::abs(Nd - 2.0 * k + 1.0) / k;
    return H * Qd;
  };
  auto at = [&](size_t g) {
    const int K = grid[g];
    const double Kd = K, GK = G_K(K);
    const std::vector<double> s = sums(g);
    QualityAtK q;
    q.k = K;
    q.trustworthiness = GK > 0 ? 1.0 - 2.0 * static_cast<double>(t_sum[g]) / GK : 1.0;
    q.continuity = GK > 0 ? 1.0 - 2.0 * static_cast<double>(c_sum[g]) / GK : 1.0;
    q.mrre_neighborhood = s[0] / H_K(K);
    q.mrre_visual = s[1] / H_K(K);
    q.lcmc = Kd / (1.0 - Nd) + static_cast<double>(overlap[g]) / (Qd * Kd);
    q.knn_accuracy = labels.empty() ? kNaN : knn_vote_accuracy(out_neighbors, kmax, labels, K, queries);
    return q;
  };
  auto se = [&](size_t g, const QualityAtK& q) {
    const int K = grid[g];
    const double GK = G_K(K), HK = H_K(K);
    const std::vector<double> s = sums(g);
    QualityAtK e;
    e.k = K;
    e.trustworthiness = GK > 0 ? standard_error(2.0 / GK, static_cast<double>(t_sum[g]), s[2], Q, N) : 0.0;
    e.continuity = GK > 0 ? standard_error(2.0 / GK, static_cast<double>(c_sum[g]), s[3], Q, N) : 0.0;
    e.lcmc = standard_error(1.0 / (Qd * K), static_cast<double>(overlap[g]), s[4], Q, N);
    e.mrre_neighborhood = standard_error(1.0 / HK, s[0], s[5], Q, N);
    e.mrre_visual = standard_error(1.0 / HK, s[1], s[6], Q, N);
    e.knn_accuracy = proportion_se(q.knn_accuracy, known, Q, N);
    return e;
  };
  for (int k : req.ks) {
    const size_t g = static_cast<size_t>(std::lower_bound(grid.begin(), grid.end(), k) - grid.begin());
    rep.at_k.push_back(at(g));
    if (Q < N) rep.at_k_se.push_back(se(g, rep.at_k.back()));
  }
  if (req.curve)
    for (size_t g = 0; g < G; ++g) rep.curve.push_back(at(g));
  rep.homogeneity_1nn = labels.empty() ? kNaN : knn_vote_accuracy(out_neighbors, kmax, labels, 1, queries);
  rep.smoothed_precision = rep.smoothed_recall = kNaN;
  if (req.perplexity > 0) {
    std::vector<double> a_part(static_cast<size_t>(chunks), 0.0), b_part(static_cast<size_t>(chunks), 0.0);
    const int dy = static_cast<int>(Y.cols);
    const SmoothedUnits units = smoothed_units(X, Y, req.input_is_distance_matrix);
    const MatrixD& Xs0 = units.X.empty() ? X : units.X;
    const MatrixD& Ys = units.Y.empty() ? Y : units.Y;
    // inner_product: the squared distances from each query [x_i, 0] to the references, as the
    // affinities calibrate them (in the input's units: beta is shared with the map)
    const MatrixD Xref = req.inner_product ? inner_product_references(Xs0, "metric") : MatrixD();
    const MatrixD Xqry = req.inner_product ? inner_product_queries(Xs0) : MatrixD();
    const MatrixD& Xs = req.inner_product ? Xref : Xs0;
    const MatrixD& Xq = req.inner_product ? Xqry : Xs0;
    const int dx = static_cast<int>(Xs.cols);
    const std::pair<index_t, index_t> my_chunks = block_chunks(block);
    const index_t ch_first = my_chunks.first, ch_end = my_chunks.second;  // this rank's chunks
#pragma omp parallel num_threads(threads)
    {
      std::vector<double> din(static_cast<size_t>(N)), dout(static_cast<size_t>(N));
#pragma omp for schedule(dynamic, 1)
      for (index_t ch = ch_first; ch < ch_end; ++ch)
        for (index_t row = ch * kChunk; row < std::min(Q, (ch + 1) * kChunk); ++row) {
          const index_t i = point(row);
          for (index_t l = 0; l < N; ++l) {
            din[l] = req.input_is_distance_matrix ? Xs(i, l) * Xs(i, l)
                                                  : math::squared_distance(Xq.row(i), Xs.row(l), dx);
            dout[l] = math::squared_distance(Ys.row(i), Ys.row(l), dy);
          }
          double a, b;
          smoothed_terms(din, dout, i, req.perplexity, &a, &b);
          a_part[static_cast<size_t>(ch)] += a;
          b_part[static_cast<size_t>(ch)] += b;
        }
    }
    if (sharded) {  // every rank's chunks, in chunk order
      const std::vector<double> a_mine(a_part.begin() + ch_first, a_part.begin() + ch_end),
          b_mine(b_part.begin() + ch_first, b_part.begin() + ch_end);
      std::vector<std::size_t> counts(static_cast<std::size_t>(comm->size()));
      for (int r = 0; r < comm->size(); ++r) {
        const auto c = block_chunks(query_block(Q, r, comm->size()));
        counts[static_cast<std::size_t>(r)] = static_cast<std::size_t>(c.second - c.first);
      }
      comm->allgatherv(a_mine.data(), a_mine.size(), a_part.data(), counts);
      comm->allgatherv(b_mine.data(), b_mine.size(), b_part.data(), counts);
    }
    double a = 0, b = 0;
    for (index_t ch = 0; ch < chunks; ++ch) {
      a += a_part[static_cast<size_t>(ch)];
      b += b_part[static_cast<size_t>(ch)];
    }
    rep.smoothed_precision = -a / Qd;
    rep.smoothed_recall = -b / Qd;
  }
  return rep;
}

double knn_vote_accuracy(const std::vector<index_t>& neighbors, int stride, const std::vector<int>& labels, int k,
                         const std::vector<index_t>& queries) {
  const index_t R = queries.empty() ? static_cast<index_t>(labels.size()) : static_cast<index_t>(queries.size());
  index_t hit = 0, known = 0;
  // (label, votes) of the at most k voters: labels are any integers, so no array indexed by them.
  std::vector<std::pair<int, int>> count;
  for (index_t row = 0; row < R; ++row) {
    const index_t i = queries.empty() ? row : queries[static_cast<size_t>(row)];
    if (labels[static_cast<size_t>(i)] < 0) continue;
    ++known;
    int best = -1, best_count = 0, used = 0;
    count.clear();
    for (int l = 0; l < stride && used < k; ++l) {
      const int lab = labels[static_cast<size_t>(neighbors[static_cast<size_t>(row * stride + l)])];
      if (lab < 0) continue;
      ++used;
      auto it = std::find_if(count.begin(), count.end(), [&](const std::pair<int, int>& c) { return c.first == lab; });
      if (it == count.end()) it = count.insert(count.end(), {lab, 0});
      // strictly more votes wins; an equal count keeps the label that got there first (nearer)
      if (++it->second > best_count) {
        best_count = it->second;
        best = lab;
      }
    }
    hit += best == labels[static_cast<size_t>(i)];
  }
  return known ? static_cast<double>(hit) / static_cast<double>(known) : kNaN;
}

double knn_test_error(const MatrixD& Y, const std::vector<int>& train_labels, const std::vector<index_t>& test,
                      const std::vector<int>& truth, int k) {
  index_t wrong = 0;
  std::vector<std::pair<double, index_t>> best;
  std::vector<int> votes;
  for (index_t t : test) {
    best.clear();
    for (index_t j = 0; j < Y.rows; ++j) {
      if (train_labels[static_cast<size_t>(j)] < 0) continue;
      double d2 = 0;
      for (index_t c = 0; c < Y.cols; ++c) d2 += (Y(t, c) - Y(j, c)) * (Y(t, c) - Y(j, c));
      best.emplace_back(d2, j);
    }
    const size_t m = std::min<size_t>(static_cast<size_t>(k), best.size());
    std::partial_sort(best.begin(), best.begin() + static_cast<long>(m), best.end());
    votes.clear();
    int vote = -1, top = 0;
    for (size_t q = 0; q < m; ++q) {  // majority; a tie goes to the label met first (nearest)
      const int l = train_labels[static_cast<size_t>(best[q].second)];
      if (l >= static_cast<int>(votes.size())) votes.resize(static_cast<size_t>(l) + 1, 0);
      if (++votes[static_cast<size_t>(l)] > top) top = votes[static_cast<size_t>(l)], vote = l;
    }
    wrong += vote != truth[static_cast<size_t>(t)];
  }
  return test.empty() ? 0.0 : static_cast<double>(wrong) / static_cast<double>(test.size());
}

CrossValidation cross_validate_knn(const std::vector<int>& labels, int folds, unsigned long long seed,
                                   const std::function<MatrixD(const std::vector<int>& train_labels)>& map_without,
                                   const std::function<void(int fold, double error)>& progress) {
  std::vector<index_t> labelled;
  for (size_t n = 0; n < labels.size(); ++n)
    if (labels[n] >= 0) labelled.push_back(static_cast<index_t>(n));
  if (folds < 2) input_error("input.cv_folds: expected 0 (off) or at least 2 folds, found " + std::to_string(folds));
  if (static_cast<index_t>(labelled.size()) < folds)
    input_error("input.cv_folds: " + std::to_string(folds) + " folds for " + std::to_string(labelled.size()) +
                " labelled points");
  std::mt19937_64 rng(seed ^ 0xc0ffeeULL);
  std::shuffle(labelled.begin(), labelled.end(), rng);
  CrossValidation cv;
  for (int f = 0; f < folds; ++f) {
    std::vector<int> train = labels;
    std::vector<index_t> test;
    for (size_t q = 0; q < labelled.size(); ++q)
      if (static_cast<int>(q % static_cast<size_t>(folds)) == f) {
        test.push_back(labelled[q]);
        train[static_cast<size_t>(labelled[q])] = -1;
      }
    const double e = knn_test_error(map_without(train), train, test, labels);
    cv.errors.push_back(e);
    cv.mean += e;
    if (progress) progress(f, e);
  }
  cv.mean /= folds;
  return cv;
}

ClassScores class_scores(const std::vector<int>& predicted, const std::vector<int>& labels, int num_classes) {
  std::vector<double> tp(static_cast<size_t>(num_classes), 0), pred(tp), truth(tp);
  for (size_t n = 0; n < labels.size(); ++n) {
    if (labels[n] < 0 || labels[n] >= num_classes) continue;
    truth[static_cast<size_t>(labels[n])] += 1;
    if (predicted[n] >= 0 && predicted[n] < num_classes) {
      pred[static_cast<size_t>(predicted[n])] += 1;
      if (predicted[n] == labels[n]) tp[static_cast<size_t>(labels[n])] += 1;
    }
  }
  ClassScores s;
  for (int k = 0; k < num_classes; ++k) {
    const double p = pred[k] > 0 ? tp[k] / pred[k] : kNaN, r = truth[k] > 0 ? tp[k] / truth[k] : kNaN;
    s.precision.push_back(p);
    s.recall.push_back(r);
    s.f_measure.push_back(p + r > 0 ? 2 * p * r / (p + r) : (std::isnan(p) || std::isnan(r) ? kNaN : 0.0));
  }
  return s;
}

}  // namespace orrery
