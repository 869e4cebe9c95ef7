// Label files: the first byte picks the name (.csv, .txt, .npy, -idx1-ubyte); read by read_labels
// and as a corpus's label file (numbers or names, one per document) for a fixed 3-document corpus.
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace orrery;
  if (size == 0) return 0;
  static const char* const kNames[4] = {"labels.csv", "labels.txt", "labels.npy", "labels-idx1-ubyte"};
  static const std::string corpus = fuzz::write_file("corpus.svm", "1 1:2 3:1\n0 2:1\n1 1:1 2:4\n");
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::string path = fuzz::write_file(fuzz::named(kNames[data[0] % 4], bytes), bytes);
  fuzz::expect_input_errors_only("read_labels", [&] { io::read_labels(path); });
  io::CorpusSpec spec;
  spec.path = corpus;
  spec.labels = path;
  fuzz::expect_input_errors_only("read_corpus labels", [&] { io::read_corpus(spec); });
  return 0;
}
