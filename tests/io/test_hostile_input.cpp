// Classes of hostile input found by fuzzing the readers (scripts/fuzz.sh) and by the sanitizer
// build, one test per class; each case is the smallest input of its class. The readers must answer
// with an input error naming the file, or read the input correctly, never crash or allocate what
// a header merely claims.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/input_error.hpp"
#include "common/temp_dir.hpp"
#include "io/corpus.hpp"
#include "io/readers.hpp"
#include "orrery/error.hpp"

using namespace orrery;
using namespace orrery::io;
using orrery::test::input_error_of;
using orrery::test::TempDir;

namespace {

void expect_pieces(const std::string& msg, const std::vector<std::string>& pieces) {
  for (const auto& p : pieces) EXPECT_NE(msg.find(p), std::string::npos) << "no \"" << p << "\" in: " << msg;
}

CorpusSpec spec_of(const std::string& path) {
  CorpusSpec s;
  s.path = path;
  return s;
}

}  // namespace

// A size in a header (entries, documents) is a claim the rest of the file may not back: memory
// follows what the file holds. Before: std::length_error from reserve(9.2e18), std::bad_alloc from
// a row index of 1e11 documents.
TEST(HostileInput, DeclaredSizesAllocateNothingTheFileDoesNotHold) {
  TempDir tmp;
  const std::string huge_mtx = tmp.write(
      "huge.mtx", "%%MatrixMarket matrix coordinate integer general\n9223372036854775807 2 9223372036854775807\n");
  expect_pieces(input_error_of([&] { read_mtx(huge_mtx); }), {"huge.mtx", "rows", "9223372036854775807"});

  const std::string no_words = tmp.write("docword.none.txt", "100000000000\n3\n0\n");
  expect_pieces(input_error_of([&] { read_corpus(spec_of(no_words)); }), {"docword.none.txt", "100000000000"});

  // Many declared documents, one with words: read, the others counted as empty.
  const Corpus uci = read_corpus(spec_of(tmp.write("docword.one.txt", "2000000000\n3\n1\n2000000000 2 4\n")));
  EXPECT_EQ(uci.num_docs(), 1);
  EXPECT_EQ(uci.skipped_empty, 1999999999);
  EXPECT_EQ(uci.doc_index, std::vector<index_t>({1999999999}));
  EXPECT_EQ(uci.word, std::vector<std::int32_t>({1}));

  const Corpus mtx = read_corpus(spec_of(
      tmp.write("rows.mtx", "%%MatrixMarket matrix coordinate integer general\n2000000000 3 2\n7 3 1\n7 1 2\n")));
  EXPECT_EQ(mtx.doc_index, std::vector<index_t>({6}));
  EXPECT_EQ(mtx.skipped_empty, 1999999999);
  EXPECT_EQ(mtx.word, std::vector<std::int32_t>({0, 2}));
}

// A device never ends: reading /dev/zero as an input would only stop when memory runs out.
TEST(HostileInput, DevicesAreNotInputs) {
  for (const char* dev : {"/dev/zero", "/dev/urandom"})
    expect_pieces(input_error_of([&] { read_names(dev); }), {dev, "is a device"});
}
