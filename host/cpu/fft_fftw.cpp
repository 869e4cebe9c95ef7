// RealFft on FFTW 3 (double precision). Plans are made once per size with FFTW_ESTIMATE, which picks the
// algorithm from the size alone (FFTW_MEASURE would time candidates and could pick differently from
// run to run, changing the bits); the new-array execute functions are thread-safe.
#include <fftw3.h>

#include <mutex>

#include "cpu/fft.hpp"
#include "orrery/error.hpp"

namespace orrery::cpu {

struct RealFft::Impl {
  fftw_plan fwd = nullptr, inv = nullptr;
};

namespace {
std::mutex& planner_mutex() {  // the FFTW planner is not thread-safe
  static std::mutex m;
  return m;
}
}  // namespace

RealFft::RealFft(const std::vector<int>& dims, int /*slots*/) : impl_(std::make_unique<Impl>()) {
  if (dims.empty() || dims.back() % 2 != 0) internal_error("RealFft: the last axis must be even");
  real_size_ = 1;
  for (int n : dims) real_size_ *= static_cast<size_t>(n);
  complex_size_ = real_size_ / static_cast<size_t>(dims.back()) * static_cast<size_t>(dims.back() / 2 + 1);
  RealBuffer r(real_size_);
  ComplexBuffer c(complex_size_);
  auto* cc = reinterpret_cast<fftw_complex*>(c.data());
  std::lock_guard<std::mutex> lock(planner_mutex());
  const int rank = static_cast<int>(dims.size());
  impl_->fwd = fftw_plan_dft_r2c(rank, dims.data(), r.data(), cc, FFTW_ESTIMATE | FFTW_DESTROY_INPUT);
  impl_->inv = fftw_plan_dft_c2r(rank, dims.data(), cc, r.data(), FFTW_ESTIMATE | FFTW_DESTROY_INPUT);
  if (!impl_->fwd || !impl_->inv) internal_error("RealFft: FFTW could not plan the transform");
}

RealFft::~RealFft() {
  std::lock_guard<std::mutex> lock(planner_mutex());
  if (impl_->fwd) fftw_destroy_plan(impl_->fwd);
  if (impl_->inv) fftw_destroy_plan(impl_->inv);
}

void RealFft::forward(int, double* in, std::complex<double>* out) const {
  fftw_execute_dft_r2c(impl_->fwd, in, reinterpret_cast<fftw_complex*>(out));
}

void RealFft::inverse(int, std::complex<double>* in, double* out) const {
  fftw_execute_dft_c2r(impl_->inv, reinterpret_cast<fftw_complex*>(in), out);
}

const char* RealFft::library() { return "fftw3"; }

}  // namespace orrery::cpu
