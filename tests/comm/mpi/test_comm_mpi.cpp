// The MPI communicator, run by ctest under the launcher with 1, 2, 3 and 4 processes (label mpi):
// every collective against the values each rank must hold, uneven counts with a rank that has
// nothing to send, MPI errors as orrery::Error naming the call, and the exact sum of a fixed table
// split over the ranks giving the bits the single communicator gives in this same binary.
#include <gtest/gtest.h>

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "comm/exact_sum_values.hpp"
#include "orrery/comm.hpp"
#include "orrery/engines.hpp"
#include "orrery/interp.hpp"
#include "orrery/error.hpp"
#include "orrery/exact_sum.hpp"
#include "orrery/backend.hpp"
#include "orrery/quality.hpp"

namespace {

using orrery::ReduceOp;

orrery::Comm& world() {
  static const auto comm = orrery::make_comm("mpi");
  return *comm;
}

std::size_t rank_of(const orrery::Comm& c) { return static_cast<std::size_t>(c.rank()); }
std::size_t size_of(const orrery::Comm& c) { return static_cast<std::size_t>(c.size()); }

// What rank r sends to rank d in the alltoallv tests: (r + 2d) % 3 items (0 for some pairs, rank
// 0 to itself among them), each naming sender, receiver and position.
std::size_t pair_count(std::size_t r, std::size_t d) { return (r + 2 * d) % 3; }
std::int64_t pair_item(std::size_t r, std::size_t d, std::size_t j) {
  return static_cast<std::int64_t>(10000 * r + 100 * d + j);
}

struct Record {
  std::int32_t rank;
  float value;
  double weight;
};

}  // namespace

TEST(CommMpi, RanksOfTheLaunch) {
  auto& c = world();
  EXPECT_EQ(c.name(), "mpi");
  ASSERT_GE(c.size(), 1);
  EXPECT_LT(c.rank(), c.size());
  if (const char* n = std::getenv("OMPI_COMM_WORLD_SIZE")) {
    EXPECT_EQ(c.size(), std::atoi(n));
  }
  if (const char* r = std::getenv("OMPI_COMM_WORLD_RANK")) {
    EXPECT_EQ(c.rank(), std::atoi(r));
  }
  // Under the launcher "auto" is MPI too, over the same processes.
  const auto automatic = orrery::make_comm("auto");
  EXPECT_EQ(automatic->name(), "mpi");
  EXPECT_EQ(automatic->size(), c.size());
  EXPECT_EQ(automatic->rank(), c.rank());
  // The launches of these tests are on one machine: every rank's place on its node is its rank.
  EXPECT_EQ(c.node_rank(), c.rank());
  EXPECT_EQ(c.node_size(), c.size());
  if (const char* r = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK")) {
    EXPECT_EQ(c.node_rank(), std::atoi(r));
  }
  c.barrier();
}

TEST(CommMpi, AllreduceOfEveryTypeAndOperation) {
  auto& c = world();
  const std::int64_t r = c.rank(), p = c.size();
  const std::int64_t big = std::int64_t{1} << 40;  // beyond 32 bits
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::min, ReduceOp::max}) {
    // Element i on rank r: (r + 1) * (i + 1) - 3, and r * 2^40 - 7.
    std::vector<std::int64_t> ints = {(r + 1) * 1 - 3, (r + 1) * 2 - 3, (r + 1) * 3 - 3, r * big - 7};
    std::vector<float> floats = {static_cast<float>(r) - 0.5f, -static_cast<float>(r) * 0.25f};
    std::vector<double> doubles = {static_cast<double>(r) * 1e200, 1.0 / (1 << r), -static_cast<double>(r)};
    c.allreduce(ints.data(), ints.size(), op);
    c.allreduce(floats.data(), floats.size(), op);
    c.allreduce(doubles.data(), doubles.size(), op);
    const std::int64_t triangle = p * (p + 1) / 2, ranks_sum = p * (p - 1) / 2;
    if (op == ReduceOp::sum) {
      EXPECT_EQ(ints, (std::vector<std::int64_t>{triangle - 3 * p, 2 * triangle - 3 * p, 3 * triangle - 3 * p,
                                                 ranks_sum * big - 7 * p}));
      EXPECT_EQ(floats[0], static_cast<float>(ranks_sum) - 0.5f * static_cast<float>(p));
      EXPECT_EQ(floats[1], -0.25f * static_cast<float>(ranks_sum));
      EXPECT_EQ(doubles[2], -static_cast<double>(ranks_sum));
      EXPECT_EQ(doubles[1], 2.0 - 1.0 / (1 << (p - 1)));  // 1 + 1/2 + ...: exact in any order
    } else if (op == ReduceOp::min) {
      EXPECT_EQ(ints, (std::vector<std::int64_t>{-2, -1, 0, -7}));
      EXPECT_EQ(floats, (std::vector<float>{-0.5f, -0.25f * static_cast<float>(p - 1)}));
      EXPECT_EQ(doubles, (std::vector<double>{0.0, 1.0 / (1 << (p - 1)), -static_cast<double>(p - 1)}));
    } else {
      EXPECT_EQ(ints, (std::vector<std::int64_t>{p - 3, 2 * p - 3, 3 * p - 3, (p - 1) * big - 7}));
      EXPECT_EQ(floats, (std::vector<float>{static_cast<float>(p - 1) - 0.5f, 0.0f}));
      EXPECT_EQ(doubles, (std::vector<double>{static_cast<double>(p - 1) * 1e200, 1.0, 0.0}));
    }
  }
}

TEST(CommMpi, BroadcastFromEveryRoot) {
  auto& c = world();
  for (int root = 0; root < c.size(); ++root) {
    std::vector<Record> v(3, Record{c.rank(), -1.0f, -1.0});
    if (c.rank() == root)
      for (int j = 0; j < 3; ++j) v[static_cast<std::size_t>(j)] = {root, 0.5f * static_cast<float>(j), 1e-300 * j};
    c.bcast(v.data(), v.size(), root);
    for (int j = 0; j < 3; ++j) {
      EXPECT_EQ(v[static_cast<std::size_t>(j)].rank, root) << "root " << root;
      EXPECT_EQ(v[static_cast<std::size_t>(j)].value, 0.5f * static_cast<float>(j));
      EXPECT_EQ(v[static_cast<std::size_t>(j)].weight, 1e-300 * j);
    }
    std::string text = c.rank() == root ? "from root " + std::to_string(root) : std::string(16, '?');
    text.resize(16, '\0');
    c.bcast_bytes(text.data(), text.size(), root);
    EXPECT_EQ(std::string(text.c_str()), "from root " + std::to_string(root));
  }
  c.bcast(static_cast<double*>(nullptr), 0, 0);  // nothing, without a hang
}

TEST(CommMpi, AllgathervWithUnevenCountsAndAnEmptyRank) {
  auto& c = world();
  const std::size_t r = rank_of(c), p = size_of(c);
  // Rank r sends r items (rank 0 sends none): 100 r + j.
  std::vector<std::int64_t> mine(r);
  for (std::size_t j = 0; j < r; ++j) mine[j] = static_cast<std::int64_t>(100 * r + j);
  std::vector<std::size_t> counts;
  const auto all = c.allgatherv(mine.data(), mine.size(), &counts);
  std::vector<std::int64_t> expected;
  std::vector<std::size_t> expected_counts;
  for (std::size_t s = 0; s < p; ++s) {
    expected_counts.push_back(s);
    for (std::size_t j = 0; j < s; ++j) expected.push_back(static_cast<std::int64_t>(100 * s + j));
  }
  EXPECT_EQ(counts, expected_counts);
  EXPECT_EQ(all, expected);
  std::vector<std::int64_t> out(expected.size(), -1);
  c.allgatherv(mine.data(), mine.size(), out.data(), expected_counts);
  EXPECT_EQ(out, expected);
  // Structs travel as whole items.
  const Record rec{c.rank(), 1.5f, -2.0 * c.rank()};
  const auto records = c.allgatherv(&rec, 1);
  ASSERT_EQ(records.size(), p);
  for (std::size_t s = 0; s < p; ++s) {
    EXPECT_EQ(records[s].rank, static_cast<int>(s));
    EXPECT_EQ(records[s].weight, -2.0 * static_cast<double>(s));
  }
}

TEST(CommMpi, AlltoallvWithUnevenCountsAndEmptyPairs) {
  auto& c = world();
  const std::size_t r = rank_of(c), p = size_of(c);
  std::vector<std::size_t> send_counts(p), recv_counts(p);
  std::vector<std::int64_t> send, expected;
  for (std::size_t d = 0; d < p; ++d) {
    send_counts[d] = pair_count(r, d);
    for (std::size_t j = 0; j < send_counts[d]; ++j) send.push_back(pair_item(r, d, j));
  }
  for (std::size_t s = 0; s < p; ++s) {
    recv_counts[s] = pair_count(s, r);
    for (std::size_t j = 0; j < recv_counts[s]; ++j) expected.push_back(pair_item(s, r, j));
  }
  std::vector<std::size_t> from;
  EXPECT_EQ(c.alltoallv(send.data(), send_counts, &from), expected);
  EXPECT_EQ(from, recv_counts);
  std::vector<std::int64_t> recv(expected.size(), -1);
  c.alltoallv(send.data(), send_counts, recv.data(), recv_counts);
  EXPECT_EQ(recv, expected);
  // Rank 0 sends nothing to anyone and receives everything.
  std::vector<std::size_t> to_zero(p, 0);
  to_zero[0] = r == 0 ? 0 : r;
  const std::vector<double> payload(to_zero[0], static_cast<double>(r) + 0.5);
  std::vector<std::size_t> got;
  const auto at_zero = c.alltoallv(payload.data(), to_zero, &got);
  if (r == 0) {
    std::vector<double> all;
    for (std::size_t s = 1; s < p; ++s) all.insert(all.end(), s, static_cast<double>(s) + 0.5);
    EXPECT_EQ(at_zero, all);
  } else {
    EXPECT_TRUE(at_zero.empty());
    EXPECT_EQ(got, std::vector<std::size_t>(p, 0));
  }
}

// With errors returned, a failing MPI call is an orrery::Error naming it (here MPI's own argument
// check: a root that is no rank, passed straight to the primitive on every rank).
TEST(CommMpi, MpiErrorsBecomeErrorsNamingTheCall) {
  auto& c = world();
  std::int64_t x = 1;
  try {
    c.bcast_bytes(&x, sizeof x, c.size() + 5);
    FAIL() << "MPI_Bcast accepted a root beyond the ranks";
  } catch (const orrery::Error& e) {
    EXPECT_EQ(e.kind(), orrery::ErrorKind::internal);
    EXPECT_NE(std::string(e.what()).find("MPI_Bcast failed"), std::string::npos) << e.what();
  }
  c.barrier();  // the communicator still works
  EXPECT_THROW(c.bcast(&x, 1, -1), orrery::Error);  // checked before MPI, on every rank alike
}

// The same 1001 x 5 table (magnitudes 2^-1074 .. 2^1000, cancellation) summed by column: rows split
// unevenly over the ranks, rank 0 holding none when there are several, each rank's rows in one
// ExactSum, then the allreduce. The bits equal the single communicator's sum of all rows, so every
// number of ranks gives the same bits.
TEST(CommMpi, ExactSumGivesTheSameBitsForEveryNumberOfRanks) {
  auto& c = world();
  const std::size_t rows = 1001, cols = 5, r = rank_of(c), p = size_of(c);
  const auto table = orrery::test::exact_sum_table(rows);

  const auto single = orrery::make_single_comm();
  orrery::ExactSum all(cols);
  for (std::size_t i = 0; i < rows; ++i) all.add(&table[i * cols]);
  all.allreduce(*single);
  std::vector<double> reference(cols);
  all.results(reference.data());

  std::vector<double> sums(cols);
  for (bool empty_rank_zero : {false, true}) {
    // Contiguous blocks; with empty_rank_zero the rows go to ranks 1..p-1 only.
    const std::size_t owners = empty_rank_zero && p > 1 ? p - 1 : p, me = empty_rank_zero && p > 1 ? r - 1 : r;
    const bool owns = !(empty_rank_zero && p > 1 && r == 0);
    const std::size_t begin = owns ? rows * me / owners : 0, end = owns ? rows * (me + 1) / owners : 0;
    orrery::ExactSum mine(cols);
    for (std::size_t i = begin; i < end; ++i) mine.add(&table[i * cols]);
    mine.allreduce(c);
    mine.results(sums.data());
    for (std::size_t k = 0; k < cols; ++k)
      EXPECT_EQ(orrery::test::bits_of(sums[k]), orrery::test::bits_of(reference[k]))
          << "column " << k << " on rank " << r << " of " << p << (empty_rank_zero ? " (rank 0 empty)" : "");
  }
  if (r == 0)
    std::printf("exact sum of the table over %zu ranks: bits hash %016" PRIx64 " (one process: %016" PRIx64 ")\n", p,
                orrery::test::hash_bits(sums), orrery::test::hash_bits(reference));

  // exact_allreduce_sum with one row per rank: the sum of rows 0..p-1, as one process gets it.
  std::vector<double> out(cols);
  orrery::exact_allreduce_sum(c, &table[r * cols], out.data(), cols);
  orrery::ExactSum first_rows(cols);
  for (std::size_t i = 0; i < p; ++i) first_rows.add(&table[i * cols]);
  for (std::size_t k = 0; k < cols; ++k)
    EXPECT_EQ(orrery::test::bits_of(out[k]), orrery::test::bits_of(first_rows.result(k))) << "column " << k;
}

// A NaN on the last rank only: every rank leaves the collective and throws (none waits forever).
TEST(CommMpi, ANonFiniteValueOnOneRankIsAnErrorOnEveryRank) {
  auto& c = world();
  std::vector<double> v = {1.0, c.rank() == c.size() - 1 ? std::numeric_limits<double>::quiet_NaN() : 2.0};
  std::vector<double> out(2);
  EXPECT_THROW(orrery::exact_allreduce_sum(c, v.data(), out.data(), v.size()), orrery::Error);
  c.barrier();
}

// The interpolation grid of a sharded map (RepulsionGrid::only_rows): each rank scatters its own
// block of rows, the grid is summed over the ranks, and each rank's rows get the bits a grid of
// every row gives in one process (far points included), the other rows untouched.
TEST(CommMpi, ShardedGridGivesEachRowTheOneProcessBits) {
  auto& c = world();
  for (int D : {2, 3}) {
    const orrery::index_t N = D == 2 ? 1500 : 700;
    orrery::MatrixD Y(N, D);
    std::uint64_t state = 12345;
    const auto uniform = [&state] {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      return static_cast<double>(state >> 11) / 9007199254740992.0;
    };
    for (double& v : Y.data) v = 30.0 * uniform();
    for (orrery::index_t k = 0; k < 3; ++k) Y(11 + 200 * k, k % D) = (k % 2 ? -1.0 : 1.0) * (400.0 + 50 * k);  // far points
    const orrery::RowBlock mine = orrery::hssne_rank_block(N, c.rank(), c.size());
    for (bool whole_h : {true, false}) {
      orrery::RepulsionGrid all(D, 1.0, orrery::InterpSettings{}, 1), part(D, 1.0, orrery::InterpSettings{}, 1);
      part.only_rows(mine.first, mine.count, &c);
      orrery::RepulsionSums whole, shard;
      all.sums(Y, whole, whole_h);
      shard.h.assign(static_cast<std::size_t>(N), -7.0);
      shard.hs.assign(static_cast<std::size_t>(N), -7.0);
      shard.hsy = orrery::MatrixD(N, D, -7.0);
      part.sums(Y, shard, whole_h);
      ASSERT_GT(part.timings().far_points, 0) << "the case must leave far points off the grid";
      EXPECT_EQ(shard.z_grid, whole.z_grid);
      int wrong = 0;
      for (orrery::index_t i = 0; i < N; ++i) {
        const auto k = static_cast<std::size_t>(i);
        const bool own = i >= mine.first && i < mine.first + mine.count;
        wrong += shard.h[k] != (own ? whole.h[k] : -7.0);
        wrong += shard.hs[k] != (own ? whole.hs[k] : -7.0);
        for (int d = 0; d < D; ++d) wrong += shard.hsy(i, d) != (own ? whole.hsy(i, d) : -7.0);
      }
      EXPECT_EQ(wrong, 0) << "D " << D << ", rank " << c.rank() << " of " << c.size();
    }
  }
}

// The quality measures shared over the ranks (each its block of query points) give every rank the
// one-process report bit for bit: all points and a query sample, smoothed precision/recall on, a
// number of queries that leaves the last chunk short and some ranks with none.
TEST(CommMpi, QualityMeasuresSharedOverRanksGiveTheOneProcessReport) {
  auto& c = world();
  const orrery::index_t N = 333;
  orrery::MatrixD X(N, 6), Y(N, 2);
  std::uint64_t state = 99;
  const auto uniform = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state >> 11) / 9007199254740992.0;
  };
  std::vector<int> labels(static_cast<std::size_t>(N));
  for (orrery::index_t i = 0; i < N; ++i) {
    labels[static_cast<std::size_t>(i)] = static_cast<int>(i % 3);
    for (int d = 0; d < 6; ++d) X(i, d) = uniform() + (d == i % 3 ? 2.0 : 0.0);
    for (int d = 0; d < 2; ++d) Y(i, d) = X(i, d) + 0.3 * uniform();
  }
  const auto cpu = orrery::make_cpu_backend(1);
  for (orrery::index_t queries : {orrery::index_t(0), orrery::index_t(70)}) {
    orrery::QualityRequest req;
    req.ks = {1, 5, 12};
    req.curve = true;
    req.perplexity = 10;
    req.queries = queries;
    req.seed = 4;
    req.threads = 1;
    const orrery::QualityReport one = orrery::evaluate_quality(X, Y, labels, req, *cpu);
    const orrery::QualityReport shared = orrery::evaluate_quality(X, Y, labels, req, *cpu, &c);
    const std::string where = "queries " + std::to_string(queries) + ", rank " + std::to_string(c.rank()) + " of " +
                              std::to_string(c.size());
    const auto same = [&](const std::vector<orrery::QualityAtK>& a, const std::vector<orrery::QualityAtK>& b,
                          const char* what) {
      ASSERT_EQ(a.size(), b.size()) << what << ", " << where;
      for (std::size_t g = 0; g < a.size(); ++g) {  // bit for bit
        EXPECT_EQ(a[g].k, b[g].k) << what << ", " << where;
        EXPECT_EQ(a[g].trustworthiness, b[g].trustworthiness) << what << " K " << a[g].k << ", " << where;
        EXPECT_EQ(a[g].continuity, b[g].continuity) << what << " K " << a[g].k << ", " << where;
        EXPECT_EQ(a[g].mrre_neighborhood, b[g].mrre_neighborhood) << what << " K " << a[g].k << ", " << where;
        EXPECT_EQ(a[g].mrre_visual, b[g].mrre_visual) << what << " K " << a[g].k << ", " << where;
        EXPECT_EQ(a[g].lcmc, b[g].lcmc) << what << " K " << a[g].k << ", " << where;
        EXPECT_EQ(a[g].knn_accuracy, b[g].knn_accuracy) << what << " K " << a[g].k << ", " << where;
      }
    };
    same(shared.at_k, one.at_k, "at_k");
    same(shared.at_k_se, one.at_k_se, "at_k_se");
    same(shared.curve, one.curve, "curve");
    EXPECT_EQ(shared.queries, one.queries) << where;
    EXPECT_EQ(shared.coranking, one.coranking) << where;
    EXPECT_EQ(shared.homogeneity_1nn, one.homogeneity_1nn) << where;
    EXPECT_EQ(shared.smoothed_precision, one.smoothed_precision) << where;
    EXPECT_EQ(shared.smoothed_recall, one.smoothed_recall) << where;
    EXPECT_FALSE(one.at_k.empty());
    EXPECT_TRUE(std::isfinite(one.smoothed_precision)) << "the smoothed terms must be computed";
  }
}

// Run only by the ctest comm_mpi_abort (tests/comm/mpi/expect_abort.sh), which sets the rank.
TEST(CommMpiAbort, OneRankAbortsAndEveryRankEnds) {
  const char* who = std::getenv("ORRERY_TEST_ABORT_RANK");
  if (!who) GTEST_SKIP() << "ORRERY_TEST_ABORT_RANK is not set (ctest comm_mpi_abort sets it)";
  auto& c = world();
  if (c.rank() == std::atoi(who)) c.abort(3, "deliberate abort");
  c.barrier();  // the other ranks wait here until the abort ends them
  ADD_FAILURE() << "rank " << c.rank() << " went past a barrier its aborted peer never reached";
}
