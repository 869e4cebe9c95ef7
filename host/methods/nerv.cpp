// NeRV on the CPU, exact. With d_ij = |y_i - y_j|^2 and q_j = exp(-beta_i d_ij) / Z_i, the cost's
// derivative with respect to one squared distance of row i is
//   c_ij = lambda beta_i (p_j - q_j) - (1 - lambda) beta_i q_j (log(q_j / p_j) - KL(q_i || p_i)),
// and dE/dy_i = 2 sum_j (c_ij + c_ji)(y_i - y_j) because y_i enters rows i and j. Log-sum-exp keeps
// Z_i finite; input probabilities below kProbabilityFloor are raised to it so KL(q || p) stays
// finite for pairs whose Gaussian input probability underflowed.
#include "orrery/nerv.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "methods/random.hpp"
#include "optim/cg.hpp"
#include "orrery/error.hpp"

namespace orrery {

constexpr double kProbabilityFloor = 1e-300;

const std::vector<Field<NervParams>>& nerv_fields() {
  static const std::vector<Field<NervParams>> fields = {
      {"dim", &NervParams::dim, "Output dimension D of the map.", 2, 3},
      {"lambda", &NervParams::lambda,
       "Trade-off: 1 = recall only (SNE's cost), 0 = precision only; the paper's examples use small values.", 0, 1},
      {"max_iter", &NervParams::max_iter, "Cap on conjugate-gradient iterations.", 1, 1e8},
      {"ftol", &NervParams::ftol, "Stop when an iteration lowers E by less than ftol * max(|E|, 1).", 0, 1},
      {"init_scale", &NervParams::init_scale,
       "Standard deviation of the seeded Gaussian start, in units of the median input bandwidth sigma.", 0, kInf,
       true},
  };
  return fields;
}

double nerv_objective(const MatrixD& P, const std::vector<double>& beta, const MatrixD& Y, double lambda,
                      MatrixD* grad, int threads) {
  const index_t N = Y.rows;
  const int D = static_cast<int>(Y.cols);
  if (P.rows != N || P.cols != N || static_cast<index_t>(beta.size()) != N)
    internal_error("nerv_objective: P, beta and Y disagree on N");
  MatrixD C(grad ? N : 0, grad ? N : 0, 0.0);
  std::vector<double> row_cost(static_cast<size_t>(N), 0.0);
#pragma omp parallel num_threads(threads > 0 ? threads : omp_get_max_threads())
  {
    std::vector<double> e(static_cast<size_t>(N));
#pragma omp for schedule(static)
    for (index_t i = 0; i < N; ++i) {
      const double b = beta[static_cast<size_t>(i)];
      double emax = -kInf;
      for (index_t j = 0; j < N; ++j) {
        if (j == i) continue;
        double d2 = 0.0;
        for (int d = 0; d < D; ++d) d2 += (Y(i, d) - Y(j, d)) * (Y(i, d) - Y(j, d));
        e[j] = -b * d2;
        emax = std::max(emax, e[j]);
      }
      double z = 0.0;
      for (index_t j = 0; j < N; ++j)
        if (j != i) z += std::exp(e[j] - emax);
      const double lse = emax + std::log(z);
      double kl_pq = 0.0, kl_qp = 0.0;
      for (index_t j = 0; j < N; ++j) {
        if (j == i) continue;
        const double lq = e[j] - lse, q = std::exp(lq), p = P(i, j);
        const double lp = std::log(std::max(p, kProbabilityFloor));
        if (p > 0) kl_pq += p * (lp - lq);
        kl_qp += q * (lq - lp);
      }
      row_cost[static_cast<size_t>(i)] = lambda * kl_pq + (1 - lambda) * kl_qp;
      if (grad)
        for (index_t j = 0; j < N; ++j) {
          if (j == i) continue;
          const double lq = e[j] - lse, q = std::exp(lq), p = P(i, j);
          const double lp = std::log(std::max(p, kProbabilityFloor));
          C(i, j) = lambda * b * (p - q) - (1 - lambda) * b * q * ((lq - lp) - kl_qp);
        }
    }
  }
  if (grad) {
    *grad = MatrixD(N, D, 0.0);
#pragma omp parallel for schedule(static) num_threads(threads > 0 ? threads : omp_get_max_threads())
    for (index_t i = 0; i < N; ++i)
      for (index_t j = 0; j < N; ++j) {
        if (j == i) continue;
        const double w = 2.0 * (C(i, j) + C(j, i));
        for (int d = 0; d < D; ++d) (*grad)(i, d) += w * (Y(i, d) - Y(j, d));
      }
  }
  double E = 0.0;
  for (double v : row_cost) E += v;
  return E;
}

NervResult fit_nerv(const MatrixD& P, const std::vector<double>& beta, const NervParams& prm,
                    unsigned long long seed, int threads, const std::function<void(int, double)>& progress) {
  const index_t N = P.rows;
  // The map uses the input bandwidths, so it must start at the input's length scale: a start of
  // unit size on data whose sigma is 100 would see uniform q and a vanishing gradient.
  std::vector<double> sorted = beta;
  std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
  const double sigma = 1.0 / std::sqrt(sorted[sorted.size() / 2]);
  std::vector<double> x = seeded_gaussian(static_cast<size_t>(N) * prm.dim, seed, prm.init_scale * sigma);
  MatrixD Y(N, prm.dim), g;
  auto f = [&](const std::vector<double>& xs, std::vector<double>& grad) {
    Y.data = xs;
    const double E = nerv_objective(P, beta, Y, prm.lambda, &g, threads);
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

}  // namespace orrery
