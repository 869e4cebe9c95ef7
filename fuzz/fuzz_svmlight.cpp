// SVMlight/libsvm corpora (and .gz); an odd-sized input reads ids from 0. The input is up to 3 files separated by a line
// "@@@": svmlight file, vocabulary, labels; read as a corpus and folded into the vocabulary.
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  orrery::io::CorpusSpec spec;
  spec.format = orrery::io::CorpusFormat::svmlight;
  spec.ids_from_zero = size % 2 == 1;
  orrery::fuzz::read_corpus_parts(spec, "corpus.svm", orrery::fuzz::parts(data, size, 3));
  return 0;
}
