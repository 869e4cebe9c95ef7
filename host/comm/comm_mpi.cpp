// The MPI communicator: a duplicate of MPI_COMM_WORLD (so a run's messages never meet those of a
// library or a Python caller on the same processes), with errors returned as codes and thrown as
// orrery::Error naming the MPI call. Built when -DORRERY_MPI finds MPI (no_mpi.cpp otherwise).
// The C API only: the deprecated C++ bindings (and their warnings) stay out.
//
// Every collective is started non-blocking and waited for with a deadline (Comm's `timeout`): a
// rank that waits longer asks every other rank, on a second duplicate of the world, whether it is
// waiting too (a rank answers such questions whenever it waits), and aborts the run naming the ranks
// that did not answer: those that never reached the collective (stopped, deadlocked, or far slower
// than the rest). A rank that dies is Open MPI's launcher's to report; one that hangs is this one's.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "comm/comm_backends.hpp"
#include "orrery/error.hpp"

namespace orrery {

bool mpi_comm_built() { return true; }

namespace comm {
namespace {

constexpr std::size_t kMaxCount = INT_MAX;  // MPI-3 counts and displacements are int

[[noreturn]] void mpi_failed(const char* call, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
  internal_error(std::string(call) + " failed: " +
                 (length > 0 ? std::string(text, static_cast<std::size_t>(length)) : "error " + std::to_string(code)));
}

void check(int code, const char* call) {
  if (code != MPI_SUCCESS) mpi_failed(call, code);
}

// MPI is initialised once per process, by the first communicator made, and finalised by this
// object's destructor at exit (after every communicator made later is gone). When someone else
// initialised it (mpi4py, a host application), they finalise it too. FUNNELED: OpenMP threads
// compute, only the thread that made the communicator calls MPI.
class MpiRuntime {
 public:
  MpiRuntime() {
    int initialized = 0, finalized = 0, provided = 0;
    check(MPI_Initialized(&initialized), "MPI_Initialized");
    check(MPI_Finalized(&finalized), "MPI_Finalized");
    if (finalized) internal_error("comm: MPI was finalised already in this process; it cannot start again");
    if (!initialized) {
      check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
      owned_ = true;
    } else {
      check(MPI_Query_thread(&provided), "MPI_Query_thread");
    }
    if (provided < MPI_THREAD_FUNNELED)
      internal_error("comm: MPI provides thread level " + std::to_string(provided) +
                     ", below MPI_THREAD_FUNNELED, which OpenMP threads beside MPI need");
  }
  ~MpiRuntime() {
    int finalized = 1;
    if (owned_ && MPI_Finalized(&finalized) == MPI_SUCCESS && !finalized) MPI_Finalize();
  }
  MpiRuntime(const MpiRuntime&) = delete;
  MpiRuntime& operator=(const MpiRuntime&) = delete;

 private:
  bool owned_ = false;
};

void start_mpi() { static MpiRuntime runtime; }

bool mpi_finalized() {
  int finalized = 1;
  return MPI_Finalized(&finalized) != MPI_SUCCESS || finalized;
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return MPI_SUM;
    case ReduceOp::min: return MPI_MIN;
    case ReduceOp::max: return MPI_MAX;
  }
  internal_error("allreduce: unknown ReduceOp");
}

// An item of item_bytes bytes as one MPI datatype, so that counts are in items and one call can
// move 2^31 - 1 items rather than 2^31 - 1 bytes.
class ItemType {
 public:
  explicit ItemType(std::size_t item_bytes) {
    if (item_bytes == 0 || item_bytes > kMaxCount) internal_error("comm: item of " + std::to_string(item_bytes) + " bytes");
    check(MPI_Type_contiguous(static_cast<int>(item_bytes), MPI_BYTE, &type_), "MPI_Type_contiguous");
    check(MPI_Type_commit(&type_), "MPI_Type_commit");
  }
  ~ItemType() {
    if (!mpi_finalized()) MPI_Type_free(&type_);
  }
  ItemType(const ItemType&) = delete;
  ItemType& operator=(const ItemType&) = delete;
  MPI_Datatype get() const { return type_; }

 private:
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
};

// Counts and their running displacements as MPI's ints; refused (naming the call) when the total
// passes MPI's int limit.
struct IntLayout {
  std::vector<int> counts, displacements;
  IntLayout(const std::size_t* counts_in, int ranks, const char* call) {
    std::size_t offset = 0;
    for (int r = 0; r < ranks; ++r) {
      const std::size_t c = counts_in[r];
      if (c > kMaxCount || offset + c > kMaxCount)
        internal_error(std::string(call) + ": " + std::to_string(offset + c) +
                       " items in one call pass MPI's limit of 2^31 - 1");
      counts.push_back(static_cast<int>(c));
      displacements.push_back(static_cast<int>(offset));
      offset += c;
    }
  }
};

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The watch communicator's two kinds of message: a rank that waited past its deadline asks, every
// rank that is waiting answers (both carry 64-bit collective numbers).
constexpr int kAskTag = 1, kAnswerTag = 2;

// A waiting collective is polled without pause for its first second, as MPI_Wait would (a nap there
// would add its length to every step whose ranks arrive a few milliseconds apart), then every
// millisecond: long waits (rank 0 writing the outputs) leave the core to others.
constexpr double kSpinSeconds = 1.0;
constexpr auto kNap = std::chrono::milliseconds(1);
// How long a rank past its deadline waits for the others' answers.
constexpr double kAnswerSeconds = 2.0;

class MpiComm final : public Comm {
 public:
  explicit MpiComm(double timeout) : timeout_(timeout) {
    start_mpi();
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    check(MPI_Comm_dup(MPI_COMM_WORLD, &watch_), "MPI_Comm_dup");
    check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check(MPI_Comm_set_errhandler(watch_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
    // The ranks that share this one's memory are its node's, whatever the launcher (no environment
    // variable of one launcher or another to read).
    MPI_Comm node;
    check(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
    check(MPI_Comm_rank(node, &node_rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(node, &node_size_), "MPI_Comm_size");
    MPI_Comm_free(&node);
  }
  ~MpiComm() override {
    if (!mpi_finalized()) {
      MPI_Comm_free(&watch_);
      MPI_Comm_free(&comm_);
    }
  }

  std::string name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int node_rank() const override { return node_rank_; }
  int node_size() const override { return node_size_; }
  void barrier() override {
    MPI_Request request;
    check(MPI_Ibarrier(comm_, &request), "MPI_Barrier");
    wait(request, "MPI_Barrier");
  }
  [[noreturn]] void abort(int code, const std::string& message) override {
    std::fprintf(stderr, "orrery: rank %d of %d aborts: %s\n", rank_, size_, message.c_str());
    std::fflush(nullptr);
    MPI_Abort(comm_, code);
    std::_Exit(code);  // MPI_Abort does not return; this only satisfies [[noreturn]]
  }

  void allreduce(std::int64_t* data, std::size_t n, ReduceOp op) override { reduce(data, n, op, MPI_INT64_T); }
  void allreduce(float* data, std::size_t n, ReduceOp op) override { reduce(data, n, op, MPI_FLOAT); }
  void allreduce(double* data, std::size_t n, ReduceOp op) override { reduce(data, n, op, MPI_DOUBLE); }

  void bcast_bytes(void* data, std::size_t bytes, int root) override {
    auto* bytes_at = static_cast<char*>(data);
    for (std::size_t done = 0; done < bytes;) {
      const std::size_t part = std::min(bytes - done, kMaxCount);
      MPI_Request request;
      check(MPI_Ibcast(bytes_at + done, static_cast<int>(part), MPI_BYTE, root, comm_, &request), "MPI_Bcast");
      wait(request, "MPI_Bcast");
      done += part;
    }
  }

  void allgatherv_items(const void* send, std::size_t count, void* recv, const std::size_t* counts,
                        std::size_t item_bytes) override {
    const IntLayout layout(counts, size_, "MPI_Allgatherv");
    const ItemType item(item_bytes);
    MPI_Request request;
    check(MPI_Iallgatherv(send, static_cast<int>(count), item.get(), recv, layout.counts.data(),
                          layout.displacements.data(), item.get(), comm_, &request),
          "MPI_Allgatherv");
    wait(request, "MPI_Allgatherv");
  }

  void alltoallv_items(const void* send, const std::size_t* send_counts, void* recv, const std::size_t* recv_counts,
                       std::size_t item_bytes) override {
    const IntLayout out(send_counts, size_, "MPI_Alltoallv (send)"), in(recv_counts, size_, "MPI_Alltoallv (receive)");
    const ItemType item(item_bytes);
    MPI_Request request;
    check(MPI_Ialltoallv(send, out.counts.data(), out.displacements.data(), item.get(), recv, in.counts.data(),
                         in.displacements.data(), item.get(), comm_, &request),
          "MPI_Alltoallv");
    wait(request, "MPI_Alltoallv");
  }

 private:
  // In pieces of at most 2^31 - 1 values: an elementwise reduction splits anywhere.
  template <class T>
  void reduce(T* data, std::size_t n, ReduceOp op, MPI_Datatype type) {
    for (std::size_t done = 0; done < n;) {
      const std::size_t part = std::min(n - done, kMaxCount);
      MPI_Request request;
      check(MPI_Iallreduce(MPI_IN_PLACE, data + done, static_cast<int>(part), type, mpi_op(op), comm_, &request),
            "MPI_Allreduce");
      wait(request, "MPI_Allreduce");
      done += part;
    }
  }

  // Waits for a started collective (the collective_-th of this communicator, numbered alike on
  // every rank), answering the other ranks' questions meanwhile; past the deadline, finds out which
  // ranks are not waiting and aborts the run naming them.
  void wait(MPI_Request& request, const char* call) {
    ++collective_;
    int done = 0;
    const Clock::time_point start = Clock::now();
    bool spinning = true;
    for (long polls = 1;; ++polls) {
      check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), call);
      if (done) return;
      if (spinning && polls % 1024 != 0) continue;  // the clock and the questions every 1,024 polls
      answer_questions();
      const double waited = seconds_since(start);
      spinning = waited < kSpinSeconds;
      if (!spinning) std::this_thread::sleep_for(kNap);
      if (timeout_ > 0 && waited > timeout_ && late_rank_arrived(request, call)) return;
    }
  }

  // Answers every question waiting on the watch communicator with (the asker's collective, this
  // rank's): this rank is waiting too. A send that fails (the asker gone) is ignored.
  void answer_questions() {
    for (;;) {
      int flag = 0;
      MPI_Status status;
      if (MPI_Iprobe(MPI_ANY_SOURCE, kAskTag, watch_, &flag, &status) != MPI_SUCCESS || !flag) return;
      std::uint64_t asked = 0;
      if (MPI_Recv(&asked, 1, MPI_UINT64_T, status.MPI_SOURCE, kAskTag, watch_, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        return;
      const std::uint64_t answer[2] = {asked, collective_};
      MPI_Request sent;
      if (MPI_Isend(answer, 2, MPI_UINT64_T, status.MPI_SOURCE, kAnswerTag, watch_, &sent) == MPI_SUCCESS)
        MPI_Wait(&sent, MPI_STATUS_IGNORE);  // two words: sent eagerly, at once
    }
  }

  // Past the deadline: asks every other rank whether it waits and gives them kAnswerSeconds to say so.
  // Returns true when the collective completed meanwhile (the late rank arrived); aborts otherwise,
  // naming the ranks that did not answer.
  bool late_rank_arrived(MPI_Request& request, const char* call) {
    asked_ = collective_;  // the questions' buffer, untouched until the next question
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      MPI_Request ask;
      check(MPI_Isend(&asked_, 1, MPI_UINT64_T, r, kAskTag, watch_, &ask), "MPI_Isend");
      MPI_Request_free(&ask);  // completes on its own; a rank that never receives it is the one to name
    }
    std::vector<char> answered(static_cast<std::size_t>(size_), 0);
    answered[static_cast<std::size_t>(rank_)] = 1;
    std::vector<std::uint64_t> at(static_cast<std::size_t>(size_), collective_);
    const Clock::time_point asked = Clock::now();
    while (seconds_since(asked) < kAnswerSeconds &&
           std::count(answered.begin(), answered.end(), 1) < static_cast<std::ptrdiff_t>(size_)) {
      int done = 0;
      check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), call);
      if (done) return true;  // the answers still on their way are matched by number, never mistaken later
      answer_questions();
      int flag = 0;
      MPI_Status status;
      check(MPI_Iprobe(MPI_ANY_SOURCE, kAnswerTag, watch_, &flag, &status), "MPI_Iprobe");
      if (!flag) {
        std::this_thread::sleep_for(kNap);
        continue;
      }
      std::uint64_t answer[2];
      check(MPI_Recv(answer, 2, MPI_UINT64_T, status.MPI_SOURCE, kAnswerTag, watch_, MPI_STATUS_IGNORE), "MPI_Recv");
      if (answer[0] != collective_) continue;  // an answer to an earlier question
      answered[static_cast<std::size_t>(status.MPI_SOURCE)] = 1;
      at[static_cast<std::size_t>(status.MPI_SOURCE)] = answer[1];
    }
    std::string missing, elsewhere;
    int count = 0;
    for (int r = 0; r < size_; ++r) {
      if (!answered[static_cast<std::size_t>(r)]) {
        missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        ++count;
      } else if (at[static_cast<std::size_t>(r)] != collective_) {
        elsewhere += " rank " + std::to_string(r) + " waits in collective #" +
                     std::to_string(at[static_cast<std::size_t>(r)]) + ";";
      }
    }
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.0f", timeout_);
    const std::string where = std::string(call) + " (collective #" + std::to_string(collective_) + " of the run)";
    abort(1, count > 0 ? "waited more than " + std::string(seconds) + " s in " + where + " for rank" +
                             (count > 1 ? "s " : " ") + missing + ", which did not reach it: hung, stopped, or far "
                             "slower than the others (comm_timeout sets the wait, 0 waits forever)"
                       : "every rank waits, but not in the same collective: this rank in " + where + ";" +
                             elsewhere + " an internal error");
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm watch_ = MPI_COMM_NULL;  // the questions and answers about waiting ranks, apart from the run's messages
  int rank_ = 0, size_ = 1, node_rank_ = 0, node_size_ = 1;
  double timeout_;                // seconds a collective may wait for the last rank (0: no limit)
  std::uint64_t collective_ = 0;  // collectives waited for so far (alike on every rank)
  std::uint64_t asked_ = 0;       // the collective of this rank's last question
};

}  // namespace

std::unique_ptr<Comm> make_mpi_comm(double timeout) { return std::make_unique<MpiComm>(timeout); }

}  // namespace comm
}  // namespace orrery
