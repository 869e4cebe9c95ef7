// Bag-of-words readers: every format read back from small hand-written files, the tokenizer and
// vocabulary pruning, labels from a directory layout and from a labels file, empty documents, and
// every error naming the file, the line and the offending value.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/temp_dir.hpp"
#include "io/corpus.hpp"
#include "orrery/error.hpp"

namespace fs = std::filesystem;
using namespace orrery;      // Corpus, Error, index_t
using namespace orrery::io;  // the readers under test
using orrery::test::TempDir;

namespace {

using Row = std::vector<std::pair<int, double>>;
using Strings = std::vector<std::string>;

// Documents as (word, count) rows, so a failure shows the whole row.
void expect_rows(const Corpus& c, const std::vector<Row>& rows) {
  ASSERT_EQ(c.num_docs(), static_cast<index_t>(rows.size()));
  ASSERT_EQ(c.row_ptr.size(), rows.size() + 1);
  ASSERT_EQ(c.word.size(), c.count.size());
  EXPECT_EQ(c.nnz(), static_cast<index_t>(c.word.size()));
  for (size_t d = 0; d < rows.size(); ++d) {
    Row got;
    for (index_t i = c.row_ptr[d]; i < c.row_ptr[d + 1]; ++i)
      got.emplace_back(c.word[static_cast<size_t>(i)], c.count[static_cast<size_t>(i)]);
    EXPECT_EQ(got, rows[d]) << "document " << d;
  }
}

// Runs f, expects an input error whose message holds every one of `pieces`; returns the message.
std::string expect_input_error(const std::function<void()>& f, const Strings& pieces) {
  std::string msg;
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input) << e.what();
    msg = e.what();
  }
  EXPECT_FALSE(msg.empty()) << "expected an orrery::Error";
  for (const std::string& p : pieces) EXPECT_NE(msg.find(p), std::string::npos) << "no \"" << p << "\" in: " << msg;
  return msg;
}

CorpusSpec spec_of(const std::string& path, CorpusFormat format = CorpusFormat::automatic) {
  CorpusSpec s;
  s.path = path;
  s.format = format;
  return s;
}

// Text with every tokenizer case: stop words, one-letter tokens, case, punctuation, a blank line.
const char* const kLines =
    "The cat sat on the mat.\n"
    "Dogs and CATS, dogs!\n"
    "\n"
    "A cat's dog-house\n"
    "x mat dogs\n";

Corpus read_lines(const TempDir& tmp, const std::function<void(TextOptions&)>& set) {
  CorpusSpec s = spec_of(tmp.write("docs.txt", kLines));
  set(s.text);
  return read_corpus(s);
}

const char* const kDocword = "3\n5\n5\n1 1 2\n1 4 1\n2 2 3\n3 5 1\n3 1 4\n";
const char* const kWords = "apple\nbanana\ncherry\ndate\nelder\n";

}  // namespace

// ---------------------------------------------------------------- uci

TEST(UciCorpus, ReadsDocwordAndVocab) {
  TempDir tmp;
  CorpusSpec s = spec_of(tmp.write("docword.toy.txt", kDocword));
  s.vocab = tmp.write("vocab.toy.txt", kWords);
  const Corpus c = read_corpus(s);
  EXPECT_EQ(c.num_words, 5);
  expect_rows(c, {{{0, 2}, {3, 1}}, {{1, 3}}, {{0, 4}, {4, 1}}});  // document 3's entries sorted by word
  EXPECT_EQ(c.vocab, Strings({"apple", "banana", "cherry", "date", "elder"}));
  EXPECT_EQ(c.doc_index, std::vector<index_t>({0, 1, 2}));
  EXPECT_EQ(c.skipped_empty, 0);
  EXPECT_TRUE(c.labels.empty());
  EXPECT_TRUE(c.doc_names.empty());
  EXPECT_DOUBLE_EQ(c.length(2), 5.0);
}

TEST(UciCorpus, GzipAndExplicitFormat) {
  TempDir tmp;
  const Corpus gz = read_corpus(spec_of(tmp.write_gz("docword.toy.txt.gz", kDocword)));
  expect_rows(gz, {{{0, 2}, {3, 1}}, {{1, 3}}, {{0, 4}, {4, 1}}});
  EXPECT_TRUE(gz.vocab.empty());
  const Corpus named = read_corpus(spec_of(tmp.write("counts.dat", kDocword), CorpusFormat::uci));
  EXPECT_EQ(named.word, gz.word);
}

TEST(UciCorpus, EmptyDocumentsAreSkippedWithTheirLabels) {
  TempDir tmp;
  // Documents 2 and 4 have no entries (4 only a zero count), so they are left out.
  CorpusSpec s = spec_of(tmp.write("docword.e.txt", "4\n3\n4\n1 1 1\n3 2 2\n3 3 1\n4 1 0\n"));
  s.labels = tmp.write("labels.txt", "red\nblue\nred\ngreen\n");
  const Corpus c = read_corpus(s);
  expect_rows(c, {{{0, 1}}, {{1, 2}, {2, 1}}});
  EXPECT_EQ(c.skipped_empty, 2);
  EXPECT_EQ(c.doc_index, std::vector<index_t>({0, 2}));
  EXPECT_EQ(c.labels, std::vector<int>({2, 2}));  // classes in byte order of the names
  EXPECT_EQ(c.label_names, Strings({"blue", "green", "red"}));
}

TEST(UciCorpus, ErrorsNameFileLineAndValue) {
  TempDir tmp;
  const auto read = [&](const std::string& text) { read_corpus(spec_of(tmp.write("docword.bad.txt", text))); };
  expect_input_error([&] { read("2\n3\n2\n1 1 1\n2 2 1\n1 3 1\n"); }, {"docword.bad.txt", "line 6", "NNZ on line 3"});
  expect_input_error([&] { read("2\n3\n3\n1 1 1\n2 2 1\n"); }, {"docword.bad.txt", "line 3", "declares 3", "found 2"});
  expect_input_error([&] { read("2\n3\n1\n1 0 1\n"); }, {"docword.bad.txt", "line 4", "found '0'", "W = 3"});
  expect_input_error([&] { read("2\n3\n1\n1 4 1\n"); }, {"line 4", "found '4'"});
  expect_input_error([&] { read("2\n3\n1\n3 1 1\n"); }, {"line 4", "document id", "D = 2", "found '3'"});
  expect_input_error([&] { read("2\n3\n1\n1 1 -2\n"); }, {"line 4", "'-2'", "negative"});
  expect_input_error([&] { read("2\n3\n1\n1 1 1.5\n"); }, {"line 4", "'1.5'", "not a whole number"});
  expect_input_error([&] { read("2\n3\n1\n1 1 many\n"); }, {"line 4", "'many'"});
  expect_input_error([&] { read("2\n3\n1\n1 1\n"); }, {"line 4", "docID wordID count", "'1 1'"});
  expect_input_error([&] { read("2\n3\n1\n1.0 1 1\n"); }, {"line 4", "'1.0'"});
  expect_input_error([&] { read("2\nthree\n1\n1 1 1\n"); }, {"line 2", "W (the vocabulary size)", "'three'"});
  expect_input_error([&] { read("2\n3\n"); }, {"docword.bad.txt", "three header lines", "found 2"});
  expect_input_error([&] { read("2\n3\n3\n1 2 1\n2 1 1\n\n1 2 4\n"); },
                     {"docword.bad.txt", "document 1, word 2", "lines 4 and 7"});
  expect_input_error([&] { read("2\n3\n2\n1 1 0\n2 1 0\n"); }, {"docword.bad.txt", "none of its 2 documents"});
}

TEST(UciCorpus, VocabularyErrors) {
  TempDir tmp;
  CorpusSpec s = spec_of(tmp.write("docword.v.txt", kDocword));
  s.vocab = tmp.write("vocab.short.txt", "apple\nbanana\ncherry\ndate\n");
  expect_input_error([&] { read_corpus(s); }, {"vocab.short.txt", "has 4 words", "docword.v.txt", "line 2", "5 words"});
  s.vocab = tmp.write("vocab.gap.txt", "apple\nbanana\n\ncherry\ndate\nelder\n");
  expect_input_error([&] { read_corpus(s); }, {"vocab.gap.txt", "line 3", "empty line"});
  s.vocab = tmp.write("vocab.trailing.txt", "apple\nbanana\ncherry\ndate\nelder\n\n\n");
  EXPECT_EQ(read_corpus(s).vocab.size(), 5u);
  s.vocab = tmp.path("missing.txt");
  expect_input_error([&] { read_corpus(s); }, {"cannot open", "missing.txt"});
}

// ---------------------------------------------------------------- svmlight

TEST(SvmlightCorpus, NumericLabelsCommentsAndQid) {
  TempDir tmp;
  const std::string path = tmp.write("train.svm",
                                     "# a whole-line comment\n"
                                     "3 1:2 4:1   # trailing comment\n"
                                     "7 2:3\n"
                                     "\n"
                                     "3 qid:1 1:1 5:2.0\n"
                                     "2\n");
  const Corpus c = read_corpus(spec_of(path));
  EXPECT_EQ(c.num_words, 5);
  expect_rows(c, {{{0, 2}, {3, 1}}, {{1, 3}}, {{0, 1}, {4, 2}}});
  EXPECT_EQ(c.labels, std::vector<int>({1, 2, 1}));  // classes 2, 3, 7 in ascending order
  EXPECT_EQ(c.label_names, Strings({"2", "3", "7"}));
  EXPECT_EQ(c.skipped_empty, 1);  // the document "2" with no words
  EXPECT_EQ(c.doc_index, std::vector<index_t>({0, 1, 2}));
}

TEST(SvmlightCorpus, TokenLabelsZeroBasedIdsAndVocab) {
  TempDir tmp;
  // "-1" is a class here, not "unknown": any label that is not an integer >= 0 makes all of them names.
  const Corpus signs = read_corpus(spec_of(tmp.write("b.libsvm", "+1 1:1\n-1 2:1\n+1 3:1\n")));
  EXPECT_EQ(signs.labels, std::vector<int>({0, 1, 0}));
  EXPECT_EQ(signs.label_names, Strings({"+1", "-1"}));

  CorpusSpec zero = spec_of(tmp.write("z.data", "spam 0:1 2:2\nham 1:4\n"), CorpusFormat::svmlight);
  zero.ids_from_zero = true;
  const Corpus z = read_corpus(zero);
  EXPECT_EQ(z.num_words, 3);
  expect_rows(z, {{{0, 1}, {2, 2}}, {{1, 4}}});
  EXPECT_EQ(z.label_names, Strings({"spam", "ham"}));

  zero.vocab = tmp.write("words.txt", "a\nb\nc\nd\ne\nf\n");
  const Corpus v = read_corpus(zero);
  EXPECT_EQ(v.num_words, 6);
  EXPECT_EQ(v.vocab.size(), 6u);
  zero.vocab = tmp.write("words2.txt", "a\nb\n");
  expect_input_error([&] { read_corpus(zero); }, {"words2.txt", "has 2 words", "z.data", "line 1", "word id 2"});
}

TEST(SvmlightCorpus, ErrorsNameFileLineAndValue) {
  TempDir tmp;
  const auto read = [&](const std::string& text) { read_corpus(spec_of(tmp.write("bad.svm", text))); };
  expect_input_error([&] { read("1 1:1\n1 0:1\n"); }, {"bad.svm", "line 2", "'0:1'", "ids_from_zero"});
  expect_input_error([&] { read("1 4:1 2:1\n"); }, {"bad.svm", "line 1", "ascend", "'2:1'", "after id 4"});
  expect_input_error([&] { read("1 2:1 2:3\n"); }, {"line 1", "ascend", "'2:3'"});
  expect_input_error([&] { read("1 1:2\n\n1 1:2 abc\n"); }, {"bad.svm", "line 3", "id:count", "'abc'"});
  expect_input_error([&] { read("1 1:x\n"); }, {"line 1", "word id 1", "'x'"});
  expect_input_error([&] { read("1 1:1\n1 3:-1\n"); }, {"line 2", "word id 3", "'-1'", "negative"});
  expect_input_error([&] { read("1 3:0.5\n"); }, {"line 1", "'0.5'", "whole"});
  expect_input_error([&] { read("1 a:1\n"); }, {"line 1", "'a:1'"});
  expect_input_error([&] { read("1:2 3:4\n"); }, {"line 1", "expected a label", "'1:2'"});
  expect_input_error([&] { read("# nothing\n\n"); }, {"bad.svm", "no documents"});
}

// ---------------------------------------------------------------- mtx

TEST(MtxCorpus, RowsAreDocumentsColumnsWords) {
  TempDir tmp;
  CorpusSpec s = spec_of(tmp.write("counts.mtx",
                                   "%%MatrixMarket matrix coordinate real general\n"
                                   "% documents x words\n"
                                   "3 4 5\n"
                                   "3 4 1\n"
                                   "1 3 1.0\n"
                                   "1 1 2\n"
                                   "3 2 5\n"
                                   "2 1 0\n"));
  s.vocab = tmp.write("vocab.txt", "w1\nw2\nw3\nw4\n");
  const Corpus c = read_corpus(s);
  EXPECT_EQ(c.num_words, 4);
  expect_rows(c, {{{0, 2}, {2, 1}}, {{1, 5}, {3, 1}}});
  EXPECT_EQ(c.skipped_empty, 1);
  EXPECT_EQ(c.doc_index, std::vector<index_t>({0, 2}));
  EXPECT_EQ(c.vocab, Strings({"w1", "w2", "w3", "w4"}));
  const std::string pattern = "%%MatrixMarket matrix coordinate pattern general\n2 3 2\n1 3\n2 1\n";
  const Corpus gz = read_corpus(spec_of(tmp.write_gz("p.mtx.gz", pattern)));
  expect_rows(gz, {{{2, 1}}, {{0, 1}}});
  s.vocab = tmp.write("vocab5.txt", "a\nb\nc\nd\ne\n");
  expect_input_error([&] { read_corpus(s); }, {"vocab5.txt", "has 5 words", "counts.mtx", "declares 4 words"});
}

TEST(MtxCorpus, ErrorsNameFileAndLine) {
  TempDir tmp;
  const std::string head = "%%MatrixMarket matrix coordinate real general\n% comment\n2 3 3\n";
  const auto read = [&](const std::string& body) { read_corpus(spec_of(tmp.write("bad.mtx", head + body))); };
  expect_input_error([&] { read("1 1 1\n\n2 2 2.5\n2 3 1\n"); }, {"bad.mtx", "line 6", "document 2, word 2", "2.5"});
  expect_input_error([&] { read("1 1 1\n2 2 -3\n2 3 1\n"); }, {"bad.mtx", "line 5", "-3"});
  expect_input_error([&] { read("1 2 1\n2 2 1\n1 2 4\n"); }, {"bad.mtx", "row 1, column 2", "lines 4 and 6"});
  // A symmetric file's mirrored entries do not shift the line found.
  const std::string sym = "%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n2 1 1\n3 3 1\n3 2 0.5\n";
  expect_input_error([&] { read_corpus(spec_of(tmp.write("sym.mtx", sym))); }, {"sym.mtx", "line 5", "0.5"});
}

// ---------------------------------------------------------------- text

TEST(TextCorpus, OneDocumentPerLineWithDefaultOptions) {
  TempDir tmp;
  const Corpus c = read_lines(tmp, [](auto&) {});
  // df: cat 2, mat 2, dogs 2; sat, cats, dog, house 1 (min_df = 2 drops them); the/on/and/a stop words.
  EXPECT_EQ(c.vocab, Strings({"cat", "dogs", "mat"}));
  EXPECT_EQ(c.num_words, 3);
  expect_rows(c, {{{0, 1}, {2, 1}}, {{1, 2}}, {{0, 1}}, {{1, 1}, {2, 1}}});
  EXPECT_EQ(c.skipped_empty, 1);
  EXPECT_EQ(c.doc_index, std::vector<index_t>({0, 1, 3, 4}));
  EXPECT_EQ(c.doc_names, Strings({"line 1", "line 2", "line 4", "line 5"}));
  EXPECT_TRUE(c.labels.empty());
}

TEST(TextCorpus, TokenizerCasePunctuationAndStopWords) {
  TempDir tmp;
  const Corpus all = read_lines(tmp, [](auto& o) { o.min_df = 1; });
  EXPECT_EQ(all.vocab, Strings({"cat", "cats", "dog", "dogs", "house", "mat", "sat"}));
  expect_rows(all, {{{0, 1}, {5, 1}, {6, 1}}, {{1, 1}, {3, 2}}, {{0, 1}, {2, 1}, {4, 1}}, {{3, 1}, {5, 1}}});

  const Corpus no_stop = read_lines(tmp, [](auto& o) { o.min_df = 1, o.stop_words = false; });
  EXPECT_EQ(no_stop.vocab, Strings({"and", "cat", "cats", "dog", "dogs", "house", "mat", "on", "sat", "the"}));
  EXPECT_EQ(no_stop.row_ptr[1] - no_stop.row_ptr[0], 5);  // cat mat on sat the
  EXPECT_EQ(no_stop.count[static_cast<size_t>(no_stop.row_ptr[1]) - 1], 2.0);  // "The ... the"

  // Length 1 keeps "x"; "a" and the "s" of "cat's" are stop words.
  const Corpus short_tokens = read_lines(tmp, [](auto& o) { o.min_df = 1, o.min_token_length = 1; });
  EXPECT_EQ(short_tokens.vocab, Strings({"cat", "cats", "dog", "dogs", "house", "mat", "sat", "x"}));
  const Corpus long_tokens = read_lines(tmp, [](auto& o) { o.min_df = 1, o.min_token_length = 4; });
  EXPECT_EQ(long_tokens.vocab, Strings({"cats", "dogs", "house"}));
  EXPECT_EQ(long_tokens.skipped_empty, 2);  // the blank line, and line 1 has no word of 4+ letters
  EXPECT_EQ(long_tokens.doc_index, std::vector<index_t>({1, 3, 4}));

  // Digits, underscores, hyphens and non-ASCII bytes split tokens.
  CorpusSpec s = spec_of(tmp.write("odd.txt", "\xC3\x9C" "ber-cool 3D\tgames_2go\r\nCOOL games\n"));
  s.text.min_df = 1;
  const Corpus odd = read_corpus(s);
  EXPECT_EQ(odd.vocab, Strings({"ber", "cool", "games", "go"}));
  expect_rows(odd, {{{0, 1}, {1, 1}, {2, 1}, {3, 1}}, {{1, 1}, {2, 1}}});
}

TEST(TextCorpus, MaxVocabKeepsMostFrequentTiesByWord) {
  TempDir tmp;
  // df 2: cat, dogs, mat; df 1: cats, dog, house, sat -> the fourth place goes to "cats" by name.
  const Corpus four = read_lines(tmp, [](auto& o) { o.min_df = 1, o.max_vocab = 4; });
  EXPECT_EQ(four.vocab, Strings({"cat", "cats", "dogs", "mat"}));
  const Corpus two = read_lines(tmp, [](auto& o) { o.min_df = 1, o.max_vocab = 2; });
  EXPECT_EQ(two.vocab, Strings({"cat", "dogs"}));
  expect_rows(two, {{{0, 1}}, {{1, 2}}, {{0, 1}}, {{1, 1}}});
  const Corpus three = read_lines(tmp, [](auto& o) { o.max_vocab = 10; });
  EXPECT_EQ(three.vocab, Strings({"cat", "dogs", "mat"}));  // min_df = 2 applies first
}

TEST(TextCorpus, DirectoryLayoutGivesLabelsAndNames) {
  TempDir tmp;
  fs::create_directories(tmp.dir() / "docs/sport");
  fs::create_directories(tmp.dir() / "docs/politics/sub");
  fs::create_directories(tmp.dir() / "docs/.git");
  tmp.write("docs/sport/b.txt", "Football, goal; match.");
  tmp.write("docs/sport/a.txt", "goal keeper match");
  tmp.write("docs/politics/x.txt", "vote election goal");
  tmp.write_gz("docs/politics/sub/y.txt.gz", "vote match\n");
  tmp.write("docs/readme", "goal");
  tmp.write("docs/.hidden.txt", "election election");
  tmp.write("docs/.git/config", "election keeper");
  const Corpus c = read_corpus(spec_of(tmp.path("docs")));
  EXPECT_EQ(c.vocab, Strings({"goal", "match", "vote"}));
  EXPECT_EQ(c.doc_names, Strings({"politics/sub/y.txt.gz", "politics/x.txt", "readme", "sport/a.txt", "sport/b.txt"}));
  expect_rows(c, {{{1, 1}, {2, 1}}, {{0, 1}, {2, 1}}, {{0, 1}}, {{0, 1}, {1, 1}}, {{0, 1}, {1, 1}}});
  EXPECT_EQ(c.label_names, Strings({"politics", "sport"}));
  EXPECT_EQ(c.labels, std::vector<int>({0, 0, -1, 1, 1}));

  // A flat directory has no labels; a labels file gives them, one per file in sorted order.
  fs::create_directories(tmp.dir() / "flat");
  tmp.write("flat/2.txt", "alpha beta");
  tmp.write("flat/1.txt", "beta alpha gamma");
  tmp.write("flat/3.txt", "delta");
  CorpusSpec flat = spec_of(tmp.path("flat"));
  const Corpus f = read_corpus(flat);
  EXPECT_TRUE(f.labels.empty());
  EXPECT_TRUE(f.label_names.empty());
  EXPECT_EQ(f.doc_names, Strings({"1.txt", "2.txt"}));  // 3.txt's only word has df 1
  EXPECT_EQ(f.doc_index, std::vector<index_t>({0, 1}));
  flat.labels = tmp.write("flat_labels.txt", "4\n5\n6\n");
  EXPECT_EQ(read_corpus(flat).labels, std::vector<int>({0, 1}));
  EXPECT_EQ(read_corpus(flat).label_names, Strings({"4", "5", "6"}));
}

TEST(TextCorpus, OptionAndEmptyErrors) {
  TempDir tmp;
  CorpusSpec s = spec_of(tmp.write("stop.txt", "the and of\nit is\n"));
  expect_input_error([&] { read_corpus(s); }, {"stop.txt", "none of its 2 documents", "min_df = 2"});
  s.text.min_df = -1;
  expect_input_error([&] { read_corpus(s); }, {"min_df", "-1"});
  s.text.min_df = 1;
  s.text.min_token_length = 0;
  expect_input_error([&] { read_corpus(s); }, {"min_token_length", "found 0"});
  s.text.min_token_length = 2;
  s.text.max_vocab = -5;
  expect_input_error([&] { read_corpus(s); }, {"max_vocab", "-5"});
  expect_input_error([&] { read_corpus(spec_of(tmp.write("empty.txt", ""))); }, {"empty.txt", "empty"});
  fs::create_directories(tmp.dir() / "nothing");
  expect_input_error([&] { read_corpus(spec_of(tmp.path("nothing"))); }, {"nothing", "no files"});
}

TEST(TextCorpus, StopWordListIsSortedLowerCaseLetters) {
  const Strings& w = english_stop_words();
  EXPECT_GE(w.size(), 150u);
  EXPECT_LE(w.size(), 300u);
  EXPECT_TRUE(std::is_sorted(w.begin(), w.end()));
  EXPECT_EQ(std::adjacent_find(w.begin(), w.end()), w.end());
  for (const std::string& s : w)
    EXPECT_TRUE(!s.empty() && std::all_of(s.begin(), s.end(), [](char ch) { return ch >= 'a' && ch <= 'z'; })) << s;
  for (const char* s : {"the", "and", "of", "which", "doesn"}) EXPECT_TRUE(std::binary_search(w.begin(), w.end(), s)) << s;
  for (const char* s : {"game", "music", "data"}) EXPECT_FALSE(std::binary_search(w.begin(), w.end(), s)) << s;
}

// ---------------------------------------------------------------- labels files

TEST(CorpusLabels, NamesNumbersAndCounts) {
  TempDir tmp;
  CorpusSpec s = spec_of(tmp.write("docs.txt", kLines));
  s.labels = tmp.write("names.txt", "b\na\n\nb\n# a comment\nc\na\n");  // blank and comment lines skipped
  const Corpus named = read_corpus(s);
  EXPECT_EQ(named.label_names, Strings({"a", "b", "c"}));
  EXPECT_EQ(named.labels, std::vector<int>({1, 0, 2, 0}));  // the third document (blank line) left out

  s.labels = tmp.write("numbers.csv", "label\n3\n1\n4\n1\n5.0\n");
  const Corpus numbered = read_corpus(s);
  EXPECT_EQ(numbered.labels, std::vector<int>({1, 0, 0, 3}));
  EXPECT_EQ(numbered.label_names, Strings({"1", "3", "4", "5"}));

  s.labels = tmp.write("four.txt", "1\n2\n3\n4\n");
  expect_input_error([&] { read_corpus(s); }, {"four.txt", "has 4 labels", "docs.txt", "has 5 documents"});
  s.labels = tmp.write("frac.txt", "1\n2\n2.5\n4\n5\n");
  expect_input_error([&] { read_corpus(s); }, {"frac.txt", "row 3", "2.5"});
}

TEST(CorpusLabels, LabelFileReplacesFormatLabels) {
  TempDir tmp;
  CorpusSpec s = spec_of(tmp.write("t.svm", "9 1:1\n9 2:1\n8\n"));
  s.labels = tmp.write("l.txt", "x\ny\nz\n");
  const Corpus c = read_corpus(s);
  EXPECT_EQ(c.labels, std::vector<int>({0, 1}));
  EXPECT_EQ(c.label_names, Strings({"x", "y", "z"}));
  EXPECT_EQ(c.skipped_empty, 1);
}

// ---------------------------------------------------------------- fixed vocabulary (fold-in)

TEST(CorpusWithVocab, TextTokensMapOntoTheGivenWords) {
  TempDir tmp;
  const Strings vocab = {"zebra", "cat", "the", "dogs", "ab"};
  CorpusSpec s = spec_of(tmp.write("new.txt", "The cat and the zebra, cat!\nnothing known here\nDOGS a b ab\n"));
  s.text.min_df = 5;  // ignored: no pruning against a fixed vocabulary
  const Corpus c = read_corpus_with_vocab(s, vocab);
  EXPECT_EQ(c.num_words, 5);
  EXPECT_EQ(c.vocab, vocab);
  // "the" is a stop word and "a"/"b" too short, as the tokenizer drops them when building a vocabulary.
  expect_rows(c, {{{0, 1}, {1, 2}}, {{3, 1}, {4, 1}}});
  EXPECT_EQ(c.doc_index, std::vector<index_t>({0, 2}));
  EXPECT_EQ(c.skipped_empty, 1);
  expect_input_error([&] { read_corpus_with_vocab(spec_of(tmp.write("none.txt", "nothing\n")), vocab); },
                     {"none.txt", "none of its 1 documents", "given vocabulary"});
  expect_input_error([&] { read_corpus_with_vocab(s, {}); }, {"new.txt", "empty"});
}

TEST(CorpusWithVocab, IdsMustLieInsideTheVocabulary) {
  TempDir tmp;
  const Strings three = {"a", "b", "c"};
  const Corpus svm = read_corpus_with_vocab(spec_of(tmp.write("ok.svm", "1 1:1 3:2\n")), three);
  EXPECT_EQ(svm.num_words, 3);
  EXPECT_EQ(svm.vocab, three);
  expect_rows(svm, {{{0, 1}, {2, 2}}});
  expect_input_error([&] { read_corpus_with_vocab(spec_of(tmp.write("far.svm", "1 1:1\n1 4:2\n")), three); },
                     {"far.svm", "line 2", "word id 4", "3 words"});
  expect_input_error([&] { read_corpus_with_vocab(spec_of(tmp.write("docword.f.txt", kDocword)), three); },
                     {"docword.f.txt", "line 5", "word id 4", "3 words"});
  const Strings six = {"a", "b", "c", "d", "e", "f"};
  const Corpus uci = read_corpus_with_vocab(spec_of(tmp.path("docword.f.txt")), six);
  EXPECT_EQ(uci.num_words, 6);
  expect_rows(uci, {{{0, 2}, {3, 1}}, {{1, 3}}, {{0, 4}, {4, 1}}});
  const std::string mtx = "%%MatrixMarket matrix coordinate integer general\n1 4 2\n1 1 1\n1 4 1\n";
  expect_input_error([&] { read_corpus_with_vocab(spec_of(tmp.write("far.mtx", mtx)), three); },
                     {"far.mtx", "line 4", "word id 4", "3 words"});
}

// ---------------------------------------------------------------- formats by name

TEST(CorpusFormatNames, ParseAndDetect) {
  EXPECT_EQ(parse_corpus_format("uci", "k"), CorpusFormat::uci);
  EXPECT_EQ(parse_corpus_format("svmlight", "k"), CorpusFormat::svmlight);
  EXPECT_EQ(parse_corpus_format("mtx", "k"), CorpusFormat::mtx);
  EXPECT_EQ(parse_corpus_format("text", "k"), CorpusFormat::text);
  EXPECT_EQ(parse_corpus_format("auto", "k"), CorpusFormat::automatic);
  expect_input_error([] { parse_corpus_format("csv", "input.corpus_format"); },
                     {"input.corpus_format", "'csv'", "uci, svmlight, mtx, text"});

  TempDir tmp;
  expect_input_error([&] { read_corpus(spec_of(tmp.write("corpus.dat", "1\n"))); }, {"corpus.dat", "cannot tell"});
  fs::create_directories(tmp.dir() / "d");
  expect_input_error([&] { read_corpus(spec_of(tmp.path("d"), CorpusFormat::uci)); }, {"is a directory"});
  expect_input_error([&] { read_corpus(spec_of(tmp.path("missing.svm"))); }, {"cannot open", "missing.svm"});
}
