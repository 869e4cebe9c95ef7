// Shared by the libFuzzer targets: the readers take paths, so each input is written to a file in a
// private temporary directory (in memory when /dev/shm exists) under the name the reader expects,
// and the reader is called on it. What counts as a finding is decided here, once:
//   - orrery::Error of kind input: the expected answer to bad bytes, not a finding;
//   - any other orrery::Error, any other exception (std::bad_alloc from an absurd size included:
//     readers must refuse before allocating), a crash, a leak, undefined behaviour: a finding,
//     reported by aborting so that libFuzzer saves the input.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

#include "io/corpus.hpp"
#include "io/readers.hpp"
#include "orrery/error.hpp"

namespace orrery::fuzz {

// The directory is made once per process and removed when the process exits.
struct ScratchDir {
  std::string path;
  ScratchDir() {
    const char* base = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
    path = std::string(base) + "/orrery-fuzz-XXXXXX";
    if (!mkdtemp(path.data())) {
      std::perror("mkdtemp");
      std::abort();
    }
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

inline const std::string& scratch_dir() {
  static const ScratchDir dir;
  return dir.path;
}

// Writes bytes to scratch_dir()/name (replacing it) and returns the path.
inline std::string write_file(const std::string& name, std::string_view bytes) {
  const std::string path = scratch_dir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    std::perror(path.c_str());
    std::abort();
  }
  return path;
}

// A gzip stream is read through whatever the name says (zlib looks at the magic bytes), but a real
// user would name it ".gz": keep the name honest.
inline std::string named(const std::string& name, std::string_view bytes) {
  const bool gz = bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
                  static_cast<unsigned char>(bytes[1]) == 0x8b;
  return gz ? name + ".gz" : name;
}

// Splits a fuzz input into up to `n` files at the separator line "\n@@@\n" (text seeds stay
// readable); missing parts are empty.
inline std::vector<std::string_view> parts(const uint8_t* data, size_t size, size_t n) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  static constexpr std::string_view kSep = "\n@@@\n";
  std::vector<std::string_view> out;
  while (out.size() + 1 < n) {
    const size_t at = rest.find(kSep);
    if (at == std::string_view::npos) break;
    out.push_back(rest.substr(0, at));
    rest.remove_prefix(at + kSep.size());
  }
  out.push_back(rest);
  out.resize(n);
  return out;
}

// Runs one reader call; an input error is fine, anything else is a finding.
template <class F>
void expect_input_errors_only(const char* what, F&& f) {
  try {
    f();
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::input) return;
    std::fprintf(stderr, "finding: %s raised a non-input orrery::Error: %s\n", what, e.what());
    std::abort();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "finding: %s raised %s: %s\n", what, typeid(e).name(), e.what());
    std::abort();
  }
}

// A dense input file read every way a run reads one: a matrix (all rows, and the first two) and
// labels.
inline void read_dense(const std::string& path) {
  expect_input_errors_only("read_matrix", [&] { io::read_matrix(path); });
  expect_input_errors_only("read_matrix limit", [&] { io::read_matrix(path, 2); });
  expect_input_errors_only("read_labels", [&] { io::read_labels(path); });
}

// A corpus whose input is split into (file, vocabulary, labels) by parts(): read as a corpus with
// the vocabulary and label files when given, then folded into that vocabulary.
inline void read_corpus_parts(io::CorpusSpec spec, const std::string& name, const std::vector<std::string_view>& part) {
  spec.path = write_file(named(name, part[0]), part[0]);
  if (part.size() > 1 && !part[1].empty()) spec.vocab = write_file(named("vocab.txt", part[1]), part[1]);
  if (part.size() > 2 && !part[2].empty()) spec.labels = write_file(named("labels.txt", part[2]), part[2]);
  expect_input_errors_only("read_corpus", [&] { io::read_corpus(spec); });
  if (spec.vocab.empty()) return;
  expect_input_errors_only("read_corpus_with_vocab", [&] { io::read_corpus_with_vocab(spec, io::read_names(spec.vocab)); });
}

}  // namespace orrery::fuzz
