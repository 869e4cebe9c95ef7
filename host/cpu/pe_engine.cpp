// PE's CPU engine: the reference path. OpenMP loops over the shared ORRERY_HD functions of
// math/pe.hpp, in double. Reductions over objects go through fixed-size chunks summed in chunk
// order, so the result does not depend on the number of threads (1 thread == many, bit for bit).
#include <omp.h>

#include <algorithm>
#include <memory>

#include "cpu/engines.hpp"
#include "orrery/error.hpp"
#include "orrery/exact_sum.hpp"
#include "orrery/math/pe.hpp"
#include "prep/clones.hpp"

namespace orrery::cpu {
namespace {

// Objects per reduction chunk: large enough to amortise scheduling, fixed so that partial
// sums, and therefore results, are independent of the thread count (and, through
// solve_objects_exact, of the number of ranks).
constexpr index_t kChunk = kPeChunk;

// Newton steps for objects [begin, end) (math::pe_newton_object, inlined here so that its K loops
// get the clone's instruction set), their sweep totals added to s and, with gp, their class forces.
template <int D>
ORRERY_CLONES void solve_range(const MatrixD& P, const double* log_priors, const double* phi, int K, MatrixD& R,
                               double eta_r, const PeNewtonOptions& opt, index_t begin, index_t end, double* scratch,
                               PeSweep& s, double* gp) {
  for (index_t n = begin; n < end; ++n) {
    double* r = R.row(n);
    const auto res = math::pe_newton_object<double, D>(P.row(n), log_priors, phi, K, r, eta_r, opt.eps_r,
                                                       opt.max_iter, scratch);
    add_object(s, res, res.objective);
    if (gp) math::pe_class_forces_from_q<double, D>(P.row(n), res.q, phi, K, r, gp);
  }
}

// The objective summed over objects [begin, end) in order.
template <int D>
ORRERY_CLONES double eval_range(const MatrixD& P, const double* log_priors, const double* phi, int K, const MatrixD& R,
                                double eta_r, index_t begin, index_t end, double* scratch) {
  double s = 0.0;
  for (index_t n = begin; n < end; ++n)
    s += math::pe_object_eval<double, D>(P.row(n), log_priors, phi, K, R.row(n), eta_r, nullptr, nullptr, nullptr,
                                         scratch);
  return s;
}

class CpuPeEngine final : public PeEngine {
 public:
  CpuPeEngine(const MatrixD& P, const std::vector<double>& log_priors, int dim, double eta_r, int threads)
      : P_(P), log_priors_(log_priors), dim_(dim), eta_r_(eta_r), threads_(threads), R_(P.rows, dim, 0.0) {}

  index_t num_objects() const override { return P_.rows; }
  int num_classes() const override { return static_cast<int>(P_.cols); }
  int dim() const override { return dim_; }

  void set_objects(const MatrixD& R) override {
    if (R.rows != P_.rows || R.cols != dim_) internal_error("CpuPeEngine::set_objects: shape mismatch");
    R_ = R;
  }
  MatrixD objects() const override { return R_; }

  PeSweep solve_objects(const std::vector<double>& phi, const PeNewtonOptions& opt,
                        std::vector<double>* class_grad) override {
    return dim_ == 2 ? solve<2>(phi, opt, class_grad, nullptr) : solve<3>(phi, opt, class_grad, nullptr);
  }

  PeSweep solve_objects_exact(const std::vector<double>& phi, const PeNewtonOptions& opt, ExactSum& sums) override {
    const size_t kd = static_cast<size_t>(num_classes()) * static_cast<size_t>(dim_);
    if (sums.size() != kd + 1) internal_error("CpuPeEngine::solve_objects_exact: expected K x D + 1 sums");
    std::vector<double> grad;
    return dim_ == 2 ? solve<2>(phi, opt, &grad, &sums) : solve<3>(phi, opt, &grad, &sums);
  }

  double objective(const std::vector<double>& phi) override {
    return dim_ == 2 ? eval<2>(phi) : eval<3>(phi);
  }

 private:
  index_t num_chunks() const { return (P_.rows + kChunk - 1) / kChunk; }

  // With `exact`, every chunk's gradient and objective are added to it (K x D, then the objective)
  // as they are, so that the totals are rounded once over all chunks of all engines.
  template <int D>
  PeSweep solve(const std::vector<double>& phi, const PeNewtonOptions& opt, std::vector<double>* class_grad,
                ExactSum* exact) {
    const int K = num_classes();
    const index_t chunks = num_chunks();
    std::vector<PeSweep> part(static_cast<size_t>(chunks));
    std::vector<double> grad_part(class_grad ? static_cast<size_t>(chunks * K * D) : 0, 0.0);
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads_)
    for (index_t c = 0; c < chunks; ++c) {
      PeSweep s;
      double* gp = class_grad ? grad_part.data() + c * K * D : nullptr;
      std::vector<double> scratch(static_cast<size_t>(2 * K));
      solve_range<D>(P_, log_priors_.data(), phi.data(), K, R_, eta_r_, opt, c * kChunk,
                     std::min(P_.rows, (c + 1) * kChunk), scratch.data(), s, gp);
      part[static_cast<size_t>(c)] = s;
    }
    const PeSweep total = combine_sweeps(part);
    if (exact) {
      for (index_t c = 0; c < chunks; ++c) {
        const double* g = grad_part.data() + c * K * D;
        for (int i = 0; i < K * D; ++i) exact->add(static_cast<size_t>(i), g[i]);
        exact->add(static_cast<size_t>(K * D), part[static_cast<size_t>(c)].objective);
      }
    }
    if (class_grad) {
      class_grad->assign(static_cast<size_t>(K * D), 0.0);
      for (index_t c = 0; c < chunks; ++c)
        for (int i = 0; i < K * D; ++i) (*class_grad)[i] += grad_part[static_cast<size_t>(c * K * D + i)];
    }
    return total;
  }

  template <int D>
  double eval(const std::vector<double>& phi) {
    const int K = num_classes();
    const index_t chunks = num_chunks();
    std::vector<double> part(static_cast<size_t>(chunks), 0.0);
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (index_t c = 0; c < chunks; ++c) {
      std::vector<double> scratch(static_cast<size_t>(K));
      part[static_cast<size_t>(c)] = eval_range<D>(P_, log_priors_.data(), phi.data(), K, R_, eta_r_, c * kChunk,
                                                   std::min(P_.rows, (c + 1) * kChunk), scratch.data());
    }
    double total = 0.0;
    for (double s : part) total += s;
    return total;
  }

  const MatrixD& P_;  // the caller's posteriors: the CPU needs no copy (see Backend::make_pe)
  std::vector<double> log_priors_;
  int dim_;
  double eta_r_;
  int threads_;
  MatrixD R_;
};

}  // namespace

std::unique_ptr<PeEngine> make_pe_engine(const MatrixD& P, const std::vector<double>& log_priors, int dim,
                                         double eta_r, int threads) {
  if (dim != 2 && dim != 3) internal_error("make_pe: dim must be 2 or 3");
  if (static_cast<index_t>(log_priors.size()) != P.cols) internal_error("make_pe: priors do not match K");
  return std::make_unique<CpuPeEngine>(P, log_priors, dim, eta_r, threads);
}

}  // namespace orrery::cpu
