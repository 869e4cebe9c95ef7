// The parity test every registered case runs through: the CPU reference against CUDA device 0 (the
// guard bytes around every device buffer are checked after every test, guard_bytes.cpp).
#include "parity.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/require_cuda.hpp"
#include "orrery/backend.hpp"

TEST_P(Parity, AgreesWithTheCpu) {
  ORRERY_REQUIRE_CUDA();
  const orrery::test::ParityCase& c = GetParam();
  auto cpu = orrery::make_cpu_backend(0);
  auto gpu = orrery::make_cuda_backend(0);
  orrery::test::ParityCheck check(c.family + "/" + c.name);
  c.run(*cpu, *gpu, check);
  EXPECT_GT(check.comparisons(), 0) << check.where() << ": a case that compares nothing";
}

// Every registered case, run with the CPU reference on both sides (all threads against one): the
// CPU engines promise the same bits for any thread count, so every comparison must pass; and it
// keeps the registry's own code exercised where no GPU is present. The cases marked large run an
// O(N^2) primitive at N >= 2^17 on their device side (a neighbor search, all pairs): minutes on one
// CPU thread, so they are left out (each has a small-N twin here); ORRERY_PARITY_LARGE_ON_CPU=1 runs
// them too, to check their own code once.
TEST(ParityCasesOnTheCpu, OneThreadAgreesWithMany) {
  const char* large_env = std::getenv("ORRERY_PARITY_LARGE_ON_CPU");
  const bool large = large_env && std::string(large_env) == "1";
  auto many = orrery::make_cpu_backend(0);
  auto one = orrery::make_cpu_backend(1);
  using orrery::test::ParityCase;
  for (const auto& family :
       {orrery::test::pe_parity_cases(), orrery::test::hssne_parity_cases(), orrery::test::knn_parity_cases(),
        orrery::test::knn_gemm_parity_cases(),
        orrery::test::place_parity_cases(),
        orrery::test::nerv_parity_cases(), orrery::test::plsv_parity_cases(), orrery::test::quality_parity_cases(),
        orrery::test::snerv_parity_cases()})
    for (const ParityCase& c : family) {
      if (c.large && !large) continue;
      orrery::test::ParityCheck check("cpu " + c.family + "/" + c.name);
      const auto t0 = std::chrono::steady_clock::now();
      c.run(*many, *one, check);
      EXPECT_GT(check.comparisons(), 0) << check.where();
      // A case this run takes long over is named: each must stay at a few seconds here.
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (seconds > 3.0) std::printf("  %s: %.1f s\n", check.where().c_str(), seconds);
    }
}
