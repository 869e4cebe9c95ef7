// `orrery check`'s comparisons of a device under test with the CPU reference, on a run's input
// (the method's registry entry, run/methods.hpp, names its own).
#pragma once
#include <string>
#include <vector>

#include "run/run_config.hpp"
#include "orrery/backend.hpp"
#include "orrery/parity.hpp"

namespace orrery::pipeline {

// One primitive's comparisons, named.
struct CheckGroup {
  std::string primitive;
  Comparisons comparisons;
};
// The checks of one method on one device, against the reference.
using Checks = std::vector<CheckGroup>;

// The config's input read as a run reads it; each primitive of the method on `ref` and `dev` from
// the same state, then `iterations` iterations of the fit on both.
Checks check_pe_run(const RunConfig& run, Backend& ref, Backend& dev, int iterations);
Checks check_ne_run(const RunConfig& run, Backend& ref, Backend& dev, int iterations);
Checks check_plsv_run(const RunConfig& run, Backend& ref, Backend& dev, int iterations);

json check_group_json(const CheckGroup& g);

}  // namespace orrery::pipeline
