// CpuBackend: the reference path. OpenMP loops over the shared ORRERY_HD functions, in double.
// Reductions over objects go through fixed-size chunks summed in chunk order, so the result
// does not depend on the number of threads (1 thread == many threads, bit for bit).
#include <omp.h>

#include <algorithm>
#include <memory>
#include <string>

#include "orrery/backend.hpp"
#include "orrery/error.hpp"
#include "orrery/math/pe.hpp"

namespace orrery {
namespace {

// Objects per reduction chunk: large enough to amortise scheduling, fixed so that partial
// sums, and therefore results, are independent of the thread count.
constexpr index_t kChunk = 1024;

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
    return dim_ == 2 ? solve<2>(phi, opt, class_grad) : solve<3>(phi, opt, class_grad);
  }

  double objective(const std::vector<double>& phi) override {
    return dim_ == 2 ? eval<2>(phi) : eval<3>(phi);
  }

 private:
  index_t num_chunks() const { return (P_.rows + kChunk - 1) / kChunk; }

  template <int D>
  PeSweep solve(const std::vector<double>& phi, const PeNewtonOptions& opt, std::vector<double>* class_grad) {
    const int K = num_classes();
    const index_t chunks = num_chunks();
    std::vector<PeSweep> part(static_cast<size_t>(chunks));
    std::vector<double> grad_part(class_grad ? static_cast<size_t>(chunks * K * D) : 0, 0.0);
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads_)
    for (index_t c = 0; c < chunks; ++c) {
      PeSweep s;
      double* gp = class_grad ? grad_part.data() + c * K * D : nullptr;
      std::vector<double> scratch(static_cast<size_t>(2 * K));
      const index_t end = std::min(P_.rows, (c + 1) * kChunk);
      for (index_t n = c * kChunk; n < end; ++n) {
        double* r = R_.row(n);
        const auto res = math::pe_newton_object<double, D>(P_.row(n), log_priors_.data(), phi.data(), K, r, eta_r_,
                                                           opt.eps_r, opt.max_iter, scratch.data());
        add_object(s, res, res.objective);
        if (gp) math::pe_class_forces_from_q<double, D>(P_.row(n), res.q, phi.data(), K, r, gp);
      }
      part[static_cast<size_t>(c)] = s;
    }
    const PeSweep total = combine_sweeps(part);
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
      double s = 0.0;
      const index_t end = std::min(P_.rows, (c + 1) * kChunk);
      for (index_t n = c * kChunk; n < end; ++n)
        s += math::pe_object_eval<double, D>(P_.row(n), log_priors_.data(), phi.data(), K, R_.row(n), eta_r_,
                                             nullptr, nullptr);
      part[static_cast<size_t>(c)] = s;
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

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int threads) : threads_(threads > 0 ? threads : omp_get_max_threads()) {}
  std::string name() const override { return "cpu (" + std::to_string(threads_) + " threads)"; }
  bool is_cuda() const override { return false; }
  int threads() const override { return threads_; }

  // Parallel copy of double arrays; both are first touched in the same static partition, so pages
  // are local to the threads that copy them. Write-allocate traffic is not counted.
  double copy_bandwidth(size_t bytes) const override {
    const size_t count = std::max<size_t>(bytes / sizeof(double), 1);
    const size_t block = size_t(1) << 16;
    const auto blocks = static_cast<index_t>((count + block - 1) / block);
    std::unique_ptr<double[]> src(new double[count]), dst(new double[count]);
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (index_t b = 0; b < blocks; ++b) {
      const size_t lo = static_cast<size_t>(b) * block, hi = std::min(count, lo + block);
      for (size_t i = lo; i < hi; ++i) src[i] = static_cast<double>(i), dst[i] = 0.0;
    }
    double best = 1e300;
    for (int rep = 0; rep < 5; ++rep) {
      const double t0 = omp_get_wtime();
#pragma omp parallel for schedule(static) num_threads(threads_)
      for (index_t b = 0; b < blocks; ++b) {
        const size_t lo = static_cast<size_t>(b) * block, hi = std::min(count, lo + block);
        std::copy(src.get() + lo, src.get() + hi, dst.get() + lo);
      }
      best = std::min(best, omp_get_wtime() - t0);
    }
    volatile double sink = dst[count / 3];  // keeps the copies observable
    (void)sink;
    return 2.0 * static_cast<double>(count * sizeof(double)) / best;
  }
  std::unique_ptr<PeEngine> make_pe(const MatrixD& P, const std::vector<double>& log_priors, int dim,
                                    double eta_r) override {
    if (dim != 2 && dim != 3) internal_error("make_pe: dim must be 2 or 3");
    if (static_cast<index_t>(log_priors.size()) != P.cols) internal_error("make_pe: priors do not match K");
    return std::make_unique<CpuPeEngine>(P, log_priors, dim, eta_r, threads_);
  }

 private:
  int threads_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(int threads) { return std::make_unique<CpuBackend>(threads); }

std::unique_ptr<Backend> make_backend(const std::string& device, int threads) {
  if (device == "cpu") return make_cpu_backend(threads);
  if (device == "auto") return cuda_devices().empty() ? make_cpu_backend(threads) : make_cuda_backend(0);
  if (device == "cuda") return make_cuda_backend(0);
  if (device.rfind("cuda:", 0) == 0) {
    const std::string idx = device.substr(5);
    if (idx.empty() || idx.find_first_not_of("0123456789") != std::string::npos)
      input_error("device: expected auto, cpu, cuda or cuda:N, found \"" + device + "\"");
    return make_cuda_backend(std::stoi(idx));
  }
  input_error("device: expected auto, cpu, cuda or cuda:N, found \"" + device + "\"");
}

}  // namespace orrery
