// The MPI communicator: a duplicate of MPI_COMM_WORLD (so a run's messages never meet those of a
// library or a Python caller on the same processes), with errors returned as codes and thrown as
// orrery::Error naming the MPI call. Built when -DORRERY_MPI finds MPI (no_mpi.cpp otherwise).
// The C API only: the deprecated C++ bindings (and their warnings) stay out.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
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

class MpiComm final : public Comm {
 public:
  MpiComm() {
    start_mpi();
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  }
  ~MpiComm() override {
    if (!mpi_finalized()) MPI_Comm_free(&comm_);
  }

  std::string name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void barrier() override { check(MPI_Barrier(comm_), "MPI_Barrier"); }
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
      check(MPI_Bcast(bytes_at + done, static_cast<int>(part), MPI_BYTE, root, comm_), "MPI_Bcast");
      done += part;
    }
  }

  void allgatherv_items(const void* send, std::size_t count, void* recv, const std::size_t* counts,
                        std::size_t item_bytes) override {
    const IntLayout layout(counts, size_, "MPI_Allgatherv");
    const ItemType item(item_bytes);
    check(MPI_Allgatherv(send, static_cast<int>(count), item.get(), recv, layout.counts.data(),
                         layout.displacements.data(), item.get(), comm_),
          "MPI_Allgatherv");
  }

  void alltoallv_items(const void* send, const std::size_t* send_counts, void* recv, const std::size_t* recv_counts,
                       std::size_t item_bytes) override {
    const IntLayout out(send_counts, size_, "MPI_Alltoallv (send)"), in(recv_counts, size_, "MPI_Alltoallv (receive)");
    const ItemType item(item_bytes);
    check(MPI_Alltoallv(send, out.counts.data(), out.displacements.data(), item.get(), recv, in.counts.data(),
                        in.displacements.data(), item.get(), comm_),
          "MPI_Alltoallv");
  }

 private:
  // In pieces of at most 2^31 - 1 values: an elementwise reduction splits anywhere.
  template <class T>
  void reduce(T* data, std::size_t n, ReduceOp op, MPI_Datatype type) {
    for (std::size_t done = 0; done < n;) {
      const std::size_t part = std::min(n - done, kMaxCount);
      check(MPI_Allreduce(MPI_IN_PLACE, data + done, static_cast<int>(part), type, mpi_op(op), comm_), "MPI_Allreduce");
      done += part;
    }
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
};

}  // namespace

std::unique_ptr<Comm> make_mpi_comm() { return std::make_unique<MpiComm>(); }

}  // namespace comm
}  // namespace orrery
