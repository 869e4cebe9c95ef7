// The single-process communicator's collectives (exact values: each is a copy or nothing), its
// argument checks, abort, make_comm's modes and the launcher detection behind "auto".
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "comm/comm_backends.hpp"
#include "common/input_error.hpp"
#include "orrery/comm.hpp"
#include "orrery/error.hpp"
#include "orrery/exact_sum.hpp"

namespace {

using orrery::ReduceOp;

// The message of the orrery::Error of kind `kind` that f throws.
std::string error_of(orrery::ErrorKind kind, const std::function<void()>& f) {
  try {
    f();
  } catch (const orrery::Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected an orrery::Error";
  return "";
}

orrery::comm::Launch launch_from(const std::map<std::string, std::string>& env) {
  return orrery::comm::detect_launch([&](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

struct Pair {
  int a;
  double b;
};

}  // namespace

TEST(CommSingle, IsRankZeroOfOne) {
  const auto comm = orrery::make_single_comm();
  EXPECT_EQ(comm->name(), "single");
  EXPECT_EQ(comm->rank(), 0);
  EXPECT_EQ(comm->size(), 1);
  comm->barrier();
}

TEST(CommSingle, ReductionsOfOneRankAreTheValues) {
  const auto comm = orrery::make_single_comm();
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::min, ReduceOp::max}) {
    std::vector<std::int64_t> i = {-5, 0, std::int64_t{1} << 62};
    std::vector<float> f = {-1.5f, 0.25f, 3e38f};
    std::vector<double> d = {-1e300, 0.1, 7.0};
    comm->allreduce(i.data(), i.size(), op);
    comm->allreduce(f.data(), f.size(), op);
    comm->allreduce(d.data(), d.size(), op);
    EXPECT_EQ(i, (std::vector<std::int64_t>{-5, 0, std::int64_t{1} << 62}));
    EXPECT_EQ(f, (std::vector<float>{-1.5f, 0.25f, 3e38f}));
    EXPECT_EQ(d, (std::vector<double>{-1e300, 0.1, 7.0}));
  }
}

TEST(CommSingle, BroadcastFromRankZeroKeepsTheDataAndOtherRootsAreErrors) {
  const auto comm = orrery::make_single_comm();
  std::vector<Pair> p = {{1, 2.5}, {-3, 4.0}};
  comm->bcast(p.data(), p.size(), 0);
  EXPECT_EQ(p[1].a, -3);
  EXPECT_EQ(p[1].b, 4.0);
  const auto what = error_of(orrery::ErrorKind::internal, [&] { comm->bcast(p.data(), p.size(), 1); });
  EXPECT_NE(what.find("root 1 is not a rank of 1"), std::string::npos) << what;
}

TEST(CommSingle, AllgathervIsACopy) {
  const auto comm = orrery::make_single_comm();
  const std::vector<Pair> mine = {{7, 0.5}, {8, -0.5}, {9, 1e-300}};
  std::vector<std::size_t> counts;
  const auto all = comm->allgatherv(mine.data(), mine.size(), &counts);
  EXPECT_EQ(counts, (std::vector<std::size_t>{3}));
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[2].a, 9);
  EXPECT_EQ(all[2].b, 1e-300);
  EXPECT_TRUE(comm->allgatherv(mine.data(), 0).empty());  // nothing to gather
  std::vector<Pair> out(3);
  comm->allgatherv(mine.data(), 3, out.data(), {3});
  EXPECT_EQ(out[0].a, 7);
  error_of(orrery::ErrorKind::internal, [&] { comm->allgatherv(mine.data(), 3, out.data(), {2}); });
  error_of(orrery::ErrorKind::internal, [&] { comm->allgatherv(mine.data(), 3, out.data(), {3, 0}); });
}

TEST(CommSingle, AlltoallvSendsToItself) {
  const auto comm = orrery::make_single_comm();
  const std::vector<double> send = {1.0, -2.0, 3.5};
  std::vector<std::size_t> from;
  EXPECT_EQ(comm->alltoallv(send.data(), {3}, &from), send);
  EXPECT_EQ(from, (std::vector<std::size_t>{3}));
  std::vector<double> recv(3);
  comm->alltoallv(send.data(), {3}, recv.data(), {3});
  EXPECT_EQ(recv, send);
  EXPECT_TRUE(comm->alltoallv(send.data(), {0}).empty());
  const auto what = error_of(orrery::ErrorKind::internal, [&] { comm->alltoallv(send.data(), {3}, recv.data(), {2}); });
  EXPECT_NE(what.find("sends itself 3 items but expects 2"), std::string::npos) << what;
  error_of(orrery::ErrorKind::internal, [&] { comm->alltoallv(send.data(), {3, 0}); });
}

TEST(CommSingle, ExactAllreduceSumIsTheCorrectlyRoundedValue) {
  const auto comm = orrery::make_single_comm();
  std::vector<double> v = {0.1, -1e300, 5e-324};
  orrery::exact_allreduce_sum(*comm, v.data(), v.data(), v.size());  // in place
  EXPECT_EQ(v, (std::vector<double>{0.1, -1e300, 5e-324}));
}

TEST(CommSingleDeathTest, AbortEndsTheProcessWithItsCodeAndMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(orrery::make_single_comm()->abort(3, "deliberate"), testing::ExitedWithCode(3),
              "rank 0 of 1 aborts: deliberate");
}

TEST(CommMake, SingleAndAnUnknownMode) {
  EXPECT_EQ(orrery::make_comm("single")->name(), "single");
  const auto what = orrery::test::input_error_of([] { orrery::make_comm("mpich"); });
  EXPECT_NE(what.find("comm: expected \"auto\", \"single\" or \"mpi\", found \"mpich\""), std::string::npos) << what;
}

TEST(CommMake, MpiWithoutMpiIsAnInputError) {
  if (orrery::mpi_comm_built()) GTEST_SKIP() << "built with MPI: \"mpi\" is tested under the launcher (label mpi)";
  const auto no_mpi = orrery::test::input_error_of([] { orrery::make_comm("mpi"); });
  EXPECT_NE(no_mpi.find("comm: \"mpi\" requested, but this orrery was built without MPI"), std::string::npos) << no_mpi;
}

TEST(CommMake, AutoIsSingleWithoutALauncher) {
  if (launch_from({}).by_launcher) FAIL();  // the detection itself
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS", "PMIX_RANK"})
    if (std::getenv(v)) GTEST_SKIP() << v << " is set: this test process was started by a launcher";
  EXPECT_EQ(orrery::make_comm("auto")->name(), "single");
}

TEST(CommMake, AutoWithoutMpiRefusesALaunchOfSeveralProcesses) {
  if (orrery::mpi_comm_built()) GTEST_SKIP() << "built with MPI: \"auto\" under a launcher is tested there (label mpi)";
  if (std::getenv("OMPI_COMM_WORLD_SIZE")) GTEST_SKIP() << "OMPI_COMM_WORLD_SIZE is set already";
  setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
  const auto what = orrery::test::input_error_of([] { orrery::make_comm("auto"); });
  setenv("OMPI_COMM_WORLD_SIZE", "1", 1);
  EXPECT_EQ(orrery::make_comm("auto")->name(), "single");  // one process: nothing to refuse
  unsetenv("OMPI_COMM_WORLD_SIZE");
  EXPECT_NE(what.find("3 processes (OMPI_COMM_WORLD_SIZE=3)"), std::string::npos) << what;
}

TEST(CommMake, LaunchersAreRecognisedByTheirVariables) {
  EXPECT_FALSE(launch_from({{"SLURM_NTASKS", "4"}, {"SLURM_JOB_ID", "12"}}).by_launcher);  // a batch script
  const auto ompi = launch_from({{"OMPI_COMM_WORLD_SIZE", "4"}});
  EXPECT_TRUE(ompi.by_launcher);
  EXPECT_EQ(ompi.size, 4);
  EXPECT_EQ(launch_from({{"PMI_SIZE", "2"}}).size, 2);
  EXPECT_EQ(launch_from({{"SLURM_STEP_NUM_TASKS", "8"}, {"SLURM_NTASKS", "8"}}).size, 8);
  const auto pmix = launch_from({{"PMIX_RANK", "0"}});
  EXPECT_TRUE(pmix.by_launcher);
  EXPECT_EQ(pmix.size, 1);  // PMIx does not say how many
  EXPECT_EQ(launch_from({{"PMI_SIZE", "many"}}).size, 1);
  EXPECT_FALSE(launch_from({{"PMI_SIZE", ""}}).by_launcher);
}
