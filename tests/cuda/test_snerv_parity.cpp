// Learning-metric distances on the GPU against the CPU, through the parity harness: the same double
// arithmetic per pair (snerv.distances).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "orrery/backend.hpp"
#include "orrery/snerv.hpp"
#include "parity.hpp"

using namespace orrery;

std::vector<test::ParityCase> test::snerv_parity_cases() {
  std::vector<test::ParityCase> out;
  for (const int components : {8, 40})
    out.push_back({"snerv", "distances_N413_d12_K" + std::to_string(components),
                   [components](Backend& cpu, Backend& gpu, test::ParityCheck& check) {
                     std::mt19937_64 rng(3);
                     std::normal_distribution<double> z(0.0, 1.0);
                     MatrixD X(413, 12);
                     std::vector<int> y(413);
                     for (index_t n = 0; n < X.rows; ++n) {
                       y[static_cast<size_t>(n)] = static_cast<int>(n % 4);
                       for (index_t j = 0; j < X.cols; ++j) X(n, j) = z(rng) + (j == n % 4 ? 3.0 : 0.0);
                     }
                     ClassMixtureParams prm;
                     prm.components = components;
                     prm.width = 1.5;
                     prm.max_iter = 50;
                     const ClassMixture m = fit_class_mixture(X, y, prm, 1);
                     check.agree("distances", "snerv.distances", cpu.learning_metric_distances(m, X, 10).data,
                                 gpu.learning_metric_distances(m, X, 10).data, 1.0);
                   }});
  return out;
}

INSTANTIATE_PARITY(Snerv, test::snerv_parity_cases());
