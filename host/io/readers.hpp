// Readers for the dense inputs of a run: vectors/posteriors (npy, csv/tsv/txt, IDX), labels and
// object names. Every failure is an orrery::Error of kind input whose message names the file, the
// row and column where one applies, what was expected and what was found. Rows in messages count
// from 1: for text files a row is the line number, for npy/IDX it is the array row.
//
// Formats are chosen by file name; any of them may be gzip-compressed with a trailing ".gz":
//   .npy                NumPy v1-v3; dtypes <f4 <f8 <i1 <i2 <i4 <i8 <u1 <u2 <u4 <u8 ('|' for 1 byte),
//                       C or Fortran order; 1-D arrays are N x 1, 2-D as given.
//   .csv .tsv .txt      comma / tab / (comma if the line has one, else whitespace) separated;
//                       blank lines and lines starting with '#' are skipped; the first other line
//                       is a header (and skipped) only when none of its cells is a number: a first
//                       line mixing numbers and other text is a data row, and its non-number cell
//                       an error naming the row and column. "nan"/"inf" cells are rejected.
//   *-ubyte .idx        IDX (MNIST style): big-endian dims; 3-D or higher is flattened per item.
// NaN or infinite values are rejected in every format, because nothing downstream can use them.
//
// Sizes declared inside a file (npy shape, IDX dimensions, Matrix Market rows/cols/entries, and in
// corpus.hpp the UCI header and SVMlight ids) are checked before anything of that size is
// allocated: a declared count must fit in the file (a plain file needs at least one byte per
// payload byte or, for text, the shortest line an entry can take; a gzip file can hold at most
// kMaxGzipRatio = 1032 times its size), and a declared dimension may not exceed kMaxDimension.
// gzip files may have several members (cat a.gz b.gz); all are read, and a truncated or corrupt
// member, or trailing bytes that are not a gzip member, is an error naming the file.
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "orrery/types.hpp"

namespace orrery::io {

// The ceiling on a declared dimension (rows, columns, documents, words): ids are 32-bit downstream.
constexpr index_t kMaxDimension = std::numeric_limits<std::int32_t>::max();

// Reads a dense matrix. With limit > 0 only the first `limit` rows are returned (and, for npy in C
// order and IDX, only those are read from disk); a file with fewer rows is not an error.
MatrixD read_matrix(const std::string& path, index_t limit = 0);

// Reads one integer label per object: integer npy/IDX arrays, or float arrays/text whose values are
// whole numbers (np.savetxt writes labels as "3.000000000000000000e+00"). N x 1 arrays are accepted.
std::vector<int> read_labels(const std::string& path, index_t limit = 0);

// Reads one name per non-blank line; trailing whitespace and '\r' are removed.
std::vector<std::string> read_names(const std::string& path);

// A sparse matrix in Matrix Market coordinate format (.mtx, optionally .gz): "real", "integer" or
// "pattern" values, "general" or "symmetric" (the mirrored entries are added). Entries are
// 0-based (row, col, value) in file order. Errors name the file and line: a bad header, an index
// outside the declared size, a non-finite value, fewer entries than declared.
struct SparseTriples {
  index_t rows = 0, cols = 0;
  std::vector<index_t> row, col;
  std::vector<double> val;
};
SparseTriples read_mtx(const std::string& path);

}  // namespace orrery::io
