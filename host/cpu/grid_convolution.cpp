// GridConvolution (cpu/fft.hpp): linear convolution by FFTs of the grid zero-padded to M_d = 2 G_d
// nodes per axis, pruned where the padding makes work needless.
//
// Spectrum layout: M_2 planes of M_1 rows of C0 = M_0 / 2 + 1 coefficients (the real axis 0 is
// halved), rows C0p >= C0 apart (a multiple of 4, so every row and every chunk of columns keeps the
// 64-byte alignment the plans were made with).
//   forward: real rows along axis 0 only where charges are (n1 < G_1, n2 < G_2; the other rows of
//            the padded grid are zero, and so are their coefficients), then complex columns along
//            axis 1 in the planes that hold charges (n2 < G_2; the others are zero), then along axis
//            2 everywhere;
//   inverse: columns along axis 2 everywhere, along axis 1 in the planes returned (n2 < G_2), real
//            rows only for the rows returned (n1 < G_1).
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
  ComplexBuffer work;
  std::vector<RealBuffer> rows;  // per thread: kRows rows of M_0 values
  std::unique_ptr<RealRows> real_rows;
  std::unique_ptr<ComplexColumns> axis1, axis2;

  Impl(const std::vector<int>& nodes, int t) : sh(nodes), threads(std::max(1, t)) {
    work.assign(sh.size, Complex(0, 0));
    rows.assign(static_cast<size_t>(threads), RealBuffer(static_cast<size_t>(kRows * sh.M[0]), 0.0));
    const int m0 = static_cast<int>(sh.M[0]);
    real_rows = std::make_unique<RealRows>(
        m0, sh.C0p, std::vector<int>{kRows, static_cast<int>(sh.G[1] % kRows), static_cast<int>(sh.M[1] % kRows)},
        threads, rows[0].data(), work.data());
    const std::vector<int> column_counts = {kColumns, static_cast<int>(sh.C0 % kColumns)};
    axis1 = std::make_unique<ComplexColumns>(static_cast<int>(sh.M[1]), sh.C0p, column_counts, threads, work.data());
    if (sh.D == 3)
      axis2 = std::make_unique<ComplexColumns>(static_cast<int>(sh.M[2]), sh.M[1] * sh.C0p, column_counts, threads,
                                               work.data());
  }

  Complex* row(Complex* base, long n2, long n1) const { return base + (n2 * sh.M[1] + n1) * sh.C0p; }

  // Columns along axis 1 in planes [0, planes), then (3-D) along axis 2 everywhere, or in the
  // reverse order for the inverse.
  void axis1_pass(Complex* spec, long planes, bool inverse) {
    const long per_plane = ceil_div(sh.C0, kColumns), total = planes * per_plane;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long k = 0; k < total; ++k) {
      const long n2 = k / per_plane, c0 = (k % per_plane) * kColumns;
      const int count = static_cast<int>(std::min<long>(kColumns, sh.C0 - c0));
      Complex* data = row(spec, n2, 0) + c0;
      if (inverse) axis1->inverse(omp_get_thread_num(), count, data);
      else axis1->forward(omp_get_thread_num(), count, data);
    }
  }
  void axis2_pass(Complex* spec, bool inverse) {
    const long per_row = ceil_div(sh.C0, kColumns), total = sh.M[1] * per_row;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long k = 0; k < total; ++k) {
      const long n1 = k / per_row, c0 = (k % per_row) * kColumns;
      const int count = static_cast<int>(std::min<long>(kColumns, sh.C0 - c0));
      Complex* data = row(spec, 0, n1) + c0;
      if (inverse) axis2->inverse(omp_get_thread_num(), count, data);
      else axis2->forward(omp_get_thread_num(), count, data);
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

  // The spectrum of the padded grid whose rows (n1 < rows1, n2 < planes) fill(n1, n2, row) writes
  // (M_0 values each); every other row is zero.
  template <class Fill>
  void forward(Fill&& fill, long rows1, long planes, Complex* spec) {
    const long M0 = sh.M[0];
    row_chunks(rows1, planes, [&](int slot, long n2, long r0, int count, double* buf) {
      for (int r = 0; r < count; ++r) fill(r0 + r, n2, buf + r * M0);
      real_rows->forward(slot, count, buf, row(spec, n2, r0));
    });
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long n2 = 0; n2 < sh.M[2]; ++n2) {
      const long from = n2 < planes ? rows1 : 0;
      std::fill(row(spec, n2, from), row(spec, n2, sh.M[1]), Complex(0, 0));
    }
    axis1_pass(spec, planes, false);
    if (sh.D == 3) axis2_pass(spec, false);
  }

  // potential (G nodes) from the spectrum `spec` (destroyed).
  void inverse(Complex* spec, double* potential) {
    if (sh.D == 3) axis2_pass(spec, true);
    axis1_pass(spec, sh.G[2], true);
    const long G0 = sh.G[0], G1 = sh.G[1], M0 = sh.M[0];
    row_chunks(G1, sh.G[2], [&](int slot, long n2, long r0, int count, double* buf) {
      real_rows->inverse(slot, count, row(spec, n2, r0), buf);
      for (int r = 0; r < count; ++r) std::copy(buf + r * M0, buf + r * M0 + G0, potential + (n2 * G1 + r0 + r) * G0);
    });
  }
};

GridConvolution::GridConvolution(const std::vector<int>& nodes, int threads)
    : impl_(std::make_unique<Impl>(nodes, threads)) {}

GridConvolution::~GridConvolution() = default;

double GridConvolution::bytes(const std::vector<int>& nodes, int threads, int spectra) {
  const Shape sh(nodes);
  return 16.0 * static_cast<double>(sh.size) * (1 + spectra) + 8.0 * kRows * static_cast<double>(sh.M[0]) * threads;
}

size_t GridConvolution::spectrum_length(const std::vector<int>& nodes) { return Shape(nodes).size; }

size_t GridConvolution::spectrum_size() const { return impl_->sh.size; }

void GridConvolution::kernel_spectrum(const std::function<double(int, int, int)>& kernel, std::vector<double>& out) {
  const Shape& sh = impl_->sh;
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
  impl_->forward(fill, sh.M[1], sh.M[2], impl_->work.data());
  out.resize(sh.size);
  for (size_t q = 0; q < sh.size; ++q) out[q] = impl_->work[q].real();
}

void GridConvolution::forward(const double* charges, ComplexBuffer& spectrum) {
  const Shape& sh = impl_->sh;
  spectrum.resize(sh.size);
  const long G0 = sh.G[0], G1 = sh.G[1];
  auto fill = [&](long n1, long n2, double* r) {
    const double* q = charges + (n2 * G1 + n1) * G0;
    std::copy(q, q + G0, r);
    std::fill(r + G0, r + sh.M[0], 0.0);
  };
  impl_->forward(fill, sh.G[1], sh.G[2], spectrum.data());
}

void GridConvolution::apply(const ComplexBuffer& spectrum, const std::vector<double>& kernel, double* potential) {
  const Shape& sh = impl_->sh;
  Complex* x = impl_->work.data();
  const auto n = static_cast<long>(sh.size);
#pragma omp parallel for schedule(static) num_threads(impl_->threads)
  for (long q = 0; q < n; ++q) x[q] = spectrum[static_cast<size_t>(q)] * kernel[static_cast<size_t>(q)];
  impl_->inverse(x, potential);
}

}  // namespace orrery::cpu
