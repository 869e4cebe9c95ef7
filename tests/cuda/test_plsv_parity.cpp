// PLSV's CUDA engine against the CPU engine on the same corpus and state, through the parity
// harness: E-step sums, theta M-step, Newton solves with the topic gradient, relocation, and a few
// whole EM iterations. Tolerances (plsv.*): the device stores X, theta, P and R / M in float
// (relative rounding 6e-8) and sums per document or word in float or double; 1e-4 relative covers a
// few hundred float operations per value, far below the changes a wrong index or formula makes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "common/require_cuda.hpp"
#include "orrery/backend.hpp"
#include "orrery/parity.hpp"
#include "orrery/plsv.hpp"
#include "large.hpp"
#include "parity.hpp"

using namespace orrery;

namespace {

struct Case {
  index_t N, W;
  int Z, D;
  std::string name() const {
    return "N" + std::to_string(N) + "_W" + std::to_string(W) + "_Z" + std::to_string(Z) + "_D" + std::to_string(D);
  }
};

// Every engine step from the same state: E-step sums, theta M-step, Newton solves with the topic
// gradient, relocation.
void engine_steps(const Case& k, Backend& cpu, Backend& gpu, test::ParityCheck& check) {
  const auto planted = sample_plsv_corpus(k.N, k.W, k.Z, k.D, 35, 100 + k.Z);
  auto ec = cpu.make_plsv(planted.corpus, k.Z, k.D);
  auto eg = gpu.make_plsv(planted.corpus, k.Z, k.D);
  std::mt19937_64 rng(5);
  std::normal_distribution<double> z(0.0, 1.0);
  MatrixD X(k.N, k.D);
  for (double& v : X.data) v = z(rng);
  // Start from float-representable values so both engines see the same state.
  for (double& v : X.data) v = static_cast<float>(v);
  // The planted theta has words of probability down to 1e-300, which float holds as 0 (log -inf on
  // the device); an EM theta never comes near (alpha > 0), so they are floored at 1e-30.
  MatrixD theta = planted.model.theta;
  for (double& v : theta.data) v = static_cast<float>(std::max(v, 1e-30));
  std::vector<double> phi = planted.model.topic_coords.data;
  for (double& v : phi) v = static_cast<float>(v);
  check.add(compare_plsv_engines(*ec, *eg, X, theta, phi, 0.01, 0.1 * k.Z));
}

// A few whole EM iterations from the same start, and the device's repeatability. The start is the
// seeded random one, made on the host: the default start ("documents") is a 200-iteration PE fit on
// the backend, whose float and double L-BFGS paths part by more than a few EM iterations' rounding
// (measured on an H200: 2e-2 relative in the first log posterior), and the PE fit has its own
// parity checks (PeCudaFit).
void em_iterations(const Case& k, Backend& cpu, Backend& gpu, test::ParityCheck& check) {
  const auto planted = sample_plsv_corpus(k.N, k.W, k.Z, k.D, 35, 200 + k.Z);
  PlsvParams prm;
  prm.topics = k.Z;
  prm.dim = k.D;
  prm.init = PlsvInit::random;
  prm.max_iter = 5;
  // Every iteration runs on both: tol 0 would stop one side at the first decrease of the log
  // posterior, which float rounding of a near-flat step can give on the device (measured on an H200)
  // and not on the CPU; the trace, not the stopping decision, is compared here.
  prm.tol = -std::numeric_limits<double>::infinity();
  prm.relocate_every = 0;
  // Plain EM steps: whether a SQUAREM jump is kept compares two log posteriors that can differ by
  // less than float's rounding (measured on an H200: the device dropped a jump the CPU kept); the
  // jump is host code, the same for both engines, tested on the CPU.
  prm.extrapolation = PlsvExtrapolation::none;
  const PlsvResult rc = fit_plsv(cpu, planted.corpus, prm, 3), rg = fit_plsv(gpu, planted.corpus, prm, 3);
  std::vector<double> lc, lg;
  for (const auto& e : rc.trace) lc.push_back(e.log_posterior);
  for (const auto& e : rg.trace) lg.push_back(e.log_posterior);
  check.agree("log posterior per EM iteration", "plsv.em_trace", lc, lg);
  const PlsvResult again = fit_plsv(gpu, planted.corpus, prm, 3);
  EXPECT_EQ(again.doc_coords.data, rg.doc_coords.data) << check.where() << ": same seed, same device: same bits";
}

}  // namespace

std::vector<test::ParityCase> test::plsv_parity_cases() {
  std::vector<test::ParityCase> out;
  for (const Case& k : {Case{300, 200, 5, 2}, Case{1000, 500, 50, 2}, Case{700, 300, 37, 3}, Case{257, 100, 256, 2}}) {
    out.push_back({"plsv", "engine_" + k.name(),
                   [k](Backend& cpu, Backend& gpu, test::ParityCheck& check) { engine_steps(k, cpu, gpu, check); }});
    out.push_back({"plsv", "em_" + k.name(),
                   [k](Backend& cpu, Backend& gpu, test::ParityCheck& check) { em_iterations(k, cpu, gpu, check); }});
  }
  // Large: 2^17 + 3 documents (the engine's work is O(nnz x Z) on both sides).
  const Case large{test::kLargeN, 200, 8, 2};
  out.push_back({"plsv", "engine_" + large.name(),
                 [large](Backend& cpu, Backend& gpu, test::ParityCheck& check) { engine_steps(large, cpu, gpu, check); }});
  return out;
}

INSTANTIATE_PARITY(Plsv, test::plsv_parity_cases());
