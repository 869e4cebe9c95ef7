// The CUDA neighbour searches and rank counting against the CPU: integer-valued points give
// exactly representable distances, so the ranks and counts must be identical, not just close.
#include <gtest/gtest.h>

#include <random>

#include "common/require_cuda.hpp"
#include "orrery/backend.hpp"
#include "orrery/quality.hpp"

using namespace orrery;

namespace {

MatrixD integer_points(index_t n, index_t d, unsigned seed, int levels) {
  std::mt19937_64 rng(seed);
  MatrixD M(n, d);
  for (double& v : M.data) v = static_cast<double>(rng() % levels);  // few levels: ties and duplicates
  return M;
}

}  // namespace

TEST(QualityParity, RankRowsAreIdentical) {
  ORRERY_REQUIRE_CUDA();
  for (const auto& [n, d, kmax, levels] : {std::tuple<index_t, index_t, int, int>{50, 3, 10, 4}, {700, 8, 25, 6},
                                           {3000, 49, 30, 255}}) {
    const MatrixD X = integer_points(n, d, 1, levels), Y = integer_points(n, 2, 2, levels * 3);
    const RankRows c = make_cpu_backend(0)->rank_rows(X, Y, kmax, false), g = make_cuda_backend(0)->rank_rows(X, Y, kmax, false);
    EXPECT_EQ(c.map_neighbours, g.map_neighbours) << "n=" << n << " d=" << d;
    EXPECT_EQ(c.input_rank_of_map_nb, g.input_rank_of_map_nb) << "n=" << n << " d=" << d;
    EXPECT_EQ(c.map_rank_of_input_nb, g.map_rank_of_input_nb) << "n=" << n << " d=" << d;
  }
}

TEST(QualityParity, MeasuresAreIdenticalThroughTheBackend) {
  ORRERY_REQUIRE_CUDA();
  const MatrixD X = integer_points(1500, 10, 3, 9), Y = integer_points(1500, 2, 4, 30);
  std::vector<int> labels(1500);
  for (int i = 0; i < 1500; ++i) labels[i] = i % 7;
  QualityRequest req;
  req.ks = {1, 7, 40};
  auto gpu = make_cuda_backend(0);
  const QualityReport c = evaluate_quality(X, Y, labels, req), g = evaluate_quality(X, Y, labels, req, gpu.get());
  for (size_t q = 0; q < req.ks.size(); ++q) {
    EXPECT_EQ(c.at_k[q].trustworthiness, g.at_k[q].trustworthiness) << "K=" << req.ks[q];
    EXPECT_EQ(c.at_k[q].continuity, g.at_k[q].continuity) << "K=" << req.ks[q];
    EXPECT_EQ(c.at_k[q].mrre_visual, g.at_k[q].mrre_visual) << "K=" << req.ks[q];
    EXPECT_EQ(c.at_k[q].knn_accuracy, g.at_k[q].knn_accuracy) << "K=" << req.ks[q];
  }
  EXPECT_EQ(c.coranking, g.coranking);
}

TEST(QualityParity, DistanceMatrixInputMatchesVectors) {
  ORRERY_REQUIRE_CUDA();
  const MatrixD X = integer_points(200, 4, 5, 5), Y = integer_points(200, 2, 6, 11);
  MatrixD D(200, 200);
  for (index_t i = 0; i < 200; ++i)
    for (index_t j = 0; j < 200; ++j) {
      double s = 0;
      for (index_t c = 0; c < 4; ++c) s += (X(i, c) - X(j, c)) * (X(i, c) - X(j, c));
      D(i, j) = std::sqrt(s);
    }
  const RankRows a = make_cuda_backend(0)->rank_rows(X, Y, 15, false), b = make_cuda_backend(0)->rank_rows(D, Y, 15, true);
  EXPECT_EQ(a.input_rank_of_map_nb, b.input_rank_of_map_nb);
}
