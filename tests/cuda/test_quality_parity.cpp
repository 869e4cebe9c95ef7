// The CUDA rank rows and neighbor searches of the quality measures against the CPU, through the
// parity harness: integer-valued points give exactly representable distances, so the ranks and
// counts must be identical, not just close (quality.*).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <tuple>

#include "common/distances.hpp"
#include "orrery/backend.hpp"
#include "orrery/quality.hpp"
#include "large.hpp"
#include "parity.hpp"

using namespace orrery;

namespace {

constexpr RankInput kVectors = RankInput::vectors, kDistances = RankInput::distance_matrix;

MatrixD integer_points(index_t n, index_t d, unsigned seed, int levels) {
  std::mt19937_64 rng(seed);
  MatrixD M(n, d);
  for (double& v : M.data) v = static_cast<double>(rng() % levels);  // few levels: ties and duplicates
  return M;
}

void same_rows(const RankRows& c, const RankRows& g, test::ParityCheck& check, const std::string& what) {
  check.same(what + "map neighbors", c.map_neighbors, g.map_neighbors);
  check.same(what + "input ranks of map neighbors", c.input_rank_of_map_nb, g.input_rank_of_map_nb);
  check.same(what + "map ranks of input neighbors", c.map_rank_of_input_nb, g.map_rank_of_input_nb);
}

}  // namespace

std::vector<test::ParityCase> test::quality_parity_cases() {
  std::vector<test::ParityCase> out;
  for (const auto& [n, d, kmax, levels] : {std::tuple<index_t, index_t, int, int>{50, 3, 10, 4}, {700, 8, 25, 6},
                                           {3000, 49, 30, 255}})
    out.push_back({"quality", "rank_rows_N" + std::to_string(n) + "_d" + std::to_string(d) + "_k" + std::to_string(kmax),
                   [n = n, d = d, kmax = kmax, levels = levels](Backend& cpu, Backend& gpu, test::ParityCheck& check) {
                     const MatrixD X = integer_points(n, d, 1, levels), Y = integer_points(n, 2, 2, levels * 3);
                     same_rows(cpu.rank_rows(X, Y, kmax, kVectors, {}), gpu.rank_rows(X, Y, kmax, kVectors, {}), check, "");
                   }});
  out.push_back({"quality", "measures_through_the_backend_N1500", [](Backend& cpu, Backend& gpu, test::ParityCheck& check) {
                   const MatrixD X = integer_points(1500, 10, 3, 9), Y = integer_points(1500, 2, 4, 30);
                   std::vector<int> labels(1500);
                   for (int i = 0; i < 1500; ++i) labels[i] = i % 7;
                   QualityRequest req;
                   req.ks = {1, 7, 40};
                   const QualityReport c = evaluate_quality(X, Y, labels, req, cpu),
                                       g = evaluate_quality(X, Y, labels, req, gpu);
                   std::vector<double> vc, vg;
                   for (size_t q = 0; q < req.ks.size(); ++q)
                     for (const auto* r : {&c, &g}) {
                       auto& v = r == &c ? vc : vg;
                       const QualityAtK& a = r->at_k[q];
                       v.insert(v.end(), {a.trustworthiness, a.continuity, a.mrre_neighborhood, a.mrre_visual, a.lcmc,
                                          a.knn_accuracy});
                     }
                   check.agree("measures at K = 1, 7, 40", "quality.measures", vc, vg);
                   check.same("co-ranking", c.coranking, g.coranking);
                 }});
  out.push_back({"quality", "distance_matrix_input_N200", [](Backend& cpu, Backend& gpu, test::ParityCheck& check) {
                   const MatrixD X = integer_points(200, 4, 5, 5), Y = integer_points(200, 2, 6, 11);
                   const MatrixD D = test::euclidean_distances(X);
                   same_rows(cpu.rank_rows(D, Y, 15, kDistances, {}), gpu.rank_rows(D, Y, 15, kDistances, {}), check, "distances: ");
                   check.same("vectors and distances give the same input ranks", gpu.rank_rows(X, Y, 15, kVectors, {}).input_rank_of_map_nb,
                              gpu.rank_rows(D, Y, 15, kDistances, {}).input_rank_of_map_nb);
                 }});
  out.push_back({"quality", "inner_product_input_N600", [](Backend& cpu, Backend& gpu, test::ParityCheck& check) {
                   // references of any values (integers: exact distances), each point's query its row with the
                   // last coordinate 0 (orrery/inner_product.hpp), all points and a subsample of queries
                   const MatrixD R = integer_points(600, 6, 13, 7), Y = integer_points(600, 2, 14, 25);
                   same_rows(cpu.rank_rows(R, Y, 15, RankInput::inner_product, {}),
                             gpu.rank_rows(R, Y, 15, RankInput::inner_product, {}), check, "inner product: ");
                   QualityRequest req;
                   req.queries = 100;
                   req.seed = 15;
                   const std::vector<index_t> q = quality_queries(600, req);
                   same_rows(cpu.rank_rows(R, Y, 15, RankInput::inner_product, q),
                             gpu.rank_rows(R, Y, 15, RankInput::inner_product, q), check, "inner product, queries: ");
                 }});
  out.push_back({"quality", "query_subsample_N2000", [](Backend& cpu, Backend& gpu, test::ParityCheck& check) {
                   // the rows of a seeded subsample of query points, ranked against all points
                   const MatrixD X = integer_points(2000, 12, 7, 6), Y = integer_points(2000, 2, 8, 40);
                   QualityRequest req;
                   req.queries = 300;
                   req.seed = 9;
                   const std::vector<index_t> q = quality_queries(2000, req);
                   same_rows(cpu.rank_rows(X, Y, 20, kVectors, q), gpu.rank_rows(X, Y, 20, kVectors, q), check, "queries: ");
                   const MatrixD D = test::euclidean_distances(X);
                   same_rows(cpu.rank_rows(D, Y, 20, kDistances, q), gpu.rank_rows(D, Y, 20, kDistances, q), check,
                             "queries, distances: ");
                 }});
  // Large: the rank rows of 256 query points against all 2^17 + 3 points (O(queries x N) on both).
  out.push_back({"quality", "query_subsample_N131075", [](Backend& cpu, Backend& gpu, test::ParityCheck& check) {
                   const MatrixD X = integer_points(test::kLargeN, 8, 10, 7), Y = integer_points(test::kLargeN, 2, 11, 600);
                   QualityRequest req;
                   req.queries = 256;
                   req.seed = 12;
                   const std::vector<index_t> q = quality_queries(test::kLargeN, req);
                   same_rows(cpu.rank_rows(X, Y, 20, kVectors, q), gpu.rank_rows(X, Y, 20, kVectors, q), check, "queries: ");
                 }});
  return out;
}

INSTANTIATE_PARITY(Quality, test::quality_parity_cases());
