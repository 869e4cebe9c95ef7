// Closed-form solves of small symmetric positive definite systems (D = 2 or 3), used by the
// per-object Newton steps. Matrices are packed row-major D x D.
//
// Derivation: an unrolled Cholesky factorisation H = L L^T followed by forward and back
// substitution. Cholesky needs no pivoting for SPD matrices and is backward stable; a pivot
// that is not positive (relative to the matrix scale) means H is not numerically SPD, and the
// solve reports failure instead of returning a huge step, so the caller can fall back.
#pragma once
#include "orrery/math/hd.hpp"

namespace orrery::math {

// Relative pivot threshold under which a matrix is treated as singular. Chosen well above
// float round-off (1e-7) so the float kernels and the double reference agree on what fails.
template <class T>
ORRERY_HD T spd_pivot_tolerance() {
  return T(1e-10);
}

// Solves H x = b for SPD H (D x D, row-major). Returns false (x untouched) when H is not
// numerically positive definite or has non-finite entries.
template <class T, int D>
ORRERY_HD bool solve_spd(const T* H, const T* b, T* x) {
  static_assert(D == 2 || D == 3, "solve_spd supports D = 2 or 3");
  T scale = T(0);
  for (int i = 0; i < D; ++i) scale = hd_max(scale, hd_abs(H[i * D + i]));
  if (!(scale > T(0)) || !hd_isfinite(scale)) return false;
  const T tol = spd_pivot_tolerance<T>() * scale;
  T L[D][D] = {};
  for (int j = 0; j < D; ++j) {
    T d = H[j * D + j];
    for (int k = 0; k < j; ++k) d -= L[j][k] * L[j][k];
    if (!(d > tol)) return false;
    L[j][j] = hd_sqrt(d);
    for (int i = j + 1; i < D; ++i) {
      T s = H[i * D + j];
      for (int k = 0; k < j; ++k) s -= L[i][k] * L[j][k];
      L[i][j] = s / L[j][j];
    }
  }
  T y[D];
  for (int i = 0; i < D; ++i) {
    T s = b[i];
    for (int k = 0; k < i; ++k) s -= L[i][k] * y[k];
    y[i] = s / L[i][i];
  }
  for (int i = D - 1; i >= 0; --i) {
    T s = y[i];
    for (int k = i + 1; k < D; ++k) s -= L[k][i] * x[k];
    x[i] = s / L[i][i];
  }
  return true;
}

}  // namespace orrery::math
