// Which device each rank of a run over several processes takes (orrery/backend.hpp: device_for_rank,
// make_backend over a Comm).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "orrery/backend.hpp"
#include "orrery/comm.hpp"

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

}  // namespace
}  // namespace orrery
