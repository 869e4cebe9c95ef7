// Hostile inputs to every reader: declared sizes larger than the file, damaged gzip streams and
// first rows that look like headers. Each must end in an input error naming the file and the
// field or row, never in a failed allocation or in silently lost data.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <iterator>
#include <string>

#include "common/input_error.hpp"
#include "common/temp_dir.hpp"
#include "io/corpus.hpp"
#include "io/readers.hpp"
#include "orrery/error.hpp"

using orrery::test::input_error_of;
using orrery::test::TempDir;
namespace io = orrery::io;

namespace {

void expect_error_with(const std::function<void()>& f, std::initializer_list<const char*> words) {
  const std::string msg = input_error_of(f);
  for (const char* w : words) EXPECT_NE(msg.find(w), std::string::npos) << "'" << w << "' missing from: " << msg;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string npy_header(const std::string& shape) {
  std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + dict.size() + 1) % 64) dict.push_back(' ');
  dict.push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(dict.size() & 0xff));
  out.push_back(static_cast<char>(dict.size() >> 8));
  return out + dict;
}

orrery::Corpus corpus(const std::string& path, io::CorpusFormat format) {
  io::CorpusSpec spec;
  spec.path = path;
  spec.format = format;
  return io::read_corpus(spec);
}

}  // namespace

// A size declared in a file is checked against what the file can hold and against the documented
// ceiling before anything of that size is allocated; the message names the file and the field.
TEST(DeclaredSizes, AreCheckedBeforeAllocating) {
  TempDir tmp;
  const std::string huge_mtx = tmp.write("a.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 1000000000000000\n1 1 1\n");
  expect_error_with([&] { io::read_mtx(huge_mtx); }, {"a.mtx", "line 2", "entries = 1000000000000000"});
  const std::string wide_mtx = tmp.write("b.mtx", "%%MatrixMarket matrix coordinate real general\n1000000000000 3 1\n1 1 1\n");
  expect_error_with([&] { io::read_mtx(wide_mtx); }, {"b.mtx", "line 2", "rows = 1000000000000", "exceeds"});
  // The same file as a corpus and gzip-compressed: the compressed size bounds it too.
  expect_error_with([&] { corpus(tmp.write_gz("c.mtx.gz", slurp(huge_mtx)), io::CorpusFormat::mtx); },
                    {"c.mtx.gz", "entries"});

  const std::string nnz = tmp.write("docword.a.txt", "2\n3\n1000000000000000\n1 1 1\n");
  expect_error_with([&] { corpus(nnz, io::CorpusFormat::uci); }, {"docword.a.txt", "line 3", "NNZ", "bytes"});
  const std::string docs = tmp.write("docword.b.txt", "1000000000000\n3\n1\n1 1 1\n");
  expect_error_with([&] { corpus(docs, io::CorpusFormat::uci); }, {"docword.b.txt", "line 1", "D (", "exceeds"});

  // Empty documents are allowed, so D is not bounded by the file; but only documents up to the
  // last one with an entry get rows: two billion declared documents cost nothing.
  const orrery::Corpus sparse = corpus(tmp.write("docword.c.txt", "2000000000\n3\n2\n1 1 1\n2 3 4\n"), io::CorpusFormat::uci);
  EXPECT_EQ(sparse.num_docs(), 2);
  EXPECT_EQ(sparse.skipped_empty, 2000000000 - 2);

  const std::string npy = tmp.write("big.npy", npy_header("(1000000000, 1000000000)") + std::string(64, '\0'));
  expect_error_with([&] { io::read_matrix(npy); }, {"big.npy", "shape (1000000000, 1000000000)", "holds only"});
  std::string idx("\x00\x00\x08\x02\x40\x00\x00\x00\x40\x00\x00\x00", 12);  // 2^30 x 2^30 bytes declared
  const std::string idx_path = tmp.write("big-idx2-ubyte", idx + std::string(16, '\1'));
  expect_error_with([&] { io::read_matrix(idx_path); }, {"big-idx2-ubyte", "IDX dimensions", "holds only"});
}

// A gzip file is read to its clean end: every member of a multi-member file, and a stream cut
// short, corrupt or followed by stray bytes is an error naming the file.
TEST(GzipStreams, AreReadWholeAndCheckedForACleanEnd) {
  TempDir tmp;
  std::string rows;
  for (int i = 0; i < 2000; ++i) rows += std::to_string(i) + "," + std::to_string(i * 7 % 13) + "\n";
  const std::string a = slurp(tmp.write_gz("a.gz", rows)), b = slurp(tmp.write_gz("b.gz", "5,6\n7,8\n"));

  const orrery::MatrixD both = io::read_matrix(tmp.write("both.csv.gz", a + b));
  ASSERT_EQ(both.rows, 2002);
  EXPECT_EQ(both(2001, 0), 7.0);

  expect_error_with([&] { io::read_matrix(tmp.write("cut.csv.gz", a.substr(0, a.size() / 2))); },
                    {"cut.csv.gz", "truncated gzip stream"});
  expect_error_with([&] { io::read_matrix(tmp.write("notail.csv.gz", a.substr(0, a.size() - 4))); },
                    {"notail.csv.gz", "truncated gzip stream"});
  expect_error_with([&] { io::read_matrix(tmp.write("cut2.csv.gz", a + b.substr(0, b.size() - 3))); },
                    {"cut2.csv.gz", "truncated gzip stream"});
  std::string bad_crc = a;
  bad_crc[bad_crc.size() - 6] ^= 0x55;
  expect_error_with([&] { io::read_matrix(tmp.write("crc.csv.gz", bad_crc)); }, {"crc.csv.gz", "corrupt gzip"});
  expect_error_with([&] { io::read_matrix(tmp.write("tail.csv.gz", a + "junk")); }, {"tail.csv.gz", "after the end"});
  // Every reader shares the source: a corpus and a label file too.
  const std::string doc = slurp(tmp.write_gz("d.gz", "2\n2\n2\n1 1 3\n2 2 4\n"));
  expect_error_with([&] { corpus(tmp.write("docword.c.txt.gz", doc.substr(0, doc.size() - 2)), io::CorpusFormat::uci); },
                    {"docword.c.txt.gz", "truncated gzip stream"});
  EXPECT_EQ(corpus(tmp.write("docword.d.txt.gz", doc), io::CorpusFormat::uci).nnz(), 2);
}

// A first line is a header only when none of its cells is a number, so a headerless file whose
// first row has a typo reports the row and column instead of silently losing that row.
TEST(TextHeader, CannotSwallowADataRow) {
  TempDir tmp;
  expect_error_with([&] { io::read_matrix(tmp.write("typo.csv", "1,2x,3\n4,5,6\n")); },
                    {"typo.csv", "row 1", "column 2", "'2x'"});
  expect_error_with([&] { io::read_matrix(tmp.write("typo.txt", "# comment\n\n1 2 three\n4 5 6\n")); },
                    {"typo.txt", "row 3", "column 3"});
  const orrery::MatrixD named = io::read_matrix(tmp.write("named.tsv", "x\ty\tz\n4\t5\t6\n"));
  EXPECT_EQ(named.rows, 1);
  const orrery::MatrixD quoted = io::read_matrix(tmp.write("q.csv", "\"a\",\"\",\"c\"\n1,2,3\n"));
  EXPECT_EQ(quoted.rows, 1);
}

// Labels that only name groups: any integer or any name becomes a class 0..C-1 (ascending value,
// names in byte order), the original values kept; -1 is unlabelled, other negatives are errors.
TEST(Categories, AnyIntegerOrNameIsAClass) {
  TempDir tmp;
  const io::Categories big = io::read_categories(tmp.write("big.csv", "label\n2147483647\n-1\n5\n100000000\n5.0\n"));
  EXPECT_TRUE(big.numeric);
  EXPECT_EQ(big.index, (std::vector<int>{2, -1, 0, 1, 0}));
  EXPECT_EQ(big.names, (std::vector<std::string>{"5", "100000000", "2147483647"}));
  EXPECT_EQ(big.values, (std::vector<long long>{5, 100000000, 2147483647}));
  // Beyond 2^53 a double would merge these two; integers are read exactly.
  EXPECT_EQ(io::read_categories(tmp.write("exact.txt", "9007199254740993\n9007199254740992\n")).index,
            (std::vector<int>{1, 0}));
  const io::Categories names = io::read_categories(tmp.write("n.txt", "dog\n# comment\ncat\n-1\n\"New York\"\ndog\n"));
  EXPECT_FALSE(names.numeric);
  EXPECT_EQ(names.index, (std::vector<int>{2, 1, -1, 0, 2}));  // byte order: upper case first
  EXPECT_EQ(names.names, (std::vector<std::string>{"New York", "cat", "dog"}));
  EXPECT_EQ(io::read_categories(tmp.write("n2.txt", "dog\ncat\ndog\n"), 2).index, (std::vector<int>{1, 0}));

  expect_error_with([&] { io::read_categories(tmp.write("neg.csv", "1\n-3\n")); }, {"neg.csv", "row 2", "-3", "-1"});
  expect_error_with([&] { io::read_categories(tmp.write("mix.txt", "cat\n2\ndog\n")); }, {"mix.txt", "row 2", "'cat'"});
  expect_error_with([&] { io::read_categories(tmp.write("wide.csv", "1,2\n3,4\n")); }, {"wide.csv", "one label per row"});
  expect_error_with([&] { io::read_categories(tmp.write("frac.csv", "1\n2.5\n")); }, {"frac.csv", "row 2", "2.5"});
}

// Names are valid UTF-8 when read (words, label and class names, file names), so JSON reports and
// SVG maps built from them are always valid; the error names the file and line.
TEST(Names, MustBeValidUtf8) {
  TempDir tmp;
  EXPECT_EQ(io::read_names(tmp.write("ok.txt", "caf\xC3\xA9\n\xF0\x9F\x90\x88\n")).size(), 2u);
  expect_error_with([&] { io::read_names(tmp.write("latin1.txt", "tea\ncaf\xE9\n")); }, {"latin1.txt", "line 2", "UTF-8"});
  expect_error_with([&] { io::read_names(tmp.write("over.txt", "\xC0\xAF\n")); }, {"over.txt", "line 1", "UTF-8"});
  expect_error_with([&] { io::read_names(tmp.write("surr.txt", "a\n\xED\xA0\x80\n")); }, {"surr.txt", "line 2"});
  expect_error_with([&] { io::read_categories(tmp.write("l.txt", "tea\ncaf\xE9\n")); }, {"l.txt", "row 2", "UTF-8"});

  io::CorpusSpec spec;
  spec.path = tmp.write("docword.v.txt", "1\n2\n1\n1 2 1\n");
  spec.vocab = tmp.write("vocab.txt", "tea\ncaf\xE9\n");
  expect_error_with([&] { io::read_corpus(spec); }, {"vocab.txt", "line 2", "UTF-8"});
  spec.vocab.clear();
  spec.path = tmp.write("t.svm", "ok 1:1\nnon\xE9 2:1\n");
  expect_error_with([&] { io::read_corpus(spec); }, {"t.svm", "line 2", "UTF-8"});
}
