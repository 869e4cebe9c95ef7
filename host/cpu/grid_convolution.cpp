// GridConvolution (cpu/fft.hpp): linear convolution by FFTs of the grid zero-padded to M_d = 2 G_d
// nodes per axis, pruned where the padding makes work needless.
//
// Spectrum layout: M_2 planes of M_1 rows of C0 = M_0 / 2 + 1 coefficients (the real axis 0 is
// halved), rows C0p >= C0 apart (a multiple of 4, so every row and every chunk of columns keeps the
// 64-byte alignment the plans were made with).
//   forward: real rows along axis 0 only where charges are (n1 < G_1, n2 < G_2; the other rows of
//            the padded grid are zero, and so are their coefficients), then (3-D) complex columns
//            along axis 1 in the planes that hold charges (n2 < G_2; the others are zero);
//   the last axis (1 in 2-D, 2 in 3-D), fused: each chunk of columns is copied into a buffer the
//            size of the cache (the padded half as zeros there, never in memory), transformed,
//            multiplied by each kernel's spectrum, transformed back, and only the part returned
//            (index < G) written out, so the full padded spectrum never goes through memory;
//   inverse: (3-D) columns along axis 1 in the planes returned (n2 < G_2), real rows only for the
//            rows returned (n1 < G_1).
// The kernels' spectra are made once per shape by the full transform.
// Each pass splits its lines into chunks of a fixed number of lines (kRows, kColumns), spread over
// the threads: every line is transformed by the same plan whichever thread runs it, so the bits do
// not depend on the thread count.
#include <omp.h>

#include <algorithm>

#include "cpu/fft.hpp"
#include "orrery/error.hpp"
#include "orrery/math/interp.hpp"

namespace orrery::cpu {
namespace {

constexpr int kRows = 16;     // real rows per chunk
constexpr int kColumns = 16;  // complex columns per chunk

long ceil_div(long a, long b) { return (a + b - 1) / b; }

struct Shape {
  int D;
  long G[3] = {1, 1, 1}, M[3] = {1, 1, 1};
  long C0 = 0, C0p = 0;
  size_t size = 0;  // complex values of a spectrum
  explicit Shape(const std::vector<int>& nodes) : D(static_cast<int>(nodes.size())) {
    if (D != 2 && D != 3) internal_error("GridConvolution: the grid must be 2-D or 3-D");
    for (int d = 0; d < D; ++d) {
      if (nodes[static_cast<size_t>(d)] < 1) internal_error("GridConvolution: an axis without nodes");
      G[d] = nodes[static_cast<size_t>(d)];
      M[d] = 2 * G[d];
    }
    C0 = M[0] / 2 + 1;
    C0p = (C0 + 3) / 4 * 4;
    size = static_cast<size_t>(M[2] * M[1] * C0p);
  }
};

}  // namespace

struct GridConvolution::Impl {
  Shape sh;
  int threads;
  ComplexBuffer work;  // a full spectrum, for the kernels only (freed by the first convolve)
  std::vector<RealBuffer> rows;          // per thread: kRows rows of M_0 values
  std::vector<ComplexBuffer> line, mul;  // per thread: M_L x kColumns values, [k][column]
  ComplexBuffer spec;                    // the charges' half-way spectrum (spec_rows rows)
  std::vector<ComplexBuffer> out;        // per kernel, the same layout
  std::vector<double> chunk_energy;      // fused_pass's energy per chunk
  std::unique_ptr<RealRows> real_rows;
  std::unique_ptr<ComplexColumns> axis1, axis2, fused;
  long ML = 0, GL = 0;      // the last axis: padded and returned lengths
  long stride_L = 0;        // values between consecutive elements along the last axis
  size_t spec_len = 0;      // spec's values: G_1 rows (2-D) or G_2 planes of M_1 rows (3-D)

  Impl(const std::vector<int>& nodes, int t) : sh(nodes), threads(std::max(1, t)) {
    work.assign(sh.size, Complex(0, 0));
    rows.assign(static_cast<size_t>(threads), RealBuffer(static_cast<size_t>(kRows * sh.M[0]), 0.0));
    ML = sh.M[sh.D - 1];
    GL = sh.G[sh.D - 1];
    stride_L = sh.D == 2 ? sh.C0p : sh.M[1] * sh.C0p;
    spec_len = static_cast<size_t>((sh.D == 2 ? sh.G[1] : sh.G[2] * sh.M[1]) * sh.C0p);
    line.assign(static_cast<size_t>(threads), ComplexBuffer(static_cast<size_t>(ML * kColumns)));
    mul.assign(static_cast<size_t>(threads), ComplexBuffer(static_cast<size_t>(ML * kColumns)));
    const int m0 = static_cast<int>(sh.M[0]);
    real_rows = std::make_unique<RealRows>(
        m0, sh.C0p, std::vector<int>{kRows, static_cast<int>(sh.G[1] % kRows), static_cast<int>(sh.M[1] % kRows)},
        threads, rows[0].data(), work.data());
    const std::vector<int> column_counts = {kColumns, static_cast<int>(sh.C0 % kColumns)};
    axis1 = std::make_unique<ComplexColumns>(static_cast<int>(sh.M[1]), sh.C0p, column_counts, threads, work.data());
    if (sh.D == 3)
      axis2 = std::make_unique<ComplexColumns>(static_cast<int>(sh.M[2]), sh.M[1] * sh.C0p, column_counts, threads,
                                               work.data());
    fused = std::make_unique<ComplexColumns>(static_cast<int>(ML), kColumns, column_counts, threads, line[0].data());
  }

  Complex* row(Complex* base, long n2, long n1) const { return base + (n2 * sh.M[1] + n1) * sh.C0p; }

  // Columns along axis 1 in planes [0, planes) of `spec` (planes of M_1 rows).
  void axis1_pass(Complex* spec_base, long planes, bool inverse) {
    const long per_plane = ceil_div(sh.C0, kColumns), total = planes * per_plane;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long k = 0; k < total; ++k) {
      const long n2 = k / per_plane, c0 = (k % per_plane) * kColumns;
      const int count = static_cast<int>(std::min<long>(kColumns, sh.C0 - c0));
      Complex* data = row(spec_base, n2, 0) + c0;
      if (inverse) axis1->inverse(omp_get_thread_num(), count, data);
      else axis1->forward(omp_get_thread_num(), count, data);
    }
  }
  // Columns along axis 2 everywhere (the kernels' full transform).
  void axis2_pass(Complex* spec_base) {
    const long per_row = ceil_div(sh.C0, kColumns), total = sh.M[1] * per_row;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long k = 0; k < total; ++k) {
      const long n1 = k / per_row, c0 = (k % per_row) * kColumns;
      const int count = static_cast<int>(std::min<long>(kColumns, sh.C0 - c0));
      axis2->forward(omp_get_thread_num(), count, row(spec_base, 0, n1) + c0);
    }
  }

  // fn(slot, n2, r0, count, rows) for the chunks of up to kRows rows among rows [0, rows1) of the
  // planes [0, planes), spread over the threads; `rows` is the thread's buffer.
  template <class Fn>
  void row_chunks(long rows1, long planes, Fn&& fn) {
    const long per_plane = ceil_div(rows1, kRows), total = planes * per_plane;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long k = 0; k < total; ++k) {
      const int slot = omp_get_thread_num();
      const long n2 = k / per_plane, r0 = (k % per_plane) * kRows;
      fn(slot, n2, r0, static_cast<int>(std::min<long>(kRows, rows1 - r0)), rows[static_cast<size_t>(slot)].data());
    }
  }

  // Real rows (n1 < rows1, n2 < planes) that fill(n1, n2, row) writes (M_0 values each) into the
  // rows of `to` (planes of M_1 rows); in 3-D the other rows of those planes are zeroed and the
  // axis-1 columns transformed.
  template <class Fill>
  void rows_forward(Fill&& fill, long rows1, long planes, Complex* to) {
    const long M0 = sh.M[0];
    row_chunks(rows1, planes, [&](int slot, long n2, long r0, int count, double* buf) {
      for (int r = 0; r < count; ++r) fill(r0 + r, n2, buf + r * M0);
      real_rows->forward(slot, count, buf, row(to, n2, r0));
    });
    if (sh.D == 3) {
#pragma omp parallel for schedule(static) num_threads(threads)
      for (long n2 = 0; n2 < planes; ++n2) std::fill(row(to, n2, rows1), row(to, n2, sh.M[1]), Complex(0, 0));
      axis1_pass(to, planes, false);
    }
  }

  // The last axis, fused (see the top): out[t] = inverse(forward(spec) x kernel t) for index < G_L;
  // with energy_kernel E, also returns sum over the full spectrum of |spectrum|^2 E (Parseval),
  // summed per chunk and the chunks in order.
  double fused_pass(const std::vector<const std::vector<double>*>& kernels, const std::vector<double>* energy_kernel) {
    const long per = ceil_div(sh.C0, kColumns), lines = sh.D == 2 ? 1 : sh.M[1], total = lines * per;
    if (energy_kernel) chunk_energy.assign(static_cast<size_t>(total), 0.0);
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long k = 0; k < total; ++k) {
      const int slot = omp_get_thread_num();
      const long n1 = k / per, c0 = (k % per) * kColumns;
      const int count = static_cast<int>(std::min<long>(kColumns, sh.C0 - c0));
      const long base = (sh.D == 2 ? 0 : n1 * sh.C0p) + c0;
      Complex* a = line[static_cast<size_t>(slot)].data();
      Complex* b = mul[static_cast<size_t>(slot)].data();
      for (long j = 0; j < GL; ++j)
        for (int c = 0; c < count; ++c) a[j * kColumns + c] = spec[static_cast<size_t>(base + j * stride_L + c)];
      for (long j = GL; j < ML; ++j)
        for (int c = 0; c < count; ++c) a[j * kColumns + c] = Complex(0, 0);
      fused->forward(slot, count, a);
      if (energy_kernel) {
        const double* E = energy_kernel->data();
        double e = 0;
        for (long j = 0; j < ML; ++j)
          for (int c = 0; c < count; ++c) {
            const Complex v = a[j * kColumns + c];
            e += math::parseval_term(v.real(), v.imag(), E[base + j * stride_L + c], c0 + c, sh.C0 - 1);
          }
        chunk_energy[static_cast<size_t>(k)] = e;
      }
      for (size_t t = 0; t < kernels.size(); ++t) {
        const double* K = kernels[t]->data();
        for (long j = 0; j < ML; ++j)
          for (int c = 0; c < count; ++c) b[j * kColumns + c] = a[j * kColumns + c] * K[base + j * stride_L + c];
        fused->inverse(slot, count, b);
        Complex* o = out[t].data();
        for (long j = 0; j < GL; ++j)
          for (int c = 0; c < count; ++c) o[base + j * stride_L + c] = b[j * kColumns + c];
      }
    }
    double energy = 0;
    if (energy_kernel)
      for (double e : chunk_energy) energy += e;
    return energy;
  }

  // potential (G nodes) from out-spectrum x (destroyed): (3-D) axis-1 columns, then real rows.
  void inverse(Complex* x, double* potential) {
    if (sh.D == 3) axis1_pass(x, sh.G[2], true);
    const long G0 = sh.G[0], G1 = sh.G[1], M0 = sh.M[0];
    row_chunks(G1, sh.G[2], [&](int slot, long n2, long r0, int count, double* buf) {
      real_rows->inverse(slot, count, row(x, n2, r0), buf);
      for (int r = 0; r < count; ++r) std::copy(buf + r * M0, buf + r * M0 + G0, potential + (n2 * G1 + r0 + r) * G0);
    });
  }
};

GridConvolution::GridConvolution(const std::vector<int>& nodes, int threads)
    : impl_(std::make_unique<Impl>(nodes, threads)) {}

GridConvolution::~GridConvolution() = default;

double GridConvolution::bytes(const std::vector<int>& nodes, int threads, int kernels) {
  const Shape sh(nodes);
  const double half = static_cast<double>((sh.D == 2 ? sh.G[1] : sh.G[2] * sh.M[1]) * sh.C0p);
  const double lines = static_cast<double>(sh.M[sh.D - 1]) * kColumns;
  // the full spectrum while the kernels are made, the charges' and each kernel's output spectrum,
  // and per thread its rows and two line buffers
  return 16.0 * static_cast<double>(sh.size) + 16.0 * half * (1 + kernels) +
         threads * (8.0 * kRows * static_cast<double>(sh.M[0]) + 2 * 16.0 * lines);
}

size_t GridConvolution::spectrum_length(const std::vector<int>& nodes) { return Shape(nodes).size; }

void GridConvolution::kernel_spectrum(const std::function<double(int, int, int)>& kernel, std::vector<double>& out) {
  const Shape& sh = impl_->sh;
  if (impl_->work.size() != sh.size) impl_->work.assign(sh.size, Complex(0, 0));
  const double norm = 1.0 / static_cast<double>(sh.M[0] * sh.M[1] * sh.M[2]);
  const int G0 = static_cast<int>(sh.G[0]), G1 = static_cast<int>(sh.G[1]), G2 = static_cast<int>(sh.G[2]);
  auto fill = [&](long j1, long j2, double* r) {
    int o1, o2 = 0;
    bool used = math::circular_offset(static_cast<int>(j1), G1, o1);
    if (sh.D == 3) used = math::circular_offset(static_cast<int>(j2), G2, o2) && used;
    for (long j0 = 0; j0 < sh.M[0]; ++j0) {
      int o0;
      const bool u = math::circular_offset(static_cast<int>(j0), G0, o0) && used;
      r[j0] = u ? kernel(o0, o1, o2) * norm : 0.0;
    }
  };
  Complex* w = impl_->work.data();
  impl_->rows_forward(fill, sh.M[1], sh.M[2], w);
  if (sh.D == 2) impl_->axis1_pass(w, 1, false);
  else impl_->axis2_pass(w);
  out.resize(sh.size);
  for (size_t q = 0; q < sh.size; ++q) out[q] = w[q].real();
}

void GridConvolution::convolve(const double* charges, const std::vector<const std::vector<double>*>& kernels,
                               const std::vector<double*>& potentials, const std::vector<double>* energy_kernel,
                               double* energy) {
  Impl& I = *impl_;
  const Shape& sh = I.sh;
  if (kernels.size() != potentials.size()) internal_error("GridConvolution: one potential per kernel");
  ComplexBuffer().swap(I.work);  // the kernels are made
  I.spec.resize(I.spec_len);
  if (I.out.size() < kernels.size()) I.out.resize(kernels.size());
  for (size_t t = 0; t < kernels.size(); ++t) I.out[t].resize(I.spec_len);
  const long G0 = sh.G[0], G1 = sh.G[1];
  auto fill = [&](long n1, long n2, double* r) {
    const double* q = charges + (n2 * G1 + n1) * G0;
    std::copy(q, q + G0, r);
    std::fill(r + G0, r + sh.M[0], 0.0);
  };
  I.rows_forward(fill, G1, sh.G[2], I.spec.data());
  const double e = I.fused_pass(kernels, energy_kernel);
  if (energy) *energy = e;
  for (size_t t = 0; t < kernels.size(); ++t) I.inverse(I.out[t].data(), potentials[t]);
}

}  // namespace orrery::cpu
