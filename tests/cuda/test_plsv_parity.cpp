// PLSV's CUDA engine against the CPU engine on the same corpus and state: E-step sums, theta
// M-step, Newton solves with the topic gradient, relocation, and a few whole EM iterations.
// Tolerances: the device stores X, theta, P and R / M in float (relative rounding 6e-8) and sums
// per document or word in float or double; 1e-4 relative covers a few hundred float operations
// per value, far below the changes a wrong index or formula makes (O(1)).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "common/require_cuda.hpp"
#include "orrery/backend.hpp"
#include "orrery/plsv.hpp"

using namespace orrery;

namespace {

void expect_close(const MatrixD& a, const MatrixD& b, double rel, double abs_floor, const char* what) {
  ASSERT_EQ(a.data.size(), b.data.size()) << what;
  for (size_t i = 0; i < a.data.size(); ++i) {
    ASSERT_TRUE(std::isfinite(b.data[i])) << what << " index " << i;
    EXPECT_NEAR(a.data[i], b.data[i], rel * std::abs(a.data[i]) + abs_floor) << what << " index " << i;
  }
}

struct Case {
  index_t N, W;
  int Z, D;
};

}  // namespace

class PlsvParity : public ::testing::TestWithParam<Case> {};

TEST_P(PlsvParity, EngineStepsAgree) {
  ORRERY_REQUIRE_CUDA();
  const Case k = GetParam();
  const auto planted = sample_plsv_corpus(k.N, k.W, k.Z, k.D, 35, 100 + k.Z);
  auto cpu = make_cpu_backend(2);
  auto gpu = make_cuda_backend(0);
  auto ec = cpu->make_plsv(planted.corpus, k.Z, k.D);
  auto eg = gpu->make_plsv(planted.corpus, k.Z, k.D);
  std::mt19937_64 rng(5);
  std::normal_distribution<double> z(0.0, 1.0);
  MatrixD X(k.N, k.D);
  for (double& v : X.data) v = z(rng);
  // Start from float-representable values so both engines see the same state.
  for (double& v : X.data) v = static_cast<float>(v);
  MatrixD theta = planted.model.theta;
  for (double& v : theta.data) v = static_cast<float>(v);
  std::vector<double> phi = planted.model.topic_coords.data;
  for (double& v : phi) v = static_cast<float>(v);
  for (auto* e : {ec.get(), eg.get()}) {
    e->set_docs(X);
    e->set_theta(theta);
  }
  const auto sc = ec->e_step(phi, 0.01), sg = eg->e_step(phi, 0.01);
  EXPECT_NEAR(sg.log_likelihood, sc.log_likelihood, 1e-5 * std::abs(sc.log_likelihood));
  EXPECT_NEAR(sg.theta_log_prior, sc.theta_log_prior, 1e-6 * std::abs(sc.theta_log_prior));
  EXPECT_NEAR(sg.docs_sq, sc.docs_sq, 1e-6 * sc.docs_sq);
  expect_close(ec->topic_counts(), eg->topic_counts(), 1e-4, 1e-5, "R");
  ec->m_step_theta(0.01);
  eg->m_step_theta(0.01);
  expect_close(ec->theta(), eg->theta(), 1e-4, 1e-9, "theta");
  PeNewtonOptions opt;
  opt.eps_r = 1e-10;
  opt.max_iter = 50;
  std::vector<double> gc, gg;
  const double gamma = 0.1 * k.Z;
  const PeSweep wc = ec->solve_docs(phi, gamma, opt, &gc), wg = eg->solve_docs(phi, gamma, opt, &gg);
  EXPECT_NEAR(wg.objective, wc.objective, 1e-5 * std::abs(wc.objective));
  expect_close(ec->docs(), eg->docs(), 1e-3, 1e-3, "X after Newton");
  MatrixD a(k.Z, k.D), b(k.Z, k.D);
  a.data = gc;
  b.data = gg;
  double scale = 0.0;
  for (double v : gc) scale = std::max(scale, std::abs(v));
  expect_close(a, b, 1e-3, 1e-3 * scale, "topic gradient");
  const index_t mc = ec->relocate_docs(phi, gamma), mg = eg->relocate_docs(phi, gamma);
  EXPECT_NEAR(static_cast<double>(mg), static_cast<double>(mc), 0.01 * k.N + 1);
}

TEST_P(PlsvParity, FewEmIterationsAgree) {
  ORRERY_REQUIRE_CUDA();
  const Case k = GetParam();
  const auto planted = sample_plsv_corpus(k.N, k.W, k.Z, k.D, 35, 200 + k.Z);
  auto cpu = make_cpu_backend(2);
  auto gpu = make_cuda_backend(0);
  PlsvParams prm;
  prm.topics = k.Z;
  prm.dim = k.D;
  prm.max_iter = 5;
  prm.tol = 0;
  prm.relocate_every = 0;
  const PlsvResult rc = fit_plsv(*cpu, planted.corpus, prm, 3), rg = fit_plsv(*gpu, planted.corpus, prm, 3);
  ASSERT_EQ(rc.trace.size(), rg.trace.size());
  for (size_t i = 0; i < rc.trace.size(); ++i)
    EXPECT_NEAR(rg.trace[i].log_posterior, rc.trace[i].log_posterior, 1e-4 * std::abs(rc.trace[i].log_posterior))
        << "iteration " << i;
  const PlsvResult again = fit_plsv(*gpu, planted.corpus, prm, 3);
  EXPECT_EQ(again.doc_coords.data, rg.doc_coords.data) << "same seed, same device: same bits";
}

INSTANTIATE_TEST_SUITE_P(Shapes, PlsvParity,
                         ::testing::Values(Case{300, 200, 5, 2}, Case{1000, 500, 50, 2}, Case{700, 300, 37, 3},
                                           Case{257, 100, 256, 2}),
                         [](const ::testing::TestParamInfo<Case>& param_info) {
                           const Case& c = param_info.param;
                           return "N" + std::to_string(c.N) + "_W" + std::to_string(c.W) + "_Z" +
                                  std::to_string(c.Z) + "_D" + std::to_string(c.D);
                         });
