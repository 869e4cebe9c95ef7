#include "io/readers.hpp"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <sstream>
#include <string_view>

#include "io/text_input.hpp"
#include "orrery/error.hpp"

namespace orrery::io {
namespace {

using namespace detail;

enum class Format { npy, csv, tsv, txt, idx, unknown };

// The format named by the file's extension, or `fallback` when the name does not tell.
Format format_or(const std::string& path, Format fallback) {
  std::string name = std::filesystem::path(path).filename().string();
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  if (ends_with(name, ".gz")) name.resize(name.size() - 3);
  if (ends_with(name, ".npy")) return Format::npy;
  if (ends_with(name, ".csv")) return Format::csv;
  if (ends_with(name, ".tsv")) return Format::tsv;
  if (ends_with(name, ".txt")) return Format::txt;
  if (ends_with(name, ".idx") || ends_with(name, "-ubyte")) return Format::idx;
  return fallback;
}

Format format_of(const std::string& path) {
  const Format f = format_or(path, Format::unknown);
  if (f != Format::unknown) return f;
  input_error(in_quotes(path) + ": unknown file type; supported: .npy, .csv, .tsv, .txt, .idx, "
              "*-idx1-ubyte, *-idx3-ubyte (each optionally gzipped as .gz)");
}

// ---------------------------------------------------------------- binary element types

enum class Kind { floating, signed_int, unsigned_int };

struct Dtype {
  Kind kind = Kind::floating;
  int size = 8;
  bool big_endian = false;
};

// Assembled byte by byte so the result does not depend on the host's byte order.
double decode(const unsigned char* p, const Dtype& t) {
  std::uint64_t bits = 0;
  if (t.big_endian)
    for (int k = 0; k < t.size; ++k) bits = (bits << 8) | p[k];
  else
    for (int k = t.size - 1; k >= 0; --k) bits = (bits << 8) | p[k];
  switch (t.kind) {
    case Kind::unsigned_int:
      return static_cast<double>(bits);
    case Kind::signed_int:
      if (t.size < 8 && (bits >> (8 * t.size - 1)) & 1u) bits |= ~std::uint64_t{0} << (8 * t.size);
      return static_cast<double>(static_cast<std::int64_t>(bits));
    case Kind::floating:
      if (t.size == 4) {
        const auto b32 = static_cast<std::uint32_t>(bits);
        float f;
        std::memcpy(&f, &b32, 4);
        return f;
      } else {
        double d;
        std::memcpy(&d, &bits, 8);
        return d;
      }
  }
  return 0.0;
}

void check_dimension(const std::string& where, index_t n) {
  if (n > kMaxDimension)
    input_error(where + " = " + std::to_string(n) + " exceeds the supported " + std::to_string(kMaxDimension));
}

unsigned long long checked_mul(unsigned long long a, unsigned long long b, const std::string& path) {
  if (b != 0 && a > std::numeric_limits<unsigned long long>::max() / b)
    input_error(in_quotes(path) + ": array dimensions are too large (their product overflows)");
  return a * b;
}

// `raw` holds `stored_rows` rows; only the first `rows` are decoded. Fortran order stores columns
// contiguously, which is why it needs every stored row even when only a few are wanted.
MatrixD decode_array(const std::string& path, const std::string& raw, const Dtype& t, index_t rows, index_t cols,
                     index_t stored_rows, bool fortran) {
  MatrixD m(rows, cols);
  const auto* bytes = reinterpret_cast<const unsigned char*>(raw.data());
  for (index_t i = 0; i < rows; ++i) {
    for (index_t j = 0; j < cols; ++j) {
      const index_t e = fortran ? j * stored_rows + i : i * cols + j;
      const double v = decode(bytes + e * t.size, t);
      if (!std::isfinite(v))
        input_error(in_quotes(path) + " row " + std::to_string(i + 1) + ", column " + std::to_string(j + 1) + ": found " +
                    (std::isnan(v) ? "NaN" : "an infinite value") + "; only finite values are accepted");
      m(i, j) = v;
    }
  }
  return m;
}

// ---------------------------------------------------------------- npy

// The header is a Python dict literal; numpy writes only the three keys read here.
std::string header_value(const std::string& path, const std::string& header, const std::string& key) {
  size_t at = header.find("'" + key + "'");
  if (at == std::string::npos) at = header.find("\"" + key + "\"");
  if (at == std::string::npos) input_error(in_quotes(path) + ": npy header has no '" + key + "' entry: " + header);
  at = header.find(':', at);
  if (at == std::string::npos) input_error(in_quotes(path) + ": malformed npy header: " + header);
  ++at;
  while (at < header.size() && header[at] == ' ') ++at;
  if (at < header.size() && (header[at] == '\'' || header[at] == '"')) {
    const size_t end = header.find(header[at], at + 1);
    if (end == std::string::npos) input_error(in_quotes(path) + ": malformed npy header: " + header);
    return header.substr(at + 1, end - at - 1);
  }
  if (at < header.size() && header[at] == '(') {
    const size_t end = header.find(')', at);
    if (end == std::string::npos) input_error(in_quotes(path) + ": malformed npy header: " + header);
    return header.substr(at, end - at + 1);
  }
  const size_t end = header.find_first_of(",}", at);
  return trim(header.substr(at, end == std::string::npos ? std::string::npos : end - at));
}

Dtype npy_dtype(const std::string& path, const std::string& descr) {
  const std::string supported = "supported: <f4 <f8 <i1 <i2 <i4 <i8 <u1 <u2 <u4 <u8";
  Dtype t;
  if (descr.size() < 3 || std::string("<>|").find(descr[0]) == std::string::npos)
    input_error(in_quotes(path) + ": unsupported npy dtype '" + descr + "'; " + supported);
  const char kind = descr[1];
  const std::string size = descr.substr(2);
  if (kind == 'f' && (size == "4" || size == "8"))
    t.kind = Kind::floating;
  else if (kind == 'i' && (size == "1" || size == "2" || size == "4" || size == "8"))
    t.kind = Kind::signed_int;
  else if (kind == 'u' && (size == "1" || size == "2" || size == "4" || size == "8"))
    t.kind = Kind::unsigned_int;
  else
    input_error(in_quotes(path) + ": unsupported npy dtype '" + descr + "'; " + supported);
  t.size = size[0] - '0';
  if (t.size > 1 && descr[0] == '>')
    input_error(in_quotes(path) + ": big-endian npy dtype '" + descr + "' is not supported; save it with arr.astype('<" +
                descr.substr(1) + "')");
  if (t.size > 1 && descr[0] == '|') input_error(in_quotes(path) + ": npy dtype '" + descr + "' has no byte order");
  return t;
}

std::vector<unsigned long long> npy_shape(const std::string& path, const std::string& text) {
  std::vector<unsigned long long> dims;
  if (text.size() < 2 || text.front() != '(' || text.back() != ')')
    input_error(in_quotes(path) + ": malformed npy shape " + text);
  std::string_view body(text);
  body = body.substr(1, body.size() - 2);
  while (!body.empty()) {
    const size_t comma = body.find(',');
    std::string item = trim(body.substr(0, comma));
    body = comma == std::string_view::npos ? std::string_view() : body.substr(comma + 1);
    if (!item.empty() && (item.back() == 'L' || item.back() == 'l')) item.pop_back();  // Python 2 longs
    if (item.empty()) continue;
    unsigned long long d = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), d);
    if (ec != std::errc() || end != item.data() + item.size())
      input_error(in_quotes(path) + ": malformed npy shape " + text);
    dims.push_back(d);
  }
  return dims;
}

MatrixD read_npy(const std::string& path, index_t limit) {
  Source src(path);
  unsigned char pre[8];
  src.read_exact(pre, 8, "npy preamble");
  if (std::memcmp(pre, "\x93NUMPY", 6) != 0)
    input_error(in_quotes(path) + ": not an npy file (the first bytes are not \\x93NUMPY)");
  const int major = pre[6];
  if (major < 1 || major > 3)
    input_error(in_quotes(path) + ": unsupported npy format version " + std::to_string(major) + "; expected 1, 2 or 3");
  unsigned long long header_len = 0;
  if (major == 1) {
    unsigned char b[2];
    src.read_exact(b, 2, "npy header length");
    header_len = b[0] | (b[1] << 8);
  } else {
    unsigned char b[4];
    src.read_exact(b, 4, "npy header length");
    header_len = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<unsigned long long>(b[3]) << 24);
  }
  if (header_len > (1u << 20)) input_error(in_quotes(path) + ": npy header length " + std::to_string(header_len) + " is implausible");
  std::string header(static_cast<size_t>(header_len), '\0');
  src.read_exact(header.data(), header.size(), "npy header");

  const Dtype t = npy_dtype(path, header_value(path, header, "descr"));
  const std::string order = header_value(path, header, "fortran_order");
  if (order != "True" && order != "False")
    input_error(in_quotes(path) + ": npy fortran_order must be True or False, found " + order);
  const bool fortran = order == "True";
  const std::vector<unsigned long long> dims = npy_shape(path, header_value(path, header, "shape"));
  if (dims.empty() || dims.size() > 2) {
    std::string shape;
    for (unsigned long long d : dims) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    input_error(in_quotes(path) + ": expected a 1-D or 2-D array, found a " + std::to_string(dims.size()) +
                "-D array of shape (" + shape + "); reshape it to (N, D)");
  }
  const unsigned long long rows = dims[0], cols = dims.size() == 2 ? dims[1] : 1;
  if (rows == 0) input_error(in_quotes(path) + ": the array has no rows");
  if (cols == 0) input_error(in_quotes(path) + ": the array has no columns");
  const unsigned long long cap = std::numeric_limits<index_t>::max() / 16;
  if (rows > cap || cols > cap) input_error(in_quotes(path) + ": array dimensions are too large");
  const unsigned long long want = limit > 0 ? std::min<unsigned long long>(rows, static_cast<unsigned long long>(limit)) : rows;
  const unsigned long long stored = fortran ? rows : want;
  const std::string raw =
      src.read_payload(checked_mul(checked_mul(stored, cols, path), t.size, path), "the npy shape " + header_value(path, header, "shape"));
  return decode_array(path, raw, t, static_cast<index_t>(want), static_cast<index_t>(cols),
                      static_cast<index_t>(stored), fortran);
}

// ---------------------------------------------------------------- IDX

MatrixD read_idx(const std::string& path, index_t limit) {
  Source src(path);
  unsigned char magic[4];
  src.read_exact(magic, 4, "IDX magic number");
  char hex[40];
  std::snprintf(hex, sizeof hex, "%02x %02x %02x %02x", magic[0], magic[1], magic[2], magic[3]);
  if (magic[0] != 0 || magic[1] != 0 || magic[3] == 0)
    input_error(in_quotes(path) + ": not an IDX file: magic bytes are " + hex + ", expected 00 00 <type> <ndim>");
  Dtype t;
  switch (magic[2]) {
    case 0x08: t = {Kind::unsigned_int, 1, true}; break;
    case 0x09: t = {Kind::signed_int, 1, true}; break;
    case 0x0B: t = {Kind::signed_int, 2, true}; break;
    case 0x0C: t = {Kind::signed_int, 4, true}; break;
    case 0x0D: t = {Kind::floating, 4, true}; break;
    case 0x0E: t = {Kind::floating, 8, true}; break;
    default:
      input_error(in_quotes(path) + ": unknown IDX element type in magic bytes " + hex +
                  "; expected 08, 09, 0b, 0c, 0d or 0e as the third byte");
  }
  const int ndim = magic[3];
  std::vector<unsigned char> dim_bytes(static_cast<size_t>(4 * ndim));
  src.read_exact(dim_bytes.data(), dim_bytes.size(), "IDX dimensions");
  unsigned long long rows = 0, cols = 1;
  for (int d = 0; d < ndim; ++d) {
    const unsigned char* b = &dim_bytes[static_cast<size_t>(4 * d)];
    const unsigned long long n = (static_cast<unsigned long long>(b[0]) << 24) | (b[1] << 16) | (b[2] << 8) | b[3];
    if (d == 0)
      rows = n;
    else
      cols = checked_mul(cols, n, path);
  }
  if (rows == 0) input_error(in_quotes(path) + ": the IDX array has no items");
  if (cols == 0) input_error(in_quotes(path) + ": the IDX items are empty (a dimension is 0)");
  const unsigned long long want = limit > 0 ? std::min<unsigned long long>(rows, static_cast<unsigned long long>(limit)) : rows;
  const std::string raw = src.read_payload(checked_mul(checked_mul(want, cols, path), t.size, path),
                                          "the IDX dimensions (" + std::to_string(rows) + " items of " +
                                              std::to_string(cols) + " values)");
  return decode_array(path, raw, t, static_cast<index_t>(want), static_cast<index_t>(cols),
                      static_cast<index_t>(want), false);
}

// ---------------------------------------------------------------- text

void split_cells(std::string_view line, Format fmt, std::vector<std::string_view>& cells) {
  cells.clear();
  const auto trimmed = [](std::string_view c) {
    while (!c.empty() && (c.front() == ' ' || c.front() == '\t')) c.remove_prefix(1);
    while (!c.empty() && (c.back() == ' ' || c.back() == '\t')) c.remove_suffix(1);
    if (c.size() >= 2 && c.front() == '"' && c.back() == '"') c = c.substr(1, c.size() - 2);
    return c;
  };
  char sep = fmt == Format::tsv ? '\t' : ',';
  if (fmt == Format::txt && line.find(',') == std::string_view::npos) {
    size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
      const size_t b = i;
      while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
      if (i > b) cells.push_back(trimmed(line.substr(b, i - b)));
    }
    return;
  }
  size_t b = 0;
  while (true) {
    const size_t e = line.find(sep, b);
    cells.push_back(trimmed(line.substr(b, e == std::string_view::npos ? std::string_view::npos : e - b)));
    if (e == std::string_view::npos) break;
    b = e + 1;
  }
}

// A dense table plus, for text files, the line each row came from (for messages).
struct Table {
  MatrixD m;
  std::vector<index_t> lines;
};

index_t row_number(const Table& t, index_t i) { return t.lines.empty() ? i + 1 : t.lines[static_cast<size_t>(i)]; }

Table read_text(const std::string& path, Format fmt, index_t limit) {
  const std::string text = Source(path).read_all();
  Table t;
  std::vector<double> values;
  std::vector<std::string_view> cells;
  index_t cols = 0, first_row = 0;
  bool seen_content = false;
  for_each_line(text, [&](index_t line_no, std::string_view line) {
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos || line[first] == '#') return true;
    split_cells(line, fmt, cells);
    if (!seen_content) {
      seen_content = true;
      // A header has no number in any cell. A first line mixing numbers and words is a data row
      // with a typo (reported below with its column), never a header that would swallow it.
      double v;
      const bool has_number = std::any_of(cells.begin(), cells.end(), [&](std::string_view c) {
        const Cell k = parse_cell(c, v);
        return k == Cell::number || k == Cell::non_finite || k == Cell::out_of_range;
      });
      if (!has_number) return true;  // a header
    }
    const std::string where = in_quotes(path) + " row " + std::to_string(line_no);
    if (cols == 0) {
      cols = static_cast<index_t>(cells.size());
      first_row = line_no;
    } else if (static_cast<index_t>(cells.size()) != cols) {
      input_error(where + ": expected " + std::to_string(cols) + " columns (as in row " + std::to_string(first_row) +
                  "), found " + std::to_string(cells.size()));
    }
    for (size_t j = 0; j < cells.size(); ++j) {
      double v = 0;
      const std::string at = where + ", column " + std::to_string(j + 1) + ": ";
      switch (parse_cell(cells[j], v)) {
        case Cell::number: break;
        case Cell::empty: input_error(at + "expected a number, found an empty cell");
        case Cell::not_number: input_error(at + "expected a number, found " + shown(cells[j]));
        case Cell::non_finite:
          input_error(at + "found " + shown(cells[j]) + "; NaN and infinite values are not accepted");
        case Cell::out_of_range: input_error(at + "the value " + shown(cells[j]) + " is out of range for a double");
      }
      values.push_back(v);
    }
    t.lines.push_back(line_no);
    return limit <= 0 || static_cast<index_t>(t.lines.size()) < limit;
  });
  if (t.lines.empty())
    input_error(in_quotes(path) + ": no data rows found (the file is empty or holds only blank, comment or header lines)");
  t.m.rows = static_cast<index_t>(t.lines.size());
  t.m.cols = cols;
  t.m.data = std::move(values);
  return t;
}

Table read_table(const std::string& path, index_t limit) {
  if (limit < 0) input_error(in_quotes(path) + ": the row limit must be >= 0 (0 reads all rows), found " + std::to_string(limit));
  const Format fmt = format_of(path);
  Table t;
  if (MatrixViewD v; memory_view(path, v)) {  // io/memory_inputs.hpp: the rows a file would give
    if (limit > 0 && limit < v.rows) v.rows = limit;
    t.m = MatrixD(v.rows, v.cols);
    std::copy(v.values, v.values + v.rows * v.cols, t.m.data.begin());
    return t;
  }
  switch (fmt) {
    case Format::npy: t.m = read_npy(path, limit); break;
    case Format::idx: t.m = read_idx(path, limit); break;
    default: t = read_text(path, fmt, limit); break;
  }
  return t;
}


// One label of a numeric label file, checked: a whole number, -1 (unlabelled) or >= 0.
long long checked_label(double v, const std::string& where) {
  const std::string found = number_text(v);
  if (v != std::floor(v) || !(std::fabs(v) < 9.2e18)) input_error(where + ": expected an integer label, found " + found);
  if (v < kUnlabelled)
    input_error(where + ": the label " + found + " is negative; labels are integers >= 0, or -1 for unlabelled");
  return static_cast<long long>(v);
}

// Numbers the labelled keys 0..C-1 in ascending order; `distinct` receives the C keys in order.
template <class Key>
std::vector<int> index_of(const std::vector<Key>& keys, const std::vector<char>& labelled, const std::string& path,
                          std::vector<Key>& distinct) {
  distinct.clear();
  for (size_t i = 0; i < keys.size(); ++i)
    if (labelled[i]) distinct.push_back(keys[i]);
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  if (distinct.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    input_error(in_quotes(path) + ": more distinct labels than the supported " +
                std::to_string(std::numeric_limits<int>::max()));
  std::vector<int> index(keys.size(), kUnlabelled);
  for (size_t i = 0; i < keys.size(); ++i)
    if (labelled[i])
      index[i] = static_cast<int>(std::lower_bound(distinct.begin(), distinct.end(), keys[i]) - distinct.begin());
  return index;
}

// A line of a text label file: one number (-1 included), one name, or several numeric cells.
struct LabelLine {
  index_t line;
  std::string text;
  bool number;
};

// Text label files: numbers (with an optional header line without a number) or names.
Categories text_categories(const std::string& path, index_t limit) {
  const Format fmt = format_or(path, Format::txt);
  const std::string text = Source(path).read_all();
  std::vector<LabelLine> lines;
  std::vector<std::string_view> cells;
  for_each_line(text, [&](index_t line_no, std::string_view raw) {
    std::string s = trim(raw);
    if (s.empty() || s[0] == '#') return true;
    if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
    split_cells(raw, fmt, cells);
    double v = 0;
    const auto numeric = [&](std::string_view c) {
      const Cell k = parse_cell(c, v);
      return k != Cell::not_number && k != Cell::empty;
    };
    const bool all_numbers = !cells.empty() && std::all_of(cells.begin(), cells.end(), numeric);
    if (all_numbers && cells.size() > 1)
      input_error(in_quotes(path) + " row " + std::to_string(line_no) + ": expected one label per row, found " +
                  std::to_string(cells.size()) + " columns");
    lines.push_back({line_no, std::move(s), all_numbers});
    return true;
  });
  if (lines.empty()) input_error(in_quotes(path) + ": no labels found (the file is empty or holds only blank or comment lines)");
  const bool header = !lines[0].number && lines.size() > 1 &&
                      std::all_of(lines.begin() + 1, lines.end(), [](const LabelLine& l) { return l.number; });
  const auto first = lines.begin() + (header ? 1 : 0);
  const auto end = limit > 0 && lines.end() - first > limit ? first + limit : lines.end();
  const bool numbers = std::all_of(first, end, [](const LabelLine& l) { return l.number; });
  const std::string unlabelled = std::to_string(kUnlabelled);
  if (numbers) {
    std::vector<long long> values;
    for (auto l = first; l != end; ++l) {
      long long v = 0;
      const auto [p, ec] = std::from_chars(l->text.data(), l->text.data() + l->text.size(), v);
      const std::string where = in_quotes(path) + " row " + std::to_string(l->line);
      if (ec != std::errc() || p != l->text.data() + l->text.size()) {  // "3.0", "3e0": exact below 2^53
        double d = 0;
        parse_cell(l->text, d);
        v = checked_label(d, where);
      } else if (v < kUnlabelled) {
        checked_label(static_cast<double>(v), where);
      }
      values.push_back(v);
    }
    return integer_categories(values, path);
  }
  std::vector<std::string> keys;
  std::vector<char> labelled;
  const auto name_line = std::find_if(first, end, [](const LabelLine& l) { return !l.number; });
  for (auto l = first; l != end; ++l) {
    if (l->number && l->text != unlabelled)
      input_error(in_quotes(path) + " row " + std::to_string(l->line) + ": found the number " + shown(l->text) +
                  ", but row " + std::to_string(name_line->line) + " holds the name " + shown(name_line->text) +
                  "; a label file holds numbers or names, not both (" + unlabelled + " marks unlabelled in either)");
    check_utf8(l->text, in_quotes(path) + " row " + std::to_string(l->line));
    keys.push_back(l->text);
    labelled.push_back(!l->number);
  }
  Categories c;
  c.index = index_of(keys, labelled, path, c.names);
  return c;
}

}  // namespace

MatrixD read_matrix(const std::string& path, index_t limit) { return read_table(path, limit).m; }

std::vector<int> read_labels(const std::string& path, index_t limit) {
  const Table t = read_table(path, limit);
  if (t.m.cols != 1)
    input_error(in_quotes(path) + ": expected one label per row, found " + std::to_string(t.m.cols) + " columns");
  std::vector<int> labels(static_cast<size_t>(t.m.rows));
  for (index_t i = 0; i < t.m.rows; ++i) {
    const double v = t.m.data[static_cast<size_t>(i)];
    if (v != std::floor(v) || v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
      input_error(in_quotes(path) + " row " + std::to_string(row_number(t, i)) + ": expected an integer label, found " +
                  number_text(v));
    labels[static_cast<size_t>(i)] = static_cast<int>(v);
  }
  return labels;
}

Categories integer_categories(const std::vector<long long>& values, const std::string& path) {
  std::vector<char> labelled(values.size());
  for (size_t i = 0; i < values.size(); ++i) labelled[i] = values[i] != kUnlabelled;
  Categories c;
  c.index = index_of(values, labelled, path, c.values);
  for (long long v : c.values) c.names.push_back(std::to_string(v));
  c.numeric = true;
  return c;
}

Categories read_categories(const std::string& path, index_t limit) {
  if (limit < 0) input_error(in_quotes(path) + ": the row limit must be >= 0 (0 reads all rows), found " + std::to_string(limit));
  const Format fmt = format_or(path, Format::unknown);
  if (fmt != Format::npy && fmt != Format::idx) return text_categories(path, limit);
  const Table t = read_table(path, limit);
  if (t.m.cols != 1)
    input_error(in_quotes(path) + ": expected one label per row, found " + std::to_string(t.m.cols) + " columns");
  std::vector<long long> values;
  for (index_t i = 0; i < t.m.rows; ++i)
    values.push_back(checked_label(t.m.data[static_cast<size_t>(i)], in_quotes(path) + " row " + std::to_string(i + 1)));
  return integer_categories(values, path);
}

std::vector<std::string> read_names(const std::string& path) {
  const std::string text = Source(path).read_all();
  std::vector<std::string> names;
  for_each_line(text, [&](index_t line_no, std::string_view line) {
    std::string name = trim(line);
    check_utf8(name, in_quotes(path) + ", line " + std::to_string(line_no));
    if (!name.empty()) names.push_back(std::move(name));
    return true;
  });
  if (names.empty()) input_error(in_quotes(path) + ": no names found (expected one name per line)");
  return names;
}

SparseTriples read_mtx(const std::string& path) {
  if (const auto m = memory_sparse(path)) return *m;  // io/memory_inputs.hpp
  const std::string text = Source(path).read_all();
  SparseTriples t;
  bool header = false, sized = false, symmetric = false, pattern = false;
  index_t declared = 0, seen = 0;
  for_each_line(text, [&](index_t line_no, std::string_view line) {
    const std::string where = in_quotes(path) + ", line " + std::to_string(line_no);
    if (!header) {
      std::string h(line);
      for (char& c : h) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      std::istringstream in(h);
      std::string banner, object, format, field, symmetry;
      in >> banner >> object >> format >> field >> symmetry;
      if (banner != "%%matrixmarket" || object != "matrix" || format != "coordinate")
        input_error(where + ": expected a Matrix Market header '%%MatrixMarket matrix coordinate ...'");
      if (field != "real" && field != "integer" && field != "pattern")
        input_error(where + ": unsupported field '" + field + "' (expected real, integer or pattern)");
      if (symmetry != "general" && symmetry != "symmetric")
        input_error(where + ": unsupported symmetry '" + symmetry + "' (expected general or symmetric)");
      symmetric = symmetry == "symmetric";
      pattern = field == "pattern";
      header = true;
      return true;
    }
    const std::string s = trim(line);
    if (s.empty() || s[0] == '%') return true;
    std::istringstream in(s);
    if (!sized) {
      if (!(in >> t.rows >> t.cols >> declared) || t.rows < 1 || t.cols < 1 || declared < 0)
        input_error(where + ": expected the size line 'rows cols entries'");
      check_dimension(where + ": rows", t.rows);
      check_dimension(where + ": cols", t.cols);
      // Each entry is a line of at least "i j\n" (pattern) or "i j v\n": the file must hold them.
      const index_t least = pattern ? 4 : 6;
      if (declared > static_cast<index_t>(text.size()) / least)
        input_error(where + ": entries = " + std::to_string(declared) + " needs at least " + std::to_string(least) +
                    " bytes per entry line, but the file holds only " + std::to_string(text.size()) + " bytes");
      sized = true;
      const size_t reserve = static_cast<size_t>(declared) * (symmetric ? 2 : 1);
      t.row.reserve(reserve), t.col.reserve(reserve), t.val.reserve(reserve);
      return true;
    }
    index_t i = 0, j = 0;
    double v = 1.0;
    if (!(in >> i >> j) || (!pattern && !(in >> v)))
      input_error(where + ": expected 'row col" + std::string(pattern ? "'" : " value'"));
    if (i < 1 || i > t.rows || j < 1 || j > t.cols)
      input_error(where + ": entry (" + std::to_string(i) + ", " + std::to_string(j) + ") outside the declared " +
                  std::to_string(t.rows) + " x " + std::to_string(t.cols));
    if (!std::isfinite(v)) input_error(where + ": the value is not a finite number");
    t.row.push_back(i - 1), t.col.push_back(j - 1), t.val.push_back(v);
    if (symmetric && i != j) t.row.push_back(j - 1), t.col.push_back(i - 1), t.val.push_back(v);
    ++seen;
    return true;
  });
  if (!header) input_error(in_quotes(path) + ": empty file (expected a Matrix Market header)");
  if (!sized) input_error(in_quotes(path) + ": no size line");
  if (seen != declared)
    input_error(in_quotes(path) + ": " + std::to_string(seen) + " entries, but the size line declares " +
                std::to_string(declared));
  return t;
}

}  // namespace orrery::io
