// In-memory inputs (io/memory_inputs.hpp): the readers take a "mem:" path's array, entries or bytes as
// they would take a file's, with the same parsing and the same errors, and a scope's inputs vanish
// with it.
#include <gtest/gtest.h>

#include <string>

#include "common/input_error.hpp"
#include "common/temp_dir.hpp"
#include "io/corpus.hpp"
#include "io/memory_inputs.hpp"
#include "io/readers.hpp"
#include "io/writers.hpp"

using orrery::MatrixD;
using orrery::io::MemoryInputs;
using orrery::test::input_error_of;

namespace {

MatrixD ramp(orrery::index_t rows, orrery::index_t cols) {
  MatrixD m(rows, cols);
  for (orrery::index_t i = 0; i < rows * cols; ++i) m.data[static_cast<size_t>(i)] = 0.5 * static_cast<double>(i) - 3;
  return m;
}

}  // namespace

TEST(MemoryInputs, AMatrixIsReadAsItsFileWouldBe) {
  MemoryInputs in;
  const std::string p = in.add_matrix("X.npy", ramp(5, 3));
  EXPECT_EQ(p.rfind("mem:", 0), 0u);
  for (int twice = 0; twice < 2; ++twice) {
    const MatrixD m = orrery::io::read_matrix(p);
    EXPECT_EQ(m.rows, 5);
    EXPECT_EQ(m.cols, 3);
    EXPECT_EQ(m.data, ramp(5, 3).data);
  }
}

TEST(MemoryInputs, AViewIsReadInPlaceAndCopiedOnlyByAReaderThatOwns) {
  const MatrixD owned = ramp(4, 2);
  MemoryInputs in;
  const std::string p = in.add_view("X.npy", orrery::MatrixViewD(owned));
  orrery::MatrixViewD v;
  ASSERT_TRUE(orrery::io::memory_view(p, v));
  EXPECT_EQ(v.values, owned.data.data());  // the caller's values, not a copy
  EXPECT_EQ(v.rows, 4);
  const MatrixD m = orrery::io::read_matrix(p);
  EXPECT_NE(m.data.data(), owned.data.data());
  EXPECT_EQ(m.data, owned.data);
  EXPECT_FALSE(orrery::io::memory_view(in.add_bytes("b.txt", "1\n"), v));
}

TEST(MemoryInputs, TheRowLimitAppliesAsToAFile) {
  MemoryInputs in;
  const MatrixD m = orrery::io::read_matrix(in.add_matrix("X.npy", ramp(5, 3)), 2);
  EXPECT_EQ(m.rows, 2);
  const MatrixD all = ramp(5, 3);
  EXPECT_EQ(m.data, std::vector<double>(all.data.begin(), all.data.begin() + 6));
}

TEST(MemoryInputs, BytesAreParsedByTheFileReaders) {
  MemoryInputs in;
  const std::string labels = in.add_bytes("labels.txt", "2\n0\n-1\n2\n");
  EXPECT_EQ(orrery::io::read_labels(labels), (std::vector<int>{2, 0, -1, 2}));
  const auto cats = orrery::io::read_categories(in.add_bytes("names.txt", "cat\ndog\ncat\n"));
  EXPECT_EQ(cats.index, (std::vector<int>{0, 1, 0}));
  // the same errors as from a file, naming the path
  const std::string bad = in.add_bytes("bad.txt", "1\nx y\n");
  const std::string e = input_error_of([&] { orrery::io::read_labels(bad); });
  EXPECT_NE(e.find(bad), std::string::npos) << e;
  // an npy file's bytes are an npy file
  const MatrixD m = orrery::io::read_matrix(in.add_bytes("Y.npy", orrery::io::npy_bytes(ramp(2, 2))));
  EXPECT_EQ(m.data, ramp(2, 2).data);
}

TEST(MemoryInputs, SparseEntriesAreAMatrixMarketFile) {
  MemoryInputs in;
  orrery::io::SparseTriples t;
  t.rows = 3, t.cols = 4;
  t.row = {0, 2, 2};
  t.col = {1, 0, 3};
  t.val = {2, 1, 5};
  const std::string p = in.add_sparse("corpus.mtx", t);
  const orrery::io::SparseTriples back = orrery::io::read_mtx(p);
  EXPECT_EQ(back.row, t.row);
  EXPECT_EQ(back.val, t.val);
  orrery::io::CorpusSpec spec;
  spec.path = p;
  const orrery::Corpus c = orrery::io::read_corpus(spec);
  EXPECT_EQ(c.num_docs(), 2);  // the empty document 2 is left out, as from a file
  EXPECT_EQ(c.skipped_empty, 1);
  EXPECT_EQ(c.num_words, 4);
}

TEST(MemoryInputs, AScopesInputsVanishWithIt) {
  std::string p;
  {
    MemoryInputs in;
    p = in.add_bytes("labels.txt", "1\n");
    EXPECT_EQ(orrery::io::read_labels(p), std::vector<int>{1});
  }
  EXPECT_NE(input_error_of([&] { orrery::io::read_labels(p); }).find("cannot open"), std::string::npos);
  MemoryInputs a, b;
  EXPECT_NE(a.prefix(), b.prefix());
}
