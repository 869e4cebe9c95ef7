// PCA by subspace iteration on the d x d covariance: C = X_c' X_c / (N - 1) is formed once
// (O(N d^2), OpenMP over rows of C), then V <- orth(C V) until the Rayleigh quotients settle.
// Convergence for the leading `dims` directions is geometric in the eigenvalue gaps;
// kMaxIterations bounds the cost when gaps are tiny, and a final Rayleigh-Ritz rotation makes the
// components exactly uncorrelated whatever mixing within the subspace is left.
#include "orrery/pca.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "orrery/error.hpp"

namespace orrery {

constexpr int kMaxIterations = 100;

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
    for (index_t a = 0; a < d; ++a) {
      const double* xa = XT.row(a);
      for (index_t b = a; b < d; ++b) {
        const double* xb = XT.row(b);
        double s = 0.0;
#pragma omp simd reduction(+ : s)
        for (index_t q = 0; q < kBlock; ++q) s += xa[q] * xb[q];
        C(a, b) += s;
      }
    }
  }
  const double inv = 1.0 / static_cast<double>(std::max<index_t>(N - 1, 1));
  for (index_t a = 0; a < d; ++a)
    for (index_t b = a; b < d; ++b) C(b, a) = C(a, b) = C(a, b) * inv;
  // V: d x dims, a fixed start (not random, so no seed is needed)
  MatrixD V(d, dims, 0.0), W(d, dims, 0.0);
  for (index_t c = 0; c < d; ++c)
    for (int k = 0; k < dims; ++k) V(c, k) = (c % dims == k ? 1.0 : 0.0) + 1e-3 * ((c * 7 + k * 13) % 17);
  std::vector<double> prev(static_cast<size_t>(dims), 0.0);
  for (int it = 0; it < kMaxIterations; ++it) {
    MatrixD VT(dims, d);
    for (index_t b = 0; b < d; ++b)
      for (int k = 0; k < dims; ++k) VT(k, b) = V(b, k);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (index_t a = 0; a < d; ++a)
      for (int k = 0; k < dims; ++k) {
        const double *ca = C.row(a), *vk = VT.row(k);
        double s = 0.0;
        for (index_t b = 0; b < d; ++b) s += ca[b] * vk[b];
        W(a, k) = s;
      }
    // modified Gram-Schmidt; the norms before normalisation are the Rayleigh estimates
    double change = 0.0;
    for (int k = 0; k < dims; ++k) {
      for (int j = 0; j < k; ++j) {
        double dot = 0.0;
        for (index_t a = 0; a < d; ++a) dot += W(a, k) * W(a, j);
        for (index_t a = 0; a < d; ++a) W(a, k) -= dot * W(a, j);
      }
      double nrm = 0.0;
      for (index_t a = 0; a < d; ++a) nrm += W(a, k) * W(a, k);
      nrm = std::sqrt(nrm);
      if (!(nrm > 0)) nrm = 1.0;
      for (index_t a = 0; a < d; ++a) W(a, k) /= nrm;
      change = std::max(change, std::abs(nrm - prev[static_cast<size_t>(k)]) / std::max(nrm, 1e-300));
      prev[static_cast<size_t>(k)] = nrm;
    }
    std::swap(V, W);
    if (it > 2 && change < 1e-9) break;
  }
  // Rayleigh-Ritz: diagonalise T = V' C V (dims x dims) by cyclic Jacobi and rotate V, so the
  // projected coordinates are exactly uncorrelated even where close eigenvalues left the
  // iteration with a mixed (but correct) subspace.
  MatrixD CV(d, dims, 0.0), T(dims, dims, 0.0), R(dims, dims, 0.0);
  for (index_t a = 0; a < d; ++a)
    for (int k = 0; k < dims; ++k) {
      double s = 0.0;
      for (index_t b = 0; b < d; ++b) s += C(a, b) * V(b, k);
      CV(a, k) = s;
    }
  for (int k = 0; k < dims; ++k)
    for (int l = 0; l < dims; ++l) {
      double s = 0.0;
      for (index_t a = 0; a < d; ++a) s += V(a, k) * CV(a, l);
      T(k, l) = s;
    }
  for (int k = 0; k < dims; ++k) R(k, k) = 1.0;
  for (int sweep = 0; sweep < 100; ++sweep) {
    // off-diagonal mass relative to the diagonal's: a threshold in the data's own units would
    // stop at once on data of scale 1e-15 and never on data of scale 1e15
    double off = 0.0, diag = 0.0;
    for (int p = 0; p < dims; ++p) {
      diag += T(p, p) * T(p, p);
      for (int q = p + 1; q < dims; ++q) off += T(p, q) * T(p, q);
    }
    if (off <= 1e-30 * diag) break;
    for (int p = 0; p < dims; ++p)
      for (int q = p + 1; q < dims; ++q) {
        if (T(p, q) == 0.0) continue;
        const double theta = (T(q, q) - T(p, p)) / (2.0 * T(p, q));
        const double t = (theta >= 0 ? 1.0 : -1.0) / (std::abs(theta) + std::sqrt(theta * theta + 1.0));
        const double c = 1.0 / std::sqrt(t * t + 1.0), sn = t * c;
        for (int k = 0; k < dims; ++k) {  // T <- J' T J
          const double tkp = T(k, p), tkq = T(k, q);
          T(k, p) = c * tkp - sn * tkq;
          T(k, q) = sn * tkp + c * tkq;
        }
        for (int k = 0; k < dims; ++k) {
          const double tpk = T(p, k), tqk = T(q, k);
          T(p, k) = c * tpk - sn * tqk;
          T(q, k) = sn * tpk + c * tqk;
        }
        for (int k = 0; k < dims; ++k) {
          const double rkp = R(k, p), rkq = R(k, q);
          R(k, p) = c * rkp - sn * rkq;
          R(k, q) = sn * rkp + c * rkq;
        }
      }
  }
  std::vector<int> order(static_cast<size_t>(dims));
  for (int k = 0; k < dims; ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return T(a, a) > T(b, b); });
  MatrixD VR(d, dims, 0.0);
  for (index_t a = 0; a < d; ++a)
    for (int k = 0; k < dims; ++k) {
      double s = 0.0;
      for (int l = 0; l < dims; ++l) s += V(a, l) * R(l, order[k]);
      VR(a, k) = s;
    }
  V = std::move(VR);
  for (int k = 0; k < dims; ++k) {  // sign convention: largest-magnitude entry positive
    index_t best = 0;
    for (index_t a = 1; a < d; ++a)
      if (std::abs(V(a, k)) > std::abs(V(best, k))) best = a;
    if (V(best, k) < 0)
      for (index_t a = 0; a < d; ++a) V(a, k) = -V(a, k);
  }
  PcaBasis basis;
  basis.mean = MatrixD(1, d);
  for (index_t a = 0; a < d; ++a) basis.mean(0, a) = mean[static_cast<size_t>(a)];
  basis.components = std::move(V);
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
      for (int k = 0; k < dims; ++k) {
        const double* vk = VT.row(k);
        double s = 0.0;
        for (index_t a = 0; a < d; ++a) s += xc[static_cast<size_t>(a)] * vk[a];
        out(n, k) = s;
      }
    }
  }
  return out;
}

MatrixD pca_project(const MatrixD& X, int dims, int threads) { return pca_apply(pca_fit(X, dims, threads), X, threads); }

}  // namespace orrery
