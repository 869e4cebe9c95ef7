// The GEMM neighbor search (kernels/knn.cu) against the CPU's exact search: several query batches
// and candidate tiles (forced small by ORRERY_KNN_TILING), d not a multiple of any tile width,
// k up to N - 1, duplicate points (ties by index), integer coordinates (exact everywhere), points
// far from the origin (the shift), and the same bits twice and under another tiling; then the
// progress reports and the errors.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/input_error.hpp"
#include "common/knn_points.hpp"
#include "common/require_cuda.hpp"
#include "orrery/backend.hpp"
#include "orrery/knn.hpp"
#include "large.hpp"
#include "parity.hpp"

using namespace orrery;

namespace {

// Caps the device search's batch and tile sizes while in scope (ignored by the CPU).
class Tiling {
 public:
  explicit Tiling(const char* caps) { setenv("ORRERY_KNN_TILING", caps, 1); }
  ~Tiling() { unsetenv("ORRERY_KNN_TILING"); }
  Tiling(const Tiling&) = delete;
  Tiling& operator=(const Tiling&) = delete;
};

// Integers 0 .. 6 (exact, many ties) or normal reals.
MatrixD points(index_t n, index_t d, unsigned seed, bool integer, double offset = 0.0) {
  return test::knn_points(n, d, seed, integer ? 7 : 0, offset);
}

std::vector<std::uint64_t> bits(const std::vector<double>& v) {
  std::vector<std::uint64_t> b(v.size());
  if (!v.empty()) std::memcpy(b.data(), v.data(), v.size() * sizeof(double));
  return b;
}

// Integer coordinates: the expanded distances are exact, so lists and distances are the CPU's bits.
void expect_exact(Backend& cpu, Backend& gpu, test::ParityCheck& check, const MatrixD& X, int k, const char* caps) {
  const KnnGraph c = cpu.knn(X, k);
  const Tiling t(caps);
  const KnnGraph g = gpu.knn(X, k);
  check.same("neighbors", c.index, g.index);
  check.same("squared distances (bits)", bits(c.dist2), bits(g.dist2));
}

// Real coordinates: the same lists (no near-ties across the margin in these inputs); distances to
// the rounding of the summation order (the CPU's sum is vectorised).
KnnGraph expect_close(Backend& cpu, Backend& gpu, test::ParityCheck& check, const MatrixD& X, int k, const char* caps) {
  const KnnGraph c = cpu.knn(X, k);
  const Tiling t(caps);
  KnnGraph g = gpu.knn(X, k);
  check.same("neighbors", c.index, g.index);
  check.agree("squared distances", "knn.distances", c.dist2, g.dist2);
  return g;
}

using Run = std::function<void(Backend&, Backend&, test::ParityCheck&)>;

// Some rows of X's graph from the CPU without the O(N^2) search: each row's k + 1 nearest among all
// points (exact_knn_to, the same order and ties), less the row itself.
KnnGraph sampled_rows(const MatrixD& X, const std::vector<index_t>& rows, int k) {
  MatrixD Q(static_cast<index_t>(rows.size()), X.cols);
  for (size_t q = 0; q < rows.size(); ++q)
    for (index_t c = 0; c < X.cols; ++c) Q(static_cast<index_t>(q), c) = X(rows[q], c);
  const KnnGraph all = exact_knn_to(X, Q, k + 1, 0);
  KnnGraph out = sized_graph(static_cast<index_t>(rows.size()), k);
  for (size_t q = 0; q < rows.size(); ++q) {
    int kept = 0;
    for (int l = 0; l <= k && kept < k; ++l) {
      const size_t at = q * static_cast<size_t>(k + 1) + static_cast<size_t>(l);
      if (all.index[at] == rows[q]) continue;
      out.index[q * static_cast<size_t>(k) + static_cast<size_t>(kept)] = all.index[at];
      out.dist2[q * static_cast<size_t>(k) + static_cast<size_t>(kept++)] = all.dist2[at];
    }
  }
  return out;
}

// The device's whole graph under its default tiling, some rows compared with the CPU's: integer
// coordinates, so the lists and the distances' bits are identical.
void compare_sampled_rows(index_t n, Backend& gpu, test::ParityCheck& check) {
  const MatrixD X = points(n, 8, 40, true);
  const int k = 30;
  const std::vector<index_t> rows = test::sample_rows(n, 64, 41);
  const KnnGraph c = sampled_rows(X, rows, k), g = gpu.knn(X, k);
  check.same("neighbors of the sampled rows", c.index, test::rows_of(g.index, rows, k));
  check.same("squared distances of the sampled rows (bits)", bits(c.dist2), bits(test::rows_of(g.dist2, rows, k)));
}

}  // namespace

std::vector<test::ParityCase> test::knn_gemm_parity_cases() {
  std::vector<test::ParityCase> out;
  const auto add = [&out](std::string name, Run run) { out.push_back({"knn", std::move(name), std::move(run)}); };
  // 17 batches (the last of 7) x 11 tiles (the last of 71); d = 37 crosses every width
  add("integer_N1031_d37_k20_batches_and_tiles", [](Backend& cpu, Backend& gpu, ParityCheck& check) {
    expect_exact(cpu, gpu, check, points(1031, 37, 31, true), 20, "64x96");
  });
  add("real_N1500_d30_k25_batches_and_tiles", [](Backend& cpu, Backend& gpu, ParityCheck& check) {
    expect_close(cpu, gpu, check, points(1500, 30, 32, false), 25, "100x256");
  });
  // k near N - 1: the margin shrinks to the points there are; every other point is kept
  for (int k : {290, 298, 299})
    add("integer_N300_d7_k" + std::to_string(k), [k](Backend& cpu, Backend& gpu, ParityCheck& check) {
      expect_exact(cpu, gpu, check, points(300, 7, 33, true), k, "32x64");
    });
  // one point per tile: the smallest tile, a tile under one warp
  add("integer_N90_d5_k12_tiles_of_one", [](Backend& cpu, Backend& gpu, ParityCheck& check) {
    expect_exact(cpu, gpu, check, points(90, 5, 34, true), 12, "7x1");
  });
  // every point three times (rows i, i + 300, i + 600): equal distances, ordered by index
  add("duplicates_N900_d12_k15", [](Backend& cpu, Backend& gpu, ParityCheck& check) {
    const MatrixD base = points(300, 12, 35, false);
    MatrixD X(900, 12);
    for (index_t i = 0; i < 900; ++i)
      for (index_t j = 0; j < 12; ++j) X(i, j) = base(i % 300, j);
    expect_close(cpu, gpu, check, X, 15, "128x200");
  });
  // far from the origin: unshifted, |x|^2 ~ 1e17 would swamp distances of order 1
  add("offset_1e8_N1200_d10_k12", [](Backend& cpu, Backend& gpu, ParityCheck& check) {
    expect_close(cpu, gpu, check, points(1200, 10, 36, false, 1e8), 12, "256x512");
  });
  // the same bits twice, and under the default tiling (one batch, one tile)
  add("repeats_N2000_d19_k30", [](Backend& cpu, Backend& gpu, ParityCheck& check) {
    const MatrixD X = points(2000, 19, 37, false);
    const KnnGraph a = expect_close(cpu, gpu, check, X, 30, "128x300");
    const KnnGraph b = expect_close(cpu, gpu, check, X, 30, "128x300");
    const KnnGraph c = gpu.knn(X, 30);
    check.same("neighbors, twice", a.index, b.index);
    check.same("squared distances (bits), twice", bits(a.dist2), bits(b.dist2));
    check.same("neighbors, another tiling", a.index, c.index);
    check.same("squared distances (bits), another tiling", bits(a.dist2), bits(c.dist2));
  });
  // Large: 2^17 + 3 points, one search under the default tiling (marked large: the device side is
  // the whole O(N^2) search; the CPU searches 64 rows), with a small twin for the CPU-only run.
  add("default_tiling_N4099_d8_k30_sampled_rows",
      [](Backend&, Backend& gpu, ParityCheck& check) { compare_sampled_rows(4099, gpu, check); });
  out.push_back({"knn", "default_tiling_N131075_d8_k30_sampled_rows",
                 [](Backend&, Backend& gpu, ParityCheck& check) { compare_sampled_rows(test::kLargeN, gpu, check); },
                 true});
  return out;
}

INSTANTIATE_PARITY(KnnGemm, test::knn_gemm_parity_cases());

TEST(KnnGemm, ReportsProgressAfterEachBatch) {
  ORRERY_REQUIRE_CUDA();
  auto gpu = make_cuda_backend(0);
  const Tiling t("100x128");
  std::vector<std::pair<index_t, index_t>> reports;
  const KnnGraph g = gpu->knn_reporting(points(450, 6, 38, true), 9,
                                        [&reports](index_t done, index_t total) { reports.emplace_back(done, total); });
  const std::vector<std::pair<index_t, index_t>> want = {{100, 450}, {200, 450}, {300, 450}, {400, 450}, {450, 450}};
  EXPECT_EQ(reports, want);
  EXPECT_EQ(g.index.size(), 450u * 9);
}

TEST(KnnGemm, NamesKAndTheTilingKnobInItsErrors) {
  ORRERY_REQUIRE_CUDA();
  auto gpu = make_cuda_backend(0);
  const MatrixD X = points(50, 3, 39, true);
  for (int k : {0, 50})
    EXPECT_NE(test::input_error_of([&] { gpu->knn(X, k); }).find("k: expected 1 <= k <= N - 1 = 49"), std::string::npos)
        << k;
  const Tiling t("64");
  EXPECT_NE(test::input_error_of([&] { gpu->knn(X, 5); }).find("ORRERY_KNN_TILING"), std::string::npos);
}
