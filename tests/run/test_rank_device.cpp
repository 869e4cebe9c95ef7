// Which device each rank of a run over several processes takes (orrery/backend.hpp: device_for_rank,
// make_backend over a Comm), and the share of its machine's memory it plans within
// (run/run_common.hpp: check_rank_memory).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/input_error.hpp"
#include "orrery/backend.hpp"
#include "orrery/comm.hpp"
#include "orrery/error.hpp"
#include "orrery/memory_plan.hpp"
#include "run/run_common.hpp"

namespace orrery {
namespace {

std::vector<DeviceInfo> gpus(const std::vector<int>& indices) {
  std::vector<DeviceInfo> out;
  for (int i : indices) {
    DeviceInfo d;
    d.index = i;
    out.push_back(d);
  }
  return out;
}

TEST(DeviceForRank, TheRanksOfANodeTakeItsGpusInTurn) {
  const auto two = gpus({0, 1});
  EXPECT_EQ(device_for_rank("cuda", 4, 0, two), "cuda:0");
  EXPECT_EQ(device_for_rank("cuda", 4, 1, two), "cuda:1");
  EXPECT_EQ(device_for_rank("cuda", 4, 2, two), "cuda:0");  // more ranks than GPUs: they share
  EXPECT_EQ(device_for_rank("auto", 4, 3, two), "cuda:1");
  // the GPUs this process sees, by their own indices (CUDA_VISIBLE_DEVICES may hide some)
  EXPECT_EQ(device_for_rank("cuda", 3, 1, gpus({2, 5, 7})), "cuda:5");
}

TEST(DeviceForRank, OneRankAnExplicitDeviceOrNoGpuKeepsTheDeviceAsGiven) {
  const auto two = gpus({0, 1});
  EXPECT_EQ(device_for_rank("cuda", 1, 0, two), "cuda");      // one process: make_backend's own choice
  EXPECT_EQ(device_for_rank("cuda:1", 4, 0, two), "cuda:1");  // every rank on GPU 1
  EXPECT_EQ(device_for_rank("cpu", 4, 3, two), "cpu");
  EXPECT_EQ(device_for_rank("auto", 4, 3, {}), "auto");  // the CPU
  EXPECT_EQ(device_for_rank("cuda", 4, 3, {}), "cuda");  // left for make_backend to refuse
}

TEST(DeviceForRank, OneProcessGetsTheBackendOfItsDevice) {
  const auto single = make_single_comm();
  EXPECT_EQ(single->node_rank(), 0);
  EXPECT_EQ(make_backend("cpu", 1, *single)->name(), make_backend("cpu", 1)->name());
}

TEST(DeviceForRank, RanksSharingAGpu) {
  const auto two = gpus({0, 1});
  EXPECT_EQ(ranks_sharing_device("cuda", 5, 0, two), 3);  // node ranks 0, 2, 4 on the first GPU
  EXPECT_EQ(ranks_sharing_device("auto", 5, 3, two), 2);  // 1 and 3 on the second
  EXPECT_EQ(ranks_sharing_device("cuda:1", 5, 3, two), 5);
  EXPECT_EQ(ranks_sharing_device("cuda", 1, 0, two), 1);
  EXPECT_EQ(ranks_sharing_device("cpu", 5, 3, two), 1);
  EXPECT_EQ(ranks_sharing_device("auto", 5, 3, {}), 1);
}

// Ranks of a launch that exist only to say where they are: no collective is called.
class PlacedComm final : public Comm {
 public:
  PlacedComm(int rank, int size, int node_size) : rank_(rank), size_(size), node_size_(node_size) {}
  std::string name() const override { return "placed"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int node_rank() const override { return rank_ % node_size_; }
  int node_size() const override { return node_size_; }
  void barrier() override { unused(); }
  [[noreturn]] void abort(int, const std::string&) override { unused(); }
  void allreduce(std::int64_t*, std::size_t, ReduceOp) override { unused(); }
  void allreduce(float*, std::size_t, ReduceOp) override { unused(); }
  void allreduce(double*, std::size_t, ReduceOp) override { unused(); }
  void bcast_bytes(void*, std::size_t, int) override { unused(); }
  void allgatherv_items(const void*, std::size_t, void*, const std::size_t*, std::size_t) override { unused(); }
  void alltoallv_items(const void*, const std::size_t*, void*, const std::size_t*, std::size_t) override { unused(); }

 private:
  [[noreturn]] static void unused() { internal_error("PlacedComm: no collective in a memory check"); }
  int rank_, size_, node_size_;
};

TEST(RankMemory, RanksOnOneMachinePlanWithinTheirShareAndARefusalNamesTheRank) {
  constexpr double GiB = 1024.0 * 1024.0 * 1024.0;
  MemoryPlan plan;
  MemoryItem big;
  big.what = "dense affinities";
  big.key = "input.affinities";
  big.remedy = "use \"sparse\"";
  big.host_bytes = 3 * GiB;
  plan.add(big);
  const MemoryInfo mem{8 * GiB, 0.0};
  pipeline::RunConfig run;
  run.device = "cpu";
  EXPECT_NO_THROW(pipeline::check_rank_memory(plan, mem, false, run));  // one process: all 8 GiB
  PlacedComm two_nodes(1, 4, 2);  // 4 ranks, 2 a machine: 4 GiB each
  run.comm = &two_nodes;
  EXPECT_NO_THROW(pipeline::check_rank_memory(plan, mem, false, run));
  PlacedComm one_node(1, 4, 4);  // 4 ranks on one machine: 2 GiB each, short of 3
  run.comm = &one_node;
  const std::string m = test::input_error_of([&] { pipeline::check_rank_memory(plan, mem, false, run); });
  for (const char* part : {"input.affinities", "rank 1 of 4", "4 ranks on its machine", "1/4", "2.00 GiB is available"})
    EXPECT_NE(m.find(part), std::string::npos) << part << "\n" << m;
}

}  // namespace
}  // namespace orrery
