// PE's blocks of objects per rank (pe_rank_block): whole reduction chunks, in rank order, covering
// every object once, so that the chunk sums of a sharded fit are those of the whole; and a fit handed
// a one-process communicator equals a fit handed none, bit for bit.
#include <gtest/gtest.h>

#include <random>

#include "orrery/backend.hpp"
#include "orrery/comm.hpp"
#include "orrery/pe.hpp"

namespace orrery {
namespace {

TEST(PeRankBlock, WholeChunksInRankOrderCoveringEveryObjectOnce) {
  for (index_t n : {1, 900, 1023, 1024, 1025, 2500, 5000, 100000})
    for (int ranks = 1; ranks <= 7; ++ranks) {
      index_t next = 0;
      for (int r = 0; r < ranks; ++r) {
        const PeBlock b = pe_rank_block(n, r, ranks);
        EXPECT_EQ(b.begin, next) << "n " << n << ", rank " << r << " of " << ranks;
        EXPECT_LE(b.begin, b.end);
        EXPECT_EQ(b.begin % kPeChunk, 0) << "n " << n << ", rank " << r << " of " << ranks;
        next = b.end;
      }
      EXPECT_EQ(next, n) << "n " << n << ", " << ranks << " ranks";
    }
}

TEST(PeRankBlock, AFewObjectsLeaveRanksWithOneOrNone) {
  EXPECT_EQ(pe_rank_block(1025, 0, 2).end, 1024);
  EXPECT_EQ(pe_rank_block(1025, 1, 2).end - pe_rank_block(1025, 1, 2).begin, 1);
  for (int r = 0; r < 2; ++r) EXPECT_EQ(pe_rank_block(900, r, 3).end, 0);
  EXPECT_EQ(pe_rank_block(900, 2, 3).end, 900);
  EXPECT_THROW(pe_rank_block(10, 2, 2), Error);
}

TEST(PeFit, AOneProcessCommunicatorEqualsNoneBitForBit) {
  const index_t N = 2100;  // three chunks, the last one short
  const int K = 4;
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  PeInput in;
  in.posteriors = MatrixD(N, K);
  for (index_t n = 0; n < N; ++n) {
    double s = 0.0;
    for (int k = 0; k < K; ++k) s += (in.posteriors(n, k) = std::exp(3.0 * u(rng)));
    for (int k = 0; k < K; ++k) in.posteriors(n, k) /= s;
  }
  PeParams prm;
  prm.max_iter = 15;
  auto backend = make_backend("cpu", 2);
  const std::unique_ptr<Comm> single = make_single_comm();
  const PeResult a = fit_pe(*backend, in, prm, 1);
  const PeResult b = fit_pe(*backend, in, prm, 1, {}, nullptr, single.get());
  EXPECT_EQ(a.object_coords.data, b.object_coords.data);
  EXPECT_EQ(a.class_coords.data, b.class_coords.data);
  EXPECT_EQ(a.objective, b.objective);
  EXPECT_EQ(b.rank_objects, std::vector<index_t>{N});
  EXPECT_EQ(b.rank_seconds_fit.size(), 1u);
}

}  // namespace
}  // namespace orrery
