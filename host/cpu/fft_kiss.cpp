// RealFft on KISS FFT (Debian's build is single precision, as RealFft). A KISS plan keeps scratch
// space, so each slot has its own pair of plans.
#include <kiss_fftndr.h>

#include <cstdlib>

#include "cpu/fft.hpp"
#include "orrery/error.hpp"

namespace orrery::cpu {

struct RealFft::Impl {
  struct Slot {
    kiss_fftndr_cfg fwd = nullptr, inv = nullptr;
  };
  std::vector<Slot> slots;
};

RealFft::RealFft(const std::vector<int>& dims, int slots) : impl_(std::make_unique<Impl>()) {
  if (dims.empty() || dims.back() % 2 != 0) internal_error("RealFft: the last axis must be even");
  real_size_ = 1;
  for (int n : dims) real_size_ *= static_cast<size_t>(n);
  complex_size_ = real_size_ / static_cast<size_t>(dims.back()) * static_cast<size_t>(dims.back() / 2 + 1);
  impl_->slots.resize(static_cast<size_t>(slots > 0 ? slots : 1));
  const int rank = static_cast<int>(dims.size());
  for (auto& s : impl_->slots) {
    s.fwd = kiss_fftndr_alloc(dims.data(), rank, 0, nullptr, nullptr);
    s.inv = kiss_fftndr_alloc(dims.data(), rank, 1, nullptr, nullptr);
    if (!s.fwd || !s.inv) internal_error("RealFft: KISS FFT could not plan the transform");
  }
}

RealFft::~RealFft() {
  for (auto& s : impl_->slots) {
    std::free(s.fwd);
    std::free(s.inv);
  }
}

// std::complex<float> is laid out as float[2], as kiss_fft_cpx.
void RealFft::forward(int slot, float* in, std::complex<float>* out) const {
  kiss_fftndr(impl_->slots.at(static_cast<size_t>(slot)).fwd, in, reinterpret_cast<kiss_fft_cpx*>(out));
}

void RealFft::inverse(int slot, std::complex<float>* in, float* out) const {
  kiss_fftndri(impl_->slots.at(static_cast<size_t>(slot)).inv, reinterpret_cast<kiss_fft_cpx*>(in), out);
}

const char* RealFft::library() { return "kissfft"; }

}  // namespace orrery::cpu
