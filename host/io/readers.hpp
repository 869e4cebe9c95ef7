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

// Reads one integer label per object where labels are class indices (PE: 0..K-1): integer npy/IDX
// arrays, or float arrays/text whose values are whole numbers (np.savetxt writes labels as
// "3.000000000000000000e+00"). N x 1 arrays are accepted. Labels that only name groups are read
// with read_categories instead.
std::vector<int> read_labels(const std::string& path, index_t limit = 0);

// The marker for an object without a label, in every label file (as the number -1, or the line
// "-1" in a file of names).
constexpr int kUnlabelled = -1;

// Labels that only name groups (classes, categories): any integers or any names, turned into a
// dense index 0..C-1 for the methods, with the original values kept for legends and reports.
//   npy/IDX, or text whose lines are all numbers (after an optional header line without a
//   number): whole numbers of any size ("3", "3.0"); -1 is unlabelled, any other negative value
//   is an error naming the row. Classes are the distinct values in ascending numeric order.
//   Other text (.csv .tsv .txt or any other name): one name per line (trimmed, surrounding double
//   quotes removed; blank lines and lines starting with '#' skipped; no header line), valid
//   UTF-8; "-1" is unlabelled. Classes are the distinct names in byte order. A file mixing
//   numbers and names, or a line of several numeric cells, is an error naming the line.
// So the class order depends only on the set of values, never on the order of the rows.
struct Categories {
  std::vector<int> index;          // per object: 0..C-1, or kUnlabelled
  std::vector<std::string> names;  // C entries: the original value of class c (decimal for numbers)
  std::vector<long long> values;   // numbers only: the original value of class c; empty for names
  bool numeric = false;            // the file held numbers (values), not names
};
Categories read_categories(const std::string& path, index_t limit = 0);

// The classes of integer labels as read_categories numbers them (values -1 or >= 0; -1 unlabelled);
// `path` names the source in messages.
Categories integer_categories(const std::vector<long long>& values, const std::string& path);

// Reads one name per non-blank line; trailing whitespace and '\r' are removed. Names must be valid
// UTF-8 (an error names the line otherwise), so reports and maps built from them are valid too.
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
