// HSSNE on the CPU. Every quantity is a sum over pairs written with the per-pair functions of
// math/neighbor.hpp; rows are independent (OpenMP over i, each row summed in j order) and the
// normaliser is summed per row then in row order, so results do not depend on the thread count.
// Cost O(N^2 D) per iteration, memory O(N D) beyond P.
#include "orrery/hssne.hpp"

#include <omp.h>

#include <cmath>

#include "methods/random.hpp"
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

// Everything one evaluation needs, from one pass over all pairs.
struct Evaluation {
  double z = 0.0, p_log_h = 0.0;
  std::vector<double> a, b;  // A_i = sum_j P_ij S_ij, B_i = sum_j Q_ij S_ij
  MatrixD ab_y;              // sum_j (A_ij - B_ij) y_j
  MatrixD grad;              // dJ/dy_i = 4 (y_i (A_i - B_i) - sum_j (A_ij - B_ij) y_j)
};

// attract(i, f) calls f(j, p_ij) for the row's nonzero affinities; dense rows pass them inside
// the all-pairs loop (one distance per pair), sparse rows in a second short loop.
template <int D, class Attract>
Evaluation evaluate(const MatrixD& Y, double alpha, bool dense, const MatrixD* P, Attract attract, int threads) {
  const index_t N = Y.rows;
  std::vector<math::HssneRow<double, D>> rows(static_cast<size_t>(N));
#pragma omp parallel for schedule(static) num_threads(nthreads(threads))
  for (index_t i = 0; i < N; ++i) {
    math::HssneRow<double, D> acc;
    if (dense) {
      for (index_t j = 0; j < N; ++j)
        if (j != i) math::hssne_accumulate<double, D>(Y.row(i), Y.row(j), (*P)(i, j), alpha, true, acc);
    } else {
      // Repulsion alone, written for the vectoriser: the j == i term is added and removed after
      // (H(0) = S(0) = 1), so the loop has no branch on j.
      double h_sum = 0.0, hs_sum = 0.0, hsy[D] = {};
      const double* yi = Y.row(i);
      const double* yall = Y.data.data();
#pragma omp simd reduction(+ : h_sum, hs_sum, hsy[:D])
      for (index_t j = 0; j < N; ++j) {
        double tau = 0.0;
        for (int d = 0; d < D; ++d) tau += (yi[d] - yall[j * D + d]) * (yi[d] - yall[j * D + d]);
        double h, s;
        math::heavy_tail_pair(tau, alpha, h, s);
        h_sum += h;
        hs_sum += h * s;
        for (int d = 0; d < D; ++d) hsy[d] += h * s * yall[j * D + d];
      }
      acc.h_sum = h_sum - 1.0;
      acc.hs_sum = hs_sum - 1.0;
      for (int d = 0; d < D; ++d) acc.hsy[d] = hsy[d] - yi[d];
    }
    if (!dense)
      attract(i, [&](index_t j, double p) {
        math::hssne_accumulate<double, D>(Y.row(i), Y.row(j), p, alpha, false, acc);
      });
    rows[static_cast<size_t>(i)] = acc;
  }
  Evaluation e;
  for (const auto& r : rows) {
    e.z += r.h_sum;
    e.p_log_h += r.p_log_h;
  }
  e.a.resize(static_cast<size_t>(N));
  e.b.resize(static_cast<size_t>(N));
  e.ab_y = MatrixD(N, D);
  e.grad = MatrixD(N, D);
  const double inv_z = 1.0 / e.z;
  for (index_t i = 0; i < N; ++i) {
    const auto& r = rows[static_cast<size_t>(i)];
    e.a[static_cast<size_t>(i)] = r.a_sum;
    e.b[static_cast<size_t>(i)] = r.hs_sum * inv_z;
    for (int d = 0; d < D; ++d) {
      e.ab_y(i, d) = r.ay[d] - r.hsy[d] * inv_z;
      e.grad(i, d) = 4.0 * (Y(i, d) * (r.a_sum - r.hs_sum * inv_z) - e.ab_y(i, d));
    }
  }
  return e;
}

auto no_attract() {
  return [](index_t, const auto&) {};
}

auto sparse_attract(const SparseAffinity& P) {
  return [&P](index_t i, const auto& f) {
    for (index_t q = P.row_ptr[static_cast<size_t>(i)]; q < P.row_ptr[static_cast<size_t>(i) + 1]; ++q)
      f(P.col[static_cast<size_t>(q)], P.val[static_cast<size_t>(q)]);
  };
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

// J = sum P log P - sum P log H + (sum P) log Z.
double hssne_objective(const MatrixD& P, const MatrixD& Y, double alpha, MatrixD* grad, int threads) {
  check_shapes(P.rows, Y);
  double plogp, psum;
  entropy_terms(P, plogp, psum);
  const Evaluation e = Y.cols == 2 ? evaluate<2>(Y, alpha, true, &P, no_attract(), threads)
                                   : evaluate<3>(Y, alpha, true, &P, no_attract(), threads);
  if (grad) *grad = e.grad;
  return plogp - e.p_log_h + psum * std::log(e.z);
}

double hssne_objective(const SparseAffinity& P, const MatrixD& Y, double alpha, MatrixD* grad, int threads) {
  check_shapes(P.num_points, Y);
  double plogp, psum;
  entropy_terms(P, plogp, psum);
  const Evaluation e = Y.cols == 2 ? evaluate<2>(Y, alpha, false, nullptr, sparse_attract(P), threads)
                                   : evaluate<3>(Y, alpha, false, nullptr, sparse_attract(P), threads);
  if (grad) *grad = e.grad;
  return plogp - e.p_log_h + psum * std::log(e.z);
}

namespace {

// The paper's update from an evaluation at Y: y_i <- (y_i B_i + sum_j (A_ij - B_ij) y_j) / A_i;
// a point without affinity stays where it is.
void apply_fixed_point(const Evaluation& e, MatrixD& Y) {
  for (index_t i = 0; i < Y.rows; ++i) {
    const double a = e.a[static_cast<size_t>(i)];
    if (!(a > 0)) continue;
    for (index_t d = 0; d < Y.cols; ++d) Y(i, d) = (Y(i, d) * e.b[static_cast<size_t>(i)] + e.ab_y(i, d)) / a;
  }
}

struct DenseEval {
  double J;
  Evaluation e;
};

DenseEval dense_eval(const MatrixD& P, double plogp, double psum, const MatrixD& Y, double alpha, int threads) {
  Evaluation e = Y.cols == 2 ? evaluate<2>(Y, alpha, true, &P, no_attract(), threads)
                             : evaluate<3>(Y, alpha, true, &P, no_attract(), threads);
  const double J = plogp - e.p_log_h + psum * std::log(e.z);
  return {J, std::move(e)};
}

DenseEval dense_eval(const SparseAffinity& P, double plogp, double psum, const MatrixD& Y, double alpha,
                     int threads) {
  Evaluation e = Y.cols == 2 ? evaluate<2>(Y, alpha, false, nullptr, sparse_attract(P), threads)
                             : evaluate<3>(Y, alpha, false, nullptr, sparse_attract(P), threads);
  const double J = plogp - e.p_log_h + psum * std::log(e.z);
  return {J, std::move(e)};
}

MatrixD scaled(const MatrixD& P, double f) {
  MatrixD out = P;
  for (double& v : out.data) v *= f;
  return out;
}
SparseAffinity scaled(const SparseAffinity& P, double f) {
  SparseAffinity out = P;
  for (double& v : out.val) v *= f;
  return out;
}

}  // namespace

double hssne_fixed_point_step(const MatrixD& P, double alpha, MatrixD& Y, int threads) {
  check_shapes(P.rows, Y);
  double plogp, psum;
  entropy_terms(P, plogp, psum);
  const DenseEval cur = dense_eval(P, plogp, psum, Y, alpha, threads);
  apply_fixed_point(cur.e, Y);
  return cur.J;
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

namespace {

template <class PM>
HssneResult fit_impl(const PM& P, index_t N, const HssneParams& prm, unsigned long long seed, int threads,
                     const std::function<void(int, double)>& progress) {
  HssneResult res;
  res.coords = MatrixD(N, prm.dim);
  res.coords.data = seeded_gaussian(res.coords.data.size(), seed, prm.init_scale);
  MatrixD& Y = res.coords;
  res.stop_reason = "max_iter";
  if (prm.optimizer == "fixed_point") {
    double plogp, psum;
    entropy_terms(P, plogp, psum);
    DenseEval cur = dense_eval(P, plogp, psum, Y, prm.alpha, threads);
    for (int it = 0; it < prm.max_iter; ++it) {
      MatrixD next = Y;
      apply_fixed_point(cur.e, next);
      DenseEval cand = dense_eval(P, plogp, psum, next, prm.alpha, threads);
      // The update can overshoot when coordinates are large (paper, section 4): halve the step
      // towards the proposal until J does not increase.
      for (int damp = 0; damp < 20 && cand.J > cur.J; ++damp) {
        for (size_t q = 0; q < next.data.size(); ++q) next.data[q] = 0.5 * (next.data[q] + Y.data[q]);
        cand = dense_eval(P, plogp, psum, next, prm.alpha, threads);
        if (damp == 0) ++res.damped_steps;
      }
      const bool improved = cand.J <= cur.J;
      const double gain = cur.J - cand.J;
      if (improved) {
        Y = std::move(next);
        cur = std::move(cand);
      }
      res.iterations = it + 1;
      res.objective_trace.push_back(cur.J);
      if (progress) progress(it, cur.J);
      if (!improved || gain <= prm.tol * std::abs(cur.J)) {
        res.stop_reason = "tol";
        break;
      }
    }
  } else {
    MatrixD update(N, prm.dim, 0.0), gains(N, prm.dim, 1.0), grad;
    for (int it = 0; it < prm.max_iter; ++it) {
      const bool exaggerate = it < prm.exaggeration_iter;
      const double J = exaggerate ? hssne_objective(scaled(P, prm.exaggeration), Y, prm.alpha, &grad, threads)
                                  : hssne_objective(P, Y, prm.alpha, &grad, threads);
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

}  // namespace

HssneResult fit_hssne(const MatrixD& P, const std::vector<int>& labels, const HssneParams& prm,
                      unsigned long long seed, int threads, const std::function<void(int, double)>& progress) {
  if (prm.rho > 0) return fit_impl(mix_same_class_pairs(P, labels, prm.rho), P.rows, prm, seed, threads, progress);
  return fit_impl(P, P.rows, prm, seed, threads, progress);
}

HssneResult fit_hssne(const SparseAffinity& P, const HssneParams& prm, unsigned long long seed, int threads,
                      const std::function<void(int, double)>& progress) {
  if (prm.rho > 0) input_error("params.rho: semi-supervised mixing needs dense affinities (input.affinities)");
  return fit_impl(P, P.num_points, prm, seed, threads, progress);
}

}  // namespace orrery
