// Plain-text corpora (one document per line, and .gz), tokenised with the default options or, for
// an odd-sized input, the loosest ones. The input is up to 2 files separated by a line "@@@": the
// text and a vocabulary to fold it into.
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  orrery::io::CorpusSpec spec;
  spec.format = orrery::io::CorpusFormat::text;
  if (size % 2 == 1) {
    spec.text.min_df = 0;
    spec.text.max_vocab = 3;
    spec.text.min_token_length = 1;
    spec.text.stop_words = false;
  }
  orrery::fuzz::read_corpus_parts(spec, "docs.txt", orrery::fuzz::parts(data, size, 2));
  return 0;
}
