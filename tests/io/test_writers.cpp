// Writers: npy/csv bytes that read back exactly, and OutputSet leaving either every file or none.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "io/readers.hpp"
#include "common/temp_dir.hpp"
#include "io/writers.hpp"
#include "orrery/error.hpp"

namespace fs = std::filesystem;
using orrery::Error;
using orrery::ErrorKind;
using orrery::MatrixD;
using orrery::io::OutputSet;

using orrery::test::TempDir;
using orrery::test::slurp;

namespace {

MatrixD sample_matrix() {
  MatrixD m(3, 2);
  m.data = {0.1, 1.0 / 3.0, -2.5e-310, 1e300, -0.0, 6.02214076e23};
  return m;
}

}  // namespace

TEST(NpyWriter, HeaderIsVersion1PaddedTo64Bytes) {
  const std::string bytes = orrery::io::npy_bytes(sample_matrix());
  ASSERT_GE(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const size_t header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
  EXPECT_EQ((10 + header_len) % 64, 0u);
  const std::string header = bytes.substr(10, header_len);
  EXPECT_EQ(header.back(), '\n');
  EXPECT_NE(header.find("'descr': '<f8'"), std::string::npos) << header;
  EXPECT_NE(header.find("'fortran_order': False"), std::string::npos) << header;
  EXPECT_NE(header.find("'shape': (3, 2)"), std::string::npos) << header;
  EXPECT_EQ(bytes.size(), 10 + header_len + 6 * 8);

  const std::string ints = orrery::io::npy_bytes(std::vector<int>{1, -2, 3});
  const size_t ints_len = static_cast<unsigned char>(ints[8]) | (static_cast<unsigned char>(ints[9]) << 8);
  EXPECT_EQ((10 + ints_len) % 64, 0u);
  EXPECT_NE(ints.find("'descr': '<i4'"), std::string::npos);
  EXPECT_NE(ints.find("'shape': (3,)"), std::string::npos);
  EXPECT_EQ(ints.size(), 10 + ints_len + 3 * 4);
}

TEST(NpyWriter, RoundTripsThroughTheReaders) {
  TempDir tmp;
  OutputSet out;
  out.add(tmp.path("m.npy"), orrery::io::npy_bytes(sample_matrix()));
  out.add(tmp.path("l.npy"), orrery::io::npy_bytes(std::vector<int>{4, -7, 0, 2147483647}));
  out.commit();
  EXPECT_EQ(orrery::io::read_matrix(tmp.path("m.npy")).data, sample_matrix().data);
  EXPECT_EQ(orrery::io::read_labels(tmp.path("l.npy")), (std::vector<int>{4, -7, 0, 2147483647}));
}

TEST(CsvWriter, RoundTripsExactlyWithHeader) {
  TempDir tmp;
  const std::string text = orrery::io::csv_bytes(sample_matrix(), {"x", "y"});
  EXPECT_EQ(text.substr(0, 4), "x,y\n");
  OutputSet out;
  out.add(tmp.path("m.csv"), text);
  out.commit();
  const MatrixD back = orrery::io::read_matrix(tmp.path("m.csv"));
  EXPECT_EQ(back.rows, 3);
  EXPECT_EQ(back.cols, 2);
  EXPECT_EQ(back.data, sample_matrix().data);
  EXPECT_TRUE(std::signbit(back(2, 0)));
}

TEST(CsvWriter, QuotesAwkwardHeaderNames) {
  MatrixD m(1, 2, 1.0);
  EXPECT_EQ(orrery::io::csv_bytes(m, {"a,b", "say \"hi\""}), "\"a,b\",\"say \"\"hi\"\"\"\n1,1\n");
  EXPECT_EQ(orrery::io::csv_bytes(m), "1,1\n");
}

TEST(WriterChecks, NonFiniteValuesAndBadHeadersAreInternalErrors) {
  MatrixD m(2, 2, 0.0);
  m(1, 0) = NAN;
  for (int which = 0; which < 2; ++which) {
    try {
      which ? (void)orrery::io::csv_bytes(m) : (void)orrery::io::npy_bytes(m);
      ADD_FAILURE() << "expected an error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::internal);
      EXPECT_NE(std::string(e.what()).find("row 2, column 1"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(orrery::io::csv_bytes(MatrixD(1, 2), {"only one"}), Error);
}

TEST(OutputSet, CommitsAllFilesCreatingDirectories) {
  TempDir tmp;
  OutputSet out;
  out.add(tmp.path("a/b/one.txt"), "first");
  out.add(tmp.path("two.txt"), std::string("with\0nul", 8));
  EXPECT_TRUE(tmp.listing().empty()) << "nothing may be written before commit";
  out.commit();
  EXPECT_EQ(slurp(tmp.path("a/b/one.txt")), "first");
  EXPECT_EQ(slurp(tmp.path("two.txt")), std::string("with\0nul", 8));
  EXPECT_EQ(tmp.listing(), (std::vector<std::string>{"a/b/one.txt", "two.txt"}));
}

TEST(OutputSet, ReplacesExistingFiles) {
  TempDir tmp;
  std::ofstream(tmp.path("old.txt")) << "a much longer old content";
  OutputSet out;
  out.add(tmp.path("old.txt"), "new");
  out.commit();
  EXPECT_EQ(slurp(tmp.path("old.txt")), "new");
  EXPECT_EQ(tmp.listing(), (std::vector<std::string>{"old.txt"}));
}

TEST(OutputSet, FailureLeavesNothingBehind) {
  TempDir tmp;
  std::ofstream(tmp.path("plain")) << "a regular file";
  OutputSet out;
  out.add(tmp.path("good.npy"), orrery::io::npy_bytes(sample_matrix()));
  out.add(tmp.path("also_good.csv"), "1,2\n");
  out.add(tmp.path("plain/under_a_file.csv"), "1,2\n");
  try {
    out.commit();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("plain/under_a_file.csv"), std::string::npos) << msg;
    EXPECT_NE(msg.find("Not a directory"), std::string::npos) << msg;
  }
  EXPECT_EQ(tmp.listing(), (std::vector<std::string>{"plain"}));
}

TEST(OutputSet, FailedWriteRemovesTheOtherTemporaries) {
  TempDir tmp;
  // A directory squatting on the temporary name makes the third write fail after two succeeded.
  fs::create_directories(tmp.path("third.csv.tmp." + std::to_string(::getpid())));
  OutputSet out;
  out.add(tmp.path("first.csv"), "1\n");
  out.add(tmp.path("sub/second.csv"), "2\n");
  out.add(tmp.path("third.csv"), "3\n");
  try {
    out.commit();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_NE(std::string(e.what()).find("third.csv"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Is a directory"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(tmp.listing().empty());
}

TEST(OutputSet, DirectoryTargetFailsBeforeWritingAnything) {
  TempDir tmp;
  fs::create_directories(tmp.path("taken"));
  OutputSet out;
  out.add(tmp.path("first.txt"), "x");
  out.add(tmp.path("taken"), "y");
  try {
    out.commit();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(tmp.listing().empty());
}

TEST(OutputSet, SamePathTwiceIsAnInputError) {
  OutputSet out;
  out.add("/nonexistent/x.npy", "a");
  try {
    out.add("/nonexistent/x.npy", "b");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_NE(std::string(e.what()).find("twice"), std::string::npos) << e.what();
  }
}

TEST(OutputSet, UncommittedSetWritesNothing) {
  TempDir tmp;
  {
    OutputSet out;
    out.add(tmp.path("never.txt"), "x");
  }
  EXPECT_TRUE(tmp.listing().empty());
}
