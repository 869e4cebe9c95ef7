// orrery::Comm — the communicator seam beside Backend: what a method needs from the other processes
// of a run (reductions of O(K) statistics, the rows other ranks own, a broadcast of start-up data),
// with no MPI type in sight. A run has one Comm; a method sees only this interface, as it sees only
// Backend, and never asks which implementation it talks to.
//
// Implementations: "single" (one process, no MPI needed: every collective is a copy or nothing) and
// "mpi" (host/comm/comm_mpi.cpp, built with -DORRERY_MPI=AUTO|ON when MPI is found). Device buffers
// are not handled here: a NCCL communicator for them belongs beside this one (built with CUDA), reached
// through the Backend's engines so that device data need not pass through host memory; until then
// device data travels through host buffers and this interface.
//
// Rules every implementation keeps: every rank calls every collective in the same order with
// matching arguments (same n, same root, counts that agree); a call with arguments wrong on one rank
// only cannot be detected there and may hang the others. Floating-point sums through `allreduce` are
// MPI's: their rounding may change with the number of ranks. A sum that must not depend on how rows
// are split over ranks goes through orrery/exact_sum.hpp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "orrery/error.hpp"

namespace orrery {

enum class ReduceOp { sum, min, max };

class Comm {
 public:
  virtual ~Comm() = default;

  virtual std::string name() const = 0;  // "single" or "mpi"
  virtual int rank() const = 0;          // 0 .. size() - 1
  virtual int size() const = 0;
  // This rank's place among the ranks on its own machine (0 .. ranks there - 1): what shares out a
  // node's GPUs (make_backend). An implementation that cannot tell takes every rank to be on one
  // machine.
  virtual int node_rank() const { return rank(); }
  // The number of ranks on this rank's machine, itself included (what share of its memory is its).
  virtual int node_size() const { return size(); }
  virtual void barrier() = 0;
  // Ends every process of the run with exit status `code` after writing "rank R of S aborts:
  // message" to stderr: for a rank that cannot go on while the others wait in a collective.
  [[noreturn]] virtual void abort(int code, const std::string& message) = 0;

  // In place: data[i] becomes op over every rank's data[i]. min/max of a NaN is MPI's choice.
  virtual void allreduce(std::int64_t* data, std::size_t n, ReduceOp op) = 0;
  virtual void allreduce(float* data, std::size_t n, ReduceOp op) = 0;
  virtual void allreduce(double* data, std::size_t n, ReduceOp op) = 0;

  // Byte-level primitives behind the typed calls below. Counts are in items of item_bytes bytes;
  // received blocks lie contiguously in rank order. MPI limits one call to 2^31 - 1 items in all.
  virtual void bcast_bytes(void* data, std::size_t bytes, int root) = 0;
  virtual void allgatherv_items(const void* send, std::size_t count, void* recv, const std::size_t* counts,
                                std::size_t item_bytes) = 0;
  virtual void alltoallv_items(const void* send, const std::size_t* send_counts, void* recv,
                               const std::size_t* recv_counts, std::size_t item_bytes) = 0;

  // data[0..n) of rank `root` replaces data[0..n) on every rank.
  template <class T>
  void bcast(T* data, std::size_t n, int root) {
    static_assert(std::is_trivially_copyable_v<T>, "bcast moves bytes");
    check_root(root, "bcast");
    bcast_bytes(data, n * sizeof(T), root);
  }

  // Every rank's `count` items, concatenated in rank order into `out` (counts[r]: rank r's count,
  // known to every rank; counts[rank()] must equal count).
  template <class T>
  void allgatherv(const T* local, std::size_t count, T* out, const std::vector<std::size_t>& counts) {
    static_assert(std::is_trivially_copyable_v<T>, "allgatherv moves bytes");
    check_counts(counts, "allgatherv");
    if (counts[static_cast<std::size_t>(rank())] != count)
      internal_error("allgatherv: counts[" + std::to_string(rank()) + "] is " +
                     std::to_string(counts[static_cast<std::size_t>(rank())]) + " but this rank sends " +
                     std::to_string(count));
    allgatherv_items(local, count, out, counts.data(), sizeof(T));
  }
  // The same when the counts are not known in advance: they are gathered first (into *counts when
  // given).
  template <class T>
  std::vector<T> allgatherv(const T* local, std::size_t count, std::vector<std::size_t>* counts = nullptr) {
    std::vector<std::size_t> all = gather_counts(count);
    std::vector<T> out(total(all));
    allgatherv(local, count, out.data(), all);
    if (counts) *counts = std::move(all);
    return out;
  }

  // Personalised exchange: `send` holds send_counts[r] items for rank r, in rank order; `recv`
  // receives recv_counts[r] items from rank r, in rank order (recv_counts[r] must equal what rank r
  // sends here).
  template <class T>
  void alltoallv(const T* send, const std::vector<std::size_t>& send_counts, T* recv,
                 const std::vector<std::size_t>& recv_counts) {
    static_assert(std::is_trivially_copyable_v<T>, "alltoallv moves bytes");
    check_counts(send_counts, "alltoallv (send counts)");
    check_counts(recv_counts, "alltoallv (receive counts)");
    alltoallv_items(send, send_counts.data(), recv, recv_counts.data(), sizeof(T));
  }
  // The same when the receive counts are not known: they are exchanged first (into *recv_counts).
  template <class T>
  std::vector<T> alltoallv(const T* send, const std::vector<std::size_t>& send_counts,
                           std::vector<std::size_t>* recv_counts = nullptr) {
    check_counts(send_counts, "alltoallv (send counts)");
    std::vector<std::size_t> from(send_counts.size());
    const std::vector<std::size_t> one_each(send_counts.size(), 1);  // one count to and from every rank
    alltoallv_items(send_counts.data(), one_each.data(), from.data(), one_each.data(), sizeof(std::size_t));
    std::vector<T> out(total(from));
    alltoallv(send, send_counts, out.data(), from);
    if (recv_counts) *recv_counts = std::move(from);
    return out;
  }

 private:
  void check_root(int root, const char* call) const;
  void check_counts(const std::vector<std::size_t>& counts, const char* call) const;
  std::vector<std::size_t> gather_counts(std::size_t count);
  static std::size_t total(const std::vector<std::size_t>& counts);
};

// One process: rank 0 of 1, no MPI needed.
std::unique_ptr<Comm> make_single_comm();

// The communicator a run's `comm` key asks for:
//   "single"  one process;
//   "mpi"     MPI_COMM_WORLD's processes (MPI is initialised on first use, once per process, and
//             finalised at exit); an input error naming `comm` when this build has no MPI;
//   "auto"    "mpi" when the process was started by an MPI launcher (mpirun/mpiexec or srun set
//             OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK or SLURM_STEP_NUM_TASKS), "single"
//             otherwise. Without MPI in the build, a launch of several processes is an input error
//             (each would compute the whole run alone).
// `timeout`: the seconds a rank waits in a collective for the last of the others (0: no limit).
// Past it, the MPI communicator asks which ranks are waiting too and aborts the run (every rank,
// exit status 1) naming those that are not: a rank that hangs ends the run as one that dies does.
inline constexpr double kDefaultCommTimeout = 600.0;
std::unique_ptr<Comm> make_comm(const std::string& mode, double timeout = kDefaultCommTimeout);

// Whether this build has the MPI communicator (-DORRERY_MPI found MPI).
bool mpi_comm_built();

}  // namespace orrery
