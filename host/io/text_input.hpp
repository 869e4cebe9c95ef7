// Internal helpers shared by the readers (readers.cpp, corpus.cpp): a byte source that reads plain
// and gzip-compressed files alike, line splitting, number parsing without the locale, and the
// quoting used in messages. Not part of the public interface.
#pragma once
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <string>
#include <string_view>

#include "orrery/error.hpp"
#include "orrery/types.hpp"

namespace orrery::io::detail {

inline bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

inline std::string in_quotes(const std::string& path) { return "'" + path + "'"; }

// Shows a found value in a message without letting a long or binary cell flood the terminal.
inline std::string shown(std::string_view cell) {
  std::string s(cell.substr(0, 40));
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20) c = '?';
  return "'" + s + (cell.size() > 40 ? "...'" : "'");
}

inline std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

// gzread passes plain files through unchanged, so one source serves compressed and plain inputs.
class Source {
 public:
  explicit Source(const std::string& path) : path_(path) {
    errno = 0;
    file_ = gzopen(path.c_str(), "rb");
    if (!file_) input_error("cannot open " + in_quotes(path) + ": " + (errno ? std::strerror(errno) : "out of memory"));
    gzbuffer(file_, 1u << 20);
  }
  ~Source() { gzclose(file_); }
  Source(const Source&) = delete;
  Source& operator=(const Source&) = delete;

  // Fewer bytes than asked only at the end of the data.
  size_t read(void* dst, size_t n) {
    char* out = static_cast<char*>(dst);
    size_t got = 0;
    while (got < n) {
      const unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - got, size_t{1} << 30));
      const int r = gzread(file_, out + got, chunk);
      if (r < 0) {
        int code = 0;
        const char* msg = gzerror(file_, &code);
        input_error("cannot read " + in_quotes(path_) + ": " + (code == Z_ERRNO ? std::strerror(errno) : msg));
      }
      if (r == 0) break;
      got += static_cast<size_t>(r);
    }
    return got;
  }

  void read_exact(void* dst, size_t n, const std::string& what) {
    const size_t got = read(dst, n);
    if (got < n)
      input_error(in_quotes(path_) + " is truncated: expected " + std::to_string(n) + " bytes of " + what + ", found " +
                  std::to_string(got));
  }

  // Grows the buffer only as data arrives, so a corrupt header claiming terabytes fails as
  // "truncated" instead of as a failed allocation.
  std::string read_payload(unsigned long long bytes, const std::string& what) {
    std::string buf;
    for (size_t step = kFirstStep; buf.size() < bytes; step = next_step(step)) {
      const size_t want = static_cast<size_t>(std::min<unsigned long long>(bytes - buf.size(), step));
      if (append(buf, want) < want)
        input_error(in_quotes(path_) + " is truncated: expected " + std::to_string(bytes) + " bytes of " + what +
                    ", found " + std::to_string(buf.size()));
    }
    return buf;
  }

  std::string read_all() {
    std::string buf;
    for (size_t step = kFirstStep; append(buf, step) == step; step = next_step(step)) {
    }
    return buf;
  }

 private:
  // Reads grow the buffer in steps doubling from 64 KiB to 64 MiB: a small (or small corrupt) file
  // costs a small buffer, a large one few reads.
  static constexpr size_t kFirstStep = size_t{1} << 16;
  static size_t next_step(size_t step) { return std::min(2 * step, size_t{64} << 20); }

  // Appends up to n bytes to buf; fewer only at the end of the data.
  size_t append(std::string& buf, size_t n) {
    const size_t old = buf.size();
    buf.resize(old + n);
    const size_t got = read(&buf[old], n);
    buf.resize(old + got);
    return got;
  }

  std::string path_;
  gzFile file_ = nullptr;
};

// Splits into lines without the terminator, dropping a trailing '\r' and a leading UTF-8 BOM.
// f(line_no, line) returns false to stop; lines count from 1.
template <class F>
void for_each_line(const std::string& text, F&& f) {
  size_t pos = text.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;
  index_t line_no = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!f(++line_no, line)) return;
    pos = end + 1;
  }
}

enum class Cell { number, non_finite, out_of_range, empty, not_number };

// from_chars rather than strtod: it ignores the locale, so "1.5" parses the same everywhere.
inline Cell parse_cell(std::string_view s, double& out) {
  if (s.empty()) return Cell::empty;
  std::string_view body = s;
  if (body.front() == '+') body.remove_prefix(1);
  if (body.empty() || (s.front() == '+' && body.front() == '-')) return Cell::not_number;
  const auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), out);
  if (end != body.data() + body.size()) return Cell::not_number;
  if (ec == std::errc::result_out_of_range) return Cell::out_of_range;
  if (ec != std::errc()) return Cell::not_number;
  return std::isfinite(out) ? Cell::number : Cell::non_finite;
}

}  // namespace orrery::io::detail
