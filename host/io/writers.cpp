#include "io/writers.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>

#include "orrery/error.hpp"

namespace orrery::io {
namespace fs = std::filesystem;

namespace {

std::string in_quotes(const std::string& path) { return "'" + path + "'"; }

// Writes all bytes and forces them to disk, so the rename that follows publishes complete data.
void write_synced(const std::string& tmp, const std::string& bytes, const std::string& path,
                  std::vector<std::string>& temps) {
  const auto fail = [&](int err) {
    input_error("cannot write " + in_quotes(path) + " (via temporary " + in_quotes(tmp) + "): " + std::strerror(err));
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) fail(errno);
  temps.push_back(tmp);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      fail(err);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    fail(err);
  }
  if (::close(fd) != 0) fail(errno);
}

// Makes the renames themselves durable; a failure here loses nothing already visible, so it is ignored.
void sync_directory(const fs::path& dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

void check_finite(const MatrixD& m, const char* what) {
  for (index_t i = 0; i < m.rows; ++i)
    for (index_t j = 0; j < m.cols; ++j)
      if (!std::isfinite(m(i, j)))
        internal_error(std::string(what) + ": value at row " + std::to_string(i + 1) + ", column " +
                       std::to_string(j + 1) + " is " + (std::isnan(m(i, j)) ? "NaN" : "infinite") +
                       "; non-finite values are never written as results");
}

// Version 1.0 header; numpy requires the magic, the length field and the dict together to fill a
// multiple of 64 bytes, ending in a newline.
std::string npy_header(const std::string& descr, const std::string& shape) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  const size_t unpadded = 10 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict.push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(dict.size() & 0xff));
  out.push_back(static_cast<char>(dict.size() >> 8));
  return out + dict;
}

// Little-endian regardless of the host, as the '<' in the dtype promises.
void append_le(std::string& out, std::uint64_t bits, int bytes) {
  for (int k = 0; k < bytes; ++k) out.push_back(static_cast<char>((bits >> (8 * k)) & 0xff));
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  return out + "\"";
}

}  // namespace

OutputSet::~OutputSet() { remove_temps(); }

void OutputSet::add(const std::string& path, std::string bytes) {
  for (const auto& f : files_)
    if (f.first == path) input_error("output path " + in_quotes(path) + " is given twice; each output needs its own file");
  files_.emplace_back(path, std::move(bytes));
}

void OutputSet::remove_temps() noexcept {
  for (const std::string& tmp : temps_) ::unlink(tmp.c_str());
  temps_.clear();
}

void OutputSet::commit() {
  const std::string pid = std::to_string(::getpid());
  std::set<fs::path> dirs;
  try {
    // Directories first, so a target that cannot exist fails before any data is written.
    for (const auto& [path, bytes] : files_) {
      std::error_code ec;
      if (fs::is_directory(path, ec)) input_error("cannot write " + in_quotes(path) + ": it is a directory");
      const fs::path parent = fs::path(path).parent_path();
      if (!parent.empty()) {
        fs::create_directories(parent, ec);
        if (ec)
          input_error("cannot write " + in_quotes(path) + ": cannot create directory " + in_quotes(parent.string()) +
                      ": " + ec.message());
      }
      dirs.insert(parent);
    }
    for (const auto& [path, bytes] : files_) write_synced(path + ".tmp." + pid, bytes, path, temps_);
    // Renames within one directory do not fail for want of space; a failure here is a permission
    // or file-system fault, and files renamed before it stay complete.
    for (size_t i = 0; i < files_.size(); ++i)
      if (std::rename(temps_[i].c_str(), files_[i].first.c_str()) != 0)
        input_error("cannot write " + in_quotes(files_[i].first) + ": renaming " + in_quotes(temps_[i]) +
                    " into place failed: " + std::strerror(errno));
  } catch (...) {
    remove_temps();
    throw;
  }
  temps_.clear();
  files_.clear();
  for (const fs::path& d : dirs) sync_directory(d);
}

std::string npy_bytes(const MatrixD& m) {
  check_finite(m, "npy_bytes");
  std::string out = npy_header("<f8", "(" + std::to_string(m.rows) + ", " + std::to_string(m.cols) + ")");
  out.reserve(out.size() + m.data.size() * 8);
  for (double v : m.data) {
    std::uint64_t bits;
    std::memcpy(&bits, &v, 8);
    append_le(out, bits, 8);
  }
  return out;
}

std::string npy_bytes(const std::vector<int>& v) {
  std::string out = npy_header("<i4", "(" + std::to_string(v.size()) + ",)");
  out.reserve(out.size() + v.size() * 4);
  for (int x : v) append_le(out, static_cast<std::uint32_t>(x), 4);
  return out;
}

std::string csv_bytes(const MatrixD& m, const std::vector<std::string>& header) {
  check_finite(m, "csv_bytes");
  if (!header.empty() && static_cast<index_t>(header.size()) != m.cols)
    internal_error("csv_bytes: header has " + std::to_string(header.size()) + " names for " + std::to_string(m.cols) +
                   " columns");
  std::string out;
  for (size_t j = 0; j < header.size(); ++j) out += (j ? "," : "") + csv_field(header[j]);
  if (!header.empty()) out.push_back('\n');
  char buf[32];
  for (index_t i = 0; i < m.rows; ++i) {
    for (index_t j = 0; j < m.cols; ++j) {
      if (j) out.push_back(',');
      // Shortest digits that read back to the same double; locale-independent, unlike printf.
      const auto res = std::to_chars(buf, buf + sizeof buf, m(i, j));
      out.append(buf, res.ptr);
    }
    out.push_back('\n');
  }
  return out;
}

}  // namespace orrery::io
