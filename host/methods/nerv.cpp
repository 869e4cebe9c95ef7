// NeRV on the CPU, exact over all pairs. The per-pair arithmetic is math/nerv.hpp's (formulas in its
// header comment), the code the CUDA kernels run too. One evaluation is one pass over the rows; per
// row i:
//   1. the squared distances to all points and the shift m_i from the nearest other point;
//   2. one exp per pair, w_ij = exp(s_ij - m_i), kept in a row buffer, and the row sums giving lse_i,
//      KL(q_i || p_i) and KL(p_i || q_i);
//   3. (with the gradient) c_ij from q_ij = w_ij / Z_i, no second exp; 2 c_ij (y_i - y_j) is summed
//      into dE/dy_i, and 2 c_ij (y_j - y_i), the same pair's share of dE/dy_j, is scattered into an
//      N x D accumulator owned by the row's block (kBlocks fixed blocks of rows, whatever the thread
//      count); the blocks' accumulators are added in block order at the end.
// Each row of P (and of log P) is read once, by rows, while it is in cache. Beyond P the memory is
// O(N): the row scalars, per thread three row buffers, and the kBlocks accumulators. Rows are summed
// in j order and blocks in block order, so results do not depend on the thread count. The j loops
// skip j == i by running over [0, i) then (i, N), and they are `omp simd` loops whose exp
// (math::exp_nonpositive) vectorises. Dense P: log max(p, floor) is taken once per fit
// (nerv_log_probabilities), or per row and evaluation when no logs are given. Sparse P (CSR rows):
// the all-pairs loops use p = 0 and the row's floor for log p, and each row's short CSR list adds
// the listed pairs' corrections (no extra exp).
#include "orrery/nerv.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "methods/random.hpp"
#include "optim/cg.hpp"
#include "orrery/backend.hpp"
#include "orrery/affinity.hpp"
#include "orrery/error.hpp"
#include "orrery/math/nerv.hpp"

namespace orrery {

const std::vector<Field<NervParams>>& nerv_fields() {
  static const std::vector<Field<NervParams>> fields = {
      {"dim", &NervParams::dim, "Output dimension D of the map.", 2, 3},
      {"lambda", &NervParams::lambda,
       "Trade-off: 1 = recall only (SNE's cost), 0 = precision only; the paper's examples use small values.", 0, 1},
      {"max_iter", &NervParams::max_iter, "Cap on conjugate-gradient iterations.", 1, 1e8},
      {"ftol", &NervParams::ftol, "Stop when an iteration lowers E by less than ftol * max(|E|, 1).", 0, 1},
      {"init", &NervParams::init,
       "Start: random (seeded Gaussian) or pca (the input vectors' first D principal components).", -kInf, kInf,
       false, {"random", "pca"}},
      {"init_scale", &NervParams::init_scale,
       "Standard deviation of the seeded Gaussian start, in units of the median input bandwidth sigma.", 0, kInf, true},
  };
  return fields;
}

namespace {

int nthreads(int t) { return t > 0 ? t : omp_get_max_threads(); }

// The hot loops are exp-bound, and the build targets baseline x86-64 (2-wide SSE2, no FMA). GCC on
// x86-64 Linux compiles the functions marked ORRERY_NERV_CLONES also for AVX2+FMA and AVX-512 and
// picks one at load time (ifunc); one machine always runs the same clone, so results still do not
// depend on the thread count. Elsewhere the attribute is empty.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define ORRERY_NERV_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define ORRERY_NERV_CLONES
#endif
// The helpers of those functions must be inlined into each clone to get its instruction set.
#if defined(__GNUC__)
#define ORRERY_NERV_INLINE inline __attribute__((always_inline))
#else
#define ORRERY_NERV_INLINE inline
#endif

// Blocks of rows, each with its own N x D accumulator of the scattered half of the gradient; a fixed
// number, so the summation order does not depend on the thread count.
constexpr index_t kBlocks = 64;

// The j loops read the map by dimension: yt[d n + j] = y_jd (D x n), so their loads are contiguous.
std::vector<double> by_dimension(const MatrixD& Y) {
  const index_t n = Y.rows, D = Y.cols;
  std::vector<double> yt(static_cast<size_t>(n * D));
  for (index_t j = 0; j < n; ++j)
    for (index_t d = 0; d < D; ++d) yt[static_cast<size_t>(d * n + j)] = Y(j, d);
  return yt;
}

template <int D>
ORRERY_NERV_INLINE double distances_fixed(const double* yt, index_t n, index_t i, double* dist, index_t lo,
                                          index_t hi) {
  double yi[D];
  for (int d = 0; d < D; ++d) yi[d] = yt[d * n + i];
  double m = kInf;
#pragma omp simd reduction(min : m)
  for (index_t j = lo; j < hi; ++j) {
    double s = 0.0;
    for (int d = 0; d < D; ++d) {
      const double diff = yi[d] - yt[d * n + j];
      s += diff * diff;
    }
    dist[j] = s;
    m = s < m ? s : m;
  }
  return m;
}

template <int D>
ORRERY_NERV_INLINE double distances_row(const double* yt, index_t n, index_t i, double* dist) {
  return std::min(distances_fixed<D>(yt, n, i, dist, 0, i), distances_fixed<D>(yt, n, i, dist, i + 1, n));
}

// dist[j] = |y_i - y_j|^2 for every j != i; returns the smallest.
ORRERY_NERV_CLONES double row_distances(const double* yt, index_t n, index_t D, index_t i, double* dist) {
  switch (D) {
    case 1:
      return distances_row<1>(yt, n, i, dist);
    case 2:
      return distances_row<2>(yt, n, i, dist);
    case 3:
      return distances_row<3>(yt, n, i, dist);
    default:
      break;
  }
  double m = kInf;
  for (index_t j = 0; j < n; ++j) {
    double s = 0.0;
    for (index_t d = 0; d < D; ++d) s += (yt[d * n + i] - yt[d * n + j]) * (yt[d * n + i] - yt[d * n + j]);
    dist[j] = s;
    if (j != i) m = std::min(m, s);
  }
  return m;
}

// D <= 3 with one scalar per dimension: GCC sums an array-section reduction (g[:D]) lane by lane,
// in order, which costs more than the rest of the loop.
template <int D>
ORRERY_NERV_INLINE void scatter_fixed(const double* yt, index_t n, index_t i, const double* c, double* gi,
                                      double* acc) {
  const double* x0 = yt;
  const double* x1 = D > 1 ? yt + n : yt;
  const double* x2 = D > 2 ? yt + 2 * n : yt;
  double* a0 = acc;
  double* a1 = D > 1 ? acc + n : acc;
  double* a2 = D > 2 ? acc + 2 * n : acc;
  const double y0 = x0[i], y1 = x1[i], y2 = x2[i];
  double g0 = 0.0, g1 = 0.0, g2 = 0.0;
#pragma omp simd reduction(+ : g0, g1, g2)
  for (index_t j = 0; j < n; ++j) {
    const double t0 = c[j] * (y0 - x0[j]);
    g0 += t0;
    a0[j] -= t0;
    if constexpr (D > 1) {
      const double t1 = c[j] * (y1 - x1[j]);
      g1 += t1;
      a1[j] -= t1;
    }
    if constexpr (D > 2) {
      const double t2 = c[j] * (y2 - x2[j]);
      g2 += t2;
      a2[j] -= t2;
    }
  }
  const double g[3] = {g0, g1, g2};
  for (int d = 0; d < D; ++d) gi[d] = g[d];
}

// Row i's pair terms c_ij for every j (c_ii = 0): gi = sum_j c_ij (y_i - y_j), and the block
// accumulator (D x n, like yt) gets c_ij (y_j - y_i) at j.
ORRERY_NERV_CLONES void row_scatter(const double* yt, index_t n, index_t D, index_t i, const double* c, double* gi,
                                    double* acc) {
  switch (D) {
    case 1:
      return scatter_fixed<1>(yt, n, i, c, gi, acc);
    case 2:
      return scatter_fixed<2>(yt, n, i, c, gi, acc);
    case 3:
      return scatter_fixed<3>(yt, n, i, c, gi, acc);
    default:
      break;
  }
  for (index_t d = 0; d < D; ++d) {
    double g = 0.0;
    for (index_t j = 0; j < n; ++j) {
      const double t = c[j] * (yt[d * n + i] - yt[d * n + j]);
      g += t;
      acc[d * n + j] -= t;
    }
    gi[d] = g;
  }
}

// Row sums (math/nerv.hpp): Z, T, U and P.
struct RowSums {
  double z = 0.0, t = 0.0, u = 0.0, p = 0.0;
  RowSums& operator+=(const RowSums& o) {
    z += o.z, t += o.t, u += o.u, p += o.p;
    return *this;
  }
};

// Row sums over j in [lo, hi) of a dense row; w[j] = w_ij.
ORRERY_NERV_CLONES RowSums dense_sums(const double* dist, const double* p, const double* lp, double b, double m,
                                      double* w, index_t lo, index_t hi) {
  double z = 0.0, t = 0.0, u = 0.0, ps = 0.0;
#pragma omp simd reduction(+ : z, t, u, ps)
  for (index_t j = lo; j < hi; ++j) {
    const math::NervRowTerms<double> r = math::nerv_row_terms(dist[j], b, m, p[j], lp[j]);
    w[j] = r.w;
    z += r.w;
    t += r.wt;
    u += r.pu;
    ps += p[j];
  }
  return {z, t, u, ps};
}

// Row sums over j in [lo, hi) with p = 0 and log p = lpf (the all-pairs part of a sparse row).
ORRERY_NERV_CLONES RowSums floor_sums(const double* dist, double lpf, double b, double m, double* w, index_t lo,
                                      index_t hi) {
  double z = 0.0, t = 0.0;
#pragma omp simd reduction(+ : z, t)
  for (index_t j = lo; j < hi; ++j) {
    const math::NervRowTerms<double> r = math::nerv_row_terms(dist[j], b, m, 0.0, lpf);
    w[j] = r.w;
    z += r.w;
    t += r.wt;
  }
  RowSums s;
  s.z = z;
  s.t = t;
  return s;
}

// c[j] = c_ij for j in [lo, hi) from the weights w, p = p_{j|i} and lp = its floored log (dense).
ORRERY_NERV_CLONES void dense_pair_c(const double* dist, const double* w, const double* p, const double* lp,
                                     math::NervRow<double> r, double lambda, double* c, index_t lo, index_t hi) {
#pragma omp simd
  for (index_t j = lo; j < hi; ++j)
    c[j] = math::nerv_pair_c(w[j] * r.q_scale, math::nerv_log_q(dist[j], r), r, p[j], lp[j], lambda);
}

// c[j] = c_ij for j in [lo, hi) with p = 0 and log p = lpf (the all-pairs part of a sparse row).
ORRERY_NERV_CLONES void floor_pair_c(const double* dist, const double* w, double lpf, math::NervRow<double> r,
                                     double lambda, double* c, index_t lo, index_t hi) {
#pragma omp simd
  for (index_t j = lo; j < hi; ++j)
    c[j] = math::nerv_pair_c(w[j] * r.q_scale, math::nerv_log_q(dist[j], r), r, 0.0, lpf, lambda);
}

// Dense input: P and its floored logs, rows p_{j|i}; without LP each row's logs are taken into a row
// buffer (N logs per row and evaluation instead of an N x N matrix).
struct DenseInput {
  const MatrixD& P;
  const MatrixD* LP;

  const double* row_logs(index_t i, double* buf) const {
    if (LP) return LP->row(i);
    const double* p = P.row(i);
    for (index_t j = 0; j < P.cols; ++j) buf[j] = math::nerv_log_prob(p[j], kNervProbabilityFloor);
    return buf;
  }
  RowSums row_sums(index_t i, const double* lp, const double* dist, double b, double m, double* w) const {
    RowSums s = dense_sums(dist, P.row(i), lp, b, m, w, 0, i);
    s += dense_sums(dist, P.row(i), lp, b, m, w, i + 1, P.rows);
    return s;
  }
  void pair_c(index_t i, const double* lp, const double* dist, const double* w, const math::NervRow<double>& r,
              double lambda, double* c) const {
    dense_pair_c(dist, w, P.row(i), lp, r, lambda, c, 0, i);
    dense_pair_c(dist, w, P.row(i), lp, r, lambda, c, i + 1, P.rows);
  }
};

// Sparse input: CSR rows p_{j|i}, their floored logs and each row's floor log p_floor_i.
struct SparseInput {
  const SparseAffinity& P;
  std::vector<double> lp, lpf;

  SparseInput(const SparseAffinity& p, index_t n) : P(p) {
    if (P.num_points != n || P.row_ptr.size() != static_cast<size_t>(n) + 1 ||
        P.col.size() != static_cast<size_t>(P.row_ptr.back()) || P.val.size() != P.col.size())
      internal_error("nerv_objective: sparse P and Y disagree on N, or P is not CSR");
    lp.resize(P.col.size());
    lpf.resize(static_cast<size_t>(n));
    for (index_t i = 0; i < n; ++i) {
      double pmin = kInf;
      for (index_t q = P.row_ptr[static_cast<size_t>(i)]; q < P.row_ptr[static_cast<size_t>(i) + 1]; ++q) {
        const double v = P.val[static_cast<size_t>(q)];
        const index_t j = P.col[static_cast<size_t>(q)];
        if (j < 0 || j >= n || j == i) internal_error("nerv_objective: sparse P column out of range or diagonal");
        lp[static_cast<size_t>(q)] = math::nerv_log_prob(v, kNervProbabilityFloor);
        if (v > 0) pmin = std::min(pmin, v);
      }
      const double floor = pmin < kInf ? 1e-3 * pmin : 1e-3 / static_cast<double>(n - 1);
      lpf[static_cast<size_t>(i)] = math::nerv_log_prob(floor, kNervProbabilityFloor);
    }
  }

  const double* row_logs(index_t, double*) const { return nullptr; }  // kept per stored entry in lp
  RowSums row_sums(index_t i, const double*, const double* dist, double b, double m, double* w) const {
    const size_t ui = static_cast<size_t>(i);
    RowSums s = floor_sums(dist, lpf[ui], b, m, w, 0, i);
    s += floor_sums(dist, lpf[ui], b, m, w, i + 1, P.num_points);
    for (index_t q = P.row_ptr[ui]; q < P.row_ptr[ui + 1]; ++q) {
      const size_t uq = static_cast<size_t>(q);
      const index_t j = P.col[uq];
      const math::NervRowTerms<double> r = math::nerv_row_listed(w[j], dist[j], b, P.val[uq], lp[uq], lpf[ui]);
      s.t += r.wt;
      s.u += r.pu;
      s.p += P.val[uq];
    }
    return s;
  }
  void pair_c(index_t i, const double*, const double* dist, const double* w, const math::NervRow<double>& r,
              double lambda, double* c) const {
    const size_t ui = static_cast<size_t>(i);
    floor_pair_c(dist, w, lpf[ui], r, lambda, c, 0, i);
    floor_pair_c(dist, w, lpf[ui], r, lambda, c, i + 1, P.num_points);
    for (index_t q = P.row_ptr[ui]; q < P.row_ptr[ui + 1]; ++q) {
      const size_t uq = static_cast<size_t>(q);
      const index_t j = P.col[uq];
      c[j] += math::nerv_pair_c_listed(w[j] * r.q_scale, r, P.val[uq], lp[uq], lpf[ui], lambda);
    }
  }
};

// One evaluation: one pass over kBlocks fixed blocks of rows, then (with grad) the blocks'
// accumulators added in block order.
template <class Input>
double evaluate(const Input& in, const std::vector<double>& beta, const MatrixD& Y, double lambda, MatrixD* grad,
                int threads) {
  const index_t N = Y.rows, D = Y.cols;
  if (static_cast<index_t>(beta.size()) != N) internal_error("nerv_objective: beta and Y disagree on N");
  if (N < 2) internal_error("nerv_objective: needs at least 2 points");
  std::vector<double> cost(static_cast<size_t>(N)), acc;
  if (grad) {
    *grad = MatrixD(N, D);
    acc.assign(static_cast<size_t>(kBlocks * N * D), 0.0);
  }
  const std::vector<double> yt = by_dimension(Y);
#pragma omp parallel num_threads(nthreads(threads))
  {
    std::vector<double> dist(static_cast<size_t>(N)), w(static_cast<size_t>(N)), logs(static_cast<size_t>(N));
    std::vector<double> c(grad ? static_cast<size_t>(N) : 0);
#pragma omp for schedule(static)
    for (index_t blk = 0; blk < kBlocks; ++blk)
      for (index_t i = blk * N / kBlocks; i < (blk + 1) * N / kBlocks; ++i) {
        const double b = beta[static_cast<size_t>(i)];
        const double m = -b * row_distances(yt.data(), N, D, i, dist.data());
        const double* lp = in.row_logs(i, logs.data());
        const RowSums s = in.row_sums(i, lp, dist.data(), b, m, w.data());
        const math::NervRow<double> r = math::nerv_row_finish(b, m, s.z, s.t, s.u, s.p);
        cost[static_cast<size_t>(i)] = lambda * r.kl_pq + (1 - lambda) * r.kl_qp;
        if (grad) {
          in.pair_c(i, lp, dist.data(), w.data(), r, lambda, c.data());
          c[static_cast<size_t>(i)] = 0.0;
          row_scatter(yt.data(), N, D, i, c.data(), grad->row(i), acc.data() + blk * D * N);
        }
      }
    if (grad) {
#pragma omp for schedule(static)
      for (index_t i = 0; i < N; ++i)
        for (index_t d = 0; d < D; ++d) {
          double s = (*grad)(i, d);
          for (index_t blk = 0; blk < kBlocks; ++blk) s += acc[static_cast<size_t>((blk * D + d) * N + i)];
          (*grad)(i, d) = 2.0 * s;
        }
    }
  }
  double E = 0.0;
  for (double v : cost) E += v;
  return E;
}

// The seeded Gaussian start at the input's length scale, then conjugate gradient on the objective.
NervResult fit(index_t N, const std::vector<double>& beta, const NervParams& prm, unsigned long long seed,
               const std::function<double(const MatrixD&, MatrixD*)>& objective,
               const std::function<void(int, double)>& progress, const MatrixD* start = nullptr) {
  if (static_cast<index_t>(beta.size()) != N) internal_error("fit_nerv: P and beta disagree on N");
  // The map uses the input bandwidths, so it must start at the input's length scale: a start of
  // unit size on data whose sigma is 100 would see uniform q and a vanishing gradient.
  std::vector<double> sorted = beta;
  std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
  const double sigma = 1.0 / std::sqrt(sorted[sorted.size() / 2]);
  std::vector<double> x = seeded_gaussian(static_cast<size_t>(N) * prm.dim, seed, prm.init_scale * sigma);
  if (start) {
    if (start->rows != N || start->cols != prm.dim) internal_error("fit_nerv: the start is not N x D");
    double mean = 0.0, var = 0.0;
    for (index_t i = 0; i < N; ++i) mean += (*start)(i, 0) / static_cast<double>(N);
    for (index_t i = 0; i < N; ++i) var += ((*start)(i, 0) - mean) * ((*start)(i, 0) - mean) / static_cast<double>(N);
    const double f = var > 0 ? prm.init_scale * sigma / std::sqrt(var) : 1.0;
    for (size_t q = 0; q < x.size(); ++q) x[q] = start->data[q] * f;
  }
  MatrixD Y(N, prm.dim), g;
  auto f = [&](const std::vector<double>& xs, std::vector<double>& grad) {
    Y.data = xs;
    const double E = objective(Y, &g);
    grad = g.data;
    return E;
  };
  optim::CgOptions o;
  o.max_iter = prm.max_iter;
  o.ftol = prm.ftol;
  const optim::CgReport rep = optim::cg_minimize(f, x, o, progress);
  NervResult res;
  res.coords = MatrixD(N, prm.dim);
  res.coords.data = x;
  res.objective_trace = rep.trace;
  res.iterations = rep.iterations;
  res.stop_reason = rep.stop_reason;
  for (double v : x)
    if (!std::isfinite(v)) internal_error("NeRV produced non-finite coordinates");
  return res;
}

}  // namespace

MatrixD nerv_log_probabilities(const MatrixD& P, int threads) {
  MatrixD L(P.rows, P.cols);
  const index_t n = static_cast<index_t>(P.data.size());
#pragma omp parallel for schedule(static) num_threads(nthreads(threads))
  for (index_t k = 0; k < n; ++k)
    L.data[static_cast<size_t>(k)] = math::nerv_log_prob(P.data[static_cast<size_t>(k)], kNervProbabilityFloor);
  return L;
}

double nerv_objective(const MatrixD& P, const MatrixD& logP, const std::vector<double>& beta, const MatrixD& Y,
                      double lambda, MatrixD* grad, int threads) {
  const index_t N = Y.rows;
  if (P.rows != N || P.cols != N || logP.rows != N || logP.cols != N)
    internal_error("nerv_objective: P, log P and Y disagree on N");
  return evaluate(DenseInput{P, &logP}, beta, Y, lambda, grad, threads);
}

double nerv_objective(const MatrixD& P, const std::vector<double>& beta, const MatrixD& Y, double lambda, MatrixD* grad,
                      int threads) {
  if (P.rows != Y.rows || P.cols != Y.rows) internal_error("nerv_objective: P, beta and Y disagree on N");
  return evaluate(DenseInput{P, nullptr}, beta, Y, lambda, grad, threads);
}

double nerv_objective(const SparseAffinity& P, const std::vector<double>& beta, const MatrixD& Y, double lambda,
                      MatrixD* grad, int threads) {
  return evaluate(SparseInput(P, Y.rows), beta, Y, lambda, grad, threads);
}

NervResult fit_nerv(const MatrixD& P, const std::vector<double>& beta, const NervParams& prm, unsigned long long seed,
                    int threads, const std::function<void(int, double)>& progress) {
  const index_t N = P.rows;
  if (P.cols != N) internal_error("fit_nerv: P is not square");
  const MatrixD logP = nerv_log_probabilities(P, threads);
  const DenseInput in{P, &logP};
  return fit(
      N, beta, prm, seed, [&](const MatrixD& Y, MatrixD* g) { return evaluate(in, beta, Y, prm.lambda, g, threads); },
      progress);
}

NervResult fit_nerv(const SparseAffinity& P, const std::vector<double>& beta, const NervParams& prm,
                    unsigned long long seed, int threads, const std::function<void(int, double)>& progress) {
  const SparseInput in(P, P.num_points);
  return fit(
      P.num_points, beta, prm, seed,
      [&](const MatrixD& Y, MatrixD* g) { return evaluate(in, beta, Y, prm.lambda, g, threads); }, progress);
}

NervResult fit_nerv(const MatrixD& P, const std::vector<double>& beta, const NervParams& prm, unsigned long long seed,
                    Backend& backend, const std::function<void(int, double)>& progress, const MatrixD* start) {
  if (P.rows != P.cols) internal_error("fit_nerv: P is not square");
  const int threads = backend.threads();
  if (!backend.is_cuda()) {
    const MatrixD logP = nerv_log_probabilities(P, threads);
    const DenseInput in{P, &logP};
    return fit(
        P.rows, beta, prm, seed, [&](const MatrixD& Y, MatrixD* g) { return evaluate(in, beta, Y, prm.lambda, g, threads); },
        progress, start);
  }
  auto engine = make_nerv_engine_cuda(backend.device_index(), P, nerv_log_probabilities(P), beta, prm.lambda, prm.dim);
  return fit(
      P.rows, beta, prm, seed, [&](const MatrixD& Y, MatrixD* g) { return engine->evaluate(Y, g); }, progress, start);
}

NervResult fit_nerv(const SparseAffinity& P, const std::vector<double>& beta, const NervParams& prm,
                    unsigned long long seed, Backend& backend, const std::function<void(int, double)>& progress,
                    const MatrixD* start) {
  const index_t N = P.num_points;
  const SparseInput in(P, N);
  if (!backend.is_cuda()) {
    const int threads = backend.threads();
    return fit(
        N, beta, prm, seed, [&](const MatrixD& Y, MatrixD* g) { return evaluate(in, beta, Y, prm.lambda, g, threads); },
        progress, start);
  }
  // Dense rows with the same numbers as the sparse evaluation: unlisted pairs p = 0, log p = floor.
  MatrixD Pd(N, N, 0.0), L(N, N, 0.0);
  for (index_t i = 0; i < N; ++i) {
    for (index_t j = 0; j < N; ++j) L(i, j) = in.lpf[static_cast<size_t>(i)];
    for (index_t q = P.row_ptr[static_cast<size_t>(i)]; q < P.row_ptr[static_cast<size_t>(i) + 1]; ++q) {
      Pd(i, P.col[static_cast<size_t>(q)]) = P.val[static_cast<size_t>(q)];
      L(i, P.col[static_cast<size_t>(q)]) = in.lp[static_cast<size_t>(q)];
    }
  }
  auto engine = make_nerv_engine_cuda(backend.device_index(), Pd, L, beta, prm.lambda, prm.dim);
  return fit(
      N, beta, prm, seed, [&](const MatrixD& Y, MatrixD* g) { return engine->evaluate(Y, g); }, progress, start);
}

}  // namespace orrery
