// PLSV's blocks of documents per rank (plsv_rank_block): whole reduction chunks, in rank order,
// covering every document once; a fit handed a one-process communicator equals a fit handed none;
// and fits over 2 to 4 ranks (threads of this process behind the Comm interface, so no launcher is
// needed) equal the one-process fit bit for bit, uneven blocks, a rank with one document and a
// rank with none included, for fitting and for fold-in.
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

#include "orrery/backend.hpp"
#include "orrery/comm.hpp"
#include "orrery/engines.hpp"
#include "orrery/error.hpp"
#include "orrery/plsv.hpp"

namespace orrery {
namespace {

// What the threads of one ThreadComm world share: a barrier and each rank's posted buffers.
struct ThreadWorld {
  explicit ThreadWorld(int ranks) : size(ranks), data(static_cast<size_t>(ranks)), counts(static_cast<size_t>(ranks)) {}
  void barrier() {
    std::unique_lock<std::mutex> lock(mutex);
    const long generation = passed;
    if (++waiting == size) {
      waiting = 0;
      ++passed;
      wake.notify_all();
    } else {
      wake.wait(lock, [&] { return passed != generation; });
    }
  }
  int size;
  std::vector<const void*> data;
  std::vector<const std::size_t*> counts;
  std::mutex mutex;
  std::condition_variable wake;
  int waiting = 0;
  long passed = 0;
};

// A rank of a ThreadWorld. Every collective: post, barrier, read the others' buffers in rank order
// (as a reduction in rank order), barrier (no buffer changes while another rank reads it).
class ThreadComm final : public Comm {
 public:
  ThreadComm(ThreadWorld& world, int rank) : w_(world), rank_(rank) {}
  std::string name() const override { return "threads"; }
  int rank() const override { return rank_; }
  int size() const override { return w_.size; }
  void barrier() override { w_.barrier(); }
  [[noreturn]] void abort(int code, const std::string& message) override {
    std::fprintf(stderr, "rank %d of %d aborts: %s\n", rank_, w_.size, message.c_str());
    std::_Exit(code);
  }
  void allreduce(std::int64_t* data, std::size_t n, ReduceOp op) override { reduce(data, n, op); }
  void allreduce(float* data, std::size_t n, ReduceOp op) override { reduce(data, n, op); }
  void allreduce(double* data, std::size_t n, ReduceOp op) override { reduce(data, n, op); }
  void bcast_bytes(void* data, std::size_t bytes, int root) override {
    exchange(data, nullptr, [&] {
      if (rank_ != root) std::memcpy(data, w_.data[static_cast<size_t>(root)], bytes);
    });
  }
  void allgatherv_items(const void* send, std::size_t, void* recv, const std::size_t* counts,
                        std::size_t item_bytes) override {
    exchange(send, nullptr, [&] {
      auto* out = static_cast<char*>(recv);
      for (int r = 0; r < w_.size; ++r) {
        const std::size_t bytes = counts[r] * item_bytes;
        if (bytes) std::memcpy(out, w_.data[static_cast<size_t>(r)], bytes);
        out += bytes;
      }
    });
  }
  void alltoallv_items(const void* send, const std::size_t* send_counts, void* recv, const std::size_t* recv_counts,
                       std::size_t item_bytes) override {
    exchange(send, send_counts, [&] {
      auto* out = static_cast<char*>(recv);
      for (int r = 0; r < w_.size; ++r) {
        std::size_t offset = 0;  // where rank r's items for this rank start in its send buffer
        for (int q = 0; q < rank_; ++q) offset += w_.counts[static_cast<size_t>(r)][q];
        const std::size_t bytes = recv_counts[r] * item_bytes;
        if (bytes) std::memcpy(out, static_cast<const char*>(w_.data[static_cast<size_t>(r)]) + offset * item_bytes, bytes);
        out += bytes;
      }
    });
  }

 private:
  template <class F>
  void exchange(const void* data, const std::size_t* counts, F&& read) {
    w_.data[static_cast<size_t>(rank_)] = data;
    w_.counts[static_cast<size_t>(rank_)] = counts;
    w_.barrier();
    read();
    w_.barrier();
  }
  template <class T>
  void reduce(T* data, std::size_t n, ReduceOp op) {
    std::vector<T> out(n);
    exchange(data, nullptr, [&] {
      for (int r = 0; r < w_.size; ++r) {
        const T* v = static_cast<const T*>(w_.data[static_cast<size_t>(r)]);
        for (std::size_t i = 0; i < n; ++i)
          out[i] = r == 0                 ? v[i]
                   : op == ReduceOp::sum ? out[i] + v[i]
                   : op == ReduceOp::min ? std::min(out[i], v[i])
                                         : std::max(out[i], v[i]);
      }
    });
    std::copy(out.begin(), out.end(), data);
  }
  ThreadWorld& w_;
  int rank_;
};

// fit(comm) on every rank of a world of `ranks` threads; every rank's result, in rank order.
template <class Fit>
std::vector<PlsvResult> on_ranks(int ranks, const Fit& fit) {
  ThreadWorld world(ranks);
  std::vector<PlsvResult> results(static_cast<size_t>(ranks));
  std::vector<std::exception_ptr> failures(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      ThreadComm comm(world, r);
      try {
        results[static_cast<size_t>(r)] = fit(comm);
      } catch (...) {
        failures[static_cast<size_t>(r)] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (const auto& f : failures)
    if (f) std::rethrow_exception(f);
  return results;
}

void expect_same_bits(const PlsvResult& a, const PlsvResult& b, const std::string& what) {
  EXPECT_EQ(a.doc_coords.data, b.doc_coords.data) << what;
  EXPECT_EQ(a.model.topic_coords.data, b.model.topic_coords.data) << what;
  EXPECT_EQ(a.model.theta.data, b.model.theta.data) << what;
  EXPECT_EQ(a.log_posterior, b.log_posterior) << what;
  EXPECT_EQ(a.topic_information, b.topic_information) << what;
  ASSERT_EQ(a.trace.size(), b.trace.size()) << what;
  for (size_t i = 0; i < a.trace.size(); ++i) {
    EXPECT_EQ(a.trace[i].log_likelihood, b.trace[i].log_likelihood) << what << ", iteration " << i;
    EXPECT_EQ(a.trace[i].newton_steps, b.trace[i].newton_steps) << what << ", iteration " << i;
    EXPECT_EQ(a.trace[i].relocated, b.trace[i].relocated) << what << ", iteration " << i;
  }
}

PlsvParams few_iterations(int Z) {
  PlsvParams p;
  p.topics = Z;
  p.max_iter = 12;
  p.tol = 0;
  p.relocate_every = 5;  // the relocation step's counts cross ranks too
  return p;
}

TEST(PlsvRankBlock, WholeChunksInRankOrderCoveringEveryDocumentOnce) {
  for (index_t n : {1, 1023, 1024, 1025, 2049, 3000, 5000})
    for (int ranks = 1; ranks <= 7; ++ranks) {
      index_t next = 0;
      for (int r = 0; r < ranks; ++r) {
        const PlsvBlock b = plsv_rank_block(n, r, ranks);
        EXPECT_EQ(b.begin, next) << "n " << n << ", rank " << r << " of " << ranks;
        EXPECT_LE(b.begin, b.end);
        EXPECT_EQ(b.begin % kPlsvChunk, 0) << "n " << n << ", rank " << r << " of " << ranks;
        next = b.end;
      }
      EXPECT_EQ(next, n) << "n " << n << ", " << ranks << " ranks";
    }
  EXPECT_EQ(plsv_rank_block(2049, 2, 3).end - plsv_rank_block(2049, 2, 3).begin, 1);
  EXPECT_EQ(plsv_rank_block(2049, 0, 4).end, 0);
  EXPECT_THROW(plsv_rank_block(10, 2, 2), Error);
}

TEST(PlsvFit, AOneProcessCommunicatorEqualsNoneBitForBit) {
  const auto planted = sample_plsv_corpus(600, 80, 4, 2, 25, 5);
  auto backend = make_backend("cpu", 2);
  const std::unique_ptr<Comm> single = make_single_comm();
  const PlsvParams prm = few_iterations(4);
  const PlsvResult a = fit_plsv(*backend, planted.corpus, prm, 1);
  const PlsvResult b = fit_plsv(*backend, planted.corpus, prm, 1, {}, nullptr, single.get());
  expect_same_bits(a, b, "single communicator");
  EXPECT_EQ(b.rank_documents, std::vector<index_t>{600});
  EXPECT_EQ(b.rank_seconds_fit.size(), 1u);
}

// 2049 documents are three chunks, the last of one document: 2 ranks own 1024 and 1025, 3 ranks
// 1024, 1024 and 1, 4 ranks none, 1024, 1024 and 1.
TEST(PlsvFit, AnyNumberOfRanksGivesTheOneProcessBits) {
  for (int D : {2, 3}) {
    const auto planted = sample_plsv_corpus(2049, 90, 5, D, 20, 13 + D);
    PlsvParams prm = few_iterations(5);
    prm.dim = D;
    auto backend = make_backend("cpu", 1);
    const PlsvResult one = fit_plsv(*backend, planted.corpus, prm, 3);
    for (int ranks = 2; ranks <= 4; ++ranks) {
      const auto all = on_ranks(ranks, [&](Comm& comm) {
        auto mine = make_backend("cpu", 1);
        return fit_plsv(*mine, planted.corpus, prm, 3, {}, nullptr, &comm);
      });
      for (int r = 0; r < ranks; ++r) {
        const std::string what = "D " + std::to_string(D) + ", rank " + std::to_string(r) + " of " + std::to_string(ranks);
        expect_same_bits(one, all[static_cast<size_t>(r)], what);
        index_t owned = 0;
        for (index_t n : all[static_cast<size_t>(r)].rank_documents) owned += n;
        EXPECT_EQ(owned, 2049) << what;
      }
    }
  }
}

TEST(PlsvFoldIn, AnyNumberOfRanksGivesTheOneProcessBits) {
  const auto planted = sample_plsv_corpus(2049, 90, 4, 2, 20, 29);
  const PlsvParams prm = few_iterations(4);
  auto backend = make_backend("cpu", 1);
  const PlsvResult one = fold_in_plsv(*backend, planted.corpus, planted.model, prm);
  for (int ranks : {2, 3}) {
    const auto all = on_ranks(ranks, [&](Comm& comm) {
      auto mine = make_backend("cpu", 1);
      return fold_in_plsv(*mine, planted.corpus, planted.model, prm, {}, nullptr, &comm);
    });
    for (int r = 0; r < ranks; ++r)
      expect_same_bits(one, all[static_cast<size_t>(r)],
                       "fold-in, rank " + std::to_string(r) + " of " + std::to_string(ranks));
  }
}

}  // namespace
}  // namespace orrery
