// One order statistic of n floats by radix selection: the value a descending radix sort would put
// at position `rank` (0: the largest), without sorting. Each float maps to a 32-bit key in the
// order of CUB's radix sort of floats (radix_key); kRadixPasses passes, most significant digit
// first, each count the digits of the keys still in the running (radix_in_bracket) and keep the
// bin holding the wanted rank (radix_select_step). Counts are integers, so the device's histogram
// (atomic adds of integers) is exact and the result is the same bits as the sort's. The CUDA NeRV
// cells use it for the wide-row threshold (kernels/nerv_cells.cu); the CPU tests run the same steps.
#pragma once
#include <cstring>

#include "orrery/math/hd.hpp"

namespace orrery::math {

inline constexpr int kRadixDigitBits = 8;
inline constexpr int kRadixBins = 1 << kRadixDigitBits;
inline constexpr int kRadixPasses = 32 / kRadixDigitBits;

// Negative floats have every bit flipped and the others the sign bit set, so unsigned order is
// float order, NaN with the sign bit clear above +inf; -0 counts as +0, as in CUB's radix sort.
ORRERY_HD unsigned radix_key(float v) {
  unsigned u;
  memcpy(&u, &v, sizeof u);
  if (u == 0x80000000u) u = 0;
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// The float of a key (radix_key's inverse but for -0, which comes back as +0).
ORRERY_HD float radix_value(unsigned key) {
  const unsigned u = (key & 0x80000000u) ? (key & 0x7fffffffu) : ~key;
  float v;
  memcpy(&v, &u, sizeof v);
  return v;
}

// A selection under way: after `pass` passes the top pass * kRadixDigitBits bits of the wanted key
// are `prefix`, and the wanted key is the rank-th largest (0: the largest) of the keys with them.
struct RadixSelect {
  unsigned prefix = 0;
  int pass = 0;
  long long rank = 0;
};

// Whether a key still holds the prefix found so far.
ORRERY_HD bool radix_in_bracket(unsigned key, const RadixSelect& s) {
  const int known = s.pass * kRadixDigitBits;
  return known == 0 || (key >> (32 - known)) == (s.prefix >> (32 - known));
}

// The key's digit in this pass (the most significant digit first).
ORRERY_HD int radix_digit(unsigned key, int pass) {
  return static_cast<int>((key >> (32 - kRadixDigitBits * (pass + 1))) & (kRadixBins - 1));
}

// From the counts of the bracket's digits in this pass: walks the bins from the largest to the one
// the rank falls in, which extends the prefix; the rank becomes the rank within that bin.
ORRERY_HD void radix_select_step(const unsigned* count, RadixSelect& s) {
  for (int b = kRadixBins - 1; b >= 0; --b) {
    if (s.rank < static_cast<long long>(count[b])) {
      s.prefix |= static_cast<unsigned>(b) << (32 - kRadixDigitBits * (s.pass + 1));
      break;
    }
    s.rank -= count[b];
  }
  ++s.pass;
}

}  // namespace orrery::math
