// Output of a run: byte encoders for npy/csv and OutputSet, which writes a run's files as a set so
// that a failure part-way leaves neither half-written files nor stray temporaries behind.
#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "orrery/types.hpp"

namespace orrery::io {

// Collects every output file of a run, then writes them together. commit() first checks every
// target (check_output_paths against the protected inputs), writes each file to a
// new "<path>.tmp.<pid>" (never through an existing name) in its target directory (creating the directory) and flushes it to disk; then
// moves every existing target aside to "<path>.old.<pid>" and renames the new files into place,
// removing the old ones only when every rename succeeded. A failure at any step removes the
// temporaries, puts every old file back and throws Error(input) naming the path and the system's
// reason: the outputs are all new or all as they were.
class OutputSet {
 public:
  // Renames go through `rename` (tests inject failures with it); ::rename when empty.
  using RenameFn = std::function<int(const char* from, const char* to)>;
  explicit OutputSet(RenameFn rename = {});
  ~OutputSet();  // removes temporaries of a commit that did not finish
  OutputSet(const OutputSet&) = delete;
  OutputSet& operator=(const OutputSet&) = delete;

  // An input of the run: no output may replace it (see check_output_paths).
  void protect(const std::string& input_path);
  // The same path twice is an input error: two outputs of one run would overwrite each other.
  void add(const std::string& path, std::string bytes);
  void commit();

  const std::vector<std::pair<std::string, std::string>>& files() const { return files_; }

 private:
  void remove_temps() noexcept;

  RenameFn rename_;
  std::vector<std::string> inputs_;
  std::vector<std::pair<std::string, std::string>> files_;
  std::vector<std::string> temps_;
};

// Refuses (input error naming both paths) an output that would replace an input: one that names the
// same directory entry as an input or resolves to the same file (through symlinks, "..", or a hard
// link: the same st_dev and st_ino), or lies inside an input directory. Refuses an output that exists
// and is not a regular file (a directory, a FIFO, a device, a symlink: renaming over it would replace
// or bypass something that is not a result). Inputs that do not exist are not checked.
void check_output_paths(const std::vector<std::string>& outputs, const std::vector<std::string>& inputs);

// NumPy v1.0 file: '<f8', C order, shape (rows, cols). Throws Error(internal) on a non-finite value,
// since results are never written with NaN or Inf in them.
std::string npy_bytes(const MatrixD& m);
// NumPy v1.0 file: '<i4', shape (n,).
std::string npy_bytes(const std::vector<int>& v);
// Comma-separated values, one row per line, each value in the shortest form that reads back to the
// same double. `header`, when given, must have one name per column. Non-finite values throw as above.
std::string csv_bytes(const MatrixD& m, const std::vector<std::string>& header = {});

}  // namespace orrery::io
