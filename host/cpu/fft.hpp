// FFTs for the interpolation grid (cpu/interp.cpp), in double precision. Float's rounding is
// relative to the largest potential on the grid, so a point far out in a sparse region, whose
// potentials are many orders smaller, gets sums of rounding noise (a float fit of 20,000 points
// threw such points out; the fixed-point step's length, since bounded by B_i, made that worse then).
//
// Two layers:
//  - RealRows and ComplexColumns: batches of one-dimensional transforms of one length, the only
//    part that depends on the library, chosen at build time (CMake ORRERY_FFT): FFTW 3 or KISS FFT,
//    both from Debian. Unnormalised; callable from several threads at once, each with its own slot.
//  - GridConvolution (cpu/grid_convolution.cpp): the linear convolution of a grid of charges with an
//    even kernel, by transforms of the grid zero-padded to twice its size per axis, made of those
//    batches. It skips what the padding makes needless: the forward transform does not transform
//    the all-zero rows of the padded half, and the inverse one transforms back only the rows it
//    returns, and the last axis's forward transform, the products with the kernels and their
//    inverse transforms run on one cache-sized chunk of columns at a time. The lines go to the
//    threads in chunks of a fixed size, so the result does not depend on the thread count.
#pragma once
#include <complex>
#include <functional>
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

using Complex = std::complex<double>;
using RealBuffer = std::vector<double, AlignedAllocator<double>>;
using ComplexBuffer = std::vector<Complex, AlignedAllocator<Complex>>;

// Real rows of length n (even), contiguous, to and from their n / 2 + 1 complex
// coefficients, row r's at out + r * out_stride. `counts` lists every row count a call will pass
// (plans are made for those, on the sample arrays, which they do not touch). Pointers passed to the
// calls must be aligned to 64 bytes, as the samples, and out_stride a multiple of 4.
class RealRows {
 public:
  RealRows(int n, long out_stride, const std::vector<int>& counts, int slots, double* in_sample,
           Complex* out_sample);
  ~RealRows();
  RealRows(const RealRows&) = delete;
  RealRows& operator=(const RealRows&) = delete;
  void forward(int slot, int count, double* in, Complex* out) const;  // in destroyed
  void inverse(int slot, int count, Complex* in, double* out) const;  // in destroyed
  static const char* library();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Adjacent complex columns of length n transformed in place: element k of column c at
// data[c + k * stride]. Same conventions as RealRows (stride a multiple of 4).
class ComplexColumns {
 public:
  ComplexColumns(int n, long stride, const std::vector<int>& counts, int slots, Complex* sample);
  ~ComplexColumns();
  ComplexColumns(const ComplexColumns&) = delete;
  ComplexColumns& operator=(const ComplexColumns&) = delete;
  void forward(int slot, int count, Complex* data) const;
  void inverse(int slot, int count, Complex* data) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Linear convolution on a grid of G_0 x G_1 (x G_2) nodes, axis 0 fastest (node (n0, n1, n2) at
// n0 + G_0 (n1 + G_1 n2)), with an even kernel: potential(m) = sum_n K(m - n) charge(n).
class GridConvolution {
 public:
  GridConvolution(const std::vector<int>& nodes, int threads);
  ~GridConvolution();
  GridConvolution(const GridConvolution&) = delete;
  GridConvolution& operator=(const GridConvolution&) = delete;

  // Bytes a convolution of this shape holds at its peak, with `kernels` kernels a call.
  static double bytes(const std::vector<int>& nodes, int threads, int kernels);
  // The length of a kernel's spectrum.
  static size_t spectrum_length(const std::vector<int>& nodes);
  // The kernel's spectrum (real, as the kernel is even), scaled by 1 / prod(2 G_d) so that
  // convolve() returns the convolution itself: kernel(o0, o1, o2) for node offsets |o_d| < G_d
  // (o2 = 0 in 2-D). Make the kernels before the first convolve (which frees the full spectrum
  // they are made in; a later kernel makes it again).
  void kernel_spectrum(const std::function<double(int, int, int)>& kernel, std::vector<double>& out);
  // potentials[t] (prod G_d values each) = the convolution of the charges (prod G_d values) with
  // kernel t, for one or more kernels (their spectra from kernel_spectrum). With `energy_kernel`,
  // also *energy = sum_n charge(n) (energy_kernel * charges)(n), by Parseval's theorem from the
  // charges' spectrum, sum_w |Q(w)|^2 K(w) (each coefficient of the halved axis that stands for
  // two counted twice), so that kernel's potential needs no inverse transform.
  void convolve(const double* charges, const std::vector<const std::vector<double>*>& kernels,
                const std::vector<double*>& potentials, const std::vector<double>* energy_kernel = nullptr,
                double* energy = nullptr);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace orrery::cpu
