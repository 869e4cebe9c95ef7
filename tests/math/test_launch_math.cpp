// Launch shapes of the CUDA kernels (math/launch.hpp), planned on the host: the all-pairs chunks
// (no chunk at N = 0; every chunk whole tiles and non-empty; the chunks cover [0, N) once; grid.y
// within CUDA's 65,535 up to 10^7 points and past 2^31 pairs), the rows' blocks, and radix key bits.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "orrery/math/launch.hpp"

using namespace orrery;

namespace {

constexpr long long kMaxGridY = 65535;
constexpr long long kMaxGridX = 2147483647;

// Every property the pair kernels rely on, for one N and device size.
void expect_valid_chunks(long long N, int tile, int sms) {
  SCOPED_TRACE("N = " + std::to_string(N) + ", tile " + std::to_string(tile) + ", " + std::to_string(sms) + " SMs");
  const math::PairChunks c = math::pair_chunks(N, tile, sms);
  const long long bx = math::pair_blocks(N, tile);
  ASSERT_GE(c.count, 1);
  EXPECT_LE(c.count, kMaxGridY);
  EXPECT_LE(bx, kMaxGridX);
  EXPECT_EQ(bx * tile >= N, true);
  EXPECT_LT((bx - 1) * tile, N);
  EXPECT_EQ(c.chunk % tile, 0);
  EXPECT_GT(c.chunk, 0);
  // chunk k is [k chunk, min((k + 1) chunk, N)): the last one starts inside [0, N), so none is
  // empty, and together they reach N
  EXPECT_LT((c.count - 1) * c.chunk, N);
  EXPECT_GE(c.count * c.chunk, N);
  // the pairs visited, chunk by chunk, are all N^2 of them (64-bit: past 2^31 here)
  long long pairs = 0;
  for (long long k = 0; k < c.count; ++k) {
    const long long j0 = k * c.chunk, j1 = j0 + c.chunk < N ? j0 + c.chunk : N;
    pairs += (j1 - j0) * N;
  }
  EXPECT_EQ(pairs, N * N);
  // about 32 blocks a multiprocessor in all, as far as chunks of whole tiles allow (at most bx of them)
  const long long target = 32LL * (sms > 0 ? sms : 1);
  EXPECT_GE(bx * c.count, std::min(target, bx * bx) / 2);
}

TEST(LaunchMath, NoPointsPlanNoChunk) {
  const math::PairChunks c = math::pair_chunks(0, 256, 132);
  EXPECT_EQ(c.count, 0);
  EXPECT_EQ(c.chunk, 0);
  EXPECT_EQ(math::pair_blocks(0, 256), 0);
  EXPECT_EQ(math::pair_chunks(-5, 256, 132).count, 0);
  EXPECT_EQ(math::pair_chunks(100, 0, 132).count, 0);  // no tile: nothing to plan either
}

TEST(LaunchMath, OnePointIsOneChunkOfOneTile) {
  const math::PairChunks c = math::pair_chunks(1, 256, 132);
  EXPECT_EQ(c.count, 1);
  EXPECT_EQ(c.chunk, 256);
  EXPECT_EQ(math::pair_blocks(1, 256), 1);
  expect_valid_chunks(1, 256, 132);
}

TEST(LaunchMath, ChunksCoverEveryPairAtEverySize) {
  for (int sms : {0, 1, 108, 114, 132})
    for (int tile : {128, 256})
      for (long long N : {2LL, 255LL, 256LL, 257LL, 1000LL, 4095LL, 65536LL, 131071LL, 131072LL, 131073LL, 262141LL,
                          1000000LL, 10000000LL})
        expect_valid_chunks(N, tile, sms);
}

TEST(LaunchMath, PairsPastTwoToThe31) {
  // N near 2^17: 2^34 pairs; the plan's arithmetic is 64-bit throughout
  const long long N = (1LL << 17) + 3;
  ASSERT_GT(N * N, 1LL << 31);
  expect_valid_chunks(N, 256, 132);
  const math::PairChunks c = math::pair_chunks(N, 256, 132);
  EXPECT_EQ(c.count, 9);  // 513 blocks of points against a target of 4,224 blocks: 9 chunks of 57 tiles
  EXPECT_EQ(c.chunk, 57 * 256);
}

TEST(LaunchMath, RowsReachEveryMultiprocessor) {
  // 4096 query rows on 132 multiprocessors: 128-thread blocks would be 32 blocks, one warp each
  // is 128 blocks
  math::RowLaunch r = math::row_launch(4096, 132, 128);
  EXPECT_EQ(r.threads, 32);
  EXPECT_EQ(r.blocks, 128);
  r = math::row_launch(100000, 132, 128);  // enough rows: the full block
  EXPECT_EQ(r.threads, 128);
  EXPECT_EQ(r.blocks, (100000 + 127) / 128);
  r = math::row_launch(20000, 132, 128);  // 157 blocks of 128 already fill 132 SMs
  EXPECT_EQ(r.threads, 128);
  r = math::row_launch(10000, 132, 128);  // 79 of 128, 157 of 64
  EXPECT_EQ(r.threads, 64);
  EXPECT_EQ(r.blocks, 157);
  r = math::row_launch(5, 132, 128);
  EXPECT_EQ(r.threads, 32);
  EXPECT_EQ(r.blocks, 1);
  r = math::row_launch(0, 132, 128);
  EXPECT_EQ(r.blocks, 0);
  for (long long rows : {1LL, 31LL, 33LL, 4097LL, 10000000LL}) {
    r = math::row_launch(rows, 114, 128);
    EXPECT_EQ(r.threads % 32, 0);
    EXPECT_GE(r.blocks * r.threads, rows);
    EXPECT_LT((r.blocks - 1) * r.threads, rows);
  }
}

TEST(LaunchMath, KeyBitsHoldTheLargestKey) {
  EXPECT_EQ(math::key_bits(0), 1);
  EXPECT_EQ(math::key_bits(1), 1);
  EXPECT_EQ(math::key_bits(2), 2);
  EXPECT_EQ(math::key_bits(255), 8);
  EXPECT_EQ(math::key_bits(256), 9);
  EXPECT_EQ(math::key_bits(~0ULL), 64);
  for (int b = 1; b < 63; ++b) {
    EXPECT_EQ(math::key_bits((1ULL << b) - 1), b);
    EXPECT_EQ(math::key_bits(1ULL << b), b + 1);
  }
}

}  // namespace
