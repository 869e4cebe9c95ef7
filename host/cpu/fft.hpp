// Real-to-complex multidimensional FFTs of one size, for the interpolation grid (cpu/interp.cpp), in
// double precision. Float's rounding is relative to the largest potential on the grid, so a point
// far out in a sparse region, whose potentials are many orders smaller, gets sums of rounding noise
// (a float fit of 20,000 points threw such points out; the fixed-point step's length, since bounded
// by B_i, made that worse then).
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
  using RealBuffer = std::vector<double, AlignedAllocator<double>>;
  using ComplexBuffer = std::vector<std::complex<double>, AlignedAllocator<std::complex<double>>>;
  RealFft(const std::vector<int>& dims, int slots);  // every axis even
  ~RealFft();
  RealFft(const RealFft&) = delete;
  RealFft& operator=(const RealFft&) = delete;
  size_t real_size() const { return real_size_; }        // prod dims
  size_t complex_size() const { return complex_size_; }  // prod dims[0..D-2] * (dims[D-1] / 2 + 1)
  // in: real_size() values (destroyed); out: complex_size() values.
  void forward(int slot, double* in, std::complex<double>* out) const;
  // in: complex_size() values (destroyed); out: real_size() values.
  void inverse(int slot, std::complex<double>* in, double* out) const;
  static const char* library();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  size_t real_size_ = 0, complex_size_ = 0;
};

}  // namespace orrery::cpu
