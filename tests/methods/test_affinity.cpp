// Input affinities: calibrated entropies, symmetry and normalisation, sparse = dense when the
// neighbor lists cover every point, and the input errors the neighbor-embedding runs rely on.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>

#include "orrery/affinity.hpp"
#include "orrery/error.hpp"
#include "orrery/knn.hpp"
#include "orrery/math/affinity.hpp"

using namespace orrery;

namespace {

MatrixD gaussian_points(index_t n, index_t d, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0, 1);
  MatrixD X(n, d);
  for (double& v : X.data) v = z(rng) * (1 + (rng() % 3));
  return X;
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    return e.what();
  }
  ADD_FAILURE() << "expected an input error";
  return "";
}

}  // namespace

TEST(Bandwidth, HitsTargetEntropyWithinTolerance) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (double scale : {1e-4, 1.0, 1e4}) {
    std::vector<double> d2(200);
    for (double& v : d2) v = scale * u(rng) * u(rng) * 50;
    for (double perp : {2.0, 10.0, 60.0}) {
      const double beta = math::bandwidth_for_perplexity<double, int>(d2.data(), 200, 7, perp, 1e-10, 200);
      double lz, sh;
      const double h = math::row_entropy<double, int>(d2.data(), 200, 7, beta, &lz, &sh);
      EXPECT_NEAR(h, std::log(perp), 1e-6) << "scale " << scale << " perplexity " << perp;
    }
  }
}

TEST(Affinity, DenseIsSymmetricNormalisedWithZeroDiagonal) {
  const MatrixD X = gaussian_points(120, 5, 1);
  const AffinityResult a = affinities_dense(X, 15.0, 2);
  double total = 0;
  for (index_t i = 0; i < 120; ++i) {
    EXPECT_EQ(a.dense(i, i), 0.0);
    for (index_t j = 0; j < 120; ++j) {
      EXPECT_EQ(a.dense(i, j), a.dense(j, i));
      EXPECT_GE(a.dense(i, j), 0.0);
      total += a.dense(i, j);
    }
  }
  EXPECT_NEAR(total, 1.0, 1e-12);
}

TEST(Affinity, SparseEqualsDenseWhenNeighborListsCoverAllPoints) {
  const MatrixD X = gaussian_points(31, 4, 2);  // k = ceil(3 * 10) = 30 = N - 1
  const AffinityResult d = affinities_dense(X, 10.0, 1), s = affinities_sparse(X, 10.0, 3);
  for (index_t i = 0; i < 31; ++i) {
    EXPECT_NEAR(s.beta[i], d.beta[i], 1e-9 * d.beta[i]);
    for (index_t j = 0; j < 31; ++j) EXPECT_NEAR(s.sparse.at(i, j), d.dense(i, j), 1e-12) << i << "," << j;
  }
}

TEST(Affinity, SparseIsSymmetricAndSumsToOne) {
  const MatrixD X = gaussian_points(400, 6, 4);
  const AffinityResult s = affinities_sparse(X, 20.0, 2);
  double total = 0;
  for (index_t i = 0; i < 400; ++i)
    for (index_t p = s.sparse.row_ptr[i]; p < s.sparse.row_ptr[i + 1]; ++p) {
      const index_t j = s.sparse.col[p];
      EXPECT_NE(i, j);
      EXPECT_DOUBLE_EQ(s.sparse.val[p], s.sparse.at(j, i));
      total += s.sparse.val[p];
    }
  EXPECT_NEAR(total, 1.0, 1e-12);
}

TEST(Affinity, BadInputNamesTheProblem) {
  MatrixD X = gaussian_points(30, 3, 5);
  EXPECT_NE(message_of([&] { affinities_dense(X, 40.0); }).find("N - 1 = 29"), std::string::npos);
  EXPECT_NE(message_of([&] { affinities_sparse(X, 12.0); }).find("perplexity"), std::string::npos);
  MatrixD nan = X;
  nan(9, 2) = std::nan("");
  EXPECT_NE(message_of([&] { affinities_dense(nan, 5.0); }).find("row 10, column 3"), std::string::npos);
}

TEST(AffinityEntries, SymmetrisedScaledAndChecked) {
  using orrery::index_t;
  // a directed graph with a repeated entry: (A + A') / 2, scaled to sum 1
  const std::vector<index_t> r = {0, 1, 2, 0}, c = {1, 2, 0, 1};
  const std::vector<double> v = {1.0, 2.0, 3.0, 1.0};
  const orrery::SparseAffinity P = orrery::affinities_from_entries(3, 3, r, c, v, "test");
  const double total = 7.0;
  EXPECT_DOUBLE_EQ(P.at(0, 1), 0.5 * 2.0 / total);
  EXPECT_DOUBLE_EQ(P.at(1, 0), 0.5 * 2.0 / total);
  EXPECT_DOUBLE_EQ(P.at(1, 2), 0.5 * 2.0 / total);
  EXPECT_DOUBLE_EQ(P.at(0, 2), 0.5 * 3.0 / total);
  double sum = 0;
  for (double x : P.val) sum += x;
  EXPECT_NEAR(sum, 1.0, 1e-15);
  EXPECT_THROW(orrery::affinities_from_entries(3, 4, r, c, v, "test"), orrery::Error);
  EXPECT_THROW(orrery::affinities_from_entries(3, 3, {0}, {0}, {1.0}, "test"), orrery::Error);
  EXPECT_THROW(orrery::affinities_from_entries(3, 3, {0}, {1}, {-1.0}, "test"), orrery::Error);
  // a point without any affinity has no place on the map: refused, and a declared N far beyond the
  // entries is refused before anything is sized by it
  EXPECT_THROW(orrery::affinities_from_entries(4, 4, r, c, v, "test"), orrery::Error);
  const index_t huge = std::numeric_limits<std::int32_t>::max();
  try {
    orrery::affinities_from_entries(huge, huge, r, c, v, "test");
    ADD_FAILURE() << "a 2^31-point header over 4 entries was accepted";
  } catch (const orrery::Error& e) {
    EXPECT_NE(std::string(e.what()).find("declares 2147483647 points"), std::string::npos) << e.what();
  }
}

// A kNN distance graph (scikit-learn's kneighbors_graph(mode="distance"), Scanpy's distances): the
// exact search's lists given as (row, col, distance) entries, shuffled, with a diagonal entry added,
// give the sparse affinities of the points themselves; rows of unequal length calibrate each on its
// own list, a row too short for the perplexity is uniform and counted; bad graphs are refused by row.
TEST(AffinityNeighborGraph, EqualsTheSearchedAffinitiesAndCalibratesUnequalRows) {
  const MatrixD X = gaussian_points(300, 5, 11);
  const double perplexity = 10.0;
  const AffinityResult want = affinities_sparse(X, perplexity, 2);
  const KnnGraph g = exact_knn(X, sparse_neighbors(perplexity), 2);
  std::vector<index_t> r, c;
  std::vector<double> dist;
  for (index_t i = 0; i < g.num_points; ++i)
    for (int l = 0; l < g.k; ++l) {
      r.push_back(i);
      c.push_back(g.neighbors(i)[l]);
      dist.push_back(std::sqrt(g.distances2(i)[l]));
    }
  r.push_back(7), c.push_back(7), dist.push_back(0.0);  // a point is not its own neighbor
  std::mt19937_64 rng(3);
  std::vector<size_t> order(r.size());
  for (size_t q = 0; q < order.size(); ++q) order[q] = q;
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<index_t> rs, cs;
  std::vector<double> ds;
  for (size_t q : order) rs.push_back(r[q]), cs.push_back(c[q]), ds.push_back(dist[q]);
  NeighborGraphSummary s;
  const SparseAffinity P = affinities_from_neighbor_graph(300, 300, rs, cs, ds, perplexity, "graph", 2, &s);
  ASSERT_EQ(P.col, want.sparse.col);
  ASSERT_EQ(P.row_ptr, want.sparse.row_ptr);
  for (size_t q = 0; q < P.val.size(); ++q) EXPECT_NEAR(P.val[q], want.sparse.val[q], 1e-12 * want.sparse.val[q]);
  EXPECT_EQ(s.entries, 300 * g.k);
  EXPECT_EQ(s.min_neighbors, g.k);
  EXPECT_EQ(s.short_rows, 0);
  EXPECT_EQ(s.reachable_perplexity, perplexity);

  // unequal rows: row 0 keeps 20 neighbors (calibrated on them: entropy log 10), row 1 keeps 6 (<=
  // perplexity: uniform, 1/6 each before the symmetrisation)
  std::vector<index_t> r2, c2;
  std::vector<double> d2;
  for (size_t q = 0; q < r.size(); ++q) {
    const index_t i = r[q];
    const int l = static_cast<int>(q % static_cast<size_t>(g.k));
    if (i == 7 && c[q] == 7) continue;
    if ((i == 0 && l >= 20) || (i == 1 && l >= 6)) continue;
    r2.push_back(i), c2.push_back(c[q]), d2.push_back(dist[q]);
  }
  const SparseAffinity Q = affinities_from_neighbor_graph(300, 300, r2, c2, d2, perplexity, "graph", 2, &s);
  EXPECT_EQ(s.min_neighbors, 6);
  EXPECT_EQ(s.max_neighbors, g.k);
  EXPECT_EQ(s.short_rows, 1);
  EXPECT_EQ(s.reachable_perplexity, 6.0);
  // P_ij = (p_{j|i} + p_{i|j}) / 2N: recover row 1's p_{j|i} where j does not list 1
  double total = 0;
  for (double v : Q.val) total += v;
  EXPECT_NEAR(total, 1.0, 1e-12);
  const index_t* nb1 = g.neighbors(1);
  for (int l = 0; l < 6; ++l) {
    const index_t j = nb1[l];
    const index_t* nbj = g.neighbors(j);
    if (std::find(nbj, nbj + g.k, index_t(1)) != nbj + g.k || j == 0) continue;
    EXPECT_NEAR(Q.at(1, j) * 2.0 * 300.0, 1.0 / 6.0, 1e-12);
  }
  // row 0: its conditional over its 20 listed neighbors, at the perplexity
  const double beta0 =
      math::bandwidth_for_perplexity<double, index_t>(g.distances2(0), 20, -1, perplexity, 1e-10, 200);
  double lz, sh;
  const double h = math::row_entropy<double, index_t>(g.distances2(0), 20, -1, beta0, &lz, &sh);
  ASSERT_NEAR(h, std::log(perplexity), 1e-9);
  int checked = 0;
  for (int l = 0; l < 20; ++l) {
    const index_t j = g.neighbors(0)[l];
    const index_t* nbj = g.neighbors(j);
    if (std::find(nbj, nbj + g.k, index_t(0)) != nbj + g.k || j == 1) continue;
    EXPECT_NEAR(Q.at(0, j) * 2.0 * 300.0, std::exp(-beta0 * (g.distances2(0)[l] - sh) - lz), 1e-12);
    ++checked;
  }
  EXPECT_GT(checked, 0);

  // refusals, by row and column (1-based)
  EXPECT_NE(message_of([&] { affinities_from_neighbor_graph(3, 4, {0}, {1}, {1.0}, 5.0, "g"); }).find("square"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              affinities_from_neighbor_graph(3, 3, {0, 1, 2}, {1, 2, 0}, {1.0, -2.0, 1.0}, 5.0, "g");
            }).find("(2, 3)"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              affinities_from_neighbor_graph(3, 3, {0, 0, 1, 2}, {1, 1, 2, 0}, {1.0, 1.0, 1.0, 1.0}, 5.0, "g");
            }).find("pair (1, 2) is listed twice"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              affinities_from_neighbor_graph(3, 3, {0, 1, 2}, {1, 1, 0}, {1.0, 0.0, 1.0}, 5.0, "g");
            }).find("row 2 lists no neighbor"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              affinities_from_neighbor_graph(3, 3, {0, 1, 2}, {1, 2, 0}, {0.0, 1.0, 1.0}, 5.0, "g");
            }).find("row 1: every listed neighbor is at distance 0"),
            std::string::npos);
}

// Duplicate points are data (scikit-learn, openTSNE and FIt-SNE map them): every path calibrates
// each row to its perplexity, a point's copies are its most probable neighbors, a point with at
// least `perplexity` copies puts its row on them (uniformly, at a finite beta), and only a point
// whose every candidate neighbor is a copy is an input error, naming its row.
TEST(Affinity, DuplicatePointsAreData) {
  MatrixD X = gaussian_points(40, 3, 6);
  for (index_t c = 0; c < 3; ++c) X(17, c) = X(4, c), X(30, c) = X(9, c), X(31, c) = X(9, c);
  for (index_t r : {20, 21, 22, 23, 24, 25})
    for (index_t c = 0; c < 3; ++c) X(r, c) = X(2, c);  // point 2 has 6 copies (> perplexity 5)
  MatrixD D(40, 40);
  for (index_t i = 0; i < 40; ++i)
    for (index_t j = 0; j < 40; ++j) {
      double s = 0;
      for (index_t c = 0; c < 3; ++c) s += (X(i, c) - X(j, c)) * (X(i, c) - X(j, c));
      D(i, j) = std::sqrt(s);
    }
  const double perp = 5.0;
  const AffinityResult dense = affinities_dense(X, perp), sparse = affinities_sparse(X, perp),
                       dist = affinities_from_distances(D, perp);
  for (const AffinityResult* a : {&dense, &dist}) {
    for (index_t i = 0; i < 40; ++i) {
      ASSERT_TRUE(std::isfinite(a->beta[i]) && a->beta[i] > 0) << "row " << i + 1;
      double h = 0;
      for (index_t j = 0; j < 40; ++j)
        if (a->conditional(i, j) > 0) h -= a->conditional(i, j) * std::log(a->conditional(i, j));
      // a point with 6 copies cannot get down to entropy log 5: its row is uniform on the copies
      const bool crowded = i == 2 || (i >= 20 && i <= 25);
      EXPECT_NEAR(h, crowded ? std::log(6.0) : std::log(perp), 1e-6) << "row " << i + 1;
    }
    EXPECT_GT(a->conditional(17, 4), 0.1);
    for (index_t j = 0; j < 40; ++j)
      if (j != 4 && j != 17) {
        EXPECT_GT(a->conditional(17, 4), a->conditional(17, j)) << j;
      }
    EXPECT_NEAR(a->conditional(30, 9), a->conditional(30, 31), 1e-15);
  }
  for (size_t q = 0; q < dense.dense.data.size(); ++q) EXPECT_NEAR(dense.dense.data[q], dist.dense.data[q], 1e-12);
  EXPECT_NEAR(sparse.sparse.at(4, 17), sparse.sparse.at(17, 4), 1e-18);
  EXPECT_GT(sparse.sparse_conditional.at(17, 4), 0.1);
  // errors: every other point a copy (dense), every one of the k = 6 nearest a copy (sparse, perplexity 2)
  MatrixD same(10, 3, 1.5);
  EXPECT_NE(message_of([&] { affinities_dense(same, 2.0); }).find("row 1: every other point"), std::string::npos);
  MatrixD zero_row = D;  // a distance matrix need not be a metric: row 8 at distance 0 from all
  for (index_t j = 0; j < 40; ++j) zero_row(7, j) = zero_row(j, 7) = 0.0;
  EXPECT_NE(message_of([&] { affinities_from_distances(zero_row, 2.0); }).find("row 8: every other point"),
            std::string::npos);
  for (index_t c = 0; c < 3; ++c) X(26, c) = X(2, c);  // now 8 identical points, row 3 the first
  EXPECT_NE(message_of([&] { affinities_sparse(X, 2.0); }).find("row 3:"), std::string::npos);
  const AffinityResult crowded = affinities_dense(X, 2.0);
  EXPECT_TRUE(std::isfinite(crowded.beta[2]));
}

TEST(Affinity, DuplicatesAreFoundAndCounted) {
  MatrixD X = gaussian_points(12, 2, 7);
  EXPECT_EQ(find_duplicates(X).count, 0);
  for (index_t c = 0; c < 2; ++c) X(9, c) = X(1, c), X(11, c) = X(1, c), X(7, c) = X(5, c);
  const DuplicatePoints d = find_duplicates(X);
  EXPECT_EQ(d.count, 3);
  EXPECT_EQ(d.first, 5);
  EXPECT_EQ(d.second, 7);
  MatrixD D(4, 4, 1.0);
  for (index_t i = 0; i < 4; ++i) D(i, i) = 0;
  D(1, 3) = D(3, 1) = 0;
  const DuplicatePoints e = find_duplicates(D, true);
  EXPECT_EQ(e.count, 1);
  EXPECT_EQ(e.first, 1);
  EXPECT_EQ(e.second, 3);
}
