// The soft nearest-neighbor posterior model of PE's Appendix D (see posterior_model.hpp).
//
// Everything depends on the data only through the squared distances d_nj = |x_n - c_j|^2 from
// objects to centres, so these are computed once: for the held-out objects (kept for every
// candidate width) and, after the width is fixed, tile by tile for all objects (never stored
// whole, so memory stays O(N K) for any number of centres).
#include "orrery/posterior_model.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "orrery/error.hpp"

namespace orrery {

const std::vector<Field<PosteriorModelParams>>& posterior_model_fields() {
  static const std::vector<Field<PosteriorModelParams>> fields = {
      {"per_class", &PosteriorModelParams::per_class,
       "m: labelled examples drawn per class (seeded) as Gaussian centres; a class with fewer uses all it has. "
       "More centres: smoother class densities, cost linear in m. Paper: 10 and 100.",
       1, 1e9},
      {"width", &PosteriorModelParams::width,
       "s: shared isotropic width of every component, in input units. 0 chooses s by maximising the held-out "
       "log-likelihood of the true class; > 0 is used as given. Small s: hard posteriors; large s: uniform.",
       0, 1e100},
      {"width_grid", &PosteriorModelParams::width_grid,
       "Log-spaced candidate widths, from 0.05 to 2 times the root median squared distance of held-out objects "
       "to centres, before the golden-section refinement. Ignored when width > 0.",
       3, 1e6},
      {"holdout", &PosteriorModelParams::holdout,
       "Most labelled non-centre objects (drawn, seeded) used to score a width; more gives a less noisy choice.",
       10, 1e9},
  };
  return fields;
}

namespace {

// Rows of a distance tile: enough to reuse each loaded block of centre coordinates many times,
// few enough that the tile's accumulators (rows x centres) stay in L1/L2.
constexpr int kTileRows = 16;
// Input dimensions and centres per cache block: a 128 x 256 block of transposed centre
// coordinates is 256 KiB and stays in L2 while a tile's rows stream over it.
constexpr index_t kDimBlock = 128;
constexpr index_t kCentreBlock = 256;
// Below this many distance entries a pass is cheaper than waking a thread team.
constexpr index_t kParallelWork = index_t(1) << 15;
// Golden-section refinement stops when the bracket on log s is this narrow (0.01% in s).
constexpr double kLogWidthTol = 1e-4;
// The grid spans these multiples of the root median squared object-to-centre distance: at the
// low end the nearest centre decides almost alone, at the high end posteriors are near uniform.
constexpr double kGridLow = 0.05, kGridHigh = 2.0;

// Uniform integer in [0, n) by rejection, written out so that the draw does not depend on the
// standard library's distribution implementation.
index_t uniform_below(std::mt19937_64& rng, index_t n) {
  const auto un = static_cast<std::uint64_t>(n);
  const std::uint64_t limit = UINT64_MAX - UINT64_MAX % un;  // a multiple of n: no bias
  std::uint64_t v = rng();
  while (v >= limit) v = rng();
  return static_cast<index_t>(v % un);
}

// A uniform random subset of `take` entries of `pool` (partial Fisher-Yates), sorted so that
// later loops visit it in index order.
std::vector<index_t> draw(std::vector<index_t> pool, index_t take, std::mt19937_64& rng) {
  const index_t n = static_cast<index_t>(pool.size());
  take = std::min(take, n);
  for (index_t i = 0; i < take; ++i) std::swap(pool[i], pool[i + uniform_below(rng, n - i)]);
  pool.resize(static_cast<size_t>(take));
  std::sort(pool.begin(), pool.end());
  return pool;
}

struct Centres {
  index_t count = 0, dim = 0;
  int classes = 0;
  std::vector<index_t> begin;      // centres of class k are [begin[k], begin[k + 1])
  std::vector<double> log_count;   // log m_k
  std::vector<double> t;           // dim x count: transposed so the inner loop runs over centres
  std::vector<double> sq;          // |c_j|^2
  std::vector<index_t> of_row;     // centre index of each row of X, -1 for non-centres
};

double squared_norm(const double* x, index_t dim) {
  double s = 0.0;
  for (index_t d = 0; d < dim; ++d) s += x[d] * x[d];
  return s;
}

// Squared distances from rows[0..nr) of X to every centre, into out (nr x count), by
// |x|^2 + |c|^2 - 2 x.c. The dot products dominate the cost (N x centres x dim); they run as
// cache blocks over centres and dimensions with the inner loop over contiguous centres, which
// vectorises without reassociating any sum: every entry adds its terms in dimension order, so
// the bits do not depend on tiling or threads. The expansion loses about eps |x|^2 to
// cancellation when x is near a centre; tiny negative results are clamped to 0, and a centre's
// distance to itself is set to its exact value 0.
void distance_tile(const MatrixD& X, const index_t* rows, int nr, const Centres& c, double* out) {
  const index_t C = c.count, dim = c.dim;
  std::fill(out, out + static_cast<size_t>(nr) * C, 0.0);
  for (index_t j0 = 0; j0 < C; j0 += kCentreBlock) {
    const index_t j1 = std::min(C, j0 + kCentreBlock);
    for (index_t d0 = 0; d0 < dim; d0 += kDimBlock) {
      const index_t d1 = std::min(dim, d0 + kDimBlock);
      for (int r = 0; r < nr; ++r) {
        const double* x = X.row(rows[r]);
        double* acc = out + static_cast<size_t>(r) * C;
        for (index_t d = d0; d < d1; ++d) {
          const double xv = x[d];
          if (xv == 0.0) continue;  // exact skip: pixel data is half zeros
          const double* ct = c.t.data() + d * C;
#pragma omp simd
          for (index_t j = j0; j < j1; ++j) acc[j] += xv * ct[j];
        }
      }
    }
  }
  for (int r = 0; r < nr; ++r) {
    const double xx = squared_norm(X.row(rows[r]), dim);
    double* o = out + static_cast<size_t>(r) * C;
    for (index_t j = 0; j < C; ++j) {
      const double v = xx + c.sq[j] - 2.0 * o[j];
      o[j] = v > 0.0 ? v : 0.0;
    }
    const index_t self = c.of_row[rows[r]];
    if (self >= 0) o[self] = 0.0;
  }
}

// log of sum_i exp(v_i), shifted by the largest term so that nothing overflows and at least one
// term is exp(0); -inf when every term is -inf.
double log_sum_exp(const double* v, index_t n) {
  double m = -kInf;
  for (index_t i = 0; i < n; ++i) m = std::max(m, v[i]);
  if (m == -kInf) return -kInf;
  double s = 0.0;
  for (index_t i = 0; i < n; ++i) s += std::exp(v[i] - m);
  return m + std::log(s);
}

// Unnormalised log class densities lp_k = log p(x | c_k) + const for one object:
// log((1/m_k) sum_j exp(-a d_j)) with a = 1 / (2 s^2), by log-sum-exp per class so that
// 784-dimensional distances (exponents of -1e3 and beyond) do not underflow. `scratch` holds
// count entries.
void log_class_densities(const double* d2, const Centres& c, double a, double* scratch, double* lp) {
  for (index_t j = 0; j < c.count; ++j) scratch[j] = d2[j] == 0.0 ? 0.0 : -(a * d2[j]);
  for (int k = 0; k < c.classes; ++k) {
    const index_t b = c.begin[k], e = c.begin[k + 1];
    lp[k] = log_sum_exp(scratch + b, e - b) - c.log_count[k];
  }
}

// Mean of log p(y_h | x_h) over the held-out objects for width s. Per-object terms are summed
// serially in held-out order, so the value does not depend on the thread count.
double heldout_score(const std::vector<double>& d2, const std::vector<int>& y, const Centres& c, double s,
                     int nt) {
  const index_t H = static_cast<index_t>(y.size());
  const double a = 1.0 / (2.0 * s * s);
  std::vector<double> ll(static_cast<size_t>(H));
#pragma omp parallel num_threads(nt) if (H * c.count >= kParallelWork)
  {
    std::vector<double> scratch(static_cast<size_t>(c.count)), lp(static_cast<size_t>(c.classes));
#pragma omp for schedule(static)
    for (index_t h = 0; h < H; ++h) {
      log_class_densities(d2.data() + h * c.count, c, a, scratch.data(), lp.data());
      ll[h] = lp[y[h]] - log_sum_exp(lp.data(), c.classes);
    }
  }
  double sum = 0.0;
  for (double v : ll) sum += v;
  return sum / static_cast<double>(H);
}

}  // namespace

PosteriorModelResult fit_posterior_model(const MatrixD& X, const std::vector<int>& labels,
                                         const PosteriorModelParams& params, unsigned long long seed, int threads) {
  const std::string who = "posterior model: ";
  check_fields(params, posterior_model_fields(), "input.posterior_model");
  const index_t N = X.rows, dim = X.cols;
  if (N < 1 || dim < 1)
    input_error(who + "expected vectors as an N x dim matrix with N, dim >= 1, found " + std::to_string(N) + " x " +
                std::to_string(dim));
  if (static_cast<index_t>(labels.size()) != N)
    input_error(who + std::to_string(labels.size()) + " labels for " + std::to_string(N) +
                " vectors; expected one label per vector (-1 for unknown)");
  for (index_t n = 0; n < N; ++n) {
    const double* x = X.row(n);
    for (index_t d = 0; d < dim; ++d)
      if (!std::isfinite(x[d]))
        input_error(who + "vector row " + std::to_string(n + 1) + ", column " + std::to_string(d + 1) + " is " +
                    std::to_string(x[d]) + "; expected finite values");
  }
  int max_label = -1;
  for (index_t n = 0; n < N; ++n) {
    // Every class 0..K-1 must hold a labelled vector, so a label >= N cannot be a class index; it is
    // refused here, before K = max + 1 could overflow or size anything.
    if (labels[n] < -1 || labels[n] >= N)
      input_error(who + "label " + std::to_string(labels[n]) + " at row " + std::to_string(n + 1) +
                  "; expected a class 0..K-1 (every class labelled, so K <= " + std::to_string(N) +
                  "), or -1 for unknown");
    max_label = std::max(max_label, labels[n]);
  }
  const int K = max_label + 1;
  if (K < 2)
    input_error(who + "expected labelled vectors of at least 2 classes (labels 0..K-1), found " +
                (K == 1 ? std::string("only class 0") : std::string("no labelled vector")));
  std::vector<std::vector<index_t>> by_class(static_cast<size_t>(K));
  for (index_t n = 0; n < N; ++n)
    if (labels[n] >= 0) by_class[labels[n]].push_back(n);
  for (int k = 0; k < K; ++k)
    if (by_class[k].empty())
      input_error(who + "class " + std::to_string(k) + " has no labelled vector (labels run 0.." +
                  std::to_string(K - 1) + "; every class up to the largest label needs at least one example)");
  const int nt = threads > 0 ? threads : omp_get_max_threads();

  // Centres first, then held-out objects, from one seeded stream.
  std::mt19937_64 rng(seed);
  Centres c;
  c.classes = K;
  c.dim = dim;
  c.begin.push_back(0);
  PosteriorModelResult res;
  for (int k = 0; k < K; ++k) {
    const auto picked = draw(by_class[k], params.per_class, rng);
    res.centres.insert(res.centres.end(), picked.begin(), picked.end());
    c.begin.push_back(static_cast<index_t>(res.centres.size()));
    c.log_count.push_back(std::log(static_cast<double>(picked.size())));
  }
  c.count = static_cast<index_t>(res.centres.size());
  c.of_row.assign(static_cast<size_t>(N), -1);
  c.t.resize(static_cast<size_t>(dim * c.count));
  c.sq.resize(static_cast<size_t>(c.count));
  for (index_t j = 0; j < c.count; ++j) {
    const double* x = X.row(res.centres[j]);
    c.of_row[res.centres[j]] = j;
    for (index_t d = 0; d < dim; ++d) c.t[d * c.count + j] = x[d];
    c.sq[j] = squared_norm(x, dim);
  }
  std::vector<index_t> pool;
  for (index_t n = 0; n < N; ++n)
    if (labels[n] >= 0 && c.of_row[n] < 0) pool.push_back(n);
  const std::vector<index_t> held = draw(std::move(pool), params.holdout, rng);
  const index_t H = static_cast<index_t>(held.size());
  res.heldout_size = H;
  std::vector<int> held_y(static_cast<size_t>(H));
  for (index_t h = 0; h < H; ++h) held_y[h] = labels[held[h]];

  std::vector<double> held_d2(static_cast<size_t>(H * c.count));
#pragma omp parallel for schedule(dynamic) num_threads(nt) if (H * c.count * dim >= kParallelWork)
  for (index_t h0 = 0; h0 < H; h0 += kTileRows) {
    const int nr = static_cast<int>(std::min<index_t>(kTileRows, H - h0));
    distance_tile(X, held.data() + h0, nr, c, held_d2.data() + h0 * c.count);
  }

  if (params.width > 0.0) {
    res.width = params.width;
    if (!std::isfinite(1.0 / (2.0 * res.width * res.width)))
      input_error(who + "input.posterior_model.width = " + std::to_string(res.width) +
                  " is too small to evaluate exp(-d^2 / (2 s^2))");
    res.heldout_loglik = H > 0 ? heldout_score(held_d2, held_y, c, res.width, nt)
                               : std::numeric_limits<double>::quiet_NaN();
  } else {
    if (H == 0)
      input_error(who + "choosing the width needs labelled vectors that are not centres, but all " +
                  std::to_string(c.count) + " labelled vectors are centres (input.posterior_model.per_class = " +
                  std::to_string(params.per_class) +
                  "); label more vectors, lower per_class or give input.posterior_model.width");
    // The grid scales with the data: its centre sits near the typical object-to-centre distance.
    std::vector<double> tmp = held_d2;
    auto mid = tmp.begin() + static_cast<std::ptrdiff_t>(tmp.size() / 2);
    std::nth_element(tmp.begin(), mid, tmp.end());
    const double scale = std::sqrt(*mid);
    if (!(scale > 0.0) || !std::isfinite(scale))
      input_error(who + "the median distance from held-out vectors to centres is " + std::to_string(scale) +
                  ", so no width range can be derived; give input.posterior_model.width");

    // Maximise the mean held-out log-likelihood over t = log s: a log-spaced grid finds the
    // basin, golden-section search narrows it. The width returned is the best point evaluated,
    // so it is never worse than any grid candidate.
    double best_t = 0.0, best_f = -kInf;
    auto f = [&](double t) {
      const double s = std::exp(t);
      const double v = heldout_score(held_d2, held_y, c, s, nt);
      res.width_trace.emplace_back(s, v);
      if (v > best_f) best_f = v, best_t = t;
      return v;
    };
    const int G = params.width_grid;
    const double t_lo = std::log(kGridLow * scale), t_hi = std::log(kGridHigh * scale);
    std::vector<double> grid(static_cast<size_t>(G));
    int ib = 0;
    double fb = -kInf;
    for (int i = 0; i < G; ++i) {
      grid[i] = t_lo + (t_hi - t_lo) * i / (G - 1);
      const double v = f(grid[i]);
      if (v > fb) fb = v, ib = i;
    }
    double lo = grid[std::max(ib - 1, 0)], hi = grid[std::min(ib + 1, G - 1)];
    const double inv_phi = (std::sqrt(5.0) - 1.0) / 2.0;
    double t1 = hi - inv_phi * (hi - lo), t2 = lo + inv_phi * (hi - lo);
    double f1 = f(t1), f2 = f(t2);
    while (hi - lo > kLogWidthTol) {
      if (f1 >= f2) {
        hi = t2, t2 = t1, f2 = f1;
        t1 = hi - inv_phi * (hi - lo);
        f1 = f(t1);
      } else {
        lo = t1, t1 = t2, f1 = f2;
        t2 = lo + inv_phi * (hi - lo);
        f2 = f(t2);
      }
    }
    res.width = std::exp(best_t);
    res.heldout_loglik = best_f;
  }

  // Posteriors of every object: a distance tile, then a max-shifted softmax over the class
  // log densities per row (uniform prior: it cancels).
  res.posteriors = MatrixD(N, K);
  const double a = 1.0 / (2.0 * res.width * res.width);
#pragma omp parallel num_threads(nt) if (N * c.count * dim >= kParallelWork)
  {
    std::vector<double> tile(static_cast<size_t>(kTileRows * c.count)), scratch(static_cast<size_t>(c.count));
    index_t rows[kTileRows];
#pragma omp for schedule(dynamic)
    for (index_t n0 = 0; n0 < N; n0 += kTileRows) {
      const int nr = static_cast<int>(std::min<index_t>(kTileRows, N - n0));
      for (int r = 0; r < nr; ++r) rows[r] = n0 + r;
      distance_tile(X, rows, nr, c, tile.data());
      for (int r = 0; r < nr; ++r) {
        double* p = res.posteriors.row(n0 + r);
        log_class_densities(tile.data() + r * c.count, c, a, scratch.data(), p);
        double m = -kInf;
        for (int k = 0; k < K; ++k) m = std::max(m, p[k]);
        double s = 0.0;
        for (int k = 0; k < K; ++k) s += (p[k] = std::exp(p[k] - m));
        for (int k = 0; k < K; ++k) p[k] /= s;
      }
    }
  }
  for (index_t n = 0; n < N; ++n)
    for (int k = 0; k < K; ++k)
      if (!std::isfinite(res.posteriors(n, k)))
        input_error(who + "width " + std::to_string(res.width) + " underflows every class density of vector row " +
                    std::to_string(n + 1) + "; give a larger input.posterior_model.width");
  return res;
}

}  // namespace orrery
