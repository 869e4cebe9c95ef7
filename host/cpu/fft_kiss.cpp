// RealRows and ComplexColumns on KISS FFT. Debian's build is single precision only, so the values
// go through float buffers, one set per slot, as do the plans (a KISS real plan keeps scratch
// space): see fft.hpp for why float is not enough for maps with far outliers; this build exists for
// its license (BSD).
#include <kiss_fft.h>
#include <kiss_fftr.h>

#include <algorithm>
#include <cstdlib>

#include "cpu/fft.hpp"
#include "orrery/error.hpp"

namespace orrery::cpu {

struct RealRows::Impl {
  struct Slot {
    kiss_fftr_cfg fwd = nullptr, inv = nullptr;
    std::vector<float> r;
    std::vector<kiss_fft_cpx> c;
  };
  int n = 0;
  long out_stride = 0;
  std::vector<Slot> slots;
  ~Impl() {
    for (auto& s : slots) std::free(s.fwd), std::free(s.inv);
  }
};

RealRows::RealRows(int n, long out_stride, const std::vector<int>&, int slots, double*, Complex*)
    : impl_(std::make_unique<Impl>()) {
  if (n % 2 != 0) internal_error("RealRows: the length must be even");
  impl_->n = n;
  impl_->out_stride = out_stride;
  impl_->slots.resize(static_cast<size_t>(std::max(1, slots)));
  for (auto& s : impl_->slots) {
    s.fwd = kiss_fftr_alloc(n, 0, nullptr, nullptr);
    s.inv = kiss_fftr_alloc(n, 1, nullptr, nullptr);
    if (!s.fwd || !s.inv) internal_error("RealRows: KISS FFT could not plan the transform");
    s.r.resize(static_cast<size_t>(n));
    s.c.resize(static_cast<size_t>(n / 2 + 1));
  }
}

RealRows::~RealRows() = default;

void RealRows::forward(int slot, int count, double* in, Complex* out) const {
  auto& s = impl_->slots.at(static_cast<size_t>(slot));
  const int n = impl_->n;
  for (int row = 0; row < count; ++row) {
    for (int q = 0; q < n; ++q) s.r[static_cast<size_t>(q)] = static_cast<float>(in[static_cast<long>(row) * n + q]);
    kiss_fftr(s.fwd, s.r.data(), s.c.data());
    Complex* o = out + row * impl_->out_stride;
    for (int q = 0; q <= n / 2; ++q) o[q] = {s.c[static_cast<size_t>(q)].r, s.c[static_cast<size_t>(q)].i};
  }
}

void RealRows::inverse(int slot, int count, Complex* in, double* out) const {
  auto& s = impl_->slots.at(static_cast<size_t>(slot));
  const int n = impl_->n;
  for (int row = 0; row < count; ++row) {
    const Complex* i = in + row * impl_->out_stride;
    for (int q = 0; q <= n / 2; ++q)
      s.c[static_cast<size_t>(q)] = {static_cast<float>(i[q].real()), static_cast<float>(i[q].imag())};
    kiss_fftri(s.inv, s.c.data(), s.r.data());
    for (int q = 0; q < n; ++q) out[static_cast<long>(row) * n + q] = s.r[static_cast<size_t>(q)];
  }
}

const char* RealRows::library() { return "kissfft (float)"; }

struct ComplexColumns::Impl {
  struct Slot {
    kiss_fft_cfg fwd = nullptr, inv = nullptr;
    std::vector<kiss_fft_cpx> a, b;
  };
  int n = 0;
  long stride = 0;
  std::vector<Slot> slots;
  ~Impl() {
    for (auto& s : slots) std::free(s.fwd), std::free(s.inv);
  }
  void run(int slot, int count, Complex* data, bool inverse) const {
    auto& s = const_cast<Slot&>(slots.at(static_cast<size_t>(slot)));
    for (int col = 0; col < count; ++col) {
      for (int k = 0; k < n; ++k) {
        const Complex v = data[col + k * stride];
        s.a[static_cast<size_t>(k)] = {static_cast<float>(v.real()), static_cast<float>(v.imag())};
      }
      kiss_fft(inverse ? s.inv : s.fwd, s.a.data(), s.b.data());
      for (int k = 0; k < n; ++k) data[col + k * stride] = {s.b[static_cast<size_t>(k)].r, s.b[static_cast<size_t>(k)].i};
    }
  }
};

ComplexColumns::ComplexColumns(int n, long stride, const std::vector<int>&, int slots, Complex*)
    : impl_(std::make_unique<Impl>()) {
  impl_->n = n;
  impl_->stride = stride;
  impl_->slots.resize(static_cast<size_t>(std::max(1, slots)));
  for (auto& s : impl_->slots) {
    s.fwd = kiss_fft_alloc(n, 0, nullptr, nullptr);
    s.inv = kiss_fft_alloc(n, 1, nullptr, nullptr);
    if (!s.fwd || !s.inv) internal_error("ComplexColumns: KISS FFT could not plan the transform");
    s.a.resize(static_cast<size_t>(n));
    s.b.resize(static_cast<size_t>(n));
  }
}

ComplexColumns::~ComplexColumns() = default;

void ComplexColumns::forward(int slot, int count, Complex* data) const { impl_->run(slot, count, data, false); }
void ComplexColumns::inverse(int slot, int count, Complex* data) const { impl_->run(slot, count, data, true); }

}  // namespace orrery::cpu
