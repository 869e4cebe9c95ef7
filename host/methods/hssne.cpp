// HSSNE on the CPU. Every quantity is a sum over pairs written with the per-pair functions of
// math/neighbor.hpp; rows are independent (OpenMP over i, each row summed in a fixed order) and the
// normaliser is summed per row then in row order, so results do not depend on the thread count.
// Sparse rows run as `omp simd` loops in instruction-set clones (cpu/clones.hpp): the repulsion
// over every point from the map by dimension, and, for t-SNE's tail, the attraction over the row's
// list with a vectorisable log; they are about five times faster than the per-pair loop was. Dense
// rows run repulsion and attraction in one such pass (ten times faster). Every tail alpha takes
// these loops, with the tail's branch outside them.
// Cost O(N^2 D) per iteration, memory O(N D) beyond P.
#include "orrery/hssne.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "cpu/clones.hpp"
#include "cpu/map_rows.hpp"
#include "methods/random.hpp"
#include "orrery/backend.hpp"
#include "orrery/error.hpp"
#include "orrery/math/exp.hpp"
#include "orrery/math/neighbor.hpp"

namespace orrery {

const std::vector<Field<HssneParams>>& hssne_fields() {
  static const std::vector<Field<HssneParams>> fields = {
      {"dim", &HssneParams::dim, "Output dimension D of the map.", 2, 3},
      {"alpha", &HssneParams::alpha, "Tail heaviness: 0 Gaussian SSNE, 1 t-SNE, larger heavier.", 0, 1e6},
      {"optimizer", &HssneParams::optimizer,
       "fixed_point (the paper's update, no learning rate, accelerated) or gradient (momentum and gains).",
       -kInf, kInf, false, {"fixed_point", "gradient"}},
      {"max_iter", &HssneParams::max_iter, "Iteration cap.", 1, 1e8},
      {"tol", &HssneParams::tol,
       "fixed_point stops when J falls by less than tol * J in an iteration (after the exaggeration).", 0, 1},
      {"acceleration", &HssneParams::acceleration,
       "fixed_point: largest momentum of the accelerated update (restarted whenever J would rise); "
       "0 = the paper's plain update.",
       0, 1},
      {"learning_rate", &HssneParams::learning_rate, "gradient: step size.", 0, kInf, true},
      {"momentum", &HssneParams::momentum, "gradient: momentum before momentum_switch.", 0, 1},
      {"final_momentum", &HssneParams::final_momentum, "gradient: momentum from momentum_switch on.", 0, 1},
      {"momentum_switch", &HssneParams::momentum_switch, "gradient: iteration where momentum changes.", 0, 1e8},
      {"exaggeration", &HssneParams::exaggeration, "P is multiplied by this early on (1 = off).", 1, 1e4},
      {"exaggeration_iter", &HssneParams::exaggeration_iter, "Iterations with exaggeration.", 0, 1e8},
      {"rho", &HssneParams::rho, "Semi-supervised mixing weight of same-class pairs (0 = unsupervised).", 0, 1},
      {"init_scale", &HssneParams::init_scale, "Standard deviation of the seeded Gaussian start.", 0, kInf, true},
  };
  return fields;
}

namespace {

int nthreads(int t) { return t > 0 ? t : omp_get_max_threads(); }

void resize_sums(HssneSums& s, index_t N, int D) {
  for (auto* v : {&s.h, &s.p_log_h, &s.a, &s.hs}) v->assign(static_cast<size_t>(N), 0.0);
  if (s.ay.rows != N || s.ay.cols != D) s.ay = MatrixD(N, D);
  if (s.hsy.rows != N || s.hsy.cols != D) s.hsy = MatrixD(N, D);
}

// Row i's repulsive sums over every j != i, from the map by dimension (yt[d N + j] = y_jd, so the
// loads are contiguous), written for the vectoriser: the j == i term is added and removed after
// (H(0) = S(0) = 1), so the loop has no branch on j; one scalar per dimension, as GCC sums an
// array-section reduction lane by lane. kTail is math::heavy_tail_terms's, picked by the caller.
template <int D, int kTail>
ORRERY_ALWAYS_INLINE void repulsion_loop(const double* yt, index_t N, index_t i, double alpha,
                                         math::HssneRow<double, D>& acc) {
  const cpu::MapRow<double, D> r(yt, N, i);
  const double *x0 = r.x0, *x1 = r.x1, *x2 = r.x2;
  double h_sum = 0.0, hs_sum = 0.0, g0 = 0.0, g1 = 0.0, g2 = 0.0;
#pragma omp simd reduction(+ : h_sum, hs_sum, g0, g1, g2)
  for (index_t j = 0; j < N; ++j) {
    const math::TailTerms<double> t = math::heavy_tail_terms<kTail>(r.tau(j), alpha);
    const double hs = t.h * t.s;
    h_sum += t.h;
    hs_sum += hs;
    g0 += hs * x0[j];
    if constexpr (D > 1) g1 += hs * x1[j];
    if constexpr (D > 2) g2 += hs * x2[j];
  }
  acc.h_sum = h_sum - 1.0;
  acc.hs_sum = hs_sum - 1.0;
  const double g[3] = {g0, g1, g2}, y[3] = {r.y0, r.y1, r.y2};
  for (int d = 0; d < D; ++d) acc.hsy[d] = g[d] - y[d];
}

// Row i's attractive sums over its list (columns col[lo, hi), values val), as hssne_accumulate's
// attraction but vectorised: the list's points are gathered from yt, and the logs are math/exp.hpp's,
// not libm's scalar log1p, which cost more than the whole repulsion pass.
template <int D, int kTail>
ORRERY_ALWAYS_INLINE void attraction_loop(const double* yt, index_t N, index_t i, const index_t* col,
                                          const double* val, index_t lo, index_t hi, double alpha,
                                          math::HssneRow<double, D>& acc) {
  const cpu::MapRow<double, D> r(yt, N, i);
  const double *x0 = r.x0, *x1 = r.x1, *x2 = r.x2;
  double a = 0.0, plh = 0.0, g0 = 0.0, g1 = 0.0, g2 = 0.0;
#pragma omp simd reduction(+ : a, plh, g0, g1, g2)
  for (index_t q = lo; q < hi; ++q) {
    const index_t j = col[q];
    const double p = val[q];
    const math::TailTerms<double> t = math::heavy_tail_terms<kTail>(r.tau(j), alpha);
    const double ps = p * t.s;
    a += ps;
    plh += p * t.log_h;
    g0 += ps * x0[j];
    if constexpr (D > 1) g1 += ps * x1[j];
    if constexpr (D > 2) g2 += ps * x2[j];
  }
  acc.a_sum += a;
  acc.p_log_h += plh;
  const double g[3] = {g0, g1, g2};
  for (int d = 0; d < D; ++d) acc.ay[d] += g[d];
}

// A dense row: repulsion and attraction in one vectorised pass over every j (P_ij from prow), the
// j == i terms taken out after (H = S = 1 and log H = 0 there, for every tail).
template <int D, int kTail>
ORRERY_ALWAYS_INLINE void dense_loop(const double* yt, index_t N, index_t i, const double* prow, double alpha,
                                     math::HssneRow<double, D>& acc) {
  const cpu::MapRow<double, D> r(yt, N, i);
  const double *x0 = r.x0, *x1 = r.x1, *x2 = r.x2;
  double h_sum = 0.0, hs_sum = 0.0, a = 0.0, plh = 0.0, h0 = 0.0, h1 = 0.0, h2 = 0.0, a0 = 0.0, a1 = 0.0, a2 = 0.0;
#pragma omp simd reduction(+ : h_sum, hs_sum, a, plh, h0, h1, h2, a0, a1, a2)
  for (index_t j = 0; j < N; ++j) {
    const math::TailTerms<double> t = math::heavy_tail_terms<kTail>(r.tau(j), alpha);
    const double hs = t.h * t.s, ps = prow[j] * t.s;
    h_sum += t.h;
    hs_sum += hs;
    a += ps;
    plh += prow[j] * t.log_h;
    h0 += hs * x0[j];
    a0 += ps * x0[j];
    if constexpr (D > 1) h1 += hs * x1[j], a1 += ps * x1[j];
    if constexpr (D > 2) h2 += hs * x2[j], a2 += ps * x2[j];
  }
  const double pii = prow[i], y[3] = {r.y0, r.y1, r.y2}, h[3] = {h0, h1, h2}, g[3] = {a0, a1, a2};
  acc.h_sum = h_sum - 1.0;
  acc.hs_sum = hs_sum - 1.0;
  acc.a_sum = a - pii;
  acc.p_log_h = plh;
  for (int d = 0; d < D; ++d) {
    acc.hsy[d] = h[d] - y[d];
    acc.ay[d] = g[d] - pii * y[d];
  }
}

// The row functions, cloned (cpu/clones.hpp) and dispatched on the tail once per row. With t-SNE's
// tail a pair is a division (and a log where P is listed), four to a vector with AVX2 instead of
// two; other tails add an exp and a log1p.
#define ORRERY_HSSNE_TAIL_DISPATCH(loop, ...)                  \
  if (alpha == 1.0) loop<D, 1>(__VA_ARGS__);                    \
  else if (alpha == 0.0) loop<D, 0>(__VA_ARGS__);               \
  else loop<D, 2>(__VA_ARGS__)

template <int D>
ORRERY_CLONES void repulsion_row(const double* yt, index_t N, index_t i, double alpha, math::HssneRow<double, D>& acc) {
  ORRERY_HSSNE_TAIL_DISPATCH(repulsion_loop, yt, N, i, alpha, acc);
}

template <int D>
ORRERY_CLONES void attraction_row(const double* yt, index_t N, index_t i, const index_t* col, const double* val,
                                  index_t lo, index_t hi, double alpha, math::HssneRow<double, D>& acc) {
  ORRERY_HSSNE_TAIL_DISPATCH(attraction_loop, yt, N, i, col, val, lo, hi, alpha, acc);
}

template <int D>
ORRERY_CLONES void dense_row(const double* yt, index_t N, index_t i, const double* prow, double alpha,
                             math::HssneRow<double, D>& acc) {
  ORRERY_HSSNE_TAIL_DISPATCH(dense_loop, yt, N, i, prow, alpha, acc);
}

#undef ORRERY_HSSNE_TAIL_DISPATCH

// One pass over all pairs. Dense rows take P_ij inside the all-pairs loop (one distance per
// pair); sparse rows run the repulsion alone, then the attraction over the row's list.
template <int D>
void cpu_sums(const MatrixD& Y, double alpha, const MatrixD* P, const SparseAffinity* S, int threads,
              HssneSums& out) {
  const index_t N = Y.rows;
  resize_sums(out, N, D);
  const std::vector<double> yt = cpu::by_dimension<double>(Y);
#pragma omp parallel for schedule(static) num_threads(nthreads(threads))
  for (index_t i = 0; i < N; ++i) {
    math::HssneRow<double, D> acc;
    if (P) {
      dense_row<D>(yt.data(), N, i, P->row(i), alpha, acc);
    } else {
      const index_t lo = S->row_ptr[static_cast<size_t>(i)], hi = S->row_ptr[static_cast<size_t>(i) + 1];
      repulsion_row<D>(yt.data(), N, i, alpha, acc);
      attraction_row<D>(yt.data(), N, i, S->col.data(), S->val.data(), lo, hi, alpha, acc);
    }
    const auto k = static_cast<size_t>(i);
    out.h[k] = acc.h_sum;
    out.p_log_h[k] = acc.p_log_h;
    out.a[k] = acc.a_sum;
    out.hs[k] = acc.hs_sum;
    for (int d = 0; d < D; ++d) {
      out.ay(i, d) = acc.ay[d];
      out.hsy(i, d) = acc.hsy[d];
    }
  }
}

template <int D>
HssneTotals cpu_evaluate(const MatrixD& Y, double alpha, const MatrixD* P, const SparseAffinity* S, int threads,
                         HssneSums& out) {
  cpu_sums<D>(Y, alpha, P, S, threads, out);
  HssneTotals t;
  for (size_t i = 0; i < out.h.size(); ++i) {
    t.z += out.h[i];
    t.p_log_h += out.p_log_h[i];
  }
  return t;
}

// The engine on the host: the map, its sums and the optimisers' state in host memory, the steps
// as loops over math/neighbor.hpp's per-coordinate updates (O(N D), next to O(N^2) pairs).
class CpuHssneEngine final : public HssneEngine {
 public:
  CpuHssneEngine(const MatrixD* P, const SparseAffinity* S, double alpha, int dim, int threads)
      : P_(P), S_(S), alpha_(alpha), dim_(dim), threads_(threads), N_(P ? P->rows : S->num_points) {}
  std::string name() const override { return "cpu"; }

  HssneTotals start(const MatrixD& Y) override {
    if (Y.rows != N_ || Y.cols != dim_) internal_error("hssne: Y has the wrong shape");
    y_ = Y;
    prev_ = Y;
    trial_ = Y;
    velocity_ = MatrixD(N_, dim_, 0.0);
    gains_ = MatrixD(N_, dim_, 1.0);
    return cur_ = evaluate(y_, sums_);
  }

  HssneTotals propose(double c, double step, double beta) override {
    const double inv_z = 1.0 / cur_.z;
    for (index_t i = 0; i < N_; ++i) {
      const auto k = static_cast<size_t>(i);
      for (index_t d = 0; d < dim_; ++d)
        trial_(i, d) = math::hssne_fixed_point_coord(y_(i, d), prev_(i, d), sums_.a[k], sums_.hs[k], sums_.ay(i, d),
                                                     sums_.hsy(i, d), c, inv_z, step, beta);
    }
    return trial_totals_ = evaluate(trial_, trial_sums_);
  }

  HssneTotals damp() override {
    for (size_t q = 0; q < trial_.data.size(); ++q) trial_.data[q] = math::hssne_damp_coord(trial_.data[q], y_.data[q]);
    return trial_totals_ = evaluate(trial_, trial_sums_);
  }

  void accept() override {
    std::swap(prev_, y_);   // prev <- Y
    std::swap(y_, trial_);  // Y <- trial; the old prev becomes scratch
    std::swap(sums_, trial_sums_);
    cur_ = trial_totals_;
  }

  HssneTotals gradient_step(double c, double momentum, double learning_rate) override {
    const double inv_z = 1.0 / cur_.z;
    for (index_t i = 0; i < N_; ++i) {
      const auto k = static_cast<size_t>(i);
      for (index_t d = 0; d < dim_; ++d) {
        const double g = math::hssne_gradient_coord(y_(i, d), sums_.a[k], sums_.hs[k], sums_.ay(i, d), sums_.hsy(i, d),
                                                    c, inv_z);
        y_(i, d) += math::tsne_momentum_step(g, velocity_(i, d), gains_(i, d), momentum, learning_rate);
      }
    }
    return cur_ = evaluate(y_, sums_);
  }

  MatrixD coords() const override { return y_; }
  void current_sums(HssneSums& out) const override { out = sums_; }

 private:
  HssneTotals evaluate(const MatrixD& Y, HssneSums& out) const {
    return dim_ == 2 ? cpu_evaluate<2>(Y, alpha_, P_, S_, threads_, out)
                     : cpu_evaluate<3>(Y, alpha_, P_, S_, threads_, out);
  }

  const MatrixD* P_;
  const SparseAffinity* S_;
  double alpha_;
  int dim_, threads_;
  index_t N_;
  MatrixD y_, prev_, trial_, velocity_, gains_;
  HssneSums sums_, trial_sums_;
  HssneTotals cur_, trial_totals_;
};

// Sum over P of p log p and of p (the constant part of KL).
struct Entropy {
  double plogp = 0.0, psum = 0.0;
};
Entropy entropy_terms(const std::vector<double>& values) {
  Entropy e;
  for (double p : values)
    if (p > 0) e.plogp += p * std::log(p), e.psum += p;
  return e;
}

// The objective the steps with exaggeration c descend: J_c = c sum P log(cP / H) + (sum P) log Z,
// whose gradient is 4 sum_j (c P_ij - Q_ij) S_ij (y_i - y_j) when P sums to 1; J_1 = KL(P || Q).
double objective(const Entropy& ent, const HssneTotals& t, double c) {
  return c * (ent.plogp + ent.psum * std::log(c)) - c * t.p_log_h + ent.psum * std::log(t.z);
}

void check_shapes(index_t n, const MatrixD& Y) {
  if (Y.rows != n) internal_error("hssne: P and Y disagree on N");
  if (Y.cols != 2 && Y.cols != 3) internal_error("hssne: D must be 2 or 3");
}

double objective_on_cpu(const MatrixD* P, const SparseAffinity* S, const MatrixD& Y, double alpha, MatrixD* grad,
                        int threads) {
  check_shapes(P ? P->rows : S->num_points, Y);
  CpuHssneEngine engine(P, S, alpha, static_cast<int>(Y.cols), threads);
  const HssneTotals t = engine.start(Y);
  if (grad) {
    HssneSums s;
    engine.current_sums(s);
    *grad = MatrixD(Y.rows, Y.cols);
    for (index_t i = 0; i < Y.rows; ++i) {
      const auto k = static_cast<size_t>(i);
      for (index_t d = 0; d < Y.cols; ++d)
        (*grad)(i, d) = math::hssne_gradient_coord(Y(i, d), s.a[k], s.hs[k], s.ay(i, d), s.hsy(i, d), 1.0, 1.0 / t.z);
    }
  }
  return objective(entropy_terms(P ? P->data : S->val), t, 1.0);
}

}  // namespace

std::unique_ptr<HssneEngine> make_hssne_engine(Backend& backend, const MatrixD& P, double alpha, int dim) {
  if (backend.is_cuda()) return make_hssne_engine_cuda(backend.device_index(), &P, nullptr, alpha, dim);
  return std::make_unique<CpuHssneEngine>(&P, nullptr, alpha, dim, backend.threads());
}

std::unique_ptr<HssneEngine> make_hssne_engine(Backend& backend, const SparseAffinity& P, double alpha, int dim) {
  if (backend.is_cuda()) return make_hssne_engine_cuda(backend.device_index(), nullptr, &P, alpha, dim);
  return std::make_unique<CpuHssneEngine>(nullptr, &P, alpha, dim, backend.threads());
}

// J = sum P log P - sum P log H + (sum P) log Z.
double hssne_objective(const MatrixD& P, const MatrixD& Y, double alpha, MatrixD* grad, int threads) {
  return objective_on_cpu(&P, nullptr, Y, alpha, grad, threads);
}

double hssne_objective(const SparseAffinity& P, const MatrixD& Y, double alpha, MatrixD* grad, int threads) {
  return objective_on_cpu(nullptr, &P, Y, alpha, grad, threads);
}

double hssne_fixed_point_step(const MatrixD& P, double alpha, MatrixD& Y, int threads) {
  check_shapes(P.rows, Y);
  CpuHssneEngine engine(&P, nullptr, alpha, static_cast<int>(Y.cols), threads);
  const HssneTotals t = engine.start(Y);
  engine.propose(1.0, 1.0, 0.0);
  engine.accept();
  Y = engine.coords();
  return objective(entropy_terms(P.data), t, 1.0);
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

// The optimisers, on the engine's state; each iteration exchanges O(1) values with it.
HssneResult fit_impl(HssneEngine& engine, const Entropy& ent, index_t N, const HssneParams& prm,
                     unsigned long long seed, const std::function<void(int, double)>& progress) {
  HssneResult res;
  MatrixD start(N, prm.dim);
  start.data = seeded_gaussian(start.data.size(), seed, prm.init_scale);
  HssneTotals cur = engine.start(start);
  res.evaluations = 1;
  const auto exaggeration_at = [&](int it) { return it < prm.exaggeration_iter ? prm.exaggeration : 1.0; };
  const auto record = [&](int it, const HssneTotals& t) {
    res.iterations = it + 1;
    res.objective_trace.push_back(objective(ent, t, 1.0));
    if (progress) progress(it, res.objective_trace.back());
  };
  res.stop_reason = "max_iter";
  if (prm.optimizer == "fixed_point") {
    // Late in a large fit the plain update overshoots for some points again and again (10,000
    // points: 359 halvings after iteration 550). The fraction of the update taken, `step`, keeps
    // each halving and grows back by kStepGrowth per clean iteration, so one overshoot does not
    // cost a failed pass on every iteration that follows (1,537 -> 1,091 passes there).
    constexpr double kStepGrowth = 1.1;
    int k = 0;  // steps since the momentum last restarted
    double step = 1.0;
    for (int it = 0; it < prm.max_iter; ++it) {
      const double c = exaggeration_at(it);
      if (it > 0 && c != exaggeration_at(it - 1)) k = 0;  // the objective changed under the momentum
      const double j_cur = objective(ent, cur, c);
      const double beta = std::max(0.0, std::min(prm.acceleration, (k - 1.0) / (k + 2.0)));
      HssneTotals trial = engine.propose(c, step, beta);
      ++res.evaluations;
      ++k;
      if (beta > 0 && objective(ent, trial, c) > j_cur) {  // restart: the plain step instead
        trial = engine.propose(c, step, 0.0);
        ++res.evaluations;
        ++res.restarts;
        k = 1;
      }
      // The update can overshoot when coordinates are large (paper, section 4): halve the step
      // towards the current map until J does not increase.
      bool damped = false;
      for (int damp = 0; damp < 20 && objective(ent, trial, c) > j_cur; ++damp) {
        if (damp == 0) ++res.damped_steps;
        trial = engine.damp();
        step *= 0.5;
        damped = true;
        ++res.evaluations;
      }
      if (!damped) step = std::min(1.0, step * kStepGrowth);
      const double j_new = objective(ent, trial, c);
      const bool improved = j_new <= j_cur;
      if (improved) {
        engine.accept();
        cur = trial;
      } else {
        k = 0;
      }
      record(it, cur);
      if (c == 1.0 && (!improved || j_cur - j_new <= prm.tol * std::abs(j_new))) {
        res.stop_reason = "tol";
        break;
      }
    }
  } else {
    for (int it = 0; it < prm.max_iter; ++it) {
      // The trace holds KL(P || Q) at the map the step is taken from.
      record(it, cur);
      const double mom = it < prm.momentum_switch ? prm.momentum : prm.final_momentum;
      cur = engine.gradient_step(exaggeration_at(it), mom, prm.learning_rate);
      ++res.evaluations;
    }
  }
  res.coords = engine.coords();
  for (double v : res.coords.data)
    if (!std::isfinite(v)) internal_error("HSSNE produced non-finite coordinates");
  return res;
}

}  // namespace

HssneResult fit_hssne(const MatrixD& P, const std::vector<int>& labels, const HssneParams& prm,
                      unsigned long long seed, Backend& backend, const std::function<void(int, double)>& progress) {
  const MatrixD mixed = prm.rho > 0 ? mix_same_class_pairs(P, labels, prm.rho) : MatrixD();
  const MatrixD& Pm = prm.rho > 0 ? mixed : P;
  auto engine = make_hssne_engine(backend, Pm, prm.alpha, prm.dim);
  return fit_impl(*engine, entropy_terms(Pm.data), P.rows, prm, seed, progress);
}

HssneResult fit_hssne(const MatrixD& P, const std::vector<int>& labels, const HssneParams& prm,
                      unsigned long long seed, int threads, const std::function<void(int, double)>& progress) {
  auto cpu = make_backend("cpu", threads);
  return fit_hssne(P, labels, prm, seed, *cpu, progress);
}

HssneResult fit_hssne(const SparseAffinity& P, const HssneParams& prm, unsigned long long seed, Backend& backend,
                      const std::function<void(int, double)>& progress) {
  if (prm.rho > 0) input_error("params.rho: semi-supervised mixing needs dense affinities (input.affinities)");
  auto engine = make_hssne_engine(backend, P, prm.alpha, prm.dim);
  return fit_impl(*engine, entropy_terms(P.val), P.num_points, prm, seed, progress);
}

HssneResult fit_hssne(const SparseAffinity& P, const HssneParams& prm, unsigned long long seed, int threads,
                      const std::function<void(int, double)>& progress) {
  auto cpu = make_backend("cpu", threads);
  return fit_hssne(P, prm, seed, *cpu, progress);
}

}  // namespace orrery
