// A bag-of-words corpus: documents x words counts c_nw in CSR form (MATH.md §2), with the
// vocabulary, document names and labels when the input has them. Readers (host/io/corpus.hpp)
// build it from UCI bag-of-words, SVMlight, Matrix Market or plain text; PLSV reads it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "orrery/types.hpp"

namespace orrery {

struct Corpus {
  index_t num_words = 0;               // W: word ids are 0 .. W-1
  std::vector<index_t> row_ptr{0};     // N + 1 offsets into word/count
  std::vector<std::int32_t> word;      // word id per nonzero, strictly ascending within a document
  std::vector<double> count;           // c_nw > 0, whole numbers, per nonzero
  std::vector<std::string> vocab;      // W entries, or empty when the input names no words
  std::vector<std::string> doc_names;  // N entries, or empty
  std::vector<int> labels;             // N entries (-1 unknown), or empty
  std::vector<std::string> label_names;  // name of label l at index l, or empty
  // Documents of the input that had no words (after tokenising and vocabulary pruning): left out,
  // counted here so that reports can say how many; doc_index maps kept documents to input order.
  index_t skipped_empty = 0;
  std::vector<index_t> doc_index;      // N entries: 0-based position of each document in the input

  index_t num_docs() const { return static_cast<index_t>(row_ptr.size()) - 1; }
  index_t nnz() const { return row_ptr.back(); }
  // M_n = sum_w c_nw.
  double length(index_t n) const {
    double s = 0.0;
    for (index_t i = row_ptr[static_cast<size_t>(n)]; i < row_ptr[static_cast<size_t>(n) + 1]; ++i)
      s += count[static_cast<size_t>(i)];
    return s;
  }
};

}  // namespace orrery
