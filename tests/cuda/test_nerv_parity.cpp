// NeRV's engine on the GPU against the CPU's double reference, through the parity harness: the pairs
// in float tiles, the tiles in double, so cost and gradient agree to float rounding (nerv.*), for
// dense rows and for sparse rows with their floors (kept O(N k) on the device); the engine's
// vector operations for conjugate gradient; and fits that follow the CPU's for a few iterations and
// repeat bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "common/require_cuda.hpp"
#include "orrery/affinity.hpp"
#include "orrery/backend.hpp"
#include "orrery/nerv.hpp"
#include "orrery/parity.hpp"
#include "orrery/run_control.hpp"
#include "common/stop_control.hpp"
#include "inputs.hpp"
#include "large.hpp"
#include "parity.hpp"

using namespace orrery;

namespace {

MatrixD points(index_t n, index_t d, unsigned seed, double scale) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0.0, scale);
  MatrixD M(n, d);
  for (double& v : M.data) v = z(rng);
  for (index_t i = 0; i < n; ++i) M(i, 0) += 5.0 * static_cast<double>(i % 3);
  return M;
}

// The CPU's double reference against the device's float engine (orrery::compare_nerv_engines).
template <class P>
void compare_engines(const P& prob, const std::vector<double>& beta, const MatrixD& Y, double lambda,
                     Backend& cpu, Backend& gpu, test::ParityCheck& check) {
  const int dim = static_cast<int>(Y.cols);
  check.add(compare_nerv_engines(*cpu.make_nerv(prob, beta, NervOptions{lambda, dim, NervPrecision::float64}),
                                 *gpu.make_nerv(prob, beta, NervOptions{lambda, dim, NervPrecision::float32}), Y));
}

// The truncated cost (params.pairs = approximate) on both: the CPU scatters each pair's column
// share, the device gathers it (math/nerv_cells.hpp), both in float with double sums.
void compare_truncated(const SparseAffinity& P, const std::vector<double>& beta, const MatrixD& Y, double lambda,
                       double cutoff, Backend& cpu, Backend& gpu, test::ParityCheck& check) {
  const int dim = static_cast<int>(Y.cols);
  const NervOptions o{lambda, dim, NervPrecision::float32, cutoff};
  check.add(compare_nerv_engines(*cpu.make_nerv(P, beta, o), *gpu.make_nerv(P, beta, o), Y));
}

// Sparse rows of n points on a line (tests/cuda/large.hpp, neighbors found in O(n k)) and a map
// at the approximate path's start spread (nerv_start_scale median bandwidths: about
// cutoff x perplexity = 60 points kept per row at the map's centre).
void compare_truncated_line(index_t n, Backend& cpu, Backend& gpu, test::ParityCheck& check) {
  const AffinityResult aff = affinities_from_knn(test::line_knn(test::line_points(n), 15), 5.0);
  std::vector<double> beta = aff.beta;
  std::nth_element(beta.begin(), beta.begin() + static_cast<long>(beta.size() / 2), beta.end());
  const double sigma = 1.0 / std::sqrt(beta[beta.size() / 2]);
  const MatrixD Y = test::gaussian_points(n, 2, 24, nerv_start_scale(NervParams{}, n, 5.0, true) * sigma);
  compare_truncated(aff.sparse_conditional, aff.beta, Y, 0.3, 12.0, cpu, gpu, check);
}

std::string suffix(int dim, double lambda) {
  return "_D" + std::to_string(dim) + "_lambda" + std::to_string(static_cast<int>(std::lround(lambda * 10)));
}

}  // namespace

std::vector<test::ParityCase> test::nerv_parity_cases() {
  std::vector<test::ParityCase> out;
  for (int dim : {2, 3})
    for (double lambda : {0.0, 0.3, 1.0}) {
      out.push_back({"nerv", "dense_N700" + suffix(dim, lambda),
                     [dim, lambda](Backend& cpu, Backend& gpu, test::ParityCheck& check) {
                       const AffinityResult aff = affinities_dense(points(700, 6, 1, 1.0), 20.0);
                       compare_engines(aff.conditional, aff.beta, points(700, dim, 2, 1.5), lambda, cpu, gpu, check);
                     }});
      out.push_back({"nerv", "truncated_N1500" + suffix(dim, lambda),
                     [dim, lambda](Backend& cpu, Backend& gpu, test::ParityCheck& check) {
                       const AffinityResult aff = affinities_sparse(points(1500, 6, 5, 1.0), 15.0);
                       std::vector<double> beta = aff.beta;
                       for (size_t i = 0; i < beta.size(); i += 7) beta[i] *= 0.05;  // wide rows
                       compare_truncated(aff.sparse_conditional, beta, points(1500, dim, 6, 2.0), lambda, 6.0, cpu,
                                         gpu, check);
                     }});
      out.push_back({"nerv", "sparse_N1100" + suffix(dim, lambda),
                     [dim, lambda](Backend& cpu, Backend& gpu, test::ParityCheck& check) {
                       const AffinityResult aff = affinities_sparse(points(1100, 6, 3, 1.0), 15.0);
                       compare_engines(aff.sparse_conditional, aff.beta, points(1100, dim, 4, 1.5), lambda, cpu, gpu,
                                       check);
                     }});
    }
  // Extreme rows: a point 20 standard deviations from all others (its q row is nearly one-hot, the
  // rest underflows in float) and two points on top of each other. (Much farther, at 200, float's
  // rounding of the squared distances (~1e5) before the row's shift cancels them leaves its gradient
  // 25% off the double one, on the CPU's float path as on the GPU: an outlier's pull is not exact in
  // float.)
  out.push_back({"nerv", "sparse_N600_far_and_coincident_points", [](Backend& cpu, Backend& gpu, test::ParityCheck& check) {
                   const AffinityResult aff = affinities_sparse(points(600, 5, 5, 1.0), 10.0);
                   MatrixD Y = points(600, 2, 6, 1.5);
                   Y(0, 1) = 30.0;
                   Y(2, 0) = Y(1, 0), Y(2, 1) = Y(1, 1);
                   compare_engines(aff.sparse_conditional, aff.beta, Y, 0.3, cpu, gpu, check);
                 }});
  // Large: the truncated cost of 2^17 + 3 points (O(N x kept pairs) on both sides).
  out.push_back({"nerv", "truncated_N131075_D2_lambda3", [](Backend& cpu, Backend& gpu, test::ParityCheck& check) {
                   compare_truncated_line(test::kLargeN, cpu, gpu, check);
                 }});
  return out;
}

INSTANTIATE_PARITY(Nerv, test::nerv_parity_cases());

// Five conjugate-gradient iterations on each kind of rows follow the CPU's (float against double:
// the first cost closely, the last within nerv.fit_last) and repeat bit for bit.
TEST(NervParityFit, FitsFollowTheCpuAndRepeat) {
  ORRERY_REQUIRE_CUDA();
  auto cpu = make_backend("cpu", 0), gpu = make_backend("cuda", 0);
  const AffinityResult sparse = affinities_sparse(points(500, 5, 3, 1.0), 10.0);
  const AffinityResult dense = affinities_dense(points(400, 5, 7, 1.0), 10.0);
  NervParams prm;
  prm.max_iter = 5;
  prm.precision = NervPrecision::float64;
  for (const bool is_sparse : {true, false}) {
    test::ParityCheck check(std::string("nerv/fit ") + (is_sparse ? "sparse" : "dense"));
    auto fit = [&](Backend& b) {
      return is_sparse ? fit_nerv(sparse.sparse_conditional, sparse.beta, prm, 4, b)
                       : fit_nerv(dense.conditional, dense.beta, prm, 4, b);
    };
    const NervResult c = fit(*cpu), g1 = fit(*gpu), g2 = fit(*gpu);
    EXPECT_EQ(g1.coords.data, g2.coords.data) << check.where();
    EXPECT_EQ(g1.objective_trace, g2.objective_trace) << check.where();
    EXPECT_EQ(g1.arithmetic, "float");
    ASSERT_FALSE(c.objective_trace.empty());
    ASSERT_FALSE(g1.objective_trace.empty());
    check.agree("first cost", "nerv.fit_first", c.objective_trace.front(), g1.objective_trace.front());
    check.agree("last cost", "nerv.fit_last", c.objective_trace.back(), g1.objective_trace.back());
  }
}

// The truncated cost's fit (params.pairs = approximate, the cells engine): float on both sides, so
// the costs follow the CPU's closely for a few conjugate-gradient iterations; and the device
// repeats its own bits.
TEST(NervParityFit, TruncatedFitsFollowTheCpuAndRepeat) {
  ORRERY_REQUIRE_CUDA();
  auto cpu = make_backend("cpu", 0), gpu = make_backend("cuda", 0);
  const AffinityResult aff = affinities_sparse(points(1500, 6, 9, 1.0), 15.0);
  NervParams prm;
  prm.max_iter = 5;
  prm.pairs = NervPairs::approximate;
  prm.cutoff = 8.0;
  for (const int dim : {2, 3}) {
    prm.dim = dim;
    test::ParityCheck check("nerv/truncated fit N1500 seed 4 D" + std::to_string(dim));
    auto fit = [&](Backend& b) { return fit_nerv(aff.sparse_conditional, aff.beta, prm, 4, b); };
    const NervResult c = fit(*cpu), g1 = fit(*gpu), g2 = fit(*gpu);
    EXPECT_TRUE(c.approximate && g1.approximate) << check.where();
    EXPECT_EQ(g1.coords.data, g2.coords.data) << check.where();
    EXPECT_EQ(g1.objective_trace, g2.objective_trace) << check.where();
    ASSERT_FALSE(c.objective_trace.empty());
    ASSERT_FALSE(g1.objective_trace.empty());
    check.agree("first cost", "nerv.fit_first", c.objective_trace.front(), g1.objective_trace.front());
    check.agree("last cost", "nerv.fit_last", c.objective_trace.back(), g1.objective_trace.back());
  }
}

namespace {

// A fit stopped after iteration k (the state saved as a checkpoint would: x, gradient, direction
// and the optimiser's scalars), then continued by a new fit on a new engine from that state
// (NervEngine::set_vector), ends with the same bits as the fit never stopped: exact pairs and the
// truncated cost, on one backend.
void expect_resume_exact(Backend& b, const std::string& where) {
  const AffinityResult aff = affinities_sparse(points(700, 5, 11, 1.0), 10.0);
  NervParams prm;
  prm.max_iter = 8;
  prm.ftol = 0.0;
  prm.precision = NervPrecision::float64;
  for (const NervPairs pairs : {NervPairs::exact, NervPairs::approximate}) {
    prm.pairs = pairs;
    const std::string what = where + " nerv N700 seed 4 " + enum_name(pairs) + " pairs";
    const NervResult full = fit_nerv(aff.sparse_conditional, aff.beta, prm, 4, b);
    ASSERT_GT(full.iterations, 4) << what << ": stops after iterations 1 and 4 need more";
    for (const int k : {1, 4}) {
      const NervResult resumed = test::stopped_and_continued(k, [&](RunControl* control) {
        return fit_nerv(aff.sparse_conditional, aff.beta, prm, 4, b, {}, nullptr, control);
      });
      EXPECT_EQ(resumed.coords.data, full.coords.data) << what << ", stopped after " << k;
      EXPECT_EQ(resumed.objective_trace, full.objective_trace) << what << ", stopped after " << k;
      EXPECT_EQ(resumed.evaluations, full.evaluations) << what << ", stopped after " << k;
      EXPECT_EQ(resumed.iterations, full.iterations) << what << ", stopped after " << k;
    }
  }
}

}  // namespace

TEST(NervResume, ResumedOnTheDeviceEqualsTheUninterruptedFit) {
  ORRERY_REQUIRE_CUDA();
  auto gpu = make_backend("cuda", 0);
  expect_resume_exact(*gpu, "cuda");
}

// The same harness on the CPU, where it needs no device.
TEST(NervResume, ResumedOnTheCpuEqualsTheUninterruptedFit) {
  auto cpu = make_backend("cpu", 0);
  expect_resume_exact(*cpu, "cpu");
}
