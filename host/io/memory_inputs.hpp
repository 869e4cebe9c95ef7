// Inputs held in memory in place of files, for a program that calls the run layer in process (the
// Python module): a run's config names them by paths "mem:<scope>/<name>", and the readers
// (io/readers.hpp, io/corpus.hpp) take them from here instead of the file system. The name's
// extension chooses the reader as a file's would ("X.npy" a matrix, "labels.txt" text lines,
// "corpus.mtx" sparse entries). Nothing else changes: the same parsing, checks and messages as for
// files, so a run from memory gives the bits a run from the same files gives.
//
// A name may hold folders ("model/report.json"): the scope then holds a directory-like path
// ("mem:<n>/model") whose files the readers find by their names, as a run's input.model names the
// output.dir of an earlier run.
//
// A MemoryInputs object registers a scope of inputs for one run and removes them when it is
// destroyed; scopes are unique within the process and the registry is locked, so runs in several
// threads do not see each other's inputs.
#pragma once
#include <memory>
#include <string>

#include "io/readers.hpp"
#include "orrery/types.hpp"

namespace orrery::io {

inline constexpr const char* kMemoryPrefix = "mem:";
bool is_memory_path(const std::string& path);

class MemoryInputs {
 public:
  MemoryInputs();
  ~MemoryInputs();
  MemoryInputs(const MemoryInputs&) = delete;
  MemoryInputs& operator=(const MemoryInputs&) = delete;

  // Each returns the path a config names the input by. add_matrix keeps the matrix; add_view
  // borrows rows x cols values the caller keeps alive and unchanged until the scope ends (a reader
  // that needs a matrix of its own copies them; one that only reads, memory_view, does not).
  std::string add_matrix(const std::string& name, MatrixD m);
  std::string add_view(const std::string& name, MatrixViewD v);
  std::string add_sparse(const std::string& name, SparseTriples t);
  std::string add_bytes(const std::string& name, std::string bytes);
  // The scope's directory-like prefix, "mem:<n>/".
  const std::string& prefix() const { return prefix_; }

 private:
  std::string prefix_;
};

// For the readers (false / null when the path is not registered as that kind): a view of a
// registered matrix (read_matrix copies it), its sparse entries or its bytes.
bool memory_view(const std::string& path, MatrixViewD& out);
std::shared_ptr<const SparseTriples> memory_sparse(const std::string& path);
std::shared_ptr<const std::string> memory_bytes(const std::string& path);

// A path as a file or directory of the file system or of a memory scope: whether it names anything,
// and whether it names a directory (a memory path does when an input is registered below it).
bool input_exists(const std::string& path);
bool input_is_directory(const std::string& path);
// The whole of a file or memory input as bytes (a gzipped file decompressed), as the readers read it.
std::string read_input_bytes(const std::string& path);

}  // namespace orrery::io
