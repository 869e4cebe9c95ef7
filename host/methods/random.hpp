// Seeded standard normals from mt19937_64 by Box-Muller, written out so that the stream does not
// depend on the standard library's distribution implementation (same seed, same numbers, any
// platform). Used for every random start.
#pragma once
#include <cmath>
#include <random>
#include <vector>

namespace orrery {

// A uniform double in (0, 1) from the top 53 bits of one draw.
inline double uniform01(std::mt19937_64& rng) { return (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53; }

inline std::vector<double> seeded_gaussian(size_t n, unsigned long long seed, double scale = 1.0) {
  std::mt19937_64 rng(seed);
  std::vector<double> out(n);
  const double two_pi = 6.283185307179586;
  for (size_t i = 0; i < n; i += 2) {
    const double u1 = (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53;
    const double u2 = (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53;
    const double rad = scale * std::sqrt(-2.0 * std::log(u1));
    out[i] = rad * std::cos(two_pi * u2);
    if (i + 1 < n) out[i + 1] = rad * std::sin(two_pi * u2);
  }
  return out;
}

}  // namespace orrery
