// RealFft on KISS FFT. Debian's build is single precision only, so the values go through float
// buffers, one pair per slot, as do the plans (a KISS plan keeps scratch space): see fft.hpp for why
// float is not enough for maps with far outliers; this build exists for its license (BSD).
#include <kiss_fftndr.h>

#include <cstdlib>

#include "cpu/fft.hpp"
#include "orrery/error.hpp"

namespace orrery::cpu {

struct RealFft::Impl {
  struct Slot {
    kiss_fftndr_cfg fwd = nullptr, inv = nullptr;
    std::vector<float> r;
    std::vector<kiss_fft_cpx> c;
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
    s.r.resize(real_size_);
    s.c.resize(complex_size_);
  }
}

RealFft::~RealFft() {
  for (auto& s : impl_->slots) {
    std::free(s.fwd);
    std::free(s.inv);
  }
}

void RealFft::forward(int slot, double* in, std::complex<double>* out) const {
  auto& s = impl_->slots.at(static_cast<size_t>(slot));
  for (size_t q = 0; q < real_size_; ++q) s.r[q] = static_cast<float>(in[q]);
  kiss_fftndr(s.fwd, s.r.data(), s.c.data());
  for (size_t q = 0; q < complex_size_; ++q) out[q] = {s.c[q].r, s.c[q].i};
}

void RealFft::inverse(int slot, std::complex<double>* in, double* out) const {
  auto& s = impl_->slots.at(static_cast<size_t>(slot));
  for (size_t q = 0; q < complex_size_; ++q)
    s.c[q] = {static_cast<float>(in[q].real()), static_cast<float>(in[q].imag())};
  kiss_fftndri(s.inv, s.c.data(), s.r.data());
  for (size_t q = 0; q < real_size_; ++q) out[q] = s.r[q];
}

const char* RealFft::library() { return "kissfft (float)"; }

}  // namespace orrery::cpu
