// What a backend says about its device, which plans and benchmarks rely on: memory() (what can still
// be allocated, DESIGN.md's memory plan) and copy_bandwidth() (the bytes/s benchmarks relate their
// passes to); and the parity tolerances that depend on how this library was built.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/require_cuda.hpp"
#include "cpu/fft.hpp"
#include "orrery/backend.hpp"
#include "orrery/parity.hpp"

using namespace orrery;

namespace {

// A copy's bytes read plus written per second, measured on 64 MiB: far above a disk's and below any
// memory's (an H200's HBM is 4.8e12 B/s; 1e14 leaves room for caches on a CPU and future cards).
constexpr size_t kCopyBytes = size_t(64) << 20;
constexpr double kBandwidthAbove = 1e8, kBandwidthBelow = 1e14;

}  // namespace

TEST(DeviceMemory, TheCardsFreeBytesAndTheHostsAndACopysBandwidth) {
  ORRERY_REQUIRE_CUDA();
  const std::vector<DeviceInfo> devices = cuda_devices();
  ASSERT_FALSE(devices.empty());
  auto gpu = make_cuda_backend(0);
  const MemoryInfo m = gpu->memory();
  const double total = devices[0].memory_gib * 1024.0 * 1024.0 * 1024.0;
  EXPECT_GT(m.device_bytes, 0.0) << gpu->name();
  EXPECT_LE(m.device_bytes, total * (1 + 1e-12)) << gpu->name() << ": free bytes above the card's total " << total;
  EXPECT_GT(m.host_bytes, 0.0) << gpu->name();
  const double bw = gpu->copy_bandwidth(kCopyBytes);
  EXPECT_TRUE(std::isfinite(bw)) << bw;
  EXPECT_GT(bw, kBandwidthAbove) << gpu->name();
  EXPECT_LT(bw, kBandwidthBelow) << gpu->name();
}

TEST(DeviceMemory, TheCpuHasNoDeviceBytesAndAFiniteBandwidth) {
  auto cpu = make_cpu_backend(0);
  const MemoryInfo m = cpu->memory();
  EXPECT_EQ(m.device_bytes, 0.0);
  EXPECT_GT(m.host_bytes, 0.0);
  const double bw = cpu->copy_bandwidth(kCopyBytes);
  EXPECT_TRUE(std::isfinite(bw)) << bw;
  EXPECT_GT(bw, kBandwidthAbove);
  EXPECT_LT(bw, kBandwidthBelow);
}

// Every tolerance has a unique name and a reason; the grid's follow the CPU's FFT library: double
// FFTW agrees with cuFFT to 1e-10 of the largest entry, float KISS FFT only to float rounding, and
// a kissfft build's gpu suite would fail its grid cases under the FFTW bound.
TEST(ParityTolerances, NamedWithReasonsAndTheGridsFollowTheCpuFft) {
  std::vector<std::string> names;
  for (const Tolerance& t : tolerances()) {
    EXPECT_GT(std::string(t.reason).size(), 20u) << t.name;
    for (const std::string& n : names) EXPECT_NE(n, t.name);
    names.emplace_back(t.name);
    EXPECT_GE(t.rel, 0.0) << t.name;
    EXPECT_GE(t.abs, 0.0) << t.name;
    EXPECT_GE(t.scaled, 0.0) << t.name;
  }
  const bool fftw = std::string(cpu::RealRows::library()) == "fftw3";
  const Tolerance& grid = tolerance("hssne.grid");
  EXPECT_EQ(grid.scaled, fftw ? 1e-10 : 1e-5) << cpu::RealRows::library();
  EXPECT_NE(std::string(grid.reason).find(fftw ? "FFTW" : "KISS"), std::string::npos) << grid.reason;
  EXPECT_LT(tolerance("place.cost").abs, fftw ? 1e-6 : 1e-3);
  // a float FFT's grid sums, 1e-6 of the largest entry off, pass only the float bound
  const std::vector<double> cpu_sums = {1.0, 0.5, 0.25}, float_fft = {1.0 + 1e-6, 0.5, 0.25};
  EXPECT_EQ(compare(cpu_sums, float_fft, grid).ok(), !fftw);
}
