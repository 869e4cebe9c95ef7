// Launch shapes the CUDA kernels take, planned on the host by plain integer arithmetic so the CPU
// tests can check them at sizes no test machine could run (N = 0, 10^7 points, 2^34 pairs).
//
// pair_chunks: the all-pairs kernels (kernels/pairs.cuh: HSSNE, NeRV) run a thread per point i in
// blocks of `tile` and cut the j range into chunks (grid.y), about 32 blocks per multiprocessor in
// all so that small N still fills the device; a chunk is a whole number of tiles and none is empty.
// N = 0 plans no chunk at all: the caller launches nothing.
// row_launch: kernels whose threads each own a whole, independent row (quality's rank rows) take
// blocks small enough that the rows reach every multiprocessor, whole warps, at most max_threads.
// key_bits: the bits a radix sort must visit for keys in [0, max_key].
#pragma once
#include "orrery/math/hd.hpp"

namespace orrery::math {

struct PairChunks {
  long long chunk = 0;  // points j per chunk, a whole number of tiles
  int count = 0;        // chunks: grid.y (0 only for N = 0)
};

// blocks_i = ceil(N / tile) blocks of points i; count = ceil(target / blocks_i) chunks, at most
// blocks_i (a chunk has at least one tile), then re-counted from the rounded chunk so none is empty.
ORRERY_HD PairChunks pair_chunks(long long N, int tile, int multiprocessors) {
  PairChunks c;
  if (N <= 0 || tile <= 0) return c;
  const long long blocks_i = (N + tile - 1) / tile;
  const long long target = 32LL * (multiprocessors > 0 ? multiprocessors : 1);
  long long count = (target + blocks_i - 1) / blocks_i;
  if (count > blocks_i) count = blocks_i;
  c.chunk = ((blocks_i + count - 1) / count) * tile;
  c.count = static_cast<int>((N + c.chunk - 1) / c.chunk);
  return c;
}

// grid.x of the all-pairs kernels: blocks of `tile` points i.
ORRERY_HD long long pair_blocks(long long N, int tile) { return N > 0 && tile > 0 ? (N + tile - 1) / tile : 0; }

struct RowLaunch {
  int threads = 0;     // per block, a multiple of 32
  long long blocks = 0;  // 0 only for no rows
};

// Rows of independent per-thread work: max_threads per block while that still gives every
// multiprocessor a block, else halved (down to one warp) until it does.
ORRERY_HD RowLaunch row_launch(long long rows, int multiprocessors, int max_threads) {
  RowLaunch r;
  if (rows <= 0) return r;
  const long long sms = multiprocessors > 0 ? multiprocessors : 1;
  int threads = max_threads >= 32 ? max_threads / 32 * 32 : 32;
  while (threads > 32 && (rows + threads - 1) / threads < sms) threads = (threads / 2 + 31) / 32 * 32;
  r.threads = threads;
  r.blocks = (rows + threads - 1) / threads;
  return r;
}

// The least b >= 1 with max_key < 2^b: a radix sort of keys in [0, max_key] visits bits [0, b).
ORRERY_HD int key_bits(unsigned long long max_key) {
  int b = 1;
  while (b < 64 && (max_key >> b) != 0) ++b;
  return b;
}

}  // namespace orrery::math
