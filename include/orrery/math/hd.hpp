// ORRERY_HD marks arithmetic shared by the CPU backend and the CUDA kernels: under nvcc it is
// __host__ __device__ __forceinline__, elsewhere plain inline, so these headers compile in .cpp
// files and the CPU tests cover the exact code the kernels run.
#pragma once
#include <cmath>
#include <type_traits>

#if defined(__CUDACC__)
#define ORRERY_HD __host__ __device__ __forceinline__
#else
#define ORRERY_HD inline
#endif
// ORRERY_HD that the host compiler must inline too: for loops that a CPU caller compiled for a wider
// instruction set (host/prep/clones.hpp) has to contain, not call.
#if defined(__CUDACC__)
#define ORRERY_HD_INLINE __host__ __device__ __forceinline__
#elif defined(__GNUC__)
#define ORRERY_HD_INLINE inline __attribute__((always_inline))
#else
#define ORRERY_HD_INLINE inline
#endif

// `#pragma omp simd` with the given clauses, for loops in these shared headers: the host compiler
// vectorises them (reductions included) under OpenMP; device code and builds without OpenMP see
// nothing. Example: ORRERY_SIMD(reduction(+ : z, m)).
#define ORRERY_PRAGMA(x) _Pragma(#x)
#if defined(_OPENMP) && !defined(__CUDA_ARCH__)
#define ORRERY_SIMD(clauses) ORRERY_PRAGMA(omp simd clauses)
#else
#define ORRERY_SIMD(clauses)
#endif

namespace orrery::math {

template <class T>
ORRERY_HD T hd_exp(T x) {
#if !defined(__CUDA_ARCH__)
  using std::exp;
#endif
  return exp(x);
}
template <class T>
ORRERY_HD T hd_log(T x) {
#if !defined(__CUDA_ARCH__)
  using std::log;
#endif
  return log(x);
}
template <class T>
ORRERY_HD T hd_sqrt(T x) {
#if !defined(__CUDA_ARCH__)
  using std::sqrt;
#endif
  return sqrt(x);
}
template <class T>
ORRERY_HD T hd_max(T a, T b) {
  return a > b ? a : b;
}
// The larger of a and b, NaN if either is NaN (in either position), so a NaN that enters a max
// reduction survives every fold after it: fmax and a > b ? a : b both return the other operand
// for one of the two orders, and a NaN gradient norm or objective would vanish from the max.
template <class T>
ORRERY_HD T nan_max(T a, T b) {
  return (a > b || a != a) ? a : b;
}
template <class T>
ORRERY_HD T hd_min(T a, T b) {
  return a < b ? a : b;
}
template <class T>
ORRERY_HD T hd_abs(T a) {
  return a < T(0) ? -a : a;
}
// 1 / x. Float on the device uses the hardware reciprocal (__fdividef: at most 2 ulp, not the
// correctly rounded division), which is what the all-pairs kernels spend most of their time on;
// everywhere else, and for double, the exact division.
template <class T>
ORRERY_HD_INLINE T hd_recip(T x) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<T, float>)
    return __fdividef(1.0f, x);
  else
    return T(1) / x;
#else
  return T(1) / x;
#endif
}

template <class T>
ORRERY_HD bool hd_isfinite(T x) {
#if !defined(__CUDA_ARCH__)
  using std::isfinite;
#endif
  return isfinite(x);
}

}  // namespace orrery::math
