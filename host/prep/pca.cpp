// PCA by subspace iteration on the d x d covariance: C = X_c' X_c / (N - 1) is formed once
// (O(N d^2), OpenMP over rows of C), then V <- orth(C V) until the Rayleigh quotients settle.
// The iteration carries more vectors than asked for (m = dims + max(dims, 8), at most d): the
// leading `dims` directions then converge as (lambda_{m+1} / lambda_dims)^t instead of
// (lambda_{dims+1} / lambda_dims)^t, which on real data is often 0.98 (Fashion-MNIST at 50
// components: 100 iterations left a 13% error; with 100 vectors 12 iterations reach 1e-9).
// kMaxIterations bounds the cost when gaps are tiny, and a final Rayleigh-Ritz rotation makes the
// components exactly uncorrelated whatever mixing within the subspace is left. The dot products
// run in AVX2/AVX-512 clones (prep/clones.hpp); each entry is summed in one fixed order by one
// thread, so the result does not depend on the thread count.
#include "orrery/pca.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "orrery/error.hpp"
#include "prep/clones.hpp"

namespace orrery {

namespace {

constexpr int kMaxIterations = 100;

ORRERY_ALWAYS_INLINE double dot(const double* a, const double* b, index_t n) {
  double s = 0.0;
#pragma omp simd reduction(+ : s)
  for (index_t q = 0; q < n; ++q) s += a[q] * b[q];
  return s;
}

// s[j] = <a, b_j> for four vectors b_j at once: four independent sums, so that the additions do
// not wait on one another as a single running sum's do
ORRERY_ALWAYS_INLINE void dot4(const double* a, const double* b0, const double* b1, const double* b2,
                               const double* b3, index_t n, double* s) {
  double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
#pragma omp simd reduction(+ : s0, s1, s2, s3)
  for (index_t q = 0; q < n; ++q) {
    s0 += a[q] * b0[q];
    s1 += a[q] * b1[q];
    s2 += a[q] * b2[q];
    s3 += a[q] * b3[q];
  }
  s[0] = s0, s[1] = s1, s[2] = s2, s[3] = s3;
}

// out[k] = <row, vectors row k> for k < m (vectors: m x n, row-major)
ORRERY_CLONES void dots(const double* row, const double* vectors, index_t n, int m, double* out) {
  const auto v = [&](int k) { return vectors + static_cast<size_t>(k) * static_cast<size_t>(n); };
  int k = 0;
  for (; k + 4 <= m; k += 4) dot4(row, v(k), v(k + 1), v(k + 2), v(k + 3), n, out + k);
  for (; k < m; ++k) out[k] = dot(row, v(k), n);
}

// out[b - a] += <XT row a, XT row b> for b = a .. d-1 (one row of a block's Gram matrix)
ORRERY_CLONES void gram_row(const double* XT, index_t d, index_t width, index_t a, double* out) {
  const double* xa = XT + static_cast<size_t>(a) * static_cast<size_t>(width);
  double s[4];
  const auto m = static_cast<int>(d - a);
  int k = 0;
  for (; k + 4 <= m; k += 4) {
    const auto xb = [&](int j) { return XT + static_cast<size_t>(a + k + j) * static_cast<size_t>(width); };
    dot4(xa, xb(0), xb(1), xb(2), xb(3), width, s);
    for (int j = 0; j < 4; ++j) out[k + j] += s[j];
  }
  for (; k < m; ++k) out[k] += dot(xa, XT + static_cast<size_t>(a + k) * static_cast<size_t>(width), width);
}

// Gram-Schmidt on the m rows of W (m x n), twice over ("twice is enough" for orthogonality where a
// row is nearly dependent on the earlier ones); norms[k] gets the first pass's norm of row k before
// normalisation, the Rayleigh estimate. A row with nothing left becomes zero.
ORRERY_CLONES void orthonormalise(double* W, index_t n, int m, double* norms) {
  const auto row = [&](int k) { return W + static_cast<size_t>(k) * static_cast<size_t>(n); };
  for (int k = 0; k < m; ++k) {
    double* wk = row(k);
    for (int pass = 0; pass < 2; ++pass) {
      for (int j = 0; j < k; ++j) {
        const double* wj = row(j);
        const double c = dot(wk, wj, n);
#pragma omp simd
        for (index_t a = 0; a < n; ++a) wk[a] -= c * wj[a];
      }
      const double nrm = std::sqrt(dot(wk, wk, n));
      if (pass == 0) norms[k] = nrm;
      const double inv = nrm > 0 ? 1.0 / nrm : 0.0;
#pragma omp simd
      for (index_t a = 0; a < n; ++a) wk[a] *= inv;
    }
  }
}

// out (m x d) = (C V')' for V (m x d) and C symmetric d x d: row k of out is C v_k.
void times_covariance(const MatrixD& C, const MatrixD& V, MatrixD& out, int nt) {
  const index_t d = C.rows;
  const auto m = static_cast<int>(V.rows);
  MatrixD CV(d, m);
#pragma omp parallel for schedule(static) num_threads(nt)
  for (index_t a = 0; a < d; ++a) dots(C.row(a), V.row(0), d, m, CV.row(a));
  for (int k = 0; k < m; ++k)
    for (index_t a = 0; a < d; ++a) out(k, a) = CV(a, k);
}


// Diagonalises the symmetric m x m matrix T in place by cyclic Jacobi rotations, accumulating them
// in R (when given, which must start as the identity): afterwards T's diagonal holds the
// eigenvalues and R's columns the eigenvectors.
void jacobi(MatrixD& T, MatrixD* R) {
  const auto m = static_cast<int>(T.rows);
  for (int sweep = 0; sweep < 100; ++sweep) {
    // off-diagonal mass relative to the diagonal's: a threshold in the data's own units would
    // stop at once on data of scale 1e-15 and never on data of scale 1e15
    double off = 0.0, diag = 0.0;
    for (int p = 0; p < m; ++p) {
      diag += T(p, p) * T(p, p);
      for (int q = p + 1; q < m; ++q) off += T(p, q) * T(p, q);
    }
    if (off <= 1e-30 * diag) break;
    for (int p = 0; p < m; ++p)
      for (int q = p + 1; q < m; ++q) {
        if (T(p, q) == 0.0) continue;
        const double theta = (T(q, q) - T(p, p)) / (2.0 * T(p, q));
        const double t = (theta >= 0 ? 1.0 : -1.0) / (std::abs(theta) + std::sqrt(theta * theta + 1.0));
        const double c = 1.0 / std::sqrt(t * t + 1.0), sn = t * c;
        for (int k = 0; k < m; ++k) {  // T <- J' T J
          const double tkp = T(k, p), tkq = T(k, q);
          T(k, p) = c * tkp - sn * tkq;
          T(k, q) = sn * tkp + c * tkq;
        }
        for (int k = 0; k < m; ++k) {
          const double tpk = T(p, k), tqk = T(q, k);
          T(p, k) = c * tpk - sn * tqk;
          T(q, k) = sn * tpk + c * tqk;
        }
        if (R)
          for (int k = 0; k < m; ++k) {
            const double rkp = (*R)(k, p), rkq = (*R)(k, q);
            (*R)(k, p) = c * rkp - sn * rkq;
            (*R)(k, q) = sn * rkp + c * rkq;
          }
      }
  }
}

// T (m x m) = V CV' for V and CV = (C V')' (both m x d), made exactly symmetric
void project(const MatrixD& V, const MatrixD& CV, MatrixD& T) {
  const auto m = static_cast<int>(V.rows);
  for (int k = 0; k < m; ++k) dots(V.row(k), CV.row(0), V.cols, m, T.row(k));
  for (int k = 0; k < m; ++k)
    for (int l = 0; l < k; ++l) T(k, l) = T(l, k) = 0.5 * (T(k, l) + T(l, k));
}

// The leading `dims` eigenvectors of a symmetric operator (apply: W = (A V')' for m x n V, one
// vector per row), as the columns of an n x dims matrix by decreasing eigenvalue, each signed so
// that its largest-magnitude entry is positive; V (m x n, m >= dims) is the start. Subspace
// iteration with Gram-Schmidt, stopped when the leading Ritz values change by less than `tol`
// (relative) or after max_iter steps, then one Rayleigh-Ritz rotation (see the file's note).
MatrixD leading_eigenvectors(MatrixD V, int dims, const std::function<void(const MatrixD&, MatrixD&)>& apply,
                             int max_iter, double tol, std::vector<double>* values = nullptr) {
  const index_t n = V.cols;
  const auto m = static_cast<int>(V.rows);
  MatrixD W(m, n, 0.0);
  std::vector<double> norms(static_cast<size_t>(m), 0.0), ritz(static_cast<size_t>(m)), prev(static_cast<size_t>(m), 0.0);
  MatrixD T(m, m);
  orthonormalise(V.row(0), n, m, norms.data());
  for (int it = 0; it < max_iter; ++it) {
    apply(V, W);
    // convergence is judged on the leading Ritz values (the eigenvalues of V A V'), not on
    // the single vectors, which keep turning within clusters of close eigenvalues long after
    // the subspace has settled
    project(V, W, T);
    jacobi(T, nullptr);
    for (int k = 0; k < m; ++k) ritz[static_cast<size_t>(k)] = T(k, k);
    std::sort(ritz.begin(), ritz.end(), [](double a, double b) { return a > b; });
    double change = 0.0;
    for (int k = 0; k < dims; ++k) {
      // relative to the value, or to 1e-4 of the largest where a value is tiny (rank-deficient
      // data), whose rounding would otherwise read as change for ever
      const double r = ritz[static_cast<size_t>(k)], scale = std::max({std::abs(r), 1e-4 * std::abs(ritz[0]), 1e-300});
      change = std::max(change, std::abs(r - prev[static_cast<size_t>(k)]) / scale);
      prev[static_cast<size_t>(k)] = r;
    }
    orthonormalise(W.row(0), n, m, norms.data());
    std::swap(V, W);
    if (it > 2 && change < tol) break;
  }
  // Rayleigh-Ritz: diagonalise T = V A V' (m x m) and rotate V, so that the vectors are exactly
  // orthogonal under A (PCA: the projected coordinates uncorrelated) even where close eigenvalues
  // left the iteration with a mixed (but correct) subspace.
  MatrixD AV(m, n, 0.0), R(m, m, 0.0);
  apply(V, AV);
  project(V, AV, T);
  for (int k = 0; k < m; ++k) R(k, k) = 1.0;
  jacobi(T, &R);
  std::vector<int> order(static_cast<size_t>(m));
  for (int k = 0; k < m; ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return T(a, a) > T(b, b); });
  if (values) {
    values->clear();
    for (int k = 0; k < m; ++k) values->push_back(T(order[k], order[k]));
  }
  MatrixD VR(n, dims, 0.0);  // the leading dims Ritz vectors, one per column
  for (index_t a = 0; a < n; ++a)
    for (int k = 0; k < dims; ++k) {
      double s = 0.0;
      for (int l = 0; l < m; ++l) s += V(l, a) * R(l, order[k]);
      VR(a, k) = s;
    }
  for (int k = 0; k < dims; ++k) {  // sign convention: largest-magnitude entry positive
    index_t best = 0;
    for (index_t a = 1; a < n; ++a)
      if (std::abs(VR(a, k)) > std::abs(VR(best, k))) best = a;
    if (VR(best, k) < 0)
      for (index_t a = 0; a < n; ++a) VR(a, k) = -VR(a, k);
  }
  return VR;
}

}  // namespace

PcaBasis pca_fit(MatrixViewD X, int dims, int threads) {
  const index_t N = X.rows, d = X.cols;
  if (dims < 1 || dims > std::min<index_t>(N, d))
    input_error("input.pca: expected 1 <= dimensions <= min(N, d) = " + std::to_string(std::min<index_t>(N, d)) +
                ", found " + std::to_string(dims));
  const int nt = threads > 0 ? threads : omp_get_max_threads();
  std::vector<double> mean(static_cast<size_t>(d), 0.0);
  for (index_t n = 0; n < N; ++n)
    for (index_t c = 0; c < d; ++c) mean[c] += X(n, c) / static_cast<double>(N);
  // C accumulated over blocks of kBlock rows, each block transposed (d x kBlock) so that every
  // entry is a contiguous dot product; entry (a, b) sums its blocks in row order whichever thread
  // computes it, so the result does not depend on the thread count.
  constexpr index_t kBlock = 64;
  MatrixD C(d, d, 0.0), XT(d, kBlock, 0.0);
  for (index_t n0 = 0; n0 < N; n0 += kBlock) {
    const index_t nb = std::min(kBlock, N - n0);
    for (index_t a = 0; a < d; ++a)
      for (index_t q = 0; q < kBlock; ++q) XT(a, q) = q < nb ? X(n0 + q, a) - mean[static_cast<size_t>(a)] : 0.0;
#pragma omp parallel for schedule(dynamic, 8) num_threads(nt)
    for (index_t a = 0; a < d; ++a) gram_row(XT.row(0), d, kBlock, a, C.row(a) + a);
  }
  const double inv = 1.0 / static_cast<double>(std::max<index_t>(N - 1, 1));
  for (index_t a = 0; a < d; ++a)
    for (index_t b = a; b < d; ++b) C(b, a) = C(a, b) = C(a, b) * inv;
  // V: m x d, one vector per row, a fixed start (not random, so no seed is needed)
  const int m = static_cast<int>(std::min<index_t>(d, dims + std::max(dims, 8)));
  MatrixD V(m, d, 0.0);
  for (index_t c = 0; c < d; ++c)
    for (int k = 0; k < m; ++k) V(k, c) = (c % m == k ? 1.0 : 0.0) + 1e-3 * ((c * 7 + k * 13) % 17);
  PcaBasis basis;
  basis.components = leading_eigenvectors(
      std::move(V), dims, [&](const MatrixD& A, MatrixD& out) { times_covariance(C, A, out, nt); }, kMaxIterations, 1e-10);
  basis.mean = MatrixD(1, d);
  for (index_t a = 0; a < d; ++a) basis.mean(0, a) = mean[static_cast<size_t>(a)];
  return basis;
}

MatrixD pca_apply(const PcaBasis& basis, MatrixViewD X, int threads) {
  const index_t N = X.rows, d = X.cols;
  const auto dims = static_cast<int>(basis.components.cols);
  if (basis.components.rows != d || basis.mean.cols != d) internal_error("pca_apply: X has another dimension than the basis");
  const int nt = threads > 0 ? threads : omp_get_max_threads();
  const MatrixD& V = basis.components;
  MatrixD out(N, dims, 0.0), VT(dims, d);
  for (index_t a = 0; a < d; ++a)
    for (int k = 0; k < dims; ++k) VT(k, a) = V(a, k);
#pragma omp parallel num_threads(nt)
  {
    std::vector<double> xc(static_cast<size_t>(d));
#pragma omp for schedule(static)
    for (index_t n = 0; n < N; ++n) {
      for (index_t a = 0; a < d; ++a) xc[static_cast<size_t>(a)] = X(n, a) - basis.mean(0, a);
      dots(xc.data(), VT.row(0), d, dims, out.row(n));
    }
  }
  return out;
}

MatrixD pca_project(const MatrixD& X, int dims, int threads) { return pca_apply(pca_fit(X, dims, threads), X, threads); }

// The spectral start (Belkin and Niyogi's Laplacian eigenmaps, as UMAP and openTSNE start): with
// W = (P + P') / 2 and degrees d_i = sum_j W_ij, the generalised eigenvectors W y = mu D y of the
// largest mu after the trivial constant one, y = D^-1/2 u for the eigenvectors u of
// A = D^-1/2 W D^-1/2. A's spectrum lies in [-1, 1] with the trivial u0 = sqrt(d) / |sqrt(d)| at 1,
// which every product is kept orthogonal to (A maps u0's complement into itself; rounding is
// projected out). A graph of several components has mu = 1 more than once: their indicators come
// first, which places the components apart.
// On clustered data (one eigenvalue near 1 per cluster) plain subspace iteration converges as
// (lambda_{m+1} / lambda_dims)^t with a ratio near 1 (10,000 Fashion-MNIST images: its Ritz values
// had not settled after 1,000 products, 6.5 s on 2 cores; filtered, 19 steps of 10 products, 1.5 s;
// on small kNN graphs 200 plain products left residuals of 3e-4). So it runs in two phases: a few
// plain steps on (I + A) / 2 estimate the
// m Ritz values, then each step applies a Chebyshev polynomial of A of degree kChebyshevDegree
// that is bounded by 1 on [-1, cut] (cut: the smallest Ritz value, below the wanted ones) and grows
// fastest above it (Zhou and Saad's filtered subspace iteration), so that each product gains
// acosh of the gap instead of the gap. One product costs O(nnz(P) m).
MatrixD spectral_start(const SparseAffinity& P, int dims, int threads) {
  constexpr int kPlainSteps = 12, kChebyshevDegree = 10, kSpectralIterations = 200;
  constexpr double kSpectralTolerance = 1e-9;
  const index_t n = P.num_points;
  if (dims < 1 || n < dims + 2)
    input_error("params.init: spectral needs at least dim + 2 = " + std::to_string(dims + 2) + " points, found " +
                std::to_string(n));
  const int nt = threads > 0 ? threads : omp_get_max_threads();
  // P' in CSR, so that each row of W reads its two halves in a fixed order
  std::vector<index_t> tptr(static_cast<size_t>(n) + 1, 0), tcol(P.col.size());
  std::vector<double> tval(P.val.size());
  for (index_t c : P.col) ++tptr[static_cast<size_t>(c) + 1];
  for (index_t i = 0; i < n; ++i) tptr[static_cast<size_t>(i) + 1] += tptr[static_cast<size_t>(i)];
  {
    std::vector<index_t> at(tptr.begin(), tptr.end() - 1);
    for (index_t i = 0; i < n; ++i)
      for (index_t q = P.row_ptr[i]; q < P.row_ptr[i + 1]; ++q) {
        const auto t = static_cast<size_t>(at[static_cast<size_t>(P.col[q])]++);
        tcol[t] = i;
        tval[t] = P.val[q];
      }
  }
  std::vector<double> s(static_cast<size_t>(n)), u0(static_cast<size_t>(n));
  double total = 0.0;
  for (index_t i = 0; i < n; ++i) {
    double d = 0.0;
    for (index_t q = P.row_ptr[i]; q < P.row_ptr[i + 1]; ++q) d += 0.5 * P.val[q];
    for (index_t q = tptr[i]; q < tptr[i + 1]; ++q) d += 0.5 * tval[q];
    if (!(d > 0) || !std::isfinite(d))
      input_error("params.init: spectral: point " + std::to_string(i + 1) +
                  " has no positive affinity to any other point, so it has no place in the spectral start");
    s[static_cast<size_t>(i)] = 1.0 / std::sqrt(d);
    u0[static_cast<size_t>(i)] = std::sqrt(d);
    total += d;
  }
  for (double& v : u0) v /= std::sqrt(total);
  const auto deflate = [&](MatrixD& V) {
    for (index_t k = 0; k < V.rows; ++k) {
      double* v = V.row(k);
      const double c = dot(v, u0.data(), n);
      for (index_t i = 0; i < n; ++i) v[i] -= c * u0[static_cast<size_t>(i)];
    }
  };
  const int m = static_cast<int>(std::min<index_t>(n - 1, dims + std::max(dims, 8)));
  MatrixD V(m, n);
  for (index_t i = 0; i < n; ++i)  // a fixed start: a hash of (i, k) in [-1, 1), no seed needed
    for (int k = 0; k < m; ++k) {
      unsigned long long z = static_cast<unsigned long long>(i) * 0x9E3779B97F4A7C15ull + static_cast<unsigned long long>(k) + 1;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      z ^= z >> 31;
      V(k, i) = static_cast<double>(z >> 11) * 0x1.0p-52 - 1.0;
    }
  deflate(V);
  MatrixD VT(n, m);
  const auto times_a = [&](const MatrixD& X, MatrixD& out) {  // out = A X, deflated
    for (index_t i = 0; i < n; ++i)
      for (int k = 0; k < m; ++k) VT(i, k) = s[static_cast<size_t>(i)] * X(k, i);
#pragma omp parallel num_threads(nt)
    {
      std::vector<double> acc(static_cast<size_t>(m));
#pragma omp for schedule(static)
      for (index_t i = 0; i < n; ++i) {
        std::fill(acc.begin(), acc.end(), 0.0);
        for (index_t q = P.row_ptr[i]; q < P.row_ptr[i + 1]; ++q) {
          const double w = 0.5 * P.val[q];
          const double* x = VT.row(P.col[q]);
          for (int k = 0; k < m; ++k) acc[static_cast<size_t>(k)] += w * x[k];
        }
        for (index_t q = tptr[i]; q < tptr[i + 1]; ++q) {
          const double w = 0.5 * tval[q];
          const double* x = VT.row(tcol[q]);
          for (int k = 0; k < m; ++k) acc[static_cast<size_t>(k)] += w * x[k];
        }
        for (int k = 0; k < m; ++k) out(k, i) = s[static_cast<size_t>(i)] * acc[static_cast<size_t>(k)];
      }
    }
    deflate(out);
  };
  // phase 1: (I + A) / 2, whose spectrum in [0, 1] keeps A's order
  std::vector<double> ritz;
  MatrixD start = leading_eigenvectors(
      std::move(V), m,
      [&](const MatrixD& X, MatrixD& out) {
        times_a(X, out);
        for (size_t q = 0; q < out.data.size(); ++q) out.data[q] = 0.5 * (out.data[q] + X.data[q]);
      },
      kPlainSteps, 0.0, &ritz);
  // phase 2: T_p((A - c) / e) maps [-1, cut] into [-1, 1]
  const double cut = std::clamp(2.0 * ritz.back() - 1.0, -0.9, 0.999);
  const double c = 0.5 * (cut - 1.0), e = 0.5 * (cut + 1.0);
  MatrixD prev(m, n), next(m, n);
  const auto filter = [&](const MatrixD& X, MatrixD& out) {
    times_a(X, out);  // T_1
    for (size_t q = 0; q < out.data.size(); ++q) out.data[q] = (out.data[q] - c * X.data[q]) / e;
    prev = X;
    for (int deg = 2; deg <= kChebyshevDegree; ++deg) {  // T_{j+1} = 2 x T_j - T_{j-1}
      times_a(out, next);
      for (size_t q = 0; q < next.data.size(); ++q)
        next.data[q] = 2.0 * (next.data[q] - c * out.data[q]) / e - prev.data[q];
      std::swap(prev, out);
      std::swap(out, next);
    }
  };
  MatrixD V2(m, n);
  for (index_t i = 0; i < n; ++i)
    for (int k = 0; k < m; ++k) V2(k, i) = start(i, k);
  MatrixD Y = leading_eigenvectors(std::move(V2), dims, filter, kSpectralIterations, kSpectralTolerance);
  for (index_t i = 0; i < n; ++i)
    for (int k = 0; k < dims; ++k) Y(i, k) *= s[static_cast<size_t>(i)];
  return Y;
}

SparseAffinity largest_entries(const MatrixD& P, int k) {
  const index_t n = P.rows;
  const auto kk = static_cast<index_t>(std::min<index_t>(k, n - 1));
  SparseAffinity S;
  S.num_points = n;
  S.row_ptr.assign(static_cast<size_t>(n) + 1, 0);
  std::vector<index_t> idx(static_cast<size_t>(n));
  for (index_t i = 0; i < n; ++i) {
    idx.clear();
    for (index_t j = 0; j < n; ++j)
      if (j != i && P(i, j) > 0) idx.push_back(j);
    const auto keep = std::min<index_t>(kk, static_cast<index_t>(idx.size()));
    // ties by column, so that the choice does not depend on the sort
    std::partial_sort(idx.begin(), idx.begin() + keep, idx.end(),
                      [&](index_t a, index_t b) { return P(i, a) > P(i, b) || (P(i, a) == P(i, b) && a < b); });
    std::sort(idx.begin(), idx.begin() + keep);
    for (index_t q = 0; q < keep; ++q) {
      S.col.push_back(idx[static_cast<size_t>(q)]);
      S.val.push_back(P(i, idx[static_cast<size_t>(q)]));
    }
    S.row_ptr[static_cast<size_t>(i) + 1] = static_cast<index_t>(S.col.size());
  }
  return S;
}

}  // namespace orrery
