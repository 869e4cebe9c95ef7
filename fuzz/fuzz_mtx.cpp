// Matrix Market coordinate files (and .gz): read_mtx itself, then as a corpus. The input is up to
// 3 files separated by a line "@@@": mtx, vocabulary, labels.
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace orrery;
  const auto part = fuzz::parts(data, size, 3);
  const std::string path = fuzz::write_file(fuzz::named("x.mtx", part[0]), part[0]);
  fuzz::expect_input_errors_only("read_mtx", [&] { io::read_mtx(path); });
  io::CorpusSpec spec;
  spec.format = io::CorpusFormat::mtx;
  fuzz::read_corpus_parts(spec, "x.mtx", part);
  return 0;
}
