// The exact parts of the interpolated repulsion: one point's sums over a whole map by one block (the
// grid's far points, interp.cu; the new points a placement's frozen grid does not reach, place.cu),
// and every other point's sums over the few far points. Each sum in a fixed order.
#pragma once
#include <cub/block/block_reduce.cuh>

#include "orrery/math/neighbor.hpp"
#include "orrery/types.hpp"

namespace orrery::cuda {

// h, hs and hsy (math::HssneRow's repulsive sums) of the point y over the rows [0, N) of the
// row-major map `points` (D columns) but row `skip` (-1: none), written by thread 0 to out[0],
// out[stride], out[(2 + d) stride]. Each thread sums its strided rows in order (math::hssne_accumulate),
// then a fixed-shape block reduction: the same bits on every run. Every thread of the block calls it.
template <int D, int kThreads>
__device__ __forceinline__ void block_exact_sums(const double* y, const double* __restrict__ points, long long N,
                                                 long long skip, double alpha, double* out, long long stride) {
  using Reduce = cub::BlockReduce<double, kThreads>;
  __shared__ typename Reduce::TempStorage tmp;
  double yq[D];
  for (int d = 0; d < D; ++d) yq[d] = y[d];
  math::HssneRow<double, D> acc;
  for (long long j = threadIdx.x; j < N; j += kThreads)
    if (j != skip) math::hssne_accumulate<double, D>(yq, points + j * D, 0.0, alpha, true, acc);
  double v[2 + D] = {acc.h_sum, acc.hs_sum};
  for (int d = 0; d < D; ++d) v[2 + d] = acc.hsy[d];
  for (int k = 0; k < 2 + D; ++k) {
    const double s = Reduce(tmp).Sum(v[k]);
    __syncthreads();
    if (threadIdx.x == 0) out[k * stride] = s;
  }
}

// A far point's sums over every other point, exactly: one block per far point.
template <int D, int kThreads>
__global__ void __launch_bounds__(kThreads) far_own_kernel(const double* __restrict__ y, long long N, double alpha,
                                                           const index_t* __restrict__ far, double* __restrict__ out) {
  const index_t f = far[blockIdx.x];
  block_exact_sums<D, kThreads>(y + f * D, y, N, f, alpha, out + f, N);
}

// Every point inside the grid (far_flag 0) adds its sums over the far points, in their index order.
template <int D>
__global__ void far_share_kernel(const double* __restrict__ y, long long N, double alpha,
                                 const index_t* __restrict__ far, long long count, const int* __restrict__ far_flag,
                                 double* __restrict__ out) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= N || far_flag[i]) return;
  math::HssneRow<double, D> acc;
  for (long long r = 0; r < count; ++r)
    math::hssne_accumulate<double, D>(y + i * D, y + far[r] * D, 0.0, alpha, true, acc);
  out[i] += acc.h_sum;
  out[N + i] += acc.hs_sum;
  for (int d = 0; d < D; ++d) out[(2 + d) * N + i] += acc.hsy[d];
}

}  // namespace orrery::cuda
