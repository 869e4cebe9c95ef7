// The parity test every registered case runs through: the CPU reference against CUDA device 0,
// then the guard bytes around every device buffer (no kernel wrote past its output).
#include "parity.hpp"

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
  EXPECT_EQ(orrery::device_guard_violations(), "") << check.where();
}

// Every registered case, run with the CPU reference on both sides (all threads against one): the
// CPU engines promise the same bits for any thread count, so every comparison must pass; and it
// keeps the registry's own code exercised where no GPU is present.
TEST(ParityCasesOnTheCpu, OneThreadAgreesWithMany) {
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
      orrery::test::ParityCheck check("cpu " + c.family + "/" + c.name);
      c.run(*many, *one, check);
      EXPECT_GT(check.comparisons(), 0) << check.where();
    }
}
