// Deterministic reductions for every CUDA engine. A sum over N items is never a float atomic:
// blocks of kReduceThreads fold fixed chunks (thread t takes its strided entries in order, then a
// fixed-shape CUB block reduction), and one block folds the chunks' results the same way, so the
// same input gives the same bits on every run, whatever the device's scheduling. Per-block partials
// of several columns (class or topic gradients) are summed column by column in block order.
#pragma once
#include <cub/block/block_reduce.cuh>

#include "check.cuh"
#include "orrery/math/hd.hpp"

namespace orrery::cuda {

inline constexpr int kReduceThreads = 256;
inline constexpr int kReduceItems = 16;  // entries per thread in a chunk

// CUB's own functor names differ across CUDA versions; these are ours.
struct SumOp {
  __device__ double operator()(double a, double b) const { return a + b; }
};
// For values >= 0 (0 is then also the identity). NaN-propagating (math::nan_max): a NaN norm or
// objective reaches the host instead of vanishing from the max.
struct MaxOp {
  __device__ double operator()(double a, double b) const { return math::nan_max(a, b); }
};

// Item loaders: a reduction folds f(i) for i in [0, n).
struct Entries {
  const double* a;
  __device__ double operator()(long long i) const { return a[i]; }
};
struct Products {
  const double* a;
  const double* b;
  __device__ double operator()(long long i) const { return a[i] * b[i]; }
};

// Block b folds items [b span, (b + 1) span) into out[b].
template <class Op, class F>
__global__ void __launch_bounds__(kReduceThreads) reduce_chunks_kernel(long long n, long long span, F f, Op op,
                                                                         double* out) {
  using Reduce = cub::BlockReduce<double, kReduceThreads>;
  __shared__ typename Reduce::TempStorage tmp;
  const long long first = static_cast<long long>(blockIdx.x) * span;
  const long long last = first + span < n ? first + span : n;
  double v = 0.0;  // the identity of SumOp, and of MaxOp over values >= 0
  for (long long i = first + threadIdx.x; i < last; i += kReduceThreads) v = op(v, f(i));
  const double r = Reduce(tmp).Reduce(v, op);
  if (threadIdx.x == 0) out[blockIdx.x] = r;
}

// Owns the scratch of two-stage reductions; each call returns the result on the host (8 bytes).
class Reducer {
 public:
  template <class Op, class F>
  double reduce(long long n, F f, Op op) {
    const long long chunk = static_cast<long long>(kReduceThreads) * kReduceItems;
    const int chunks = static_cast<int>(n > 0 ? (n + chunk - 1) / chunk : 1);
    if (chunks_.size() < static_cast<size_t>(chunks)) chunks_.resize(static_cast<size_t>(chunks));
    result_.resize(1);
    reduce_chunks_kernel<<<chunks, kReduceThreads>>>(n, chunk, f, op, chunks_.get());
    ORRERY_CUDA_LAUNCHED("reduce_chunks_kernel");
    reduce_chunks_kernel<<<1, kReduceThreads>>>(chunks, chunks, Entries{chunks_.get()}, op, result_.get());
    ORRERY_CUDA_LAUNCHED("reduce_chunks_kernel");
    double r = 0.0;
    result_.download(&r, 1);
    return r;
  }
  double sum(const double* a, long long n) { return reduce(n, Entries{a}, SumOp()); }
  double dot(const double* a, const double* b, long long n) { return reduce(n, Products{a, b}, SumOp()); }

 private:
  DeviceBuffer<double> chunks_, result_;
};

// out[j] = sum over blocks b of partial[b width + j], in block order, on the device: the second
// stage of per-block partials of `width` columns (class or topic gradients).
void sum_columns(const double* partial, int blocks, int width, double* out);

}  // namespace orrery::cuda
