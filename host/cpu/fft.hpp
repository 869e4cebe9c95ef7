// Real-to-complex multidimensional FFTs of one size, for the interpolation grid (cpu/interp.cpp), in
// single precision: the grid's potentials need ~1e-6 relative accuracy against an interpolation
// error of ~1e-3, and float halves both the time and the memory of the transforms (the grid is the
// largest array of an interpolated fit in 3-D).
// The library behind them is chosen at build time (CMake ORRERY_FFT): FFTW 3 or KISS FFT, both from
// Debian. Transforms are unnormalised (inverse(forward(x)) = x * size()), row-major, the last axis
// fastest and halved in the spectrum (n_last / 2 + 1 complex values). forward() and inverse() may
// be called from several threads at once, each with its own slot (0 <= slot < slots) and buffers;
// buffers come from Buffer (aligned as the libraries' vector code wants).
#pragma once
#include <complex>
#include <memory>
#include <new>
#include <vector>

namespace orrery::cpu {

// Storage aligned to 64 bytes.
template <class T>
struct AlignedAllocator {
  using value_type = T;
  AlignedAllocator() = default;
  template <class U>
  AlignedAllocator(const AlignedAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(64))); }
  void deallocate(T* p, size_t) { ::operator delete(p, std::align_val_t(64)); }
  bool operator==(const AlignedAllocator&) const { return true; }
  bool operator!=(const AlignedAllocator&) const { return false; }
};

class RealFft {
 public:
  using RealBuffer = std::vector<float, AlignedAllocator<float>>;
  using ComplexBuffer = std::vector<std::complex<float>, AlignedAllocator<std::complex<float>>>;
  RealFft(const std::vector<int>& dims, int slots);  // every axis even
  ~RealFft();
  RealFft(const RealFft&) = delete;
  RealFft& operator=(const RealFft&) = delete;
  size_t real_size() const { return real_size_; }        // prod dims
  size_t complex_size() const { return complex_size_; }  // prod dims[0..D-2] * (dims[D-1] / 2 + 1)
  // in: real_size() values (destroyed); out: complex_size() values.
  void forward(int slot, float* in, std::complex<float>* out) const;
  // in: complex_size() values (destroyed); out: real_size() values.
  void inverse(int slot, std::complex<float>* in, float* out) const;
  static const char* library();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  size_t real_size_ = 0, complex_size_ = 0;
};

}  // namespace orrery::cpu
