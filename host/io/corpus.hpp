// Readers for bag-of-words corpora (PLSV's input). Every failure is an orrery::Error of kind input
// whose message names the file and the line (counting from 1), what was expected and what was
// found: negative or non-integer counts, word ids outside the vocabulary, malformed lines,
// repeated (document, word) entries (only text sums repeats: a word's tokens in a document).
// Counts are whole numbers >= 0 in any notation ("3", "3.0"); entries with count 0 are dropped.
// Matrix Market messages name the line too (the file is read again to find it, on error only).
// Any file may be gzip-compressed with a trailing ".gz".
//
// Formats (CorpusFormat):
//   uci       UCI bag-of-words: docword.txt[.gz] = three header lines D, W, NNZ, then "docID wordID
//             count" lines with 1-based ids; vocab.txt (optional) = one word per line, W lines.
//             A (doc, word) pair listed twice is an error naming both lines; fewer or more entries
//             than NNZ is an error. A vocab file must hold exactly W words.
//   svmlight  "label id:count id:count ... [# comment]" per line, one document per line; ids 1-based
//             by default (ids_from_zero for 0-based); the label may be any integer or token and becomes
//             the document's label: when all are integers >= 0 they are numbered in ascending order,
//             otherwise every label is a name (label_names in order of first appearance, so
//             "+1"/"-1" become 0/1); W = the
//             largest id unless a vocabulary gives it (then W = its size, and no id may exceed it).
//             ids must ascend strictly within a line; blank lines and '#' comments are skipped;
//             "qid:" fields are ignored.
//   mtx       Matrix Market coordinate (integer or real with whole values), rows = documents,
//             columns = words; repeated entries are an error. A vocab file must hold exactly as many
//             words as the size line declares columns.
//   text      plain text: one document per line of one file, or one document per regular file
//             of a directory (sorted by relative path, hidden files and directories skipped; a
//             file's top subdirectory name below the given directory is its label, label_names
//             sorted, files directly in the directory -1; doc_names = relative paths, or "line N"
//             for a file). A blank line is an (empty) document.
//             Tokenizer: maximal runs of ASCII letters, lower-cased; tokens shorter than
//             min_token_length and stop words (a fixed English list, when stop_words) dropped;
//             the vocabulary keeps words present in at least min_df documents, then the max_vocab most
//             frequent (by document frequency, ties by word) when max_vocab > 0; word ids follow the
//             sorted vocabulary, so the result does not depend on thread count or file order.
// Labels file (CorpusSpec::labels): one label per input document, empty ones included; it replaces
// the labels the format gives (svmlight, directory). io::read_categories rules: any integers
// (also npy/IDX) or names, -1 unlabelled, classes numbered in ascending order of value (names in
// byte order); label_names keeps the original values.
// Labels are always classes 0..C-1 with label_names their original values, so a label of 10^8
// never sizes anything. Words, label names and document names must be valid UTF-8 (an error
// names the file and line), so the JSON report and the SVG map are valid too.
// Empty documents (no words left) are skipped and counted in Corpus::skipped_empty; doc_index
// keeps the input positions of the rest. No document left is an error. A declared document count
// (UCI D, Matrix Market rows; at most io::kMaxDimension) takes memory only up to the last document
// with an entry, and NNZ / the entry count must fit in the file (readers.hpp), so no declared size
// allocates more than the file's contents justify.
#pragma once
#include <string>
#include <vector>

#include "orrery/config.hpp"
#include "orrery/corpus.hpp"

namespace orrery::io {

enum class CorpusFormat { automatic, uci, svmlight, mtx, text };

}  // namespace orrery::io

namespace orrery {
template <>
struct EnumNames<io::CorpusFormat> {
  static constexpr std::array<const char*, 5> names = {"auto", "uci", "svmlight", "mtx", "text"};
};
}  // namespace orrery

namespace orrery::io {

struct TextOptions {
  index_t min_df = 2;            // keep words found in at least this many documents (>= 0)
  index_t max_vocab = 0;         // then keep the most frequent ones; 0: no limit (>= 0)
  int min_token_length = 2;      // shorter tokens are dropped (>= 1)
  bool stop_words = true;        // drop the built-in English stop words
};

struct CorpusSpec {
  std::string path;              // docword / svmlight / mtx file, text file, or directory of text files
  CorpusFormat format = CorpusFormat::automatic;  // automatic: directory -> text; *.mtx -> mtx;
                                 // name starting "docword" -> uci; *.svm, *.svmlight, *.libsvm -> svmlight;
                                 // *.txt otherwise -> text
  std::string vocab;             // optional word list (uci, svmlight, mtx): one word per line
  std::string labels;            // optional label file, one per document of the input (io::read_labels
                                 // rules, or names: non-numeric lines become label names)
  bool ids_from_zero = false;    // svmlight only
  TextOptions text;
};

// "auto" -> automatic, "uci" -> uci, "svmlight", "mtx", "text"; throws Error(input) naming `where`
// for an unknown name.
CorpusFormat parse_corpus_format(const std::string& name, const std::string& where);

Corpus read_corpus(const CorpusSpec& spec);

// Text documents -> corpus with a fixed vocabulary (fold-in of new documents into a saved model):
// tokens not in vocab are dropped (same tokenizer; no min_df/max_vocab pruning). Other formats: word
// ids must lie inside vocab (an error naming the line otherwise). num_words = vocab.size() and
// Corpus::vocab = vocab; spec.vocab is not read. vocab must be the model's word list.
Corpus read_corpus_with_vocab(const CorpusSpec& spec, const std::vector<std::string>& vocab);

// What sets the vocabulary size W of a corpus that read_corpus(spec) returned, for a message about
// something W sizes (a memory plan): an svmlight file's line with the largest word id, a UCI
// header's or Matrix Market size line's declaration (with the largest id used), the word list, or
// the text's vocabulary. The file is read again to find the line (this path only).
std::string vocabulary_origin(const CorpusSpec& spec, const Corpus& c);

// The built-in stop-word list (lower case, sorted).
const std::vector<std::string>& english_stop_words();

}  // namespace orrery::io
