// The shape every all-pairs kernel shares (HSSNE, NeRV): a thread per point i, a block of kThreads
// points, and the points j of one chunk [j0, j1) visited in tiles of kThreads staged in shared
// memory. The j range is cut into a few chunks (grid.y) so that small N still fills the device;
// each chunk writes its own partial sums, which a per-point kernel adds in chunk order (no atomics,
// same bits on every run).
#pragma once
#include <cuda_runtime.h>

#include <algorithm>

namespace orrery::cuda {

struct PairChunks {
  long long chunk = 0;  // points j per chunk, a whole number of tiles
  int count = 1;        // chunks: grid.y
};

// About 32 blocks per multiprocessor in all, so the last wave's tail is short.
inline PairChunks pair_chunks(long long N, int tile, int multiprocessors) {
  const long long blocks_i = (N + tile - 1) / tile;
  const long long target = 32LL * multiprocessors;
  PairChunks c;
  c.count = static_cast<int>(std::min<long long>(std::max<long long>(1, (target + blocks_i - 1) / blocks_i), blocks_i));
  c.chunk = ((blocks_i + c.count - 1) / c.count) * tile;
  c.count = static_cast<int>((N + c.chunk - 1) / c.chunk);
  return c;
}

inline dim3 pair_grid(long long N, int tile, const PairChunks& c) {
  return dim3(static_cast<unsigned>((N + tile - 1) / tile), static_cast<unsigned>(c.count));
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
