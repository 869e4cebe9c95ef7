// Output of a run: byte encoders for npy/csv and OutputSet, which writes a run's files as a set so
// that a failure part-way leaves neither half-written files nor stray temporaries behind.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "orrery/types.hpp"

namespace orrery::io {

// Collects every output file of a run, then writes them together. commit() writes each file to
// "<path>.tmp.<pid>" in its target directory (creating the directory), flushes it to disk, and only
// when all of them were written renames them into place. A failure removes the temporaries and
// throws Error(input) naming the path and the system's reason; nothing is renamed in that case.
class OutputSet {
 public:
  OutputSet() = default;
  ~OutputSet();  // removes temporaries of a commit that did not finish
  OutputSet(const OutputSet&) = delete;
  OutputSet& operator=(const OutputSet&) = delete;

  // The same path twice is an input error: two outputs of one run would overwrite each other.
  void add(const std::string& path, std::string bytes);
  void commit();

  const std::vector<std::pair<std::string, std::string>>& files() const { return files_; }

 private:
  void remove_temps() noexcept;

  std::vector<std::pair<std::string, std::string>> files_;
  std::vector<std::string> temps_;
};

// NumPy v1.0 file: '<f8', C order, shape (rows, cols). Throws Error(internal) on a non-finite value,
// since results are never written with NaN or Inf in them.
std::string npy_bytes(const MatrixD& m);
// NumPy v1.0 file: '<i4', shape (n,).
std::string npy_bytes(const std::vector<int>& v);
// Comma-separated values, one row per line, each value in the shortest form that reads back to the
// same double. `header`, when given, must have one name per column. Non-finite values throw as above.
std::string csv_bytes(const MatrixD& m, const std::vector<std::string>& header = {});

}  // namespace orrery::io
