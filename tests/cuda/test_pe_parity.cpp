// CudaBackend against CpuBackend for PE's primitives on the same input, through the parity harness
// (tests/cuda/parity.hpp). The GPU computes in float and reduces in double; the CPU is double
// throughout. The tolerances (pe.*) are float round-off scaled by the size of the sums involved,
// named with their reasons in host/report/parity.cpp. Only the public API is used, so this file
// builds (and skips) in a build without CUDA too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <sstream>

#include "common/require_cuda.hpp"
#include "orrery/backend.hpp"
#include "orrery/engines.hpp"
#include "orrery/error.hpp"
#include "orrery/exact_sum.hpp"
#include "orrery/pe.hpp"
#include "large.hpp"
#include "parity.hpp"

using namespace orrery;

namespace {

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
  // Large: 2^17 + 3 objects (every object's Newton solve is O(K), so the CPU side stays cheap).
  out.push_back(Case{test::kLargeN, 10, 2, seed++});
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

// One case: every PE primitive from the same state, then the device's own determinism.
void run_case(const Case& c, Backend& cpu, Backend& gpu, test::ParityCheck& check) {
  const Data d = make_data(c);
  auto ec = cpu.make_pe(d.P, d.lp, c.D, kEtaR);
  auto eg = gpu.make_pe(d.P, d.lp, c.D, kEtaR);
  check.add(compare_pe_engines(*ec, *eg, d.R, d.phi));
  const PeNewtonOptions opt;

  // Same input, same bits: two sweeps on one engine from the same R, a second engine, and a sweep
  // without the class gradient (which must not disturb R or the statistics).
  auto e2 = gpu.make_pe(d.P, d.lp, c.D, kEtaR);
  eg->set_objects(d.R);
  const double o1 = eg->objective(d.phi);
  EXPECT_EQ(eg->objective(d.phi), o1) << "objective twice " << c.str();
  std::vector<double> g1, g2, g3;
  const PeSweep s1 = eg->solve_objects(d.phi, opt, &g1);
  const MatrixD r1 = eg->objects();
  // Every object reaches eps_r: a float solver that stalls above it is a defect, not a tolerance
  // question (it also costs max_iter Newton steps per stalled object).
  EXPECT_EQ(s1.unconverged, 0) << check.where() << " (max Newton steps " << s1.max_newton_steps << ")";
  EXPECT_LT(s1.max_grad_sq, opt.eps_r) << check.where();
  eg->set_objects(d.R);
  const PeSweep s2 = eg->solve_objects(d.phi, opt, &g2);
  EXPECT_EQ(s2.objective, s1.objective) << "same engine " << c.str();
  EXPECT_EQ(s2.max_grad_sq, s1.max_grad_sq) << "same engine " << c.str();
  EXPECT_EQ(s2.newton_steps, s1.newton_steps) << "same engine " << c.str();
  EXPECT_EQ(g2, g1) << "class gradient, same engine " << c.str();
  EXPECT_EQ(eg->objects().data, r1.data) << "R, same engine " << c.str();
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

}  // namespace

std::vector<test::ParityCase> test::pe_parity_cases() {
  std::vector<test::ParityCase> out;
  for (const Case& c : cases())
    out.push_back({"pe", "N" + std::to_string(c.N) + "_K" + std::to_string(c.K) + "_D" + std::to_string(c.D),
                   [c](Backend& cpu, Backend& gpu, test::ParityCheck& check) { run_case(c, cpu, gpu, check); }});
  return out;
}

INSTANTIATE_PARITY(Pe, test::pe_parity_cases());

namespace {

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
  test::ParityCheck("pe/fit N3000_K8_D2").agree("fit_pe objective", "pe.fit_objective", rc.objective, rg.objective);
  EXPECT_TRUE(rg.objects_converged) << "fit_pe on the GPU ends with unconverged objects";
  const PeResult again = fit_pe(*gpu, in, prm, 1);
  EXPECT_EQ(again.object_coords.data, rg.object_coords.data) << "same seed, same device: same bits";
  EXPECT_EQ(again.class_coords.data, rg.class_coords.data) << "same seed, same device: same bits";
}

// The CUDA engine's exact sums (what fit_pe adds over ranks) are its chunks' sums, so engines over
// chunk-aligned blocks of the objects give, merged, the whole engine's sums bit for bit, and the
// same objects: what lets G ranks on GPUs give the one-GPU map (tests/comm/mpi/pe_ranks.sh with
// PE_RANKS_DEVICE=cuda:0 checks the whole run).
TEST(PeCudaFit, ChunkSumsDoNotDependOnTheSplit) {
  ORRERY_REQUIRE_CUDA();
  const Case c{5000, 12, 2, 7};
  const Data d = make_data(c);
  auto gpu = make_cuda_backend(0);
  PeNewtonOptions opt;
  const size_t kd = static_cast<size_t>(c.K * c.D);
  const auto rows = [&](const MatrixD& M, index_t a, index_t b) {
    MatrixD out(b - a, M.cols);
    std::copy(M.data.begin() + a * M.cols, M.data.begin() + b * M.cols, out.data.begin());
    return out;
  };
  ExactSum whole(kd + 1), split(kd + 1);
  auto all = gpu->make_pe(d.P, d.lp, c.D, kEtaR);
  all->set_objects(d.R);
  all->solve_objects_exact(d.phi, opt, whole);
  std::vector<double> objects;
  const index_t edges[] = {0, kPeChunk, 4 * kPeChunk, c.N};  // 1,024, 3,072 and 904 objects
  for (int b = 0; b < 3; ++b) {
    auto part = gpu->make_pe(rows(d.P, edges[b], edges[b + 1]), d.lp, c.D, kEtaR);
    part->set_objects(rows(d.R, edges[b], edges[b + 1]));
    ExactSum mine(kd + 1);
    part->solve_objects_exact(d.phi, opt, mine);
    split.merge(mine);
    const MatrixD r = part->objects();
    objects.insert(objects.end(), r.data.begin(), r.data.end());
  }
  std::vector<double> a(kd + 1), b(kd + 1);
  whole.results(a.data());
  split.results(b.data());
  EXPECT_EQ(a, b) << "class gradient and objective: three blocks against the whole";
  EXPECT_EQ(objects, all->objects().data) << "objects: three blocks against the whole";
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
