// Wall-clock timing of stages (the reports' seconds, progress lines, the benches): one steady clock
// and one way to read the seconds since a point, for every layer.
#pragma once
#include <chrono>

namespace orrery {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace orrery
