// UCI bag-of-words (docword.txt, and .gz). The input is up to 3 files separated by a line
// "@@@": docword, vocabulary, labels; read as a corpus and folded into the vocabulary.
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  orrery::io::CorpusSpec spec;
  spec.format = orrery::io::CorpusFormat::uci;
  orrery::fuzz::read_corpus_parts(spec, "docword.txt", orrery::fuzz::parts(data, size, 3));
  return 0;
}
