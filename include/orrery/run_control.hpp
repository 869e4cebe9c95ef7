// Interruptible runs: the one hook every iterative method calls at its safe points (the end of an
// iteration), and the state it hands over there, so that a later process continues exactly where
// this one stopped. The methods know nothing of files or signals: the command line's control
// (host/cli/checkpoint.hpp) decides when to save, where, and when to stop.
#pragma once
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "orrery/error.hpp"
#include "orrery/types.hpp"

namespace orrery {

// A method's state at a safe point: named arrays of doubles. Counters and flags are stored as
// doubles too (exact for every integer below 2^53); every value keeps all its bits, which is what
// makes a resumed run bit-identical to an uninterrupted one.
class RunState {
 public:
  void put(const std::string& key, std::vector<double> values) { values_[key] = std::move(values); }
  void put(const std::string& key, double value) { values_[key] = {value}; }
  void put(const std::string& key, const MatrixD& m) { values_[key] = m.data; }

  const std::vector<double>& get(const std::string& key) const {
    const auto it = values_.find(key);
    if (it == values_.end()) internal_error("checkpoint: no saved value '" + key + "'");
    return it->second;
  }
  double scalar(const std::string& key) const {
    const auto& v = get(key);
    if (v.size() != 1) internal_error("checkpoint: '" + key + "' is not one value");
    return v[0];
  }
  int count(const std::string& key) const { return static_cast<int>(scalar(key)); }
  MatrixD matrix(const std::string& key, index_t rows, index_t cols) const {
    MatrixD m(rows, cols);
    m.data = get(key);
    if (static_cast<index_t>(m.data.size()) != rows * cols)
      internal_error("checkpoint: '" + key + "' does not hold " + std::to_string(rows) + " x " + std::to_string(cols) +
                     " values");
    return m;
  }
  const std::map<std::string, std::vector<double>>& values() const { return values_; }

 private:
  std::map<std::string, std::vector<double>> values_;
};

class RunControl {
 public:
  virtual ~RunControl() = default;
  // The state an interrupted run of the same configuration saved, or nullptr: a method given one
  // continues from it instead of starting (its random start and initialisation are skipped).
  virtual const RunState* resume() const = 0;
  // Called by a method after `iteration` iterations are done and its state is consistent. `capture`
  // (called only when a checkpoint is due, since it copies the method's arrays off its device)
  // returns that state. Throws Interrupted, after saving, when the run must stop here.
  virtual void safe_point(int iteration, const std::function<RunState()>& capture) = 0;
  // Asked by a method right after safe_point: true ends the fit there as a finished one (the map at
  // that iteration is the result, its stop_reason "callback"), where Interrupted abandons it. A
  // caller's per-iteration callbacks (Python's callbacks=) ask for it.
  virtual bool stop_requested() const { return false; }
  // Whether a captured state should also hold the map in the method's output units where the
  // method's own state keeps it otherwise (NeRV's "nerv.y" beside its optimiser's "cg.x"): a
  // caller's callbacks read it; a checkpoint does not need the copy.
  virtual bool wants_map() const { return false; }
};

// Thrown from RunControl::safe_point once the checkpoint is written: the run stopped on request
// (a signal, or ORRERY_STOP_AT_ITERATION). The message says how to continue.
class Interrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The methods' calls, with a null control meaning an ordinary run.
inline const RunState* resume_state(RunControl* control) { return control ? control->resume() : nullptr; }
inline void safe_point(RunControl* control, int iteration, const std::function<RunState()>& capture) {
  if (control) control->safe_point(iteration, capture);
}
inline bool stop_requested(RunControl* control) { return control && control->stop_requested(); }

}  // namespace orrery
