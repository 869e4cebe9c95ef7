// Readers: every format read back from small hand-made files, and every error naming the file,
// the row/column and what was found.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include "io/readers.hpp"
#include "common/input_error.hpp"
#include "common/temp_dir.hpp"
#include "io/writers.hpp"
#include "orrery/error.hpp"

namespace fs = std::filesystem;
using orrery::Error;
using orrery::ErrorKind;
using orrery::MatrixD;
using orrery::io::read_labels;
using orrery::io::read_matrix;
using orrery::io::read_names;

using orrery::test::input_error_of;
using orrery::test::TempDir;

namespace {

std::string npy_file(const std::string& descr, const std::string& shape, bool fortran, const std::string& payload) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
                     ", 'shape': " + shape + ", }";
  while ((10 + dict.size() + 1) % 64) dict.push_back(' ');
  dict.push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(dict.size() & 0xff));
  out.push_back(static_cast<char>(dict.size() >> 8));
  return out + dict + payload;
}

template <class T>
std::string raw_le(std::initializer_list<T> values) {
  std::string out;
  for (T v : values) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof(T));
    for (size_t k = 0; k < sizeof(T); ++k) out.push_back(static_cast<char>((bits >> (8 * k)) & 0xff));
  }
  return out;
}

std::string be32(std::uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>((v >> 16) & 0xff), static_cast<char>((v >> 8) & 0xff),
          static_cast<char>(v & 0xff)};
}

std::string idx_file(unsigned char type, const std::vector<std::uint32_t>& dims, const std::string& payload) {
  std::string out{'\0', '\0', static_cast<char>(type), static_cast<char>(dims.size())};
  for (std::uint32_t d : dims) out += be32(d);
  return out + payload;
}

void expect_matrix(const MatrixD& m, orrery::index_t rows, orrery::index_t cols, const std::vector<double>& data) {
  ASSERT_EQ(m.rows, rows);
  ASSERT_EQ(m.cols, cols);
  EXPECT_EQ(m.data, data);
}

}  // namespace

TEST(NpyReader, Float64RoundTripIsExact) {
  TempDir tmp;
  MatrixD m(3, 2);
  m.data = {0.1, -1e-300, 1e300, M_PI, -0.0, 123456789.123456789};
  const std::string path = tmp.write("m.npy", orrery::io::npy_bytes(m));
  expect_matrix(read_matrix(path), 3, 2, m.data);
  expect_matrix(read_matrix(path, 2), 2, 2, {0.1, -1e-300, 1e300, M_PI});
  expect_matrix(read_matrix(path, 10), 3, 2, m.data);
}

TEST(NpyReader, Float32AndOneDimensional) {
  TempDir tmp;
  expect_matrix(read_matrix(tmp.write("f.npy", npy_file("<f4", "(2, 2)", false, raw_le<float>({0.5f, -2.f, 3.25f, 1e6f})))),
                2, 2, {0.5, -2, 3.25, 1e6});
  expect_matrix(read_matrix(tmp.write("v.npy", npy_file("<f8", "(3,)", false, raw_le<double>({1, 2, 3})))), 3, 1,
                {1, 2, 3});
}

TEST(NpyReader, IntegerDtypes) {
  TempDir tmp;
  const std::vector<double> want = {1, 2, 250, 7};
  const std::map<std::string, std::string> cases = {
      {"<i4", raw_le<std::int32_t>({1, 2, 250, 7})}, {"<i8", raw_le<std::int64_t>({1, 2, 250, 7})},
      {"<u1", raw_le<std::uint8_t>({1, 2, 250, 7})}, {"|u1", raw_le<std::uint8_t>({1, 2, 250, 7})},
      {"<i2", raw_le<std::int16_t>({1, 2, 250, 7})}, {"<u2", raw_le<std::uint16_t>({1, 2, 250, 7})},
      {"<u4", raw_le<std::uint32_t>({1, 2, 250, 7})}};
  for (const auto& [descr, payload] : cases) {
    SCOPED_TRACE(descr);
    expect_matrix(read_matrix(tmp.write("i.npy", npy_file(descr, "(2, 2)", false, payload))), 2, 2, want);
  }
  expect_matrix(read_matrix(tmp.write("n.npy", npy_file("<i4", "(2,)", false, raw_le<std::int32_t>({-5, -2147483647})))),
                2, 1, {-5, -2147483647});
}

TEST(NpyReader, FortranOrderIsTransposedOnRead) {
  TempDir tmp;
  // The 2 x 3 matrix [[1,2,3],[4,5,6]] stored column by column.
  const std::string path = tmp.write("f.npy", npy_file("<f8", "(2, 3)", true, raw_le<double>({1, 4, 2, 5, 3, 6})));
  expect_matrix(read_matrix(path), 2, 3, {1, 2, 3, 4, 5, 6});
  expect_matrix(read_matrix(path, 1), 1, 3, {1, 2, 3});
}

TEST(NpyReader, Version2Header) {
  TempDir tmp;
  std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (1, 2), }";
  while ((12 + dict.size() + 1) % 64) dict.push_back(' ');
  dict.push_back('\n');
  std::string bytes("\x93NUMPY\x02\x00", 8);
  bytes += std::string{static_cast<char>(dict.size()), 0, 0, 0} + dict + raw_le<double>({7, 8});
  expect_matrix(read_matrix(tmp.write("v2.npy", bytes)), 1, 2, {7, 8});
}

TEST(NpyReader, RejectsUnsupportedArrays) {
  TempDir tmp;
  const auto msg_big = input_error_of([&] {
    read_matrix(tmp.write("b.npy", npy_file(">f8", "(1, 1)", false, std::string(8, '\0'))));
  });
  EXPECT_NE(msg_big.find("big-endian"), std::string::npos) << msg_big;
  EXPECT_NE(msg_big.find("b.npy"), std::string::npos) << msg_big;
  const auto msg_3d = input_error_of([&] {
    read_matrix(tmp.write("c.npy", npy_file("<f8", "(1, 1, 1)", false, std::string(8, '\0'))));
  });
  EXPECT_NE(msg_3d.find("3-D"), std::string::npos) << msg_3d;
  const auto msg_type = input_error_of([&] {
    read_matrix(tmp.write("d.npy", npy_file("<c16", "(1,)", false, std::string(16, '\0'))));
  });
  EXPECT_NE(msg_type.find("'<c16'"), std::string::npos) << msg_type;
  const auto msg_magic = input_error_of([&] { read_matrix(tmp.write("e.npy", "not numpy at all")); });
  EXPECT_NE(msg_magic.find("not an npy file"), std::string::npos) << msg_magic;
}

TEST(NpyReader, TruncatedDataIsAnError) {
  TempDir tmp;
  const std::string path = tmp.write("t.npy", npy_file("<f8", "(4, 2)", false, raw_le<double>({1, 2, 3})));
  const auto msg = input_error_of([&] { read_matrix(path); });
  EXPECT_NE(msg.find("t.npy"), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
  // Only the rows asked for are needed.
  expect_matrix(read_matrix(path, 1), 1, 2, {1, 2});
  const auto msg_header = input_error_of([&] { read_matrix(tmp.write("h.npy", npy_file("<f8", "(1,)", false, "").substr(0, 30))); });
  EXPECT_NE(msg_header.find("truncated"), std::string::npos) << msg_header;
}

TEST(NpyReader, NonFiniteValuesNameFileAndRow) {
  TempDir tmp;
  const auto msg = input_error_of([&] {
    read_matrix(tmp.write("nan.npy", npy_file("<f8", "(3, 2)", false, raw_le<double>({1, 2, 3, NAN, 5, 6}))));
  });
  EXPECT_NE(msg.find("nan.npy"), std::string::npos) << msg;
  EXPECT_NE(msg.find("row 2, column 2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("NaN"), std::string::npos) << msg;
  const auto msg_inf = input_error_of([&] {
    read_matrix(tmp.write("inf.npy", npy_file("<f4", "(2,)", false, raw_le<float>({INFINITY, 1.f}))));
  });
  EXPECT_NE(msg_inf.find("row 1"), std::string::npos) << msg_inf;
  EXPECT_NE(msg_inf.find("infinite"), std::string::npos) << msg_inf;
}

TEST(CsvReader, HeaderCommentsAndBlankLines) {
  TempDir tmp;
  const std::string csv = "# produced by hand\n\"x\",\"y\"\n1,2\n\n  # indented comment\n3, 4.5\r\n-1e-3,+7\n";
  expect_matrix(read_matrix(tmp.write("a.csv", csv)), 3, 2, {1, 2, 3, 4.5, -1e-3, 7});
  expect_matrix(read_matrix(tmp.write("b.csv", csv), 2), 2, 2, {1, 2, 3, 4.5});
  expect_matrix(read_matrix(tmp.write("c.csv", "\xEF\xBB\xBF" "1,2\n")), 1, 2, {1, 2});
}

TEST(CsvReader, TsvAndTxtSeparators) {
  TempDir tmp;
  expect_matrix(read_matrix(tmp.write("a.tsv", "a\tb\tc\n1\t2\t3\n4\t5\t6\n")), 2, 3, {1, 2, 3, 4, 5, 6});
  expect_matrix(read_matrix(tmp.write("a.txt", "1 2   3\n\t4\t5 6 \n")), 2, 3, {1, 2, 3, 4, 5, 6});
  expect_matrix(read_matrix(tmp.write("b.txt", "1, 2,3\n4 ,5,6\n")), 2, 3, {1, 2, 3, 4, 5, 6});
  expect_matrix(read_matrix(tmp.write_gz("c.csv.gz", "1,2\n3,4\n")), 2, 2, {1, 2, 3, 4});
}

TEST(CsvReader, RaggedRowNamesTheRow) {
  TempDir tmp;
  const std::string path = tmp.write("r.csv", "1,2,3\n4,5,6\n7,8\n");
  const auto msg = input_error_of([&] { read_matrix(path); });
  EXPECT_NE(msg.find("r.csv"), std::string::npos) << msg;
  EXPECT_NE(msg.find("row 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected 3 columns"), std::string::npos) << msg;
  EXPECT_NE(msg.find("found 2"), std::string::npos) << msg;
}

TEST(CsvReader, BadCellNamesRowAndColumn) {
  TempDir tmp;
  const auto msg = input_error_of([&] { read_matrix(tmp.write("bad.csv", "x,y\n1,2\n3,abc\n")); });
  EXPECT_NE(msg.find("bad.csv"), std::string::npos) << msg;
  EXPECT_NE(msg.find("row 3, column 2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'abc'"), std::string::npos) << msg;
  const auto msg_empty = input_error_of([&] { read_matrix(tmp.write("e.csv", "1,2\n3,\n")); });
  EXPECT_NE(msg_empty.find("row 2, column 2"), std::string::npos) << msg_empty;
  EXPECT_NE(msg_empty.find("empty cell"), std::string::npos) << msg_empty;
}

TEST(CsvReader, NanAndInfCellsAreRejected) {
  TempDir tmp;
  for (const std::string cell : {"nan", "NaN", "inf", "-Infinity"}) {
    SCOPED_TRACE(cell);
    // Also on the first line, which must not be mistaken for a header.
    const auto msg = input_error_of([&] { read_matrix(tmp.write("n.csv", "1," + cell + "\n3,4\n")); });
    EXPECT_NE(msg.find("row 1, column 2"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'" + cell + "'"), std::string::npos) << msg;
  }
  const auto msg = input_error_of([&] { read_matrix(tmp.write("big.csv", "1,1e999\n")); });
  EXPECT_NE(msg.find("out of range"), std::string::npos) << msg;
}

TEST(ReaderErrors, UnknownExtensionMissingAndEmptyFiles) {
  TempDir tmp;
  const auto msg = input_error_of([&] { read_matrix(tmp.write("data.parquet", "x")); });
  EXPECT_NE(msg.find("data.parquet"), std::string::npos) << msg;
  EXPECT_NE(msg.find(".npy"), std::string::npos) << msg;
  EXPECT_NE(msg.find(".csv"), std::string::npos) << msg;
  EXPECT_NE(msg.find("idx3-ubyte"), std::string::npos) << msg;
  const auto msg_missing = input_error_of([&] { read_matrix(tmp.write("x", "") + "/../nope.csv"); });
  EXPECT_NE(msg_missing.find("cannot open"), std::string::npos) << msg_missing;
  for (const std::string body : {"", "\n\n", "# only a comment\n", "x,y\n"}) {
    const auto msg_empty = input_error_of([&] { read_matrix(tmp.write("empty.csv", body)); });
    EXPECT_NE(msg_empty.find("no data rows"), std::string::npos) << msg_empty;
  }
  const auto msg_zero = input_error_of([&] { read_matrix(tmp.write("z.npy", npy_file("<f8", "(0, 3)", false, ""))); });
  EXPECT_NE(msg_zero.find("no rows"), std::string::npos) << msg_zero;
  input_error_of([&] { read_matrix(tmp.write("n.csv", "1\n"), -1); });
}

TEST(IdxReader, ImagesAndLabelsRoundTrip) {
  TempDir tmp;
  // Three 2 x 2 unsigned-byte images, flattened to rows of 4.
  const std::string images = idx_file(0x08, {3, 2, 2}, std::string("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\xff", 12));
  const std::vector<double> want = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 255};
  expect_matrix(read_matrix(tmp.write("img-idx3-ubyte", images)), 3, 4, want);
  expect_matrix(read_matrix(tmp.write_gz("img-idx3-ubyte.gz", images)), 3, 4, want);
  expect_matrix(read_matrix(tmp.write_gz("img-idx3-ubyte.gz", images), 2), 2, 4, {0, 1, 2, 3, 4, 5, 6, 7});
  const std::string labels = idx_file(0x08, {4}, std::string("\x03\x00\x09\x01", 4));
  EXPECT_EQ(read_labels(tmp.write("lab-idx1-ubyte", labels)), (std::vector<int>{3, 0, 9, 1}));
  EXPECT_EQ(read_labels(tmp.write_gz("lab-idx1-ubyte.gz", labels), 3), (std::vector<int>{3, 0, 9}));
}

TEST(IdxReader, WiderBigEndianTypes) {
  TempDir tmp;
  std::string floats;
  for (float f : {1.5f, -2.0f}) {
    std::uint32_t bits;
    std::memcpy(&bits, &f, 4);
    floats += be32(bits);
  }
  expect_matrix(read_matrix(tmp.write("f.idx", idx_file(0x0D, {2}, floats))), 2, 1, {1.5, -2});
  expect_matrix(read_matrix(tmp.write("i.idx", idx_file(0x0C, {1, 2}, be32(70000) + be32(0xFFFFFFFEu)))), 1, 2,
                {70000, -2});
  expect_matrix(read_matrix(tmp.write("s.idx", idx_file(0x0B, {2}, std::string("\xff\xff\x01\x00", 4)))), 2, 1,
                {-1, 256});
  expect_matrix(read_matrix(tmp.write("b.idx", idx_file(0x09, {2}, std::string("\xff\x7f", 2)))), 2, 1, {-1, 127});
}

TEST(IdxReader, TruncatedAndMalformedFiles) {
  TempDir tmp;
  const std::string images = idx_file(0x08, {3, 2, 2}, std::string(8, '\x01'));
  const auto msg = input_error_of([&] { read_matrix(tmp.write("t-idx3-ubyte", images)); });
  EXPECT_NE(msg.find("t-idx3-ubyte"), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
  const auto msg_gz = input_error_of([&] { read_matrix(tmp.write_gz("t-idx3-ubyte.gz", images)); });
  EXPECT_NE(msg_gz.find("truncated"), std::string::npos) << msg_gz;
  const auto msg_dims = input_error_of([&] { read_matrix(tmp.write("d.idx", images.substr(0, 9))); });
  EXPECT_NE(msg_dims.find("truncated"), std::string::npos) << msg_dims;
  const auto msg_magic = input_error_of([&] { read_matrix(tmp.write("m.idx", "\x01\x02\x08\x01" + be32(1) + "x")); });
  EXPECT_NE(msg_magic.find("magic"), std::string::npos) << msg_magic;
  const auto msg_type = input_error_of([&] { read_matrix(tmp.write("y.idx", std::string("\0\0\x07\x01", 4) + be32(1) + "x")); });
  EXPECT_NE(msg_type.find("element type"), std::string::npos) << msg_type;
}

TEST(ReaderLabels, IntegerAndWholeFloatLabels) {
  TempDir tmp;
  EXPECT_EQ(read_labels(tmp.write("l.npy", npy_file("<i8", "(3,)", false, raw_le<std::int64_t>({2, 0, -1})))),
            (std::vector<int>{2, 0, -1}));
  EXPECT_EQ(read_labels(tmp.write("l2.npy", npy_file("<f8", "(2, 1)", false, raw_le<double>({4, 5})))),
            (std::vector<int>{4, 5}));
  EXPECT_EQ(read_labels(tmp.write("l.txt", "3.000000000000000000e+00\n1.000000000000000000e+00\n")),
            (std::vector<int>{3, 1}));
  EXPECT_EQ(read_labels(tmp.write("l.csv", "label\n7\n8\n9\n"), 2), (std::vector<int>{7, 8}));
}

TEST(ReaderLabels, RejectsNonIntegerLabels) {
  TempDir tmp;
  const auto msg = input_error_of([&] { read_labels(tmp.write("f.csv", "1\n\n2.5\n")); });
  EXPECT_NE(msg.find("f.csv' row 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("integer"), std::string::npos) << msg;
  EXPECT_NE(msg.find("2.5"), std::string::npos) << msg;
  const auto msg_cols = input_error_of([&] { read_labels(tmp.write("g.csv", "1,2\n3,4\n")); });
  EXPECT_NE(msg_cols.find("one label per row"), std::string::npos) << msg_cols;
  const auto msg_text = input_error_of([&] { read_labels(tmp.write("s.txt", "cat\ndog\n")); });
  EXPECT_NE(msg_text.find("row 2, column 1"), std::string::npos) << msg_text;
  EXPECT_NE(msg_text.find("'dog'"), std::string::npos) << msg_text;
  const auto msg_big = input_error_of([&] {
    read_labels(tmp.write("b.npy", npy_file("<i8", "(1,)", false, raw_le<std::int64_t>({std::int64_t{1} << 40}))));
  });
  EXPECT_NE(msg_big.find("row 1"), std::string::npos) << msg_big;
}

TEST(ReaderNames, OneNamePerNonBlankLine) {
  TempDir tmp;
  EXPECT_EQ(read_names(tmp.write("n.txt", "alpha\r\n\n  beta gamma  \n#3\n")),
            (std::vector<std::string>{"alpha", "beta gamma", "#3"}));
  const auto msg = input_error_of([&] { read_names(tmp.write("e.txt", "\n \n")); });
  EXPECT_NE(msg.find("e.txt"), std::string::npos) << msg;
}

TEST(ReaderFashionMnist, TestLabelsAreBalanced) {
  const std::string path = "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz";
  if (!fs::exists(path)) GTEST_SKIP() << "data set not installed: " << path;
  const std::vector<int> labels = read_labels(path);
  ASSERT_EQ(labels.size(), 10000u);
  std::vector<int> count(10, 0);
  for (int l : labels) {
    ASSERT_GE(l, 0);
    ASSERT_LE(l, 9);
    ++count[static_cast<size_t>(l)];
  }
  for (int c : count) EXPECT_EQ(c, 1000);
  const std::string images = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";
  if (fs::exists(images)) {
    const MatrixD m = read_matrix(images, 5);
    EXPECT_EQ(m.rows, 5);
    EXPECT_EQ(m.cols, 784);
  }
}

TEST(MtxReader, GeneralSymmetricAndPattern) {
  TempDir tmp;
  const auto g = orrery::io::read_mtx(tmp.write("g.mtx",
                                                "%%MatrixMarket matrix coordinate real general\n% a comment\n"
                                                "3 4 2\n1 2 0.5\n3 4 -1e-3\n"));
  EXPECT_EQ(g.rows, 3);
  EXPECT_EQ(g.cols, 4);
  EXPECT_EQ(g.row, (std::vector<orrery::index_t>{0, 2}));
  EXPECT_EQ(g.col, (std::vector<orrery::index_t>{1, 3}));
  EXPECT_EQ(g.val, (std::vector<double>{0.5, -1e-3}));
  const auto s = orrery::io::read_mtx(tmp.write("s.mtx", "%%MatrixMarket matrix coordinate integer symmetric\n"
                                                          "3 3 2\n2 1 4\n3 3 1\n"));
  EXPECT_EQ(s.row, (std::vector<orrery::index_t>{1, 0, 2}));  // the mirror follows its entry; no mirror on the diagonal
  EXPECT_EQ(s.col, (std::vector<orrery::index_t>{0, 1, 2}));
  EXPECT_EQ(s.val, (std::vector<double>{4, 4, 1}));
  const auto p = orrery::io::read_mtx(tmp.write("p.mtx", "%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 2\n"));
  EXPECT_EQ(p.val, (std::vector<double>{1.0}));
}

TEST(MtxReader, ErrorsNameTheFileAndLine) {
  TempDir tmp;
  auto message = [&](const std::string& name, const std::string& text) {
    try {
      orrery::io::read_mtx(tmp.write(name, text));
    } catch (const orrery::Error& e) {
      EXPECT_EQ(e.kind(), orrery::ErrorKind::input);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("a.mtx", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n").find("line 1"),
            std::string::npos);
  EXPECT_NE(message("b.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1.0\n").find("line 3"),
            std::string::npos);
  EXPECT_NE(message("c.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1.0\n").find("declares 2"),
            std::string::npos);
  EXPECT_NE(message("d.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2 nan\n").find("line 3"),
            std::string::npos);
  EXPECT_NE(message("e.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2 1e999\n").find("line 3"),
            std::string::npos);
}
