// The arithmetic of the exact neighbor search by a distance GEMM (kernels/knn.cu), here so that the
// CPU tests cover it: the expanded squared distance |x|^2 + |y|^2 - 2 x.y that ranks candidates, the
// shift that keeps its cancellation small, the number of candidates kept for the exact re-rank, and
// the plan of query batches and candidate tiles under a memory bound.
//
// Why a shift: the expansion loses about u (|x|^2 + |y|^2) to rounding (u = 2^-53) while the true
// distance can be far smaller when the points sit far from the origin; distances do not change under
// a common translation, so the search ranks x - c with c near the mean and the error scales with the
// spread instead. Integer-valued columns shift by an integer, so that integer data stay integers and
// every sum below is exact: then the ranking equals the exact one, ties included.
#pragma once
#include <cmath>
#include <vector>

#include "orrery/math/hd.hpp"

namespace orrery::math {

// |a|^2, summed in index order. Rounding: a relative error of at most d u (no cancellation).
template <class T>
ORRERY_HD T squared_norm(const T* a, int d) {
  T s = T(0);
  for (int i = 0; i < d; ++i) s += a[i] * a[i];
  return s;
}

// |a - b|^2 from the norms and the dot product: (|a|^2 + |b|^2) - 2 a.b. Stability: the dot product and
// the norms each carry at most d u of their size, so the absolute error is at most about
// (2 d + 3) u (|a|^2 + |b|^2): large against a small distance between long vectors (hence the shift
// above); it can even come out slightly negative, which is harmless for ranking. Exact when the
// inputs are integers and every partial sum stays below 2^53 (then no step rounds).
template <class T>
ORRERY_HD T gemm_squared_distance(T norm_a, T norm_b, T dot) {
  return (norm_a + norm_b) - T(2) * dot;
}

// Candidates kept per query by the expanded distance for the exact re-rank: k plus a margin of
// max(8, k / 4), so that rounding which reorders candidates near the k-th changes nothing unless
// more than the margin of them lie within rounding of it; at most the N - 1 other points.
template <class I>
ORRERY_HD int knn_kept(int k, I num_points) {
  const I kept = static_cast<I>(k) + static_cast<I>(k / 4 > 8 ? k / 4 : 8);
  return static_cast<int>(kept < num_points - 1 ? kept : num_points - 1);
}

// The translation of one column: its mean, rounded to an integer when every entry is one (so that
// integer data stay exact; the rounding moves c by at most 1/2, which the error bound shrugs off).
template <class T>
ORRERY_HD T gemm_shift(T mean, bool integer_valued) {
  if (!integer_valued) return mean;
#if defined(__CUDA_ARCH__)
  return floor(mean + T(0.5));
#else
  return std::floor(mean + T(0.5));
#endif
}

// The shift of every column of the rows x cols row-major matrix X: means summed in row order (host
// only: one pass over the input before it is uploaded).
inline std::vector<double> gemm_shifts(const double* X, long long rows, int cols) {
  std::vector<double> sum(static_cast<size_t>(cols), 0.0);
  std::vector<char> integer(static_cast<size_t>(cols), 1);
  for (long long i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) {
      const double v = X[i * cols + j];
      sum[j] += v;
      integer[j] = integer[j] && std::floor(v) == v;
    }
  for (int j = 0; j < cols; ++j) sum[j] = gemm_shift(rows ? sum[j] / static_cast<double>(rows) : 0.0, integer[j] != 0);
  return sum;
}

// Device bytes of the search: the points twice (as given, for the exact re-rank; shifted, for the
// GEMM) and their norms, plus one batch of `batch` queries against a tile of `tile` candidates: the
// tile's dot products, each query's kept candidates (distance, index, and the count), its k results.
inline double knn_gemm_bytes(long long num_points, int dims, int k, int kept, long long batch, long long tile) {
  const double n = static_cast<double>(num_points), b = static_cast<double>(batch);
  const double points = 8.0 * n * (2.0 * dims + 1.0);
  return points + 8.0 * b * static_cast<double>(tile) + b * (16.0 * kept + 4.0 + 16.0 * k);
}

// Batch and tile sizes for a search within `free_bytes`: the caps (at most N each), halving the larger
// of the two until the bytes fit; a tile keeps at least one warp's 32 candidates (N when fewer, or
// the cap when it is smaller). fits is false when even one query against the smallest tile does not
// fit. The sizes do not depend on free memory unless memory is short, so a search repeats bit for
// bit on any device with room for the default sizes.
struct KnnTiling {
  long long batch = 0;  // queries per batch
  long long tile = 0;   // candidates per GEMM tile
  double bytes = 0.0;   // knn_gemm_bytes at these sizes
  bool fits = false;
};
inline KnnTiling plan_knn_tiling(long long num_points, int dims, int k, int kept, double free_bytes,
                                 long long max_batch, long long max_tile) {
  constexpr long long kMinTile = 32;
  KnnTiling t;
  t.batch = max_batch < num_points ? max_batch : num_points;
  t.tile = max_tile < num_points ? max_tile : num_points;
  const long long min_tile = t.tile < kMinTile ? t.tile : kMinTile;
  while (true) {
    t.bytes = knn_gemm_bytes(num_points, dims, k, kept, t.batch, t.tile);
    if (t.bytes <= free_bytes) break;
    if (t.tile > min_tile && t.tile >= t.batch) {
      const long long half = (t.tile + 1) / 2;
      t.tile = half > min_tile ? half : min_tile;
    } else if (t.batch > 1) {
      t.batch = (t.batch + 1) / 2;
    } else {
      return t;  // one query against the smallest tile does not fit
    }
  }
  t.fits = true;
  return t;
}

}  // namespace orrery::math
