// The parity harness (in the spirit of ggml's test-backend-ops): a registry of cases, each a
// family's primitive on one input (size, seed, extreme rows), run on the CPU reference and on a
// device; every output compared by the library's comparison (orrery/parity.hpp) under a named
// tolerance with its reason. A failure names the family, the case, the output, the first failing
// index with both values, the worst relative error and the NMSE; a NaN or a one-sided infinity from
// either side fails. Device buffers carry guard bytes in the gpu suite (ORRERY_GUARD_BUFFERS=1, set
// by CMake), and after every test of the suite a listener (tests/cuda/guard_bytes.cpp) checks that no
// kernel wrote past its output.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "orrery/backend.hpp"
#include "orrery/parity.hpp"

namespace orrery::test {

// The comparisons of one case.
class ParityCheck {
 public:
  explicit ParityCheck(std::string where) : where_(std::move(where)) {}

  // Every entry of `output` within the named tolerance (scale: see orrery::compare).
  void agree(const std::string& output, const std::string& tolerance_name, const std::vector<double>& cpu,
             const std::vector<double>& device, double scale = -1.0) {
    const Agreement a = compare(cpu, device, tolerance(tolerance_name), scale);
    ++comparisons_;
    if (!a.ok()) ADD_FAILURE() << a.describe(where_ + ": " + output + " [" + tolerance_name + "]");
  }
  void agree(const std::string& output, const std::string& tolerance_name, double cpu, double device,
             double scale = -1.0) {
    agree(output, tolerance_name, std::vector<double>{cpu}, std::vector<double>{device}, scale);
  }
  // Comparisons made by the library (orrery/parity.hpp's compare_*_engines).
  void add(const Comparisons& comparisons) {
    for (const Comparison& c : comparisons) {
      ++comparisons_;
      if (!c.agreement.ok()) ADD_FAILURE() << c.agreement.describe(where_ + ": " + c.output + " [" + c.tolerance + "]");
    }
  }
  // Integers (neighbor lists, ranks, counts) must be identical.
  template <class I>
  void same(const std::string& output, const std::vector<I>& cpu, const std::vector<I>& device) {
    ++comparisons_;
    if (cpu.size() != device.size()) {
      ADD_FAILURE() << where_ << ": " << output << ": the cpu has " << cpu.size() << " entries, the device "
                    << device.size();
      return;
    }
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < cpu.size(); ++i)
      if (!(cpu[i] == device[i]) && bad++ == 0) first = i;
    if (bad)
      ADD_FAILURE() << where_ << ": " << output << ": " << bad << " of " << cpu.size()
                    << " entries differ; first at index " << first << ": cpu " << cpu[first] << ", device "
                    << device[first];
  }
  const std::string& where() const { return where_; }
  int comparisons() const { return comparisons_; }

 private:
  std::string where_;
  int comparisons_ = 0;
};

// One case of the registry: `run` gets the CPU reference, the device under test and the checker.
struct ParityCase {
  std::string family;  // "pe", "hssne", "knn", "nerv", "plsv", "quality", "snerv"
  std::string name;    // the input: sizes, seed, variant (a valid test-name suffix)
  std::function<void(Backend& cpu, Backend& device, ParityCheck& check)> run;
  // The device side runs an O(N^2) primitive at N >= 2^17 (minutes on the CPU): the CPU-only run of
  // the registry (ParityCasesOnTheCpu) leaves it out; a small-N case of the same code stands in there.
  bool large = false;
};

inline void PrintTo(const ParityCase& c, std::ostream* os) { *os << c.family << "/" << c.name; }

}  // namespace orrery::test
