// CudaBackend against CpuBackend for PE's primitives on the same input. The GPU computes in float
// and reduces in double; the CPU is double throughout. Tolerances below are float round-off
// scaled by the size of the sums involved, named per primitive. Only the public API is used, so
// this file builds (and skips) in a build without CUDA too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <sstream>

#include "common/require_cuda.hpp"
#include "orrery/backend.hpp"
#include "orrery/error.hpp"
#include "orrery/pe.hpp"

using namespace orrery;

namespace {

// J = sum_n J_n with every J_n >= 0, each a float sum over K terms (~1e-7 relative, device exp/log
// included); the totals are double, so the sum is as accurate as its terms. 1e-5 leaves margin for
// R itself differing by kCoordAbs after a solve.
constexpr double kObjectiveRel = 1e-5;
// Both solvers stop at |g|^2 < eps_r = 1e-8, and H >= 2 eta_r I = 0.2 I, so each r_n is within
// |g| / 0.2 = 5e-4 of the exact minimiser; float evaluation adds far less than that.
constexpr double kCoordAbs = 2e-3;
// Class gradient, relative to max |entry| + 1: sums over N of float forces (P_nk - q_nk)(phi_k - r_n)
// that largely cancel, evaluated at r_n that differ by up to kCoordAbs.
constexpr double kGradRel = 2e-4;
constexpr double kEtaR = 0.1;

struct Case {
  index_t N;
  int K, D;
  unsigned seed;
  std::string str() const {
    std::ostringstream os;
    os << "N=" << N << " K=" << K << " D=" << D << " seed=" << seed;
    return os.str();
  }
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.str(); }

// The size grid N x K x D, plus class counts whose Phi does not fit in shared memory (the kernels'
// global-memory path).
std::vector<Case> cases() {
  std::vector<Case> out;
  unsigned seed = 1;
  for (index_t N : {1, 37, 5000})
    for (int K : {2, 10, 300})
      for (int D : {2, 3}) out.push_back(Case{N, K, D, seed++});
  out.push_back(Case{700, 3000, 3, seed++});
  out.push_back(Case{300, 10000, 2, seed++});
  return out;
}

struct Data {
  MatrixD P, R;
  std::vector<double> lp, phi;
};

Data make_data(const Case& c) {
  std::mt19937_64 rng(c.seed);
  std::normal_distribution<double> z(0.0, 1.0);
  Data d{MatrixD(c.N, c.K), MatrixD(c.N, c.D), std::vector<double>(c.K), std::vector<double>(c.K * c.D)};
  for (double& v : d.phi) v = 2.5 * z(rng);
  double s = 0;
  for (int k = 0; k < c.K; ++k) s += (d.lp[k] = 0.5 + (rng() % 100) / 100.0);
  for (double& v : d.lp) v = std::log(v / s);
  for (index_t n = 0; n < c.N; ++n) {
    double row = 0;
    for (int k = 0; k < c.K; ++k) row += (d.P(n, k) = std::exp(2.0 * z(rng)));
    for (int k = 0; k < c.K; ++k) d.P(n, k) /= row;
    for (int dd = 0; dd < c.D; ++dd) d.R(n, dd) = 2.0 * z(rng);
  }
  // Extreme rows: all mass on one class (q_k -> 0 for the others), and objects far from every
  // class, where an unstabilised log-sum-exp underflows to log 0.
  for (int k = 0; k < c.K; ++k) d.P(0, k) = k == 0 ? 1.0 : 0.0;
  if (c.N > 1)
    for (int dd = 0; dd < c.D; ++dd) d.R(1, dd) = 300.0;
  if (c.N > 2) {
    for (int k = 0; k < c.K; ++k) d.P(c.N - 1, k) = k == c.K - 1 ? 1.0 : 0.0;
    for (int dd = 0; dd < c.D; ++dd) d.R(c.N - 1, dd) = -300.0;
  }
  return d;
}

// Compares element-wise; a NaN/Inf on one side only, or |gpu - cpu| > tol(cpu), fails. The message
// names the primitive, the case, the first failing index with both values, and how many failed.
template <class Tol>
::testing::AssertionResult agree(const char* primitive, const Case& c, const std::vector<double>& cpu,
                                 const std::vector<double>& gpu, Tol tol) {
  if (cpu.size() != gpu.size())
    return ::testing::AssertionFailure() << primitive << " " << c.str() << ": cpu has " << cpu.size()
                                         << " values, gpu " << gpu.size();
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < cpu.size(); ++i) {
    const bool fin_c = std::isfinite(cpu[i]), fin_g = std::isfinite(gpu[i]);
    const bool ok = fin_c && fin_g ? std::abs(gpu[i] - cpu[i]) <= tol(cpu[i]) : false;
    if (!ok && bad++ == 0) first = i;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  std::ostringstream os;
  os.precision(std::numeric_limits<double>::max_digits10);
  os << primitive << " " << c.str() << ": " << bad << " of " << cpu.size() << " values differ; first at index "
     << first << ": cpu " << cpu[first] << " gpu " << gpu[first] << " (allowed " << tol(cpu[first]) << ")";
  return ::testing::AssertionFailure() << os.str();
}

::testing::AssertionResult agree_rel(const char* primitive, const Case& c, double cpu, double gpu, double rel) {
  return agree(primitive, c, {cpu}, {gpu}, [rel](double x) { return rel * std::abs(x) + 1e-9; });
}

class PeParity : public ::testing::TestWithParam<Case> {};

TEST_P(PeParity, ObjectiveSolveAndClassGradientMatchCpu) {
  ORRERY_REQUIRE_CUDA();
  const Case c = GetParam();
  const Data d = make_data(c);
  auto cpu = make_cpu_backend(0);
  auto gpu = make_cuda_backend(0);
  auto ec = cpu->make_pe(d.P, d.lp, c.D, kEtaR);
  auto eg = gpu->make_pe(d.P, d.lp, c.D, kEtaR);
  ec->set_objects(d.R);
  eg->set_objects(d.R);

  EXPECT_TRUE(agree_rel("objective", c, ec->objective(d.phi), eg->objective(d.phi), kObjectiveRel));

  const PeNewtonOptions opt;
  std::vector<double> gc, gg;
  const PeSweep sc = ec->solve_objects(d.phi, opt, &gc);
  const PeSweep sg = eg->solve_objects(d.phi, opt, &gg);
  EXPECT_TRUE(agree_rel("solve_objects objective", c, sc.objective, sg.objective, kObjectiveRel));
  // Both must reach eps_r on every object: a float solver that stalls above it is a defect, not
  // a tolerance question (it also costs max_iter Newton steps per stalled object).
  EXPECT_EQ(sc.unconverged, 0) << "solve_objects cpu " << c.str();
  EXPECT_EQ(sg.unconverged, 0) << "solve_objects gpu " << c.str() << " (max |g|^2 " << sg.max_grad_sq
                               << ", max Newton steps " << sg.max_newton_steps << ")";
  EXPECT_LT(sg.max_grad_sq, opt.eps_r) << "solve_objects gpu " << c.str();

  EXPECT_TRUE(agree("solve_objects R", c, ec->objects().data, eg->objects().data,
                    [](double) { return kCoordAbs; }));
  double scale = 0;
  for (double v : gc) scale = std::max(scale, std::abs(v));
  const double grad_tol = kGradRel * (scale + 1.0);
  EXPECT_TRUE(agree("class gradient", c, gc, gg, [grad_tol](double) { return grad_tol; }));

  // The objective at the new R, which the L-BFGS line search compares with the sweep's.
  EXPECT_TRUE(agree_rel("objective after solve", c, ec->objective(d.phi), eg->objective(d.phi), kObjectiveRel));
}

// Same input, same bits: two sweeps on one engine from the same R, a second engine, and a sweep
// without the class gradient (which must not disturb R or the statistics).
TEST_P(PeParity, SameInputSameBits) {
  ORRERY_REQUIRE_CUDA();
  const Case c = GetParam();
  const Data d = make_data(c);
  auto gpu = make_cuda_backend(0);
  auto e1 = gpu->make_pe(d.P, d.lp, c.D, kEtaR);
  auto e2 = gpu->make_pe(d.P, d.lp, c.D, kEtaR);
  const PeNewtonOptions opt;

  e1->set_objects(d.R);
  const double o1 = e1->objective(d.phi);
  EXPECT_EQ(e1->objective(d.phi), o1) << "objective twice " << c.str();
  std::vector<double> g1, g2, g3;
  const PeSweep s1 = e1->solve_objects(d.phi, opt, &g1);
  const MatrixD r1 = e1->objects();

  e1->set_objects(d.R);
  const PeSweep s2 = e1->solve_objects(d.phi, opt, &g2);
  EXPECT_EQ(s2.objective, s1.objective) << "same engine " << c.str();
  EXPECT_EQ(s2.max_grad_sq, s1.max_grad_sq) << "same engine " << c.str();
  EXPECT_EQ(s2.newton_steps, s1.newton_steps) << "same engine " << c.str();
  EXPECT_EQ(g2, g1) << "class gradient, same engine " << c.str();
  EXPECT_EQ(e1->objects().data, r1.data) << "R, same engine " << c.str();

  e2->set_objects(d.R);
  EXPECT_EQ(e2->objective(d.phi), o1) << "objective, second engine " << c.str();
  const PeSweep s3 = e2->solve_objects(d.phi, opt, &g3);
  EXPECT_EQ(s3.objective, s1.objective) << "second engine " << c.str();
  EXPECT_EQ(g3, g1) << "class gradient, second engine " << c.str();
  EXPECT_EQ(e2->objects().data, r1.data) << "R, second engine " << c.str();

  e2->set_objects(d.R);
  const PeSweep s4 = e2->solve_objects(d.phi, opt, nullptr);
  EXPECT_EQ(s4.objective, s1.objective) << "without class gradient " << c.str();
  EXPECT_EQ(s4.unconverged, s1.unconverged) << "without class gradient " << c.str();
  EXPECT_EQ(s4.max_newton_steps, s1.max_newton_steps) << "without class gradient " << c.str();
  EXPECT_EQ(e2->objects().data, r1.data) << "R without class gradient " << c.str();
}

// R is stored as float on the device: what comes back is exactly the float rounding of what went in.
TEST_P(PeParity, ObjectsRoundTripWithinFloatRounding) {
  ORRERY_REQUIRE_CUDA();
  const Case c = GetParam();
  const Data d = make_data(c);
  auto gpu = make_cuda_backend(0);
  auto e = gpu->make_pe(d.P, d.lp, c.D, kEtaR);
  e->set_objects(d.R);
  const MatrixD back = e->objects();
  ASSERT_EQ(back.rows, d.R.rows) << c.str();
  ASSERT_EQ(back.cols, d.R.cols) << c.str();
  std::vector<double> rounded(d.R.data.size());
  for (size_t i = 0; i < rounded.size(); ++i) rounded[i] = static_cast<double>(static_cast<float>(d.R.data[i]));
  EXPECT_TRUE(agree("objects() round trip", c, rounded, back.data, [](double) { return 0.0; }));
}

INSTANTIATE_TEST_SUITE_P(Shapes, PeParity, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& param) {
                           const Case& c = param.param;
                           return "N" + std::to_string(c.N) + "_K" + std::to_string(c.K) + "_D" + std::to_string(c.D);
                         });

TEST(PeCudaFit, FullFitMatchesCpuFit) {
  ORRERY_REQUIRE_CUDA();
  const Data d = make_data(Case{3000, 8, 2, 99});
  auto cpu = make_cpu_backend(0);
  auto gpu = make_cuda_backend(0);
  PeParams prm;
  prm.max_iter = 200;
  const PeInput in{d.P, {}, {}};
  const PeResult rc = fit_pe(*cpu, in, prm, 1), rg = fit_pe(*gpu, in, prm, 1);
  // Float and double arithmetic can stop at slightly different iterates of a long fit; the final
  // objectives must still agree closely.
  EXPECT_NEAR(rg.objective, rc.objective, 1e-4 * std::abs(rc.objective)) << "fit_pe objective N=3000 K=8 D=2";
  EXPECT_TRUE(rg.objects_converged) << "fit_pe on the GPU ends with unconverged objects";
  const PeResult again = fit_pe(*gpu, in, prm, 1);
  EXPECT_EQ(again.object_coords.data, rg.object_coords.data) << "same seed, same device: same bits";
  EXPECT_EQ(again.class_coords.data, rg.class_coords.data) << "same seed, same device: same bits";
}

TEST(PeCudaErrors, MissingDeviceIndexIsAnError) {
  ORRERY_REQUIRE_CUDA();
  try {
    make_cuda_backend(1000);
    FAIL() << "make_cuda_backend(1000) returned a backend";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("1000"), std::string::npos) << "message names the index: " << e.what();
  }
}

// Runs only where there is no device: asking for one is a clear CUDA error, not a crash.
TEST(PeCudaErrors, NoDeviceIsAClearError) {
  if (!cuda_devices().empty()) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_FALSE(cuda_status().empty());
  try {
    make_cuda_backend(0);
    FAIL() << "make_cuda_backend(0) returned a backend without a device";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::cuda) << e.what();
    EXPECT_FALSE(std::string(e.what()).empty());
  }
}

}  // namespace
