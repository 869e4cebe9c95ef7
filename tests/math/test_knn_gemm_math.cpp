// The GEMM neighbor search's arithmetic (math/knn_gemm.hpp, math/select.hpp's nearest_candidates),
// which kernels/knn.cu runs: the expanded distance against the direct one, the shift, the kept
// count, the tiling plan under a memory bound, and the whole search (tiles of expanded distances
// into bounded heaps, then the exact re-rank) replayed on the host against the CPU's exact search.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "common/knn_points.hpp"
#include "orrery/knn.hpp"
#include "orrery/math/distance.hpp"
#include "orrery/math/knn_gemm.hpp"
#include "orrery/math/select.hpp"

using namespace orrery;

namespace {

// Integers 0 .. 4 (exact, many ties) or normal reals.
MatrixD random_points(index_t n, index_t d, unsigned seed, bool integer, double offset = 0.0) {
  return test::knn_points(n, d, seed, integer ? 5 : 0, offset);
}

// kernels/knn.cu's search on the host: shifted points and their norms, then for each tile of
// `tile` candidates the expanded distances offered in candidate order to a heap of knn_kept entries,
// then the exact re-rank of the kept.
KnnGraph tiled_search(const MatrixD& X, int k, index_t tile) {
  const index_t N = X.rows;
  const int d = static_cast<int>(X.cols);
  const int kept = math::knn_kept(k, N);
  const std::vector<double> c = math::gemm_shifts(X.data.data(), N, d);
  MatrixD xc(N, d);
  std::vector<double> norms(static_cast<size_t>(N));
  for (index_t i = 0; i < N; ++i) {
    for (int j = 0; j < d; ++j) xc(i, j) = X(i, j) - c[j];
    norms[i] = math::squared_norm(xc.row(i), d);
  }
  KnnGraph g;
  g.num_points = N;
  g.k = k;
  g.index.resize(static_cast<size_t>(N * k));
  g.dist2.resize(static_cast<size_t>(N * k));
  std::vector<double> hd(static_cast<size_t>(kept));
  std::vector<index_t> hi(static_cast<size_t>(kept));
  for (index_t q = 0; q < N; ++q) {
    int size = 0;
    for (index_t l0 = 0; l0 < N; l0 += tile)
      for (index_t l = l0; l < std::min(N, l0 + tile); ++l) {
        if (l == q) continue;
        double dot = 0;
        for (int j = 0; j < d; ++j) dot += xc(q, j) * xc(l, j);
        math::heap_offer(math::gemm_squared_distance(norms[q], norms[l], dot), l, hd.data(), hi.data(), size, kept);
      }
    EXPECT_EQ(size, kept);
    math::nearest_candidates(X.data.data(), d, q, hi.data(), kept, k, g.dist2.data() + q * k, g.index.data() + q * k);
  }
  return g;
}

// Squared distances of the same neighbors: equal for integer inputs, else to rounding (the host
// vectorises the coordinate sum, and its lane order may differ between call sites).
void expect_same_distances(const std::vector<double>& got, const std::vector<double>& want, bool integer) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (integer) EXPECT_EQ(got[i], want[i]) << i;
    else EXPECT_NEAR(got[i], want[i], 1e-13 * want[i]) << i;
  }
}

}  // namespace

TEST(KnnGemmMath, SquaredNormIsTheSumOfSquares) {
  const double a[] = {3.0, -4.0, 12.0};
  EXPECT_EQ(math::squared_norm(a, 3), 169.0);
  EXPECT_EQ(math::squared_norm(a, 0), 0.0);
}

TEST(KnnGemmMath, ExpandedDistanceIsExactOnIntegersAndCloseOtherwise) {
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<int> small(-40, 40);
  std::normal_distribution<double> z(0.0, 1.0);
  constexpr int d = 23;
  for (int rep = 0; rep < 200; ++rep) {
    double a[d], b[d], ra[d], rb[d];
    for (int j = 0; j < d; ++j) a[j] = small(rng), b[j] = small(rng), ra[j] = z(rng), rb[j] = z(rng);
    double dot = 0, rdot = 0;
    for (int j = 0; j < d; ++j) dot += a[j] * b[j], rdot += ra[j] * rb[j];
    EXPECT_EQ(math::gemm_squared_distance(math::squared_norm(a, d), math::squared_norm(b, d), dot),
              math::squared_distance(a, b, d));
    const double na = math::squared_norm(ra, d), nb = math::squared_norm(rb, d);
    // the bound of the header's note: (2 d + 3) u (|a|^2 + |b|^2)
    EXPECT_NEAR(math::gemm_squared_distance(na, nb, rdot), math::squared_distance(ra, rb, d),
                (2 * d + 3) * 1.12e-16 * (na + nb));
  }
}

TEST(KnnGemmMath, ShiftsAreColumnMeansRoundedForIntegerColumns) {
  // column 0 integers with mean 7/3, column 1 reals with mean 0.5, column 2 integers with mean -2.5
  const double X[] = {1.0, 0.25, -2.0,  //
                      2.0, 0.5,  -3.0,  //
                      4.0, 0.75, -2.0,  //
                      0.0, 0.5,  -3.0};
  const std::vector<double> c = math::gemm_shifts(X, 4, 3);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0], 2.0);
  EXPECT_EQ(c[1], 0.5);
  EXPECT_EQ(c[2], -2.0);  // floor(-2.5 + 0.5): an integer either way, which is what matters
  EXPECT_EQ(math::gemm_shift(2.4, false), 2.4);
  EXPECT_EQ(math::gemm_shift(2.6, true), 3.0);
  EXPECT_TRUE(math::gemm_shifts(X, 0, 3) == std::vector<double>(3, 0.0));
}

TEST(KnnGemmMath, KeptIsKPlusTheMarginAtMostTheOtherPoints) {
  EXPECT_EQ(math::knn_kept(1, index_t{1000}), 9);
  EXPECT_EQ(math::knn_kept(40, index_t{1000}), 50);
  EXPECT_EQ(math::knn_kept(90, index_t{1000000}), 112);
  EXPECT_EQ(math::knn_kept(95, index_t{100}), 99);
  EXPECT_EQ(math::knn_kept(99, index_t{100}), 99);
  EXPECT_EQ(math::knn_kept(1, index_t{2}), 1);
}

TEST(KnnGemmMath, TilingKeepsItsCapsWhenMemoryIsAmple) {
  const math::KnnTiling t = math::plan_knn_tiling(100000, 50, 90, 112, 1e12, 8192, 16384);
  EXPECT_TRUE(t.fits);
  EXPECT_EQ(t.batch, 8192);
  EXPECT_EQ(t.tile, 16384);
  EXPECT_EQ(t.bytes, math::knn_gemm_bytes(100000, 50, 90, 112, 8192, 16384));
  const math::KnnTiling small = math::plan_knn_tiling(300, 7, 5, 13, 1e12, 8192, 16384);
  EXPECT_EQ(small.batch, 300);
  EXPECT_EQ(small.tile, 300);
}

TEST(KnnGemmMath, TilingShrinksToFitAndRefusesBelowTheSmallest) {
  const long long N = 1000000;
  const double points = math::knn_gemm_bytes(N, 50, 90, 112, 0, 0);
  for (double room : {2e9, 1e9, 5e8, 1e8, 1e7, 1e6}) {
    const math::KnnTiling t = math::plan_knn_tiling(N, 50, 90, 112, points + room, 8192, 16384);
    EXPECT_TRUE(t.fits) << room;
    EXPECT_LE(t.bytes, points + room) << room;
    EXPECT_GE(t.batch, 1);
    EXPECT_GE(t.tile, 32);
    // no halving was needless: doubling the smaller side (or either) would not fit
    EXPECT_TRUE(t.batch == 8192 || math::knn_gemm_bytes(N, 50, 90, 112, 2 * t.batch, t.tile) > points + room);
  }
  const math::KnnTiling none = math::plan_knn_tiling(N, 50, 90, 112, points + 100.0, 8192, 16384);
  EXPECT_FALSE(none.fits);
  EXPECT_EQ(none.batch, 1);
  EXPECT_EQ(none.tile, 32);
  EXPECT_GT(none.bytes, points + 100.0);
  // a tile cap below one warp is kept as given
  const math::KnnTiling tiny = math::plan_knn_tiling(500, 3, 4, 12, 1e12, 7, 5);
  EXPECT_EQ(tiny.batch, 7);
  EXPECT_EQ(tiny.tile, 5);
}

TEST(KnnGemmMath, NearestCandidatesRerankByTheExactDistance) {
  const MatrixD X = random_points(60, 5, 8, false);
  const KnnGraph ref = exact_knn(X, 6, 1);
  // candidates: every other point, in a scrambled order
  std::vector<index_t> cand;
  for (index_t l = 59; l >= 0; --l)
    if (l != 17) cand.push_back(l);
  std::vector<double> hd(6);
  std::vector<index_t> hi(6);
  math::nearest_candidates(X.data.data(), 5, index_t{17}, cand.data(), static_cast<int>(cand.size()), 6, hd.data(),
                           hi.data());
  EXPECT_EQ(hi, std::vector<index_t>(ref.index.begin() + 17 * 6, ref.index.begin() + 18 * 6));
  expect_same_distances(hd, std::vector<double>(ref.dist2.begin() + 17 * 6, ref.dist2.begin() + 18 * 6), false);
}

// The search replayed on the host equals the exact search: integers (exact, ties by index),
// reals, and reals far from the origin (the shift's case: unshifted, |x|^2 ~ 1e17 would swamp
// distances of order 1).
TEST(KnnGemmMath, TiledSearchEqualsTheExactSearch) {
  struct Case {
    index_t n, d;
    int k;
    index_t tile;
    bool integer;
    double offset;
  };
  for (const Case& c : {Case{257, 13, 10, 32, true, 0.0}, Case{257, 13, 255, 100, true, 0.0},
                        Case{300, 9, 12, 64, false, 0.0}, Case{300, 9, 12, 300, false, 3e8}}) {
    const MatrixD X = random_points(c.n, c.d, 21, c.integer, c.offset);
    const KnnGraph ref = exact_knn(X, c.k, 1), got = tiled_search(X, c.k, c.tile);
    EXPECT_EQ(got.index, ref.index) << c.n << " " << c.k << " " << c.offset;
    expect_same_distances(got.dist2, ref.dist2, c.integer);
  }
}
