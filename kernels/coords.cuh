// Map coordinates on the device for the all-pairs kernels: N x D doubles (D <= 3) packed as one
// float4 per point, so a tile of points is one 16-byte load per point.
#pragma once
#include <cuda_runtime.h>

namespace orrery::cuda {

template <int kUnused = 0>
__global__ void to_float4_kernel(const double* __restrict__ yd, long long N, int D, float4* __restrict__ y) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= N) return;
  float v[3] = {0.f, 0.f, 0.f};
  for (int d = 0; d < D; ++d) v[d] = static_cast<float>(yd[i * D + d]);
  y[i] = make_float4(v[0], v[1], v[2], 0.f);
}

}  // namespace orrery::cuda
