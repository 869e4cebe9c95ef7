// The shape every all-pairs kernel shares (HSSNE, NeRV): a thread per point i, a block of kThreads
// points, and the points j of one chunk [j0, j1) visited in tiles of kThreads staged in shared
// memory. The j range is cut into a few chunks (grid.y, math::pair_chunks) so that small N still
// fills the device; each chunk writes its own partial sums, which a per-point kernel adds in chunk
// order (no atomics, same bits on every run).
#pragma once
#include <cuda_runtime.h>

#include "orrery/math/launch.hpp"

namespace orrery::cuda {

// The chunk plan is math::pair_chunks (tested on the CPU): no chunk for N = 0, where the engines
// launch nothing, since a launch with a zero grid dimension is an error.
using math::pair_chunks;
using math::PairChunks;

inline dim3 pair_grid(long long N, int tile, const PairChunks& c) {
  return dim3(static_cast<unsigned>(math::pair_blocks(N, tile)), static_cast<unsigned>(c.count));
}

// This block's chunk of j: [j0, j1).
struct ChunkRange {
  long long j0, j1;
};
__device__ inline ChunkRange chunk_range(long long N, long long chunk) {
  const long long j0 = static_cast<long long>(blockIdx.y) * chunk;
  return {j0, j0 + chunk < N ? j0 + chunk : N};
}

// Visits the chunk's tiles: stage(slot, j) copies point j into shared slot `slot` (every thread
// of the block takes part), then, for live threads only, body(t0, count) runs over the tile's
// `count` points t0 .. t0 + count - 1.
template <int kThreads, class Stage, class Body>
__device__ void for_each_tile(const ChunkRange& r, bool live, Stage&& stage, Body&& body) {
  for (long long t0 = r.j0; t0 < r.j1; t0 += kThreads) {
    __syncthreads();
    if (t0 + threadIdx.x < r.j1) stage(static_cast<int>(threadIdx.x), t0 + threadIdx.x);
    __syncthreads();
    if (!live) continue;
    body(t0, static_cast<int>(r.j1 - t0 < kThreads ? r.j1 - t0 : kThreads));
  }
}

}  // namespace orrery::cuda
