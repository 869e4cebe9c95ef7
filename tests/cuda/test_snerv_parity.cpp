// Learning-metric distances on the GPU against the CPU, through the parity harness: the same double
// arithmetic per pair (snerv.distances), for all pairs and for the candidate path's listed pairs.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "orrery/backend.hpp"
#include "orrery/knn.hpp"
#include "orrery/snerv.hpp"
#include "large.hpp"
#include "parity.hpp"

using namespace orrery;

namespace {

// 413 points in 12 dimensions, four classes shifted along their own axis, and a model of K components.
struct Problem {
  MatrixD X;
  ClassMixture model;
};
Problem labelled_problem(unsigned seed, int components) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0.0, 1.0);
  Problem p;
  p.X = MatrixD(413, 12);
  std::vector<int> y(413);
  for (index_t n = 0; n < p.X.rows; ++n) {
    y[static_cast<size_t>(n)] = static_cast<int>(n % 4);
    for (index_t j = 0; j < p.X.cols; ++j) p.X(n, j) = z(rng) + (j == n % 4 ? 3.0 : 0.0);
  }
  ClassMixtureParams prm;
  prm.components = components;
  prm.width = 1.5;
  prm.max_iter = 50;
  p.model = fit_class_mixture(p.X, y, prm, 1);
  return p;
}

}  // namespace

std::vector<test::ParityCase> test::snerv_parity_cases() {
  std::vector<test::ParityCase> out;
  for (const int components : {8, 40})
    out.push_back({"snerv", "distances_N413_d12_K" + std::to_string(components),
                   [components](Backend& cpu, Backend& gpu, test::ParityCheck& check) {
                     const Problem p = labelled_problem(3, components);
                     check.agree("distances", "snerv.distances", cpu.learning_metric_distances(p.model, p.X, 10).data,
                                 gpu.learning_metric_distances(p.model, p.X, 10).data, 1.0);
                   }});
  // The candidate path's listed pairs: each point's 60 Euclidean nearest (some pairs listed from both
  // ends), the metric distances in the graph's layout, then the re-rank to 20 on each side's numbers.
  for (const int components : {8, 40})
    out.push_back({"snerv", "pairs_N413_d12_K" + std::to_string(components) + "_c60",
                   [components](Backend& cpu, Backend& gpu, test::ParityCheck& check) {
                     const Problem p = labelled_problem(5, components);
                     const KnnGraph g = exact_knn(p.X, 60, 2);
                     const std::vector<double> c = cpu.learning_metric_pairs(p.model, p.X, g, 10),
                                               d = gpu.learning_metric_pairs(p.model, p.X, g, 10);
                     check.agree("pair distances", "snerv.distances", c, d, 1.0);
                     // sorted distances agree even where two near-equal ones swap their points
                     check.agree("re-ranked squared distances", "snerv.distances", rerank_candidates(g, c, 20).dist2,
                                 rerank_candidates(g, d, 20).dist2, 1.0);
                   }});
  // Large: the listed pairs of 2^17 + 3 points drawn as the model's (O(N k) pairs on both sides),
  // four pairs per point.
  out.push_back({"snerv", "pairs_N131075_d12_K8_c4", [](Backend& cpu, Backend& gpu, test::ParityCheck& check) {
                   const Problem p = labelled_problem(7, 8);
                   std::mt19937_64 rng(8);
                   std::normal_distribution<double> z(0.0, 1.0);
                   MatrixD X(test::kLargeN, 12);
                   for (index_t n = 0; n < X.rows; ++n)
                     for (index_t j = 0; j < X.cols; ++j) X(n, j) = z(rng) + (j == n % 4 ? 3.0 : 0.0);
                   const KnnGraph g = test::line_knn(test::line_points(test::kLargeN), 4);
                   check.agree("pair distances", "snerv.distances", cpu.learning_metric_pairs(p.model, X, g, 10),
                               gpu.learning_metric_pairs(p.model, X, g, 10), 1.0);
                 }});
  return out;
}

INSTANTIATE_PARITY(Snerv, test::snerv_parity_cases());
