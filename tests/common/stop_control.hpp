// A RunControl for tests of interrupted fits: it stops a fit at one safe point (saving the state the
// method hands over there, as a checkpoint would), then hands that state to the next fit, which
// continues from it; or, with no stop, lets a fit run through while counting its safe points.
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "orrery/run_control.hpp"

namespace orrery::test {

class StopControl final : public RunControl {
 public:
  static constexpr int kNever = -1;
  // Stops after iteration `stop_at` (kNever: runs through).
  explicit StopControl(int stop_at) : stop_at_(stop_at) {}
  const RunState* resume() const override { return resuming_ ? &saved_ : nullptr; }
  void safe_point(int iteration, const std::function<RunState()>& capture) override {
    iterations.push_back(iteration);
    if (resuming_ || iteration != stop_at_) return;
    saved_ = capture();
    throw Interrupted("stopped after iteration " + std::to_string(iteration));
  }
  // The next fit continues from the saved state.
  void continue_next() { resuming_ = true; }
  const RunState& saved() const { return saved_; }

  std::vector<int> iterations;  // every safe point reached, in order

 private:
  int stop_at_;
  bool resuming_ = false;
  RunState saved_;
};

// `fit(control)` stopped after iteration k (it must throw Interrupted there), then run again from
// the state saved: the continued fit's result.
template <class Fit>
auto stopped_and_continued(int k, const Fit& fit) {
  StopControl control(k);
  EXPECT_THROW(fit(&control), Interrupted) << "stopping after iteration " << k;
  control.continue_next();
  return fit(&control);
}

}  // namespace orrery::test
