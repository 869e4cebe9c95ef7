// The class-posterior model of supervised NeRV and its learning-metric distances, on the CPU.
// With r_nk the responsibilities of point n and p_n = sum_k beta_{c_n k} r_nk its model probability
// of its own class, the loss L = -(1/n) sum_n log p_n has
//   dL/dm_k = -(1/n) sum_n r_nk (beta_{c_n k} / p_n - 1) (x_n - m_k) / s^2
//   dL/dbeta_ck = -(1/n) sum_{n: c_n = c} r_nk / p_n,   dL/dtheta_ck = beta_ck (G_ck - sum_c' beta_c'k G_c'k)
// (d r_nl / d m_k = r_nl (delta_lk - r_nk) (x_n - m_k) / s^2). Sums over points run in fixed chunks
// whose partial gradients are added in chunk order, so any thread count gives the same bits.
#include "orrery/snerv.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "optim/cg.hpp"
#include "orrery/affinity.hpp"
#include "orrery/backend.hpp"
#include "orrery/error.hpp"
#include "orrery/knn.hpp"
#include "orrery/pca.hpp"
#include "orrery/math/distance.hpp"
#include "orrery/math/fisher.hpp"

namespace orrery {

namespace {

constexpr double kProbFloor = 1e-300;  // log p of a class the model gives no mass
constexpr index_t kChunk = 256;
// The class-mixture model's conjugate-gradient fit stops when an iteration lowers its loss by less
// than this fraction: the metric needs the model's posteriors, not its last digits.
constexpr double kMixtureFitFtol = 1e-9;

int nthreads(int t) { return t > 0 ? t : omp_get_max_threads(); }

struct Labelled {
  std::vector<index_t> rows;
  int classes = 0;
};

Labelled labelled_rows(const MatrixD& X, const std::vector<int>& labels) {
  if (static_cast<index_t>(labels.size()) != X.rows)
    input_error("labels: " + std::to_string(labels.size()) + " labels for " + std::to_string(X.rows) + " points");
  Labelled L;
  for (index_t n = 0; n < X.rows; ++n) {
    const int c = labels[static_cast<size_t>(n)];
    if (c < -1) input_error("labels: row " + std::to_string(n + 1) + " has label " + std::to_string(c) + " (< -1)");
    for (index_t j = 0; j < X.cols; ++j)
      if (!std::isfinite(X(n, j)))
        input_error("vectors: row " + std::to_string(n + 1) + ", column " + std::to_string(j + 1) +
                    " is not a finite number");
    if (c >= 0) {
      L.rows.push_back(n);
      L.classes = std::max(L.classes, c);  // the largest label; + 1 below, once it is known to fit
    }
  }
  // Every class 0..max needs a labelled point, so a label beyond their count cannot be right; this
  // also bounds the per-class arrays by the data rather than by the largest label.
  if (L.classes >= static_cast<index_t>(L.rows.size()) && !L.rows.empty())
    input_error("labels: label " + std::to_string(L.classes) + " exceeds the " + std::to_string(L.rows.size()) +
                " labelled points; classes are 0..C-1 (the CLI numbers any label values so)");
  if (!L.rows.empty()) L.classes += 1;
  if (L.classes < 2) input_error("labels: supervised NeRV needs at least two classes among the labelled points");
  std::vector<int> count(static_cast<size_t>(L.classes), 0);
  for (index_t n : L.rows) ++count[static_cast<size_t>(labels[static_cast<size_t>(n)])];
  for (int c = 0; c < L.classes; ++c)
    if (count[static_cast<size_t>(c)] == 0)
      input_error("labels: class " + std::to_string(c) + " has no labelled point (classes are 0..max label)");
  return L;
}

// Loss over the given rows at z = [centres, theta].
double loss_on(const MatrixD& X, const std::vector<int>& labels, const std::vector<index_t>& rows, int C,
               double width, int K, const std::vector<double>& z, std::vector<double>* grad, int threads) {
  const index_t d = X.cols;
  const double* m = z.data();
  const double* theta = z.data() + K * d;
  std::vector<double> beta(static_cast<size_t>(K) * C);
  for (int k = 0; k < K; ++k) {
    double top = -1e300, s = 0.0;
    for (int c = 0; c < C; ++c) top = std::max(top, theta[k * C + c]);
    for (int c = 0; c < C; ++c) s += (beta[static_cast<size_t>(k * C + c)] = std::exp(theta[k * C + c] - top));
    for (int c = 0; c < C; ++c) beta[static_cast<size_t>(k * C + c)] /= s;
  }
  const double w = 1.0 / (width * width);
  const auto n_rows = static_cast<index_t>(rows.size());
  const index_t chunks = (n_rows + kChunk - 1) / kChunk;
  const size_t G = static_cast<size_t>(K) * (d + C);  // d/dm then d/dbeta
  std::vector<double> part_loss(static_cast<size_t>(chunks), 0.0);
  std::vector<double> part_grad(grad ? static_cast<size_t>(chunks) * G : 0, 0.0);
#pragma omp parallel num_threads(nthreads(threads))
  {
    std::vector<double> e(static_cast<size_t>(K));
#pragma omp for schedule(static)
    for (index_t ch = 0; ch < chunks; ++ch) {
      double* g = grad ? part_grad.data() + static_cast<size_t>(ch) * G : nullptr;
      double lsum = 0.0;
      for (index_t q = ch * kChunk; q < std::min(n_rows, (ch + 1) * kChunk); ++q) {
        const index_t n = rows[static_cast<size_t>(q)];
        const int cn = labels[static_cast<size_t>(n)];
        const double* x = X.row(n);
        double top = -1e300;
        for (int k = 0; k < K; ++k) {
          double s2 = 0.0;
          for (index_t j = 0; j < d; ++j) s2 += (x[j] - m[k * d + j]) * (x[j] - m[k * d + j]);
          e[static_cast<size_t>(k)] = -0.5 * s2 * w;
          top = std::max(top, e[static_cast<size_t>(k)]);
        }
        double zs = 0.0;
        for (int k = 0; k < K; ++k) zs += (e[static_cast<size_t>(k)] = std::exp(e[static_cast<size_t>(k)] - top));
        double p = 0.0;
        for (int k = 0; k < K; ++k) {
          e[static_cast<size_t>(k)] /= zs;  // r_nk
          p += beta[static_cast<size_t>(k * C + cn)] * e[static_cast<size_t>(k)];
        }
        const double pf = std::max(p, kProbFloor);
        lsum -= std::log(pf);
        if (!g) continue;
        for (int k = 0; k < K; ++k) {
          const double r = e[static_cast<size_t>(k)];
          const double f = -r * (beta[static_cast<size_t>(k * C + cn)] / pf - 1.0) * w;
          for (index_t j = 0; j < d; ++j) g[k * d + j] += f * (x[j] - m[k * d + j]);
          g[K * d + k * C + cn] -= r / pf;
        }
      }
      part_loss[static_cast<size_t>(ch)] = lsum;
    }
  }
  double loss = 0.0;
  for (double v : part_loss) loss += v;
  const double inv_n = 1.0 / static_cast<double>(std::max<index_t>(n_rows, 1));
  if (grad) {
    std::vector<double> G_sum(G, 0.0);
    for (index_t ch = 0; ch < chunks; ++ch)
      for (size_t q = 0; q < G; ++q) G_sum[q] += part_grad[static_cast<size_t>(ch) * G + q];
    grad->assign(z.size(), 0.0);
    for (size_t q = 0; q < static_cast<size_t>(K * d); ++q) (*grad)[q] = G_sum[q] * inv_n;
    for (int k = 0; k < K; ++k) {
      const double* gb = G_sum.data() + K * d + k * C;
      double mean = 0.0;
      for (int c = 0; c < C; ++c) mean += beta[static_cast<size_t>(k * C + c)] * gb[c];
      for (int c = 0; c < C; ++c)
        (*grad)[static_cast<size_t>(K * d + k * C + c)] = beta[static_cast<size_t>(k * C + c)] * (gb[c] - mean) * inv_n;
    }
  }
  return loss * inv_n;
}

struct Fit {
  std::vector<double> z;
  int iterations = 0;
};

// Initial parameters: K labelled points drawn at random as centres; theta_ck = log(1 + number of
// the training points of class c whose nearest centre is k).
std::vector<double> initial_params(const MatrixD& X, const std::vector<int>& labels, const std::vector<index_t>& rows,
                                   int C, int K, unsigned long long seed) {
  const index_t d = X.cols;
  std::vector<index_t> pick = rows;
  std::mt19937_64 rng(seed);
  std::shuffle(pick.begin(), pick.end(), rng);
  std::vector<double> z(static_cast<size_t>(K) * (d + C), 0.0);
  for (int k = 0; k < K; ++k)
    for (index_t j = 0; j < d; ++j) z[static_cast<size_t>(k * d + j)] = X(pick[static_cast<size_t>(k)], j);
  std::vector<double> count(static_cast<size_t>(K) * C, 1.0);
  for (index_t n : rows) {
    int best = 0;
    double bd = 1e300;
    for (int k = 0; k < K; ++k) {
      double s2 = 0.0;
      for (index_t j = 0; j < d; ++j) s2 += (X(n, j) - z[static_cast<size_t>(k * d + j)]) * (X(n, j) - z[static_cast<size_t>(k * d + j)]);
      if (s2 < bd) bd = s2, best = k;
    }
    count[static_cast<size_t>(best * C + labels[static_cast<size_t>(n)])] += 1.0;
  }
  for (size_t q = 0; q < count.size(); ++q) z[static_cast<size_t>(K * d) + q] = std::log(count[q]);
  return z;
}

// Root median squared distance of a training point to its nearest initial centre (the width scale).
double width_scale(const MatrixD& X, const std::vector<index_t>& rows, int K, const std::vector<double>& z) {
  const index_t d = X.cols;
  std::vector<double> nearest;
  for (index_t n : rows) {
    double bd = 1e300;
    for (int k = 0; k < K; ++k) {
      double s2 = 0.0;
      for (index_t j = 0; j < d; ++j) s2 += (X(n, j) - z[static_cast<size_t>(k * d + j)]) * (X(n, j) - z[static_cast<size_t>(k * d + j)]);
      if (s2 > 0) bd = std::min(bd, s2);
    }
    if (bd < 1e300) nearest.push_back(bd);
  }
  if (nearest.empty()) return 1.0;
  std::nth_element(nearest.begin(), nearest.begin() + nearest.size() / 2, nearest.end());
  const double s = std::sqrt(nearest[nearest.size() / 2]);
  return s > 0 ? s : 1.0;
}

Fit fit_on(const MatrixD& X, const std::vector<int>& labels, const std::vector<index_t>& rows, int C, int K,
           double width, int max_iter, unsigned long long seed, int threads) {
  Fit f;
  f.z = initial_params(X, labels, rows, C, K, seed);
  optim::CgOptions o;
  o.max_iter = max_iter;
  o.ftol = kMixtureFitFtol;
  const auto rep = optim::cg_minimize(
      [&](const std::vector<double>& z, std::vector<double>& g) {
        return loss_on(X, labels, rows, C, width, K, z, &g, threads);
      },
      f.z, o);
  f.iterations = rep.iterations;
  return f;
}

ClassMixture to_model(const std::vector<double>& z, index_t d, int C, int K, double width) {
  ClassMixture m;
  m.num_classes = C;
  m.width = width;
  m.centres = MatrixD(K, d);
  std::copy(z.begin(), z.begin() + K * d, m.centres.data.begin());
  m.beta = MatrixD(K, C);
  for (int k = 0; k < K; ++k) {
    const double* th = z.data() + K * d + k * C;
    const double top = *std::max_element(th, th + C);
    double s = 0.0;
    for (int c = 0; c < C; ++c) s += (m.beta(k, c) = std::exp(th[c] - top));
    for (int c = 0; c < C; ++c) m.beta(k, c) /= s;
  }
  return m;
}

}  // namespace

const std::vector<Field<ClassMixtureParams>>& class_mixture_fields() {
  static const std::vector<Field<ClassMixtureParams>> fields = {
      {"components", &ClassMixtureParams::components,
       "Gaussian components K of the class-posterior model; 0 chooses from {C, 2C, 4C} by validation.", 0, 1e6},
      {"width", &ClassMixtureParams::width,
       "Shared component width s (input units); 0 chooses from {1/2, 1, 2} x a data scale by validation.", 0, 1e100},
      {"folds", &ClassMixtureParams::folds, "Folds of the internal validation that chooses K and s.", 2, 100},
      {"model_max_iter", &ClassMixtureParams::max_iter, "Conjugate-gradient iterations of the model's final fit.", 1,
       1e6},
      {"pieces", &ClassMixtureParams::pieces, "Pieces T of the straight-path learning-metric distance.", 1, 1000},
      {"euclidean", &ClassMixtureParams::euclidean,
       "Weight eta of an isotropic term eta |dx|^2 / s^2 added to the Fisher metric (keeps within-class distances "
       "positive); 0 = pure Fisher.",
       0, 1e6},
      {"fit_sample", &ClassMixtureParams::fit_sample,
       "Labelled points the model is fitted on: at most this many, drawn by the seed (plus one of any class the draw "
       "missed); 0 = all. The fit and its validation cost O(n K d) per step; every point is still mapped.",
       0, 1e12},
      {"candidates", &ClassMixtureParams::candidates,
       "Candidates per point when input.neighbors is approximate: each point's this many nearest Euclidean "
       "neighbors, re-ranked by the metric; 0 = 3 ceil(3 perplexity) (at most N - 1). More come closer to the exact "
       "path (N - 1 equals it) at a proportional cost.",
       0, 1e9},
  };
  return fields;
}

double class_mixture_loss(const MatrixD& X, const std::vector<int>& labels, int num_classes, double width, int K,
                          const std::vector<double>& z, std::vector<double>* grad, int threads) {
  std::vector<index_t> rows;
  for (index_t n = 0; n < X.rows; ++n)
    if (labels[static_cast<size_t>(n)] >= 0) rows.push_back(n);
  if (z.size() != static_cast<size_t>(K) * (X.cols + num_classes)) internal_error("class_mixture_loss: bad z size");
  return loss_on(X, labels, rows, num_classes, width, K, z, grad, threads);
}

namespace {

// ClassMixtureParams::fit_sample's draw from the labelled rows (class_mixture_sample).
std::vector<index_t> sampled(const Labelled& L, const std::vector<int>& labels, index_t sample,
                             unsigned long long seed) {
  if (sample < 0) input_error("input.metric.fit_sample: expected >= 0 (0 = all labelled points), found " +
                              std::to_string(sample));
  if (sample == 0 || static_cast<index_t>(L.rows.size()) <= sample) return L.rows;
  std::vector<index_t> order = L.rows;
  std::mt19937_64 rng(seed ^ 0x5a3b1ef17ULL);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<char> seen(static_cast<size_t>(L.classes), 0);
  std::vector<index_t> keep(order.begin(), order.begin() + sample);
  for (index_t n : keep) seen[static_cast<size_t>(labels[static_cast<size_t>(n)])] = 1;
  // a class the draw missed keeps its first drawn row: the model has C classes whatever the sample
  for (size_t q = static_cast<size_t>(sample); q < order.size(); ++q) {
    const int c = labels[static_cast<size_t>(order[q])];
    if (!seen[static_cast<size_t>(c)]) seen[static_cast<size_t>(c)] = 1, keep.push_back(order[q]);
  }
  std::sort(keep.begin(), keep.end());
  return keep;
}

MatrixD divided(const MatrixD& X, double scale) {
  MatrixD U = X;
  for (double& v : U.data) v /= scale;
  return U;
}

// The model of points X fitted on X / scale, in the units of X: centres and widths times scale
// (the class weights and the likelihoods are unitless).
ClassMixture rescaled(ClassMixture m, double scale) {
  for (double& v : m.centres.data) v *= scale;
  m.width *= scale;
  for (ValidationPoint& p : m.selection) p.width *= scale;
  return m;
}

// fit_class_mixture on data of unit scale (input_scale 1): the CG's first steps and tolerances
// are in the data's units, so fitting at the data's own scale (not at a power of two within a
// factor 2 of it) makes the fit the same at every scale.
ClassMixture fit_class_mixture_unit(const MatrixD& X, const std::vector<int>& labels, const ClassMixtureParams& prm,
                                    unsigned long long seed, int threads) {
  Labelled L = labelled_rows(X, labels);
  L.rows = sampled(L, labels, prm.fit_sample, seed);
  const int C = L.classes;
  const auto n_lab = static_cast<index_t>(L.rows.size());
  std::vector<int> Ks;
  if (prm.components > 0) Ks = {prm.components};
  else
    for (int f : {1, 2, 4})
      if (f == 1 || C * f <= n_lab / 4) Ks.push_back(C * f);
  for (int K : Ks)
    if (K > n_lab)
      input_error("input.metric.components: " + std::to_string(K) + " components for " + std::to_string(n_lab) +
                  " labelled points");
  std::vector<ValidationPoint> sel;
  int bestK = Ks[0];
  double best_width = prm.width;
  if (Ks.size() > 1 || prm.width <= 0) {
    if (prm.folds > n_lab) input_error("input.metric.folds: " + std::to_string(prm.folds) + " folds for " + std::to_string(n_lab) +
                                         " labelled points");
    std::vector<index_t> order = L.rows;
    std::mt19937_64 rng(seed ^ 0x5eedf01dULL);
    std::shuffle(order.begin(), order.end(), rng);
    double best = -1e300;
    for (int K : Ks) {
      std::vector<double> widths;
      if (prm.width > 0) widths = {prm.width};
      else {
        const double s0 = width_scale(X, L.rows, K, initial_params(X, labels, L.rows, C, K, seed));
        widths = {0.5 * s0, s0, 2.0 * s0};
      }
      for (double s : widths) {
        double total = 0.0;
        for (int f = 0; f < prm.folds; ++f) {
          std::vector<index_t> train, test;
          for (index_t q = 0; q < n_lab; ++q) (q % prm.folds == f ? test : train).push_back(order[static_cast<size_t>(q)]);
          if (static_cast<index_t>(train.size()) < K) continue;
          const Fit fit = fit_on(X, labels, train, C, K, s, std::min(prm.max_iter, 100), seed + f, threads);
          total -= loss_on(X, labels, test, C, s, K, fit.z, nullptr, threads) * static_cast<double>(test.size());
        }
        const double ll = total / static_cast<double>(n_lab);
        sel.push_back({K, s, ll});
        if (ll > best) best = ll, bestK = K, best_width = s;
      }
    }
  }
  const Fit fit = fit_on(X, labels, L.rows, C, bestK, best_width, prm.max_iter, seed, threads);
  ClassMixture m = to_model(fit.z, X.cols, C, bestK, best_width);
  m.iterations = fit.iterations;
  m.train_loglik = -loss_on(X, labels, L.rows, C, best_width, bestK, fit.z, nullptr, threads);
  m.selection = std::move(sel);
  m.euclidean = prm.euclidean;
  return m;
}

}  // namespace

std::vector<index_t> class_mixture_sample(const MatrixD& X, const std::vector<int>& labels, index_t sample,
                                          unsigned long long seed) {
  return sampled(labelled_rows(X, labels), labels, sample, seed);
}

ClassMixture fit_class_mixture(const MatrixD& X, const std::vector<int>& labels, const ClassMixtureParams& prm,
                               unsigned long long seed, int threads) {
  const double scale = input_scale(X);
  ClassMixtureParams unit = prm;
  unit.width = prm.width / scale;
  return rescaled(fit_class_mixture_unit(divided(X, scale), labels, unit, seed, threads), scale);
}

MatrixD class_mixture_posteriors(const ClassMixture& m, const MatrixD& X) {
  const auto K = static_cast<int>(m.centres.rows);
  const int C = m.num_classes;
  MatrixD P(X.rows, C, 0.0);
  std::vector<double> u(static_cast<size_t>(K)), h(static_cast<size_t>(K)), r(static_cast<size_t>(K));
  for (int k = 0; k < K; ++k) {
    double s = 0.0;
    for (index_t j = 0; j < X.cols; ++j) s += m.centres(k, j) * m.centres(k, j);
    h[static_cast<size_t>(k)] = 0.5 * s;
  }
  const double w = 1.0 / (m.width * m.width);
  for (index_t n = 0; n < X.rows; ++n) {
    for (int k = 0; k < K; ++k) {
      double s = 0.0;
      for (index_t j = 0; j < X.cols; ++j) s += m.centres(k, j) * X(n, j);
      u[static_cast<size_t>(k)] = s;
    }
    math::mixture_responsibilities(u.data(), h.data(), w, K, r.data());
    for (int c = 0; c < C; ++c)
      for (int k = 0; k < K; ++k) P(n, c) += m.beta(k, c) * r[static_cast<size_t>(k)];
  }
  return P;
}

double class_mixture_fisher(const ClassMixture& m, const double* x, const double* v) {
  const auto K = static_cast<int>(m.centres.rows);
  const index_t d = m.centres.cols;
  std::vector<double> u(static_cast<size_t>(K)), a(static_cast<size_t>(K)), h(static_cast<size_t>(K)),
      r(static_cast<size_t>(K));
  for (int k = 0; k < K; ++k)
    for (index_t j = 0; j < d; ++j) {
      u[static_cast<size_t>(k)] += m.centres(k, j) * x[j];
      a[static_cast<size_t>(k)] += m.centres(k, j) * v[j];
      h[static_cast<size_t>(k)] += 0.5 * m.centres(k, j) * m.centres(k, j);
    }
  const double w = 1.0 / (m.width * m.width);
  math::mixture_responsibilities(u.data(), h.data(), w, K, r.data());
  double v2 = 0.0;
  for (index_t j = 0; j < d; ++j) v2 += v[j] * v[j];
  return math::fisher_quadratic(r.data(), a.data(), m.beta.data.data(), w, K, m.num_classes, math::kFisherFloor) +
         m.euclidean * w * v2;
}

double snerv_perplexity(double given, index_t points, index_t components) {
  if (given > 0) return given;
  // the clamp's range [2, (N - 1) / 3] is empty below 7 points (k = ceil(3 perplexity) >= 6 neighbors)
  const double top = std::min(static_cast<double>(points - 1) / 3.0, kSnervMaxDefaultPerplexity);
  if (!(top >= 2.0))
    input_error("input.perplexity: 0 (the paper's 0.5 N / K, clamped to [2, (N - 1) / 3]) needs at least 7 points, "
                "found " + std::to_string(points) + "; give one > 1 (dense affinities: < N - 1; sparse: <= (N - 1) / 3)");
  return std::clamp(0.5 * static_cast<double>(points) / static_cast<double>(components), 2.0, top);
}

bool snerv_uses_candidates(SnervNeighbors mode, index_t points, bool sparse) {
  if (mode == SnervNeighbors::candidates && !sparse)
    input_error("input.neighbors: approximate (candidate re-ranking) gives sparse affinities; input.affinities is dense");
  return mode == SnervNeighbors::candidates || (mode == SnervNeighbors::automatic && sparse && points > kSnervExactMaxPoints);
}

int snerv_candidates(int given, int k, index_t points) {
  if (given <= 0) return static_cast<int>(std::min<index_t>(points - 1, 3 * static_cast<index_t>(k)));
  if (given < k || given > points - 1)
    input_error("input.metric.candidates: expected k = ceil(3 perplexity) = " + std::to_string(k) +
                " <= candidates <= N - 1 = " + std::to_string(points - 1) + ", found " + std::to_string(given));
  return given;
}

KnnGraph metric_knn(const ClassMixture& model, const MatrixD& X, int k, int candidates, int pieces, bool approximate,
                    const ApproxKnnParams& search, unsigned long long seed, Backend& backend) {
  check_knn_k(X.rows, candidates);
  const KnnGraph c = approximate ? approximate_knn(X, candidates, seed, backend.threads(), search)
                                 : backend.knn(X, candidates);
  return rerank_candidates(c, backend.learning_metric_pairs(model, X, c, pieces), k, backend.threads());
}

AffinityResult snerv_affinities(const MatrixD& D, double perplexity, bool sparse, int threads) {
  return sparse ? affinities_from_knn(knn_from_distance_matrix(D, sparse_neighbors(perplexity), threads), perplexity,
                                      threads)
                : affinities_from_distances(D, perplexity, threads);
}

SnervResult fit_snerv(const MatrixD& X, const std::vector<int>& labels, const SnervParams& prm,
                      unsigned long long seed, Backend& backend, const std::function<void(int, double)>& progress,
                      RunControl* control, const MatrixD* given, Comm* shards) {
  const int threads = backend.threads();
  const index_t N = X.rows;
  SnervResult r;
  // Everything runs on X / scale (the metric distances are unitless, so they and the map are
  // the same at every scale of X); the model is returned in the units of X.
  const double scale = input_scale(X);
  const MatrixD U = divided(X, scale);
  ClassMixtureParams metric = prm.metric;
  metric.width = prm.metric.width / scale;
  r.candidates = snerv_uses_candidates(prm.neighbors, N, prm.sparse);
  if (r.candidates && prm.perplexity > 0 && sparse_neighbors(prm.perplexity) > N - 1)
    input_error("input.perplexity: sparse affinities keep k = ceil(3 perplexity) = " +
                std::to_string(sparse_neighbors(prm.perplexity)) + " neighbors, which needs k <= N - 1 = " +
                std::to_string(N - 1));
  if (r.candidates && prm.metric.candidates > N - 1)  // checkable before the model's fit
    snerv_candidates(prm.metric.candidates, 1, N);
  const ClassMixture model = fit_class_mixture_unit(U, labels, metric, seed, threads);
  r.model = rescaled(model, scale);
  r.perplexity = snerv_perplexity(prm.perplexity, N, r.model.centres.rows);
  AffinityResult aff;
  if (r.candidates) {
    // each point's ceil(3 perplexity) nearest in the metric among its Euclidean candidates: the
    // sparse path's rows without the N x N matrix
    const int k = sparse_neighbors(r.perplexity);
    r.candidate_k = snerv_candidates(prm.metric.candidates, k, N);
    r.approximate_candidates = prm.approximate_candidates;
    const KnnGraph g = metric_knn(model, U, k, r.candidate_k, prm.metric.pieces, prm.approximate_candidates,
                                  prm.candidate_search, seed, backend);
    aff = affinities_from_knn(g, r.perplexity, threads);
  } else {
    r.metric_distances = backend.learning_metric_distances(model, U, prm.metric.pieces);
    aff = snerv_affinities(r.metric_distances, r.perplexity, prm.sparse, threads);
  }
  MatrixD start;
  switch (nerv_start(prm.nerv, nerv_approximate(prm.nerv, N, prm.sparse), true)) {
    case MapStart::pca: start = pca_project(U, prm.nerv.dim, threads); break;
    case MapStart::spectral:
      start = prm.sparse ? spectral_start(aff.sparse_conditional, prm.nerv.dim, threads)
                         : spectral_start(largest_entries(aff.conditional, sparse_neighbors(r.perplexity)),
                                          prm.nerv.dim, threads);
      break;
    case MapStart::given:
      if (!given) internal_error("fit_snerv: params.init names an array that was not passed");
      start = *given;
      break;
    case MapStart::random: break;
  }
  const MatrixD* s = start.rows > 0 ? &start : nullptr;
  const bool as_given = s && given;
  r.nerv = prm.sparse ? fit_nerv(aff.sparse_conditional, aff.beta, prm.nerv, seed, backend, progress, s, control,
                                 as_given, shards)
                      : fit_nerv(aff.conditional, aff.beta, prm.nerv, seed, backend, progress, s, control, as_given,
                                 shards);
  return r;
}

}  // namespace orrery
