// The single-process communicator: rank 0 of 1. Every collective is a copy or nothing, so a run
// without MPI goes through the same calls as one with it.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "orrery/comm.hpp"

namespace orrery {
namespace {

class SingleComm final : public Comm {
 public:
  std::string name() const override { return "single"; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void barrier() override {}
  [[noreturn]] void abort(int code, const std::string& message) override {
    std::fprintf(stderr, "orrery: rank 0 of 1 aborts: %s\n", message.c_str());
    std::fflush(nullptr);
    std::_Exit(code);  // as MPI_Abort: no destructors, no atexit handlers, no partial outputs renamed
  }
  void allreduce(std::int64_t*, std::size_t, ReduceOp) override {}
  void allreduce(float*, std::size_t, ReduceOp) override {}
  void allreduce(double*, std::size_t, ReduceOp) override {}
  void bcast_bytes(void*, std::size_t, int) override {}
  void allgatherv_items(const void* send, std::size_t count, void* recv, const std::size_t*,
                        std::size_t item_bytes) override {
    copy(send, recv, count * item_bytes);
  }
  void alltoallv_items(const void* send, const std::size_t* send_counts, void* recv, const std::size_t* recv_counts,
                       std::size_t item_bytes) override {
    if (send_counts[0] != recv_counts[0])
      internal_error("alltoallv: rank 0 sends itself " + std::to_string(send_counts[0]) + " items but expects " +
                     std::to_string(recv_counts[0]));
    copy(send, recv, send_counts[0] * item_bytes);
  }

 private:
  static void copy(const void* from, void* to, std::size_t bytes) {
    if (bytes && from != to) std::memmove(to, from, bytes);
  }
};

}  // namespace

std::unique_ptr<Comm> make_single_comm() { return std::make_unique<SingleComm>(); }

}  // namespace orrery
