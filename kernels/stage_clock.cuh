// Stage times on the device's own clock: an event recorded on the stream at each stage boundary,
// read back only when the times are asked for (and, without waiting, for the marks the device has
// already passed when a new pass starts, so that the marks kept stay few). Timing a stage thus
// never makes the host wait for the device: an engine synchronises only where its algorithm needs a
// value back.
#pragma once
#include <cuda_runtime.h>

#include <deque>
#include <vector>

#include "check.cuh"

namespace orrery::cuda {

class StageClock {
 public:
  explicit StageClock(int stages) : seconds_(static_cast<size_t>(stages), 0.0) {}

  // Opens a pass: a mark on the stream that the pass's first stage is timed from.
  void start() {
    fold(false);
    record(-1);
  }
  // Closes `stage`: the device time since the previous mark is the stage's.
  void mark(int stage) { record(stage); }
  // Seconds per stage over every pass so far; waits for the device to reach the last mark.
  const std::vector<double>& seconds() const {
    fold(true);
    return seconds_;
  }

 private:
  struct Mark {
    size_t event;  // in pool_
    int stage;     // -1: a pass's start
  };

  void record(int stage) {
    size_t e = pool_.size();
    if (!free_.empty()) {
      e = free_.back();
      free_.pop_back();
    } else {
      pool_.emplace_back();
    }
    ORRERY_CUDA_CHECK(cudaEventRecord(pool_[e].get()));
    pending_.push_back({e, stage});
  }

  // Credits the pending marks in order, each against the one before it; without `wait`, only those
  // the device has reached.
  void fold(bool wait) const {
    while (!pending_.empty()) {
      const Mark m = pending_.front();
      if (wait) {
        ORRERY_CUDA_CHECK(cudaEventSynchronize(pool_[m.event].get()));
      } else {
        const cudaError_t q = cudaEventQuery(pool_[m.event].get());
        if (q == cudaErrorNotReady) {
          cudaGetLastError();  // "not ready" is an answer: never to be reported by the next launch check
          return;
        }
        ORRERY_CUDA_CHECK(q);
      }
      if (m.stage >= 0 && last_ != kNone) {
        float ms = 0.f;
        ORRERY_CUDA_CHECK(cudaEventElapsedTime(&ms, pool_[last_].get(), pool_[m.event].get()));
        seconds_[static_cast<size_t>(m.stage)] += 1e-3 * static_cast<double>(ms);
      }
      if (last_ != kNone) free_.push_back(last_);
      last_ = m.event;
      pending_.pop_front();
    }
  }

  static constexpr size_t kNone = static_cast<size_t>(-1);
  mutable std::vector<Event> pool_;
  mutable std::vector<size_t> free_;
  mutable std::deque<Mark> pending_;
  mutable size_t last_ = kNone;  // the newest mark already credited
  mutable std::vector<double> seconds_;
};

}  // namespace orrery::cuda
