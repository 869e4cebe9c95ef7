// Internal helpers shared by the readers (readers.cpp, corpus.cpp): a byte source that reads plain
// and gzip-compressed files alike, line splitting, number parsing without the locale, and the
// quoting used in messages. Not part of the public interface.
#pragma once
#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "io/memory_inputs.hpp"
#include "io/utf8.hpp"
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

// Shortest text that reads back as v, without the locale.
inline std::string number_text(double v) {
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

inline std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

// Deflate cannot expand data more than about 1032:1, so a gzip file of B bytes holds at most
// kMaxGzipRatio * B bytes: the bound against which a declared size is checked before allocating.
constexpr unsigned long long kMaxGzipRatio = 1032;

// Reads a plain or gzip-compressed file (told apart by the gzip magic bytes 1f 8b). zlib's gzread
// is not used because it returns a truncated stream as a shorter file and silently drops anything
// after the first member that does not look like gzip; here every member of a multi-member file
// (cat a.gz b.gz) is read, and a stream that ends early, a bad checksum or trailing bytes that are
// not a gzip member are errors naming the file.
class Source {
 public:
  explicit Source(const std::string& path) : path_(path), memory_(memory_bytes(path)) {
    if (memory_) {  // io/memory_inputs.hpp: the bytes a file of this path would hold
      file_bytes_ = memory_->size();
      start_data();
      return;
    }
    errno = 0;
    file_.reset(std::fopen(path.c_str(), "rb"));
    if (!file_) input_error("cannot open " + in_quotes(path) + ": " + (errno ? std::strerror(errno) : "unknown error"));
    struct stat st {};
    if (::fstat(fileno(file_.get()), &st) == 0) {
      if (S_ISDIR(st.st_mode)) input_error(in_quotes(path) + " is a directory, expected a file");
      // A device such as /dev/zero or /dev/urandom never ends: reading it would only end when
      // memory does. Pipes (a FIFO, /dev/stdin from a pipe) end and stay accepted.
      if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))
        input_error(in_quotes(path) + " is a device, expected a file (or a pipe)");
      if (S_ISREG(st.st_mode)) file_bytes_ = static_cast<unsigned long long>(st.st_size);
    }
    start_data();
  }
  ~Source() {
    if (gzip_) inflateEnd(&zs_);
  }
  Source(const Source&) = delete;
  Source& operator=(const Source&) = delete;

  // Fewer bytes than asked only at the end of the data.
  size_t read(void* dst, size_t n) {
    char* out = static_cast<char*>(dst);
    size_t got = 0;
    while (got < n) {
      if (!gzip_) {
        if (avail_ == 0 && !refill()) break;
        const size_t k = std::min(n - got, avail_);
        std::memcpy(out + got, in_.data() + pos_, k);
        pos_ += k, avail_ -= k, got += k;
        continue;
      }
      if (member_done_ && !next_member()) break;
      got += inflate_into(out + got, n - got);
    }
    produced_ += got;
    return got;
  }

  // The most bytes the rest of the file can hold: its size for a plain file, kMaxGzipRatio times
  // its compressed size for gzip; unlimited when the size is unknown (a pipe).
  unsigned long long max_remaining() const {
    if (file_bytes_ == kUnknown) return kUnknown;
    const unsigned long long cap = gzip_ ? file_bytes_ * kMaxGzipRatio + (1u << 16) : file_bytes_;
    return cap > produced_ ? cap - produced_ : 0;
  }

  // Checks a size declared inside the file against what the file can hold, before anything of
  // that size is allocated; `what` names the field that declared it.
  void check_declared(unsigned long long bytes, const std::string& what) const {
    const unsigned long long most = max_remaining();
    if (bytes > most)
      input_error(in_quotes(path_) + " is truncated or declares a wrong size: " + what + " needs " + std::to_string(bytes) + " bytes, but the file " +
                  (gzip_ ? "can hold at most " : "holds only ") + std::to_string(most) + " more");
  }

  void read_exact(void* dst, size_t n, const std::string& what) {
    const size_t got = read(dst, n);
    if (got < n)
      input_error(in_quotes(path_) + " is truncated: expected " + std::to_string(n) + " bytes of " + what + ", found " +
                  std::to_string(got));
  }

  // Grows the buffer only as data arrives (after check_declared), so a corrupt header claiming
  // terabytes fails with a message instead of a failed allocation.
  std::string read_payload(unsigned long long bytes, const std::string& what) {
    check_declared(bytes, what);
    std::string buf;
    const size_t step = size_t{64} << 20;
    while (buf.size() < bytes) {
      const size_t want = static_cast<size_t>(std::min<unsigned long long>(bytes - buf.size(), step));
      const size_t old = buf.size();
      buf.resize(old + want);
      const size_t got = read(&buf[old], want);
      buf.resize(old + got);
      if (got < want)
        input_error(in_quotes(path_) + " is truncated: expected " + std::to_string(bytes) + " bytes of " + what +
                    ", found " + std::to_string(buf.size()));
    }
    return buf;
  }

  std::string read_all() {
    std::string buf;
    if (!gzip_ && file_bytes_ != kUnknown) buf.reserve(static_cast<size_t>(file_bytes_));
    size_t got = 0;
    do {
      const size_t old = buf.size();
      buf.resize(old + (size_t{1} << 20));
      got = read(&buf[old], size_t{1} << 20);
      buf.resize(old + got);
    } while (got > 0);
    return buf;
  }

 private:
  static constexpr unsigned long long kUnknown = ~0ull;

  void start_data() {
    in_.resize(size_t{1} << 20);
    refill();
    gzip_ = avail_ >= 2 && static_cast<unsigned char>(in_[0]) == 0x1f && static_cast<unsigned char>(in_[1]) == 0x8b;
    if (gzip_) start_member();
  }

  // Keeps unread input at the front and reads more behind it; false at the end of the file.
  bool refill() {
    if (pos_ > 0 && avail_ > 0) std::memmove(in_.data(), in_.data() + pos_, avail_);
    pos_ = 0;
    if (avail_ == in_.size()) return true;
    size_t got = 0;
    if (memory_) {
      got = std::min(in_.size() - avail_, memory_->size() - memory_pos_);
      std::memcpy(in_.data() + avail_, memory_->data() + memory_pos_, got);
      memory_pos_ += got;
    } else {
      got = std::fread(in_.data() + avail_, 1, in_.size() - avail_, file_.get());
    }
    if (got == 0 && !memory_ && std::ferror(file_.get()))
      input_error("cannot read " + in_quotes(path_) + ": " + std::strerror(errno));
    avail_ += got;
    return got > 0;
  }

  void start_member() {
    zs_ = z_stream{};
    if (inflateInit2(&zs_, 16 + MAX_WBITS) != Z_OK) input_error("cannot decompress " + in_quotes(path_) + ": out of memory");
    member_done_ = false;
  }

  // After a member's end: another member follows, or the data ends. Anything else is an error.
  bool next_member() {
    if (avail_ < 2) refill();
    if (avail_ == 0) return false;
    if (avail_ < 2 || static_cast<unsigned char>(in_[pos_]) != 0x1f || static_cast<unsigned char>(in_[pos_ + 1]) != 0x8b)
      input_error(in_quotes(path_) + ": unexpected data after the end of a gzip member (a damaged or appended file)");
    inflateEnd(&zs_);
    start_member();
    return true;
  }

  size_t inflate_into(char* out, size_t n) {
    if (avail_ == 0) refill();
    zs_.next_in = reinterpret_cast<Bytef*>(in_.data() + pos_);
    zs_.avail_in = static_cast<uInt>(std::min<size_t>(avail_, size_t{1} << 30));
    zs_.next_out = reinterpret_cast<Bytef*>(out);
    zs_.avail_out = static_cast<uInt>(std::min<size_t>(n, size_t{1} << 30));
    const uInt in_before = zs_.avail_in, out_before = zs_.avail_out;
    const int rc = inflate(&zs_, Z_NO_FLUSH);
    const size_t used = in_before - zs_.avail_in;
    pos_ += used, avail_ -= used;
    if (rc == Z_STREAM_END) member_done_ = true;
    else if (rc == Z_BUF_ERROR && avail_ == 0)  // no progress possible and no input left
      input_error(in_quotes(path_) + ": truncated gzip stream (the file ends inside compressed data)");
    else if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT)
      input_error(in_quotes(path_) + ": corrupt gzip stream" + (zs_.msg ? std::string(" (") + zs_.msg + ")" : ""));
    else if (rc == Z_MEM_ERROR)
      input_error("cannot decompress " + in_quotes(path_) + ": out of memory");
    return out_before - zs_.avail_out;
  }

  std::string path_;
  struct Close {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::unique_ptr<std::FILE, Close> file_;  // closed on every path, a throwing constructor included
  std::shared_ptr<const std::string> memory_;  // or the bytes of an in-memory input
  size_t memory_pos_ = 0;
  unsigned long long file_bytes_ = kUnknown, produced_ = 0;
  std::string in_;
  size_t pos_ = 0, avail_ = 0;
  bool gzip_ = false, member_done_ = false;
  z_stream zs_{};
};

// Names (words, labels, classes, objects) end up in JSON reports and SVG maps, which must be
// valid UTF-8: a name that is not is an error naming where it was read (`where`: file and line).
inline void check_utf8(std::string_view name, const std::string& where) {
  for (size_t i = 0; i < name.size();) {
    const size_t n = utf8_length(name, i);
    if (n == 0) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(name[i]));
      input_error(where + ": invalid UTF-8 (byte " + hex + " at byte " + std::to_string(i + 1) +
                  " of the name); save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8)");
    }
    i += n;
  }
}

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
