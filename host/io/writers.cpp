#include "io/writers.hpp"

#include <fcntl.h>
#include <sys/stat.h>
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
  // A new file only: an existing name (a symlink planted there, a stale temporary) is never written through.
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
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

// Where a path's directory entry is: its directory resolved (symlinks, "..") and its own name not
// followed, so that a symlink and its target are told apart; "." and ".." are resolved whole.
fs::path entry_of(const std::string& path) {
  const fs::path abs = fs::absolute(path);
  std::error_code ec;
  const fs::path name = abs.filename();
  if (name.empty() || name == "." || name == "..") return fs::weakly_canonical(abs, ec);
  return fs::weakly_canonical(abs.parent_path(), ec) / name;
}

// A path as the checks compare it: its entry, and when it exists, the file it resolves to.
struct Identity {
  fs::path entry, target;
  bool exists = false, is_dir = false;
  dev_t dev = 0;
  ino_t ino = 0;
};

Identity identify(const std::string& path) {
  Identity id;
  id.entry = id.target = entry_of(path);
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    std::error_code ec;
    id.exists = true;
    id.is_dir = S_ISDIR(st.st_mode);
    id.dev = st.st_dev;
    id.ino = st.st_ino;
    const fs::path t = fs::canonical(path, ec);
    if (!ec) id.target = t;
  }
  return id;
}

bool inside(const fs::path& p, const fs::path& dir) {
  const fs::path rel = p.lexically_relative(dir);
  return !rel.empty() && rel != "." && *rel.begin() != "..";
}

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

void check_output_paths(const std::vector<std::string>& outputs, const std::vector<std::string>& inputs) {
  std::vector<Identity> in;
  for (const std::string& p : inputs) in.push_back(identify(p));
  std::vector<fs::path> seen;
  for (const std::string& out : outputs) {
    struct stat st;
    if (::lstat(out.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
      input_error("output " + in_quotes(out) + " exists and is " + file_kind(st.st_mode) +
                  "; outputs replace regular files only: remove it or choose another output path");
    const Identity o = identify(out);
    for (const fs::path& e : seen)
      if (e == o.entry) input_error("output path " + in_quotes(out) + " names a file another output of the run names");
    seen.push_back(o.entry);
    for (size_t i = 0; i < in.size(); ++i) {
      const Identity& x = in[i];
      if (!x.exists) continue;
      const bool same = o.entry == x.entry || o.entry == x.target ||
                        (o.exists && (o.target == x.target || (o.dev == x.dev && o.ino == x.ino)));
      if (same)
        input_error("output " + in_quotes(out) + " would replace the input " + in_quotes(inputs[i]) +
                    "; choose another output path");
      if (x.is_dir && (inside(o.entry, x.target) || inside(o.entry, x.entry)))
        input_error("output " + in_quotes(out) + " lies inside the input directory " + in_quotes(inputs[i]) +
                    "; choose an output path outside it");
    }
  }
}

OutputSet::OutputSet(RenameFn rename) : rename_(std::move(rename)) {}

OutputSet::~OutputSet() { remove_temps(); }

void OutputSet::protect(const std::string& input_path) { inputs_.push_back(input_path); }

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
  std::vector<std::string> targets;
  for (const auto& f : files_) targets.push_back(f.first);
  const auto rename = [this](const std::string& from, const std::string& to) {
    return rename_ ? rename_(from.c_str(), to.c_str()) : std::rename(from.c_str(), to.c_str());
  };
  std::set<fs::path> dirs;
  std::vector<std::string> aside(files_.size());  // where an existing target waits ("" when none)
  size_t placed = 0;
  try {
    check_output_paths(targets, inputs_);
    // Directories first, so a target that cannot exist fails before any data is written.
    for (const std::string& path : targets) {
      std::error_code ec;
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
    // The old files aside, then the new ones in: renames within a directory, so no data is copied,
    // and every step can be undone. A rename fails for permissions (another user's file in a
    // sticky directory) or a file-system fault, not for want of space.
    for (size_t i = 0; i < targets.size(); ++i) {
      struct stat st;
      if (::lstat(targets[i].c_str(), &st) != 0) continue;
      const std::string old = targets[i] + ".old." + pid;
      if (rename(targets[i], old) != 0)
        input_error("cannot replace " + in_quotes(targets[i]) + ": moving it aside to " + in_quotes(old) +
                    " failed: " + std::strerror(errno));
      aside[i] = old;
    }
    for (; placed < targets.size(); ++placed)
      if (rename(temps_[placed], targets[placed]) != 0)
        input_error("cannot write " + in_quotes(targets[placed]) + ": renaming " + in_quotes(temps_[placed]) +
                    " into place failed: " + std::strerror(errno));
  } catch (const Error& e) {
    // Back as it was: the new files out, the old ones in.
    std::string stranded;
    for (size_t i = 0; i < placed; ++i) ::unlink(targets[i].c_str());
    for (size_t i = 0; i < aside.size(); ++i)
      if (!aside[i].empty() && rename(aside[i], targets[i]) != 0) stranded += " " + in_quotes(aside[i]);
    remove_temps();
    if (!stranded.empty())
      input_error(std::string(e.what()) + "; the previous files could not be put back and are kept as" + stranded);
    throw;
  } catch (...) {
    remove_temps();
    throw;
  }
  for (const std::string& old : aside)
    if (!old.empty()) ::unlink(old.c_str());
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
