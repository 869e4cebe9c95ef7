// CudaBackend against CpuBackend for PE's primitives on the same input. The GPU computes in float
// and reduces in double; the CPU is double throughout. Tolerances below are float round-off
// scaled by the size of the sums involved, named per primitive.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <sstream>

#include "common/require_cuda.hpp"
#include "orrery/backend.hpp"
#include "orrery/pe.hpp"

using namespace orrery;

namespace {

// Relative error allowed per primitive (float has ~6e-8 unit round-off; per-object sums over K
// terms and Newton iterations amplify it to ~1e-5 of the quantity's scale).
constexpr double kObjectiveRel = 1e-5;   // sum of N float per-object objectives, reduced in double
constexpr double kCoordAbs = 2e-3;       // r_n after Newton to eps_r = 1e-8 (|g| < 1e-4, H >= 0.2)
constexpr double kGradRel = 2e-4;        // class gradient: sums of N float forces that cancel

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
  // extreme rows: all mass on one class, and an object far from every class
  for (int k = 0; k < c.K; ++k) d.P(0, k) = k == 0 ? 1.0 : 0.0;
  if (c.N > 1)
    for (int dd = 0; dd < c.D; ++dd) d.R(1, dd) = 300.0;
  return d;
}

bool finite_mismatch(double a, double b) { return std::isfinite(a) != std::isfinite(b); }

class PeParity : public ::testing::TestWithParam<Case> {};

TEST_P(PeParity, ObjectiveSolveAndClassGradientMatchCpu) {
  ORRERY_REQUIRE_CUDA();
  const Case c = GetParam();
  const Data d = make_data(c);
  auto cpu = make_cpu_backend(0);
  auto gpu = make_cuda_backend(0);
  auto ec = cpu->make_pe(d.P, d.lp, c.D, 0.1);
  auto eg = gpu->make_pe(d.P, d.lp, c.D, 0.1);
  ec->set_objects(d.R);
  eg->set_objects(d.R);

  const double oc = ec->objective(d.phi), og = eg->objective(d.phi);
  ASSERT_FALSE(finite_mismatch(oc, og)) << "objective " << c.str() << " cpu " << oc << " gpu " << og;
  EXPECT_NEAR(og, oc, kObjectiveRel * std::abs(oc)) << "objective " << c.str();

  PeNewtonOptions opt;
  std::vector<double> gc, gg;
  const PeSweep sc = ec->solve_objects(d.phi, opt, &gc);
  const PeSweep sg = eg->solve_objects(d.phi, opt, &gg);
  EXPECT_NEAR(sg.objective, sc.objective, kObjectiveRel * std::abs(sc.objective)) << "solve objective " << c.str();
  EXPECT_EQ(sg.unconverged, 0) << "solve " << c.str();
  const MatrixD rc = ec->objects(), rg = eg->objects();
  for (size_t i = 0; i < rc.data.size(); ++i) {
    ASSERT_FALSE(finite_mismatch(rc.data[i], rg.data[i])) << "R " << c.str() << " index " << i;
    ASSERT_NEAR(rg.data[i], rc.data[i], kCoordAbs) << "R " << c.str() << " index " << i;
  }
  double scale = 0;
  for (double v : gc) scale = std::max(scale, std::abs(v));
  ASSERT_EQ(gc.size(), gg.size());
  for (size_t i = 0; i < gc.size(); ++i)
    ASSERT_NEAR(gg[i], gc[i], kGradRel * (scale + 1.0)) << "class gradient " << c.str() << " index " << i;
}

TEST_P(PeParity, SameInputSameBits) {
  ORRERY_REQUIRE_CUDA();
  const Case c = GetParam();
  const Data d = make_data(c);
  auto gpu = make_cuda_backend(0);
  std::vector<double> g1, g2;
  auto e1 = gpu->make_pe(d.P, d.lp, c.D, 0.1);
  auto e2 = gpu->make_pe(d.P, d.lp, c.D, 0.1);
  e1->set_objects(d.R);
  e2->set_objects(d.R);
  const PeSweep s1 = e1->solve_objects(d.phi, PeNewtonOptions{}, &g1);
  const PeSweep s2 = e2->solve_objects(d.phi, PeNewtonOptions{}, &g2);
  EXPECT_EQ(s1.objective, s2.objective) << c.str();
  EXPECT_EQ(g1, g2) << c.str();
  EXPECT_EQ(e1->objects().data, e2->objects().data) << c.str();
}

TEST_P(PeParity, ObjectsRoundTripWithinFloatRounding) {
  ORRERY_REQUIRE_CUDA();
  const Case c = GetParam();
  const Data d = make_data(c);
  auto gpu = make_cuda_backend(0);
  auto e = gpu->make_pe(d.P, d.lp, c.D, 0.1);
  e->set_objects(d.R);
  const MatrixD back = e->objects();
  for (size_t i = 0; i < back.data.size(); ++i)
    EXPECT_EQ(back.data[i], static_cast<double>(static_cast<float>(d.R.data[i]))) << c.str() << " index " << i;
}

INSTANTIATE_TEST_SUITE_P(Shapes, PeParity,
                         ::testing::Values(Case{1, 2, 2, 1}, Case{37, 10, 2, 2}, Case{37, 10, 3, 3},
                                           Case{5000, 10, 2, 4}, Case{5000, 300, 3, 5}, Case{700, 3000, 3, 6}),
                         [](const ::testing::TestParamInfo<Case>& param) {
                           const Case& c = param.param;
                           return "N" + std::to_string(c.N) + "_K" + std::to_string(c.K) + "_D" + std::to_string(c.D);
                         });

TEST(PeCudaFit, FullFitMatchesCpuFit) {
  ORRERY_REQUIRE_CUDA();
  const Data d = make_data(Case{3000, 8, 2, 9});
  auto cpu = make_cpu_backend(0);
  auto gpu = make_cuda_backend(0);
  PeParams prm;
  prm.max_iter = 200;
  const PeInput in{d.P, {}, {}};
  const PeResult rc = fit_pe(*cpu, in, prm, 1), rg = fit_pe(*gpu, in, prm, 1);
  // Different arithmetic (float vs double) can stop at slightly different iterates; the objective
  // at the end must agree closely, as must the map (checked by the objective of each map).
  EXPECT_NEAR(rg.objective, rc.objective, 1e-4 * std::abs(rc.objective));
  const PeResult again = fit_pe(*gpu, in, prm, 1);
  EXPECT_EQ(again.object_coords.data, rg.object_coords.data) << "same seed, same device: same bits";
}

TEST(PeCudaErrors, MissingDeviceIndexIsAnError) {
  ORRERY_REQUIRE_CUDA();
  EXPECT_THROW(make_cuda_backend(1000), Error);
}

}  // namespace
