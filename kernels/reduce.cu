// The column sums of reduce.cuh.
#include "reduce.cuh"

namespace orrery::cuda {
namespace {

__global__ void sum_columns_kernel(const double* partial, int blocks, int width, double* out) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= width) return;
  double s = 0.0;
  for (int b = 0; b < blocks; ++b) s += partial[static_cast<long long>(b) * width + j];
  out[j] = s;
}

}  // namespace

void sum_columns(const double* partial, int blocks, int width, double* out) {
  sum_columns_kernel<<<(width + kReduceThreads - 1) / kReduceThreads, kReduceThreads>>>(partial, blocks, width, out);
  ORRERY_CUDA_LAUNCHED("sum_columns_kernel");
}

}  // namespace orrery::cuda
