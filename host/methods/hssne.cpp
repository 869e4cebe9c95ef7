// HSSNE on the CPU. Every quantity is a sum over pairs written with the per-pair functions of
// math/neighbor.hpp; rows are independent (OpenMP over i, each row summed in j order) and the
// normaliser is summed per row then in row order, so results do not depend on the thread count.
// Cost O(N^2 D) per iteration, memory O(N D) beyond P.
#include "orrery/hssne.hpp"

#include <omp.h>

#include <cmath>
#include <random>

#include "orrery/error.hpp"
#include "orrery/math/neighbor.hpp"

namespace orrery {

const std::vector<Field<HssneParams>>& hssne_fields() {
  static const std::vector<Field<HssneParams>> fields = {
      {"dim", &HssneParams::dim, "Output dimension D of the map.", 2, 3},
      {"alpha", &HssneParams::alpha, "Tail heaviness: 0 Gaussian SSNE, 1 t-SNE, larger heavier.", 0, 1e6},
      {"optimizer", &HssneParams::optimizer,
       "fixed_point (the paper's update, no learning rate) or gradient (momentum + early exaggeration).",
       -kInf, kInf, false, {"fixed_point", "gradient"}},
      {"max_iter", &HssneParams::max_iter, "Iteration cap.", 1, 1e8},
      {"tol", &HssneParams::tol, "fixed_point stops when J falls by less than tol * J in an iteration.", 0, 1},
      {"learning_rate", &HssneParams::learning_rate, "gradient: step size.", 0, kInf, true},
      {"momentum", &HssneParams::momentum, "gradient: momentum before momentum_switch.", 0, 1},
      {"final_momentum", &HssneParams::final_momentum, "gradient: momentum from momentum_switch on.", 0, 1},
      {"momentum_switch", &HssneParams::momentum_switch, "gradient: iteration where momentum changes.", 0, 1e8},
      {"exaggeration", &HssneParams::exaggeration, "gradient: P is multiplied by this early on.", 1, 1e4},
      {"exaggeration_iter", &HssneParams::exaggeration_iter, "gradient: iterations with exaggeration.", 0, 1e8},
      {"rho", &HssneParams::rho, "Semi-supervised mixing weight of same-class pairs (0 = unsupervised).", 0, 1},
      {"init_scale", &HssneParams::init_scale, "Standard deviation of the seeded Gaussian start.", 0, kInf, true},
  };
  return fields;
}

namespace {

int nthreads(int t) { return t > 0 ? t : omp_get_max_threads(); }

// Z = sum over ordered pairs i != j of H(|y_i - y_j|^2).
template <int D>
double normaliser(const MatrixD& Y, double alpha, int threads) {
  const index_t N = Y.rows;
  std::vector<double> row(static_cast<size_t>(N), 0.0);
#pragma omp parallel for schedule(static) num_threads(nthreads(threads))
  for (index_t i = 0; i < N; ++i) {
    double s = 0.0;
    for (index_t j = 0; j < N; ++j) {
      if (j == i) continue;
      double tau = 0.0;
      for (int d = 0; d < D; ++d) tau += (Y(i, d) - Y(j, d)) * (Y(i, d) - Y(j, d));
      s += math::heavy_tail(tau, alpha);
    }
    row[static_cast<size_t>(i)] = s;
  }
  double z = 0.0;
  for (double v : row) z += v;
  return z;
}

struct RowSums {
  std::vector<double> a, b;  // sum_j A_ij, sum_j B_ij
  MatrixD ay, grad;          // sum_j (A_ij - B_ij) y_j, dJ/dy_i
  double p_log_h = 0.0;      // sum_ij P_ij log H_ij
};

// All per-row sums for dense P (prow(i) gives row i) or sparse P.
template <int D, class Attract>
RowSums row_sums(const MatrixD& Y, double alpha, double z, Attract attract, int threads) {
  const index_t N = Y.rows;
  RowSums r{std::vector<double>(static_cast<size_t>(N), 0.0), std::vector<double>(static_cast<size_t>(N), 0.0),
            MatrixD(N, D, 0.0), MatrixD(N, D, 0.0), 0.0};
  std::vector<double> plh(static_cast<size_t>(N), 0.0);
  const double inv_z = 1.0 / z;
#pragma omp parallel for schedule(static) num_threads(nthreads(threads))
  for (index_t i = 0; i < N; ++i) {
    double a = 0, b = 0, ay[D] = {}, g[D] = {};
    for (index_t j = 0; j < N; ++j)  // repulsion: every pair, p = 0
      if (j != i) math::hssne_pair<double, D>(Y.row(i), Y.row(j), 0.0, inv_z, alpha, a, b, ay, g);
    plh[static_cast<size_t>(i)] = attract(i, [&](index_t j, double p) {  // attraction: q = 0
      math::hssne_pair<double, D>(Y.row(i), Y.row(j), p, 0.0, alpha, a, b, ay, g);
      double tau = 0.0;
      for (int d = 0; d < D; ++d) tau += (Y(i, d) - Y(j, d)) * (Y(i, d) - Y(j, d));
      return p * math::heavy_tail_log(tau, alpha);
    });
    r.a[static_cast<size_t>(i)] = a;
    r.b[static_cast<size_t>(i)] = b;
    for (int d = 0; d < D; ++d) {
      r.ay(i, d) = ay[d];
      r.grad(i, d) = g[d];
    }
  }
  for (double v : plh) r.p_log_h += v;
  return r;
}

// Attraction over a dense row: sum_j p_ij (...) for p_ij > 0.
auto dense_attract(const MatrixD& P) {
  return [&P](index_t i, const auto& f) {
    double s = 0.0;
    for (index_t j = 0; j < P.cols; ++j)
      if (j != i && P(i, j) > 0) s += f(j, P(i, j));
    return s;
  };
}

auto sparse_attract(const SparseAffinity& P) {
  return [&P](index_t i, const auto& f) {
    double s = 0.0;
    for (index_t q = P.row_ptr[static_cast<size_t>(i)]; q < P.row_ptr[static_cast<size_t>(i) + 1]; ++q)
      s += f(P.col[static_cast<size_t>(q)], P.val[static_cast<size_t>(q)]);
    return s;
  };
}

// J = sum P log P - sum P log H + (sum P) log Z.
template <class Attract>
double objective_from(double p_log_p, double p_sum, const RowSums& r, double z) {
  return p_log_p - r.p_log_h + p_sum * std::log(z);
}

template <int D, class PMat, class Attract>
double objective_impl(const PMat& P, double p_log_p, double p_sum, Attract attract, const MatrixD& Y, double alpha,
                      MatrixD* grad, int threads) {
  (void)P;
  const double z = normaliser<D>(Y, alpha, threads);
  RowSums r = row_sums<D>(Y, alpha, z, attract, threads);
  if (grad) *grad = std::move(r.grad);
  return objective_from<Attract>(p_log_p, p_sum, r, z);
}

void entropy_terms(const MatrixD& P, double& plogp, double& psum) {
  plogp = psum = 0.0;
  for (double p : P.data)
    if (p > 0) plogp += p * std::log(p), psum += p;
}
void entropy_terms(const SparseAffinity& P, double& plogp, double& psum) {
  plogp = psum = 0.0;
  for (double p : P.val)
    if (p > 0) plogp += p * std::log(p), psum += p;
}

void check_shapes(index_t n, const MatrixD& Y) {
  if (Y.rows != n) internal_error("hssne: P and Y disagree on N");
  if (Y.cols != 2 && Y.cols != 3) internal_error("hssne: D must be 2 or 3");
}

}  // namespace

double hssne_objective(const MatrixD& P, const MatrixD& Y, double alpha, MatrixD* grad, int threads) {
  check_shapes(P.rows, Y);
  double plogp, psum;
  entropy_terms(P, plogp, psum);
  const auto att = dense_attract(P);
  return Y.cols == 2 ? objective_impl<2>(P, plogp, psum, att, Y, alpha, grad, threads)
                     : objective_impl<3>(P, plogp, psum, att, Y, alpha, grad, threads);
}

double hssne_objective(const SparseAffinity& P, const MatrixD& Y, double alpha, MatrixD* grad, int threads) {
  check_shapes(P.num_points, Y);
  double plogp, psum;
  entropy_terms(P, plogp, psum);
  const auto att = sparse_attract(P);
  return Y.cols == 2 ? objective_impl<2>(P, plogp, psum, att, Y, alpha, grad, threads)
                     : objective_impl<3>(P, plogp, psum, att, Y, alpha, grad, threads);
}

namespace {

template <int D>
double fixed_point_step(const MatrixD& P, double alpha, MatrixD& Y, int threads) {
  double plogp, psum;
  entropy_terms(P, plogp, psum);
  const double z = normaliser<D>(Y, alpha, threads);
  const RowSums r = row_sums<D>(Y, alpha, z, dense_attract(P), threads);
  const double J = plogp - r.p_log_h + psum * std::log(z);
  // y_i <- (y_i sum_j B_ij + sum_j (A_ij - B_ij) y_j) / sum_j A_ij; a point without affinity stays.
  for (index_t i = 0; i < Y.rows; ++i) {
    const double a = r.a[static_cast<size_t>(i)];
    if (!(a > 0)) continue;
    for (int d = 0; d < D; ++d) Y(i, d) = (Y(i, d) * r.b[static_cast<size_t>(i)] + r.ay(i, d)) / a;
  }
  return J;
}

}  // namespace

double hssne_fixed_point_step(const MatrixD& P, double alpha, MatrixD& Y, int threads) {
  check_shapes(P.rows, Y);
  return Y.cols == 2 ? fixed_point_step<2>(P, alpha, Y, threads) : fixed_point_step<3>(P, alpha, Y, threads);
}

MatrixD mix_same_class_pairs(const MatrixD& P, const std::vector<int>& labels, double rho) {
  if (static_cast<index_t>(labels.size()) != P.rows)
    input_error("labels: " + std::to_string(labels.size()) + " labels for " + std::to_string(P.rows) + " points");
  double pairs = 0;
  for (size_t i = 0; i < labels.size(); ++i)
    for (size_t j = 0; j < labels.size(); ++j)
      if (i != j && labels[i] >= 0 && labels[i] == labels[j]) pairs += 1;
  if (rho > 0 && pairs == 0) input_error("params.rho > 0 needs at least two points with the same known label");
  MatrixD out = P;
  for (index_t i = 0; i < P.rows; ++i)
    for (index_t j = 0; j < P.cols; ++j) {
      const bool same = i != j && labels[static_cast<size_t>(i)] >= 0 &&
                        labels[static_cast<size_t>(i)] == labels[static_cast<size_t>(j)];
      out(i, j) = (1 - rho) * P(i, j) + (same && pairs > 0 ? rho / pairs : 0.0);
    }
  return out;
}

HssneResult fit_hssne(const MatrixD& P0, const std::vector<int>& labels, const HssneParams& prm,
                      unsigned long long seed, int threads, const std::function<void(int, double)>& progress) {
  const index_t N = P0.rows;
  const MatrixD P = prm.rho > 0 ? mix_same_class_pairs(P0, labels, prm.rho) : P0;
  HssneResult res;
  res.coords = MatrixD(N, prm.dim);
  std::mt19937_64 rng(seed);
  for (double& v : res.coords.data) {  // Box-Muller, independent of the library's distributions
    const double u1 = (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53;
    const double u2 = (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53;
    v = prm.init_scale * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  MatrixD& Y = res.coords;
  res.stop_reason = "max_iter";
  if (prm.optimizer == "fixed_point") {
    double J = hssne_objective(P, Y, prm.alpha, nullptr, threads);
    for (int it = 0; it < prm.max_iter; ++it) {
      MatrixD next = Y;
      hssne_fixed_point_step(P, prm.alpha, next, threads);
      double J_next = hssne_objective(P, next, prm.alpha, nullptr, threads);
      // The update can overshoot when coordinates are large (paper, section 4): halve the step
      // towards the proposal until J does not increase.
      for (int damp = 0; damp < 20 && J_next > J; ++damp) {
        for (size_t q = 0; q < next.data.size(); ++q) next.data[q] = 0.5 * (next.data[q] + Y.data[q]);
        J_next = hssne_objective(P, next, prm.alpha, nullptr, threads);
        if (damp == 0) ++res.damped_steps;
      }
      const bool improved = J_next <= J;
      if (improved) Y = std::move(next);
      res.iterations = it + 1;
      res.objective_trace.push_back(improved ? J_next : J);
      if (progress) progress(it, res.objective_trace.back());
      if (!improved || J - J_next <= prm.tol * std::abs(J)) {
        res.stop_reason = "tol";
        break;
      }
      J = J_next;
    }
  } else {
    MatrixD update(N, prm.dim, 0.0), gains(N, prm.dim, 1.0), grad;
    for (int it = 0; it < prm.max_iter; ++it) {
      const bool exaggerate = it < prm.exaggeration_iter;
      MatrixD Pe = P;
      if (exaggerate)
        for (double& v : Pe.data) v *= prm.exaggeration;
      const double J = hssne_objective(exaggerate ? Pe : P, Y, prm.alpha, &grad, threads);
      const double mom = it < prm.momentum_switch ? prm.momentum : prm.final_momentum;
      for (size_t q = 0; q < Y.data.size(); ++q) {
        // delta-bar-delta gains, as in t-SNE implementations
        gains.data[q] = (grad.data[q] > 0) != (update.data[q] > 0) ? gains.data[q] + 0.2 : gains.data[q] * 0.8;
        gains.data[q] = std::max(gains.data[q], 0.01);
        update.data[q] = mom * update.data[q] - prm.learning_rate * gains.data[q] * grad.data[q];
        Y.data[q] += update.data[q];
      }
      res.iterations = it + 1;
      res.objective_trace.push_back(exaggerate ? hssne_objective(P, Y, prm.alpha, nullptr, threads) : J);
      if (progress) progress(it, res.objective_trace.back());
    }
  }
  for (double v : Y.data)
    if (!std::isfinite(v)) internal_error("HSSNE produced non-finite coordinates");
  return res;
}

}  // namespace orrery
