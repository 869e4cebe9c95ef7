// exp over the non-positive reals and log over the positive ones, written so that an `omp simd`
// loop calling them vectorises on the CPU (no libm call, no branch); on the device they are the
// hardware functions. exp serves NeRV's pair loops and the perplexity search, whose exponents are
// shifted to be <= 0; log serves HSSNE's attraction (log H of t-SNE's tail).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "orrery/math/hd.hpp"

namespace orrery::math {

#if !defined(__CUDA_ARCH__)
namespace detail {

// The bit layout and constants of the branch-free exp below, per float type.
template <class T>
struct ExpBits;
template <>
struct ExpBits<double> {
  using U = std::uint64_t;
  static constexpr int kMantissa = 52;
  static constexpr U kExponentMask = 0x7FF, kBias = 1023;
  static constexpr U kClampExponent = 0x409;              // biased exponent of 1024
  static constexpr U kClampBits = 0xC090000000000000ull;  // -1024
  static constexpr double kShift = 6755399441055744.0;   // 1.5 * 2^52: adding it rounds to an integer
  static constexpr U kShiftBits = 0x4338000000000000ull;
  static constexpr double kLog2e = 1.4426950408889634;
  static constexpr double kLn2Hi = 6.93147180369123816490e-01;  // 21 trailing zero bits: k kLn2Hi is exact
  static constexpr double kLn2Lo = 1.90821492927058770002e-10;
};
template <>
struct ExpBits<float> {
  using U = std::uint32_t;
  static constexpr int kMantissa = 23;
  static constexpr U kExponentMask = 0xFF, kBias = 127;
  static constexpr U kClampExponent = 0x86;     // biased exponent of 128
  static constexpr U kClampBits = 0xC3000000u;  // -128
  static constexpr float kShift = 12582912.0f;  // 1.5 * 2^23
  static constexpr U kShiftBits = 0x4B400000u;
  static constexpr float kLog2e = 1.44269504f;
  static constexpr float kLn2Hi = 0.693145752f;  // 9 trailing zero bits: k kLn2Hi is exact for |k| < 512
  static constexpr float kLn2Lo = 1.42860682e-06f;
};

// x = k ln2 + r, |r| <= ln2 / 2, by Cody-Waite reduction: returns r, and t, whose low bits hold k.
// x with a biased exponent >= kClampExponent, and NaN, count as the clamp value (-> 0); the clamp
// is done on the bits: an FP select here would stop GCC's if-conversion (-ftrapping-math) and the
// loop would not vectorise.
template <class T>
inline T exp_reduce(T x, T& t) {
  using B = ExpBits<T>;
  using U = typename B::U;
  constexpr int kTop = 8 * sizeof(U) - 1;
  U ux;
  std::memcpy(&ux, &x, sizeof ux);
  const U big = ((((ux >> B::kMantissa) & B::kExponentMask) - B::kClampExponent) >> kTop) - 1u;  // all ones: clamp
  ux = (ux & ~big) | (B::kClampBits & big);
  T xc;
  std::memcpy(&xc, &ux, sizeof xc);
  t = xc * B::kLog2e + B::kShift;
  const T k = t - B::kShift;
  return (xc - k * B::kLn2Hi) - k * B::kLn2Lo;
}

// p 2^k with k from exp_reduce's t, assembled in the exponent bits; 0 when k + bias <= 0.
template <class T>
inline T exp_scale(T p, T t) {
  using B = ExpBits<T>;
  using U = typename B::U;
  constexpr int kTop = 8 * sizeof(U) - 1;
  U ut;
  std::memcpy(&ut, &t, sizeof ut);
  const U e = ut - B::kShiftBits + B::kBias;  // k + bias (two's complement)
  const U keep = ((e - 1u) >> kTop) - 1u;     // all ones when e >= 1, else 0
  const U us = (e << B::kMantissa) & keep;
  T s;
  std::memcpy(&s, &us, sizeof s);
  return p * s;
}

}  // namespace detail
#endif

// exp(x) for finite x <= 700; below -708.4 the result is flushed to 0 (exp(-708.4) ~ 2.2e-308, the
// smallest normal double). The CPU double version is branch-free arithmetic so that a `omp simd`
// loop calling it vectorises without libmvec (glibc only offers its vector exp under -ffast-math):
// x = k ln2 + r, |r| <= ln2 / 2, by Cody-Waite reduction; exp(r) by its Taylor polynomial to r^13
// (truncation < 5e-18); 2^k assembled in the exponent bits, zero when k + 1023 <= 0. Within 1 ulp
// of std::exp over [-708, 0] (tested). Inputs with |x| >= 1024 or NaN are treated as -1024 (-> 0).
// Float: the same scheme with Taylor to r^7 (truncation < 6e-9, below half an ulp), zero below
// about -87.3, |x| >= 128 or NaN as -128; within 2 ulp of exp (tested).
template <class T>
ORRERY_HD_INLINE T exp_nonpositive(T x) {
#if defined(__CUDA_ARCH__)
  return hd_exp(x);
#else
  if constexpr (std::is_same<T, float>::value) {
    float t;
    const float r = detail::exp_reduce(x, t);
    // Estrin's scheme: a dependency chain of 4 multiply-adds instead of Horner's 7, so the loops
    // that call this are not bound by the latency of one long chain per element.
    const float r2 = r * r;
    const float r4 = r2 * r2;
    const float p01 = 1.0f + r, p23 = 0.5f + r * (1.0f / 6.0f);
    const float p45 = 1.0f / 24.0f + r * (1.0f / 120.0f), p67 = 1.0f / 720.0f + r * (1.0f / 5040.0f);
    return detail::exp_scale((p01 + r2 * p23) + r4 * (p45 + r2 * p67), t);
  } else if constexpr (!std::is_same<T, double>::value) {
    return hd_exp(x);
  } else {
    double t;
    const double r = detail::exp_reduce(x, t);
    double p = 1.0 / 6227020800.0;
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    return detail::exp_scale(p, t);
  }
#endif
}

// log(x) for finite x >= the smallest normal number. The double version: x = 2^k m with m in
// [sqrt(1/2), sqrt(2)) read off the bits, f = m - 1 (exact), and log(1 + f) by fdlibm's e_log.c
// (s = f / (2 + f), a degree-14 minimax polynomial in s, k ln2 in two parts): within 1 ulp of
// std::log (tested). k is formed as a double through the 2^52 trick, as AVX2 has no 64-bit
// integer-to-double conversion.
template <class T>
ORRERY_HD_INLINE T log_positive(T x) {
#if defined(__CUDA_ARCH__)
  return hd_log(x);
#else
  if constexpr (!std::is_same<T, double>::value) {
    return hd_log(x);
  } else {
    constexpr std::uint64_t kSqrtHalf = 0x3FE6A09E667F3BCDull;  // bits of sqrt(1/2)
    constexpr std::uint64_t kMantissa = 0x000FFFFFFFFFFFFFull;
    constexpr std::uint64_t kTwo52 = 0x4330000000000000ull;  // bits of 2^52
    constexpr double kLn2Hi = 6.93147180369123816490e-01, kLn2Lo = 1.90821492927058770002e-10;
    constexpr double kLg1 = 6.666666666666735130e-01, kLg2 = 3.999999999940941908e-01,
                     kLg3 = 2.857142874366239149e-01, kLg4 = 2.222219843214978396e-01,
                     kLg5 = 1.818357216161805012e-01, kLg6 = 1.531383769920937332e-01,
                     kLg7 = 1.479819860511658591e-01;
    std::uint64_t u;
    std::memcpy(&u, &x, sizeof u);
    const std::uint64_t shifted = u - kSqrtHalf;
    const std::uint64_t kb = (shifted + (1023ull << 52)) >> 52;  // k + 1023, in [1, 2046]
    const std::uint64_t mu = (shifted & kMantissa) + kSqrtHalf;
    const std::uint64_t kd_bits = kTwo52 | kb;
    double m, kd;
    std::memcpy(&m, &mu, sizeof m);
    std::memcpy(&kd, &kd_bits, sizeof kd);
    const double k = kd - (4503599627370496.0 + 1023.0);
    const double f = m - 1.0;
    const double hfsq = 0.5 * f * f;
    const double s = f / (2.0 + f);
    const double z = s * s;
    const double r = z * (kLg1 + z * (kLg2 + z * (kLg3 + z * (kLg4 + z * (kLg5 + z * (kLg6 + z * kLg7))))));
    return k * kLn2Hi - ((hfsq - (s * (hfsq + r) + k * kLn2Lo)) - f);
  }
#endif
}

// log(1 + x) for finite x >= 0: log_positive(u), u = 1 + x rounded, corrected for that rounding,
// log1p(x) = log(u) - ((u - 1) - x) / u, so small x keep their relative accuracy; within 2 ulp of
// std::log1p (tested). The device uses its log1p.
template <class T>
ORRERY_HD_INLINE T log1p_nonnegative(T x) {
#if defined(__CUDA_ARCH__)
  return log1p(x);
#else
  if constexpr (!std::is_same<T, double>::value) {
    return std::log1p(x);
  } else {
    const double u = 1.0 + x;
    return log_positive(u) - ((u - 1.0) - x) / u;
  }
#endif
}

}  // namespace orrery::math
