// Writers: npy/csv bytes that read back exactly, and OutputSet leaving either every file or none.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
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
    EXPECT_NE(std::string(e.what()).find("File exists"), std::string::npos) << e.what();
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

// A rename that fails on its k-th call (counting from 1), as a full disk, a permission or another
// user's file in a sticky directory would make it.
OutputSet::RenameFn failing_rename(int k, int& calls) {
  return [k, &calls](const char* from, const char* to) {
    if (++calls == k) {
      errno = EPERM;
      return -1;
    }
    return std::rename(from, to);
  };
}

TEST(OutputSet, AFailedRenameAnywherePutsEveryOldOutputBack) {
  // Two targets exist (moved aside: renames 1-2), three are placed (renames 3-5).
  for (int k = 1; k <= 6; ++k) {
    TempDir tmp;
    std::ofstream(tmp.path("a.txt")) << "old a";
    std::ofstream(tmp.path("b.txt")) << "old b";
    int calls = 0;
    OutputSet out(failing_rename(k, calls));
    out.add(tmp.path("a.txt"), "new a");
    out.add(tmp.path("c.txt"), "new c");
    out.add(tmp.path("b.txt"), "new b");
    if (k == 6) {  // no failure: every file new, nothing else left
      out.commit();
      EXPECT_EQ(calls, 5);
      EXPECT_EQ(slurp(tmp.path("a.txt")), "new a");
      EXPECT_EQ(slurp(tmp.path("b.txt")), "new b");
      EXPECT_EQ(slurp(tmp.path("c.txt")), "new c");
      EXPECT_EQ(tmp.listing(), (std::vector<std::string>{"a.txt", "b.txt", "c.txt"}));
      continue;
    }
    try {
      out.commit();
      ADD_FAILURE() << "rename " << k << " failed, yet the commit succeeded";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::input);
      EXPECT_NE(std::string(e.what()).find("Operation not permitted"), std::string::npos) << e.what();
    }
    EXPECT_EQ(slurp(tmp.path("a.txt")), "old a") << "rename " << k;
    EXPECT_EQ(slurp(tmp.path("b.txt")), "old b") << "rename " << k;
    EXPECT_EQ(tmp.listing(), (std::vector<std::string>{"a.txt", "b.txt"})) << "rename " << k;
  }
}

// Expects the commit of `target` (with `input` protected) to be refused naming `fragment`, and to
// change nothing in the directory.
void expect_refused_output(const TempDir& tmp, const std::string& input, const std::string& target,
                           const std::string& fragment) {
  const std::vector<std::string> before = tmp.listing();
  OutputSet out;
  out.protect(input);
  out.add(target, "output");
  try {
    out.commit();
    ADD_FAILURE() << target << " replaced the input " << input;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(target), std::string::npos) << e.what();
  }
  EXPECT_EQ(tmp.listing(), before) << target;
  if (fs::is_regular_file(input)) {
    EXPECT_EQ(slurp(input), "input") << target;
  }
}

TEST(OutputSet, NeverReplacesAnInputOrAnythingButARegularFile) {
  TempDir tmp;
  const std::string in = tmp.write("in.csv", "input");
  fs::create_directories(tmp.path("sub"));
  fs::create_symlink(in, tmp.path("link.csv"));
  fs::create_directory_symlink(tmp.dir(), tmp.path("alias"));
  fs::create_hard_link(in, tmp.path("hard.csv"));
  fs::create_directories(tmp.path("corpus"));
  tmp.write("corpus/doc.txt", "input");
  const std::string replaces = "would replace the input";
  expect_refused_output(tmp, in, in, replaces);
  expect_refused_output(tmp, in, tmp.path("sub/../in.csv"), replaces);
  expect_refused_output(tmp, in, tmp.path("alias/in.csv"), replaces);
  expect_refused_output(tmp, tmp.path("link.csv"), in, replaces);  // the file an input symlink names
  expect_refused_output(tmp, in, tmp.path("hard.csv"), replaces);  // the same inode
  expect_refused_output(tmp, tmp.path("corpus"), tmp.path("corpus/report.json"), "inside the input directory");
  expect_refused_output(tmp, tmp.path("alias/corpus"), tmp.path("corpus/new/map.svg"), "inside the input directory");
  // Not regular files, whatever the inputs.
  ASSERT_EQ(::mkfifo(tmp.path("fifo").c_str(), 0600), 0);
  fs::create_symlink("/dev/stdout", tmp.path("stdout.json"));
  expect_refused_output(tmp, in, tmp.path("fifo"), "is a FIFO");
  expect_refused_output(tmp, in, tmp.path("stdout.json"), "is a symbolic link");
  expect_refused_output(tmp, in, tmp.path("link.csv"), "is a symbolic link");
  expect_refused_output(tmp, in, tmp.path("sub"), "is a directory");
  // A symlink squatting on a temporary's name is not written through.
  const std::string victim = tmp.write("victim.txt", "input");
  fs::create_symlink(victim, tmp.path("out.csv.tmp." + std::to_string(::getpid())));
  expect_refused_output(tmp, in, tmp.path("out.csv"), "File exists");
  fs::remove(tmp.path("out.csv.tmp." + std::to_string(::getpid())));
  EXPECT_EQ(slurp(victim), "input");
  // Beside the inputs is fine; an input that does not exist protects nothing.
  OutputSet out;
  out.protect(in);
  out.protect(tmp.path("corpus"));
  out.protect(tmp.path("missing.csv"));
  out.add(tmp.path("out.csv"), "output");
  out.add(tmp.path("missing.csv"), "output");
  out.commit();
  EXPECT_EQ(slurp(tmp.path("out.csv")), "output");
  EXPECT_EQ(slurp(in), "input");
}
