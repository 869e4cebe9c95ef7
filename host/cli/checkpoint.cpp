#include "cli/checkpoint.hpp"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "run/run_common.hpp"
#include "orrery/comm.hpp"
#include "io/writers.hpp"
#include "orrery/build_info.hpp"
#include "orrery/error.hpp"

namespace orrery::cli {
using namespace pipeline;
namespace {

namespace fs = std::filesystem;

// The file: kMagic, then a JSON header (format, build, fingerprint, iteration) and the state's
// arrays, each as name and raw doubles (this machine's byte order: a checkpoint is resumed where
// it was made), then an FNV-1a hash of everything before it, so that a damaged or truncated file
// is refused rather than resumed from.
constexpr char kMagic[8] = {'O', 'R', 'R', 'C', 'K', 'P', 'T', '1'};
constexpr int kFormat = 1;

volatile std::sig_atomic_t g_stop_requested = 0;

extern "C" void on_stop_signal(int sig) {
  if (g_stop_requested) {  // the second signal: stop now
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  g_stop_requested = 1;
  static const char msg[] =
      "\n[orrery] stopping at the end of this iteration to save a checkpoint (send the signal again to abort at "
      "once)\n";
  [[maybe_unused]] const ssize_t n = write(STDERR_FILENO, msg, sizeof msg - 1);
}

// FNV-1a over 8-byte words (then the remaining bytes): each step is a bijection of the running
// hash, so changing any one word always changes the result; 1.6 GB/s where bytewise FNV managed
// 0.5 (the inputs of a large run are hashed once, at its first checkpoint). It detects change and
// damage, not tampering.
struct Fnv {
  std::uint64_t h = 1469598103934665603ULL;
  void add(const char* p, size_t n) {
    constexpr std::uint64_t kPrime = 1099511628211ULL;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      std::uint64_t w;
      std::memcpy(&w, p + i, 8);
      h = (h ^ w) * kPrime;
    }
    for (; i < n; ++i) h = (h ^ static_cast<unsigned char>(p[i])) * kPrime;
  }
  std::string hex() const {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
  }
};

void hash_file(const fs::path& p, Fnv& f) {
  std::ifstream in(p, std::ios::binary);
  if (!in) input_error(p.string() + ": cannot read the input file to fingerprint it for the checkpoint");
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    f.add(buf.data(), static_cast<size_t>(in.gcount()));
  }
}

// The contents of an input path (a file, or a directory's regular files in name order).
std::string content_hash(const fs::path& p) {
  Fnv f;
  if (fs::is_directory(p)) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(p))
      if (e.is_regular_file() && e.path().filename() != "checkpoint.orrery") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& q : files) {
      const std::string name = q.filename().string();
      f.add(name.c_str(), name.size() + 1);
      hash_file(q, f);
    }
  } else {
    hash_file(p, f);
  }
  return f.hex();
}

json make_fingerprint(const RunConfig& run) {
  json config = run.raw;
  // The interval only says when to save; a resumed run may choose another.
  if (config.contains("output") && config["output"].is_object()) config["output"].erase("checkpoint_seconds");
  json inputs = json::object();
  for (const auto& [key, path] : input_paths(run)) inputs[key] = content_hash(path);
  return {{"method", run.method}, {"config", config}, {"inputs", inputs},
          {"orrery", std::string(ORRERY_VERSION) + " " + ORRERY_GIT_REVISION}};
}

// "params.lambda" -> the value's text, for every leaf.
void flatten(const json& j, const std::string& where, std::map<std::string, std::string>& out) {
  if (j.is_object() && !j.empty()) {
    for (auto it = j.begin(); it != j.end(); ++it) flatten(it.value(), where.empty() ? it.key() : where + "." + it.key(), out);
  } else {
    out[where] = j.dump();
  }
}

// What differs between the fingerprint saved and this run's, in words; "" when nothing.
std::string differences(const json& saved, const json& now) {
  std::string out;
  const auto add = [&](const std::string& s) { out += (out.empty() ? "" : "; ") + s; };
  if (saved.value("orrery", "") != now["orrery"].get<std::string>())
    add("it was made by orrery " + saved.value("orrery", "?") + ", this is orrery " + now["orrery"].get<std::string>());
  std::map<std::string, std::string> a, b;
  flatten(saved.value("config", json::object()), "", a);
  flatten(now["config"], "", b);
  for (const auto& [key, value] : b) {
    const auto it = a.find(key);
    if (it == a.end()) add("config key " + key + " was added (" + value + ")");
    else if (it->second != value) add("config key " + key + " changed from " + it->second + " to " + value);
  }
  for (const auto& [key, value] : a)
    if (!b.count(key)) add("config key " + key + " was removed (was " + value + ")");
  const json si = saved.value("inputs", json::object()), ni = now["inputs"];
  for (auto it = ni.begin(); it != ni.end(); ++it)
    if (si.contains(it.key()) && si[it.key()] != it.value()) add(it.key() + ": the file's contents changed");
  return out;
}

template <class T>
void append(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

// Reads the checkpoint's bytes back; every failure is an input error naming the file.
class Reader {
 public:
  Reader(const std::string& path, const std::string& bytes) : path_(path), b_(bytes) {}
  template <class T>
  T value() {
    T v;
    std::memcpy(&v, take(sizeof v), sizeof v);
    return v;
  }
  const char* take(size_t n) {
    if (n > b_.size() - pos_) damaged("it ends early");
    const char* p = b_.data() + pos_;
    pos_ += n;
    return p;
  }
  [[noreturn]] void damaged(const std::string& why) const {
    input_error(path_ + ": not a usable orrery checkpoint (" + why + "); run without --resume to start again");
  }

 private:
  const std::string& path_;
  const std::string& b_;
  size_t pos_ = 0;
};

}  // namespace

std::string checkpoint_path(const RunConfig& run) { return (fs::path(run.output.dir) / "checkpoint.orrery").string(); }

void install_stop_signals() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

CheckpointControl::CheckpointControl(const RunConfig& run, bool resume, bool quiet)
    : path_(checkpoint_path(run)),
      config_file_(run.path),
      run_(run),
      interval_(run.output.checkpoint_seconds),
      last_save_(Clock::now()) {
  if (const char* env = std::getenv("ORRERY_STOP_AT_ITERATION")) {
    char* end = nullptr;
    stop_at_ = std::strtoll(env, &end, 10);
    if (!*env || *end || stop_at_ < 0)
      input_error(std::string("ORRERY_STOP_AT_ITERATION: expected a non-negative integer, found '") + env + "'");
  }
  std::error_code ec;
  if (!resume) {
    if (!quiet && fs::exists(path_, ec))
      std::fprintf(stderr, "[orrery] note: %s holds the checkpoint of an interrupted run; this run starts again and "
                   "replaces it (orrery run %s --resume continues that run instead)\n",
                   path_.c_str(), config_file_.c_str());
    return;
  }
  std::ifstream in(path_, std::ios::binary);
  if (!in)
    input_error("--resume: no checkpoint at " + path_ +
                " (an interrupted run leaves one there; a run that finished removes it)");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Reader r(path_, bytes);
  if (bytes.size() < sizeof kMagic + 8 || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    r.damaged("it does not start like one");
  Fnv f;
  f.add(bytes.data(), bytes.size() - 8);
  std::uint64_t stored;
  std::memcpy(&stored, bytes.data() + bytes.size() - 8, 8);
  if (stored != f.h) r.damaged("its contents do not match their checksum");
  r.take(sizeof kMagic);
  const auto header_size = r.value<std::uint64_t>();
  json header;
  try {
    header = json::parse(std::string(r.take(header_size), header_size));
  } catch (const json::exception&) {
    r.damaged("its header is not JSON");
  }
  if (header.value("format", 0) != kFormat) r.damaged("format " + header.value("format", json()).dump());
  const std::string changed = differences(header.value("fingerprint", json::object()), fingerprint());
  if (!changed.empty())
    input_error("--resume: the checkpoint " + path_ + " was made by a different run: " + changed +
                ". Restore the original, or run without --resume to start again");
  const auto arrays = r.value<std::uint64_t>();
  for (std::uint64_t a = 0; a < arrays; ++a) {
    const auto key_size = r.value<std::uint32_t>();
    const std::string key(r.take(key_size), key_size);
    const auto n = r.value<std::uint64_t>();
    if (n > bytes.size() / sizeof(double)) r.damaged("an array is longer than the file");
    std::vector<double> v(n);
    if (n) std::memcpy(v.data(), r.take(n * sizeof(double)), n * sizeof(double));
    state_.put(key, std::move(v));
  }
  resumed_ = true;
  if (!quiet)
    std::fprintf(stderr, "[orrery] resuming after iteration %d from %s\n", header.value("iteration", 0),
                 path_.c_str());
}

const json& CheckpointControl::fingerprint() {
  if (fingerprint_.is_null()) fingerprint_ = make_fingerprint(run_);
  return fingerprint_;
}

void CheckpointControl::save(int iteration, const RunState& state) {
  const json header = {{"format", kFormat}, {"fingerprint", fingerprint()}, {"iteration", iteration}};
  const std::string text = header.dump();
  std::string out(kMagic, sizeof kMagic);
  append(out, static_cast<std::uint64_t>(text.size()));
  out += text;
  append(out, static_cast<std::uint64_t>(state.values().size()));
  for (const auto& [key, v] : state.values()) {
    append(out, static_cast<std::uint32_t>(key.size()));
    out += key;
    append(out, static_cast<std::uint64_t>(v.size()));
    out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(double));
  }
  Fnv f;
  f.add(out.data(), out.size());
  append(out, f.h);
  // Temporary file, flushed, then renamed: a checkpoint is whole or absent, never half-written.
  io::OutputSet set;
  set.add(path_, std::move(out));
  set.commit();
}

void CheckpointControl::safe_point(int iteration, const std::function<RunState()>& capture) {
  bool stop = g_stop_requested || iteration == stop_at_;
  bool due = interval_ > 0 && seconds_since(last_save_) >= interval_;
  Comm& comm = run_comm(run_);
  if (comm.size() > 1) {
    // Several ranks capture together (a sharded state is gathered, a collective): each says what it
    // would do and all do it when any one would, since a signal or a clock may reach the ranks at
    // different iterations. Rank 0 writes the whole state.
    std::int64_t want[2] = {stop, due};
    comm.allreduce(want, 2, ReduceOp::max);
    stop = want[0] != 0;
    due = want[1] != 0;
  }
  if (!stop && !due) return;
  last_save_ = Clock::now();
  const bool writer = comm.rank() == 0;
  if (!stop) {
    // A periodic checkpoint that cannot be written (a full disk, say) must not end a run that can
    // still finish: say so and go on; the next interval tries again.
    const RunState state = capture();
    try {
      if (writer) save(iteration, state);
    } catch (const Error& e) {
      std::fprintf(stderr, "[orrery] warning: no checkpoint after iteration %d: %s\n", iteration, e.what());
    }
    return;
  }
  const RunState state = capture();
  if (writer) save(iteration, state);
  if (stop)
    throw Interrupted("stopped after iteration " + std::to_string(iteration) + "; its state is saved in " + path_ +
                      "\n  continue with: orrery run " + config_file_ + " --resume");
}

void CheckpointControl::finish() {
  std::error_code ec;
  fs::remove(path_, ec);
}

}  // namespace orrery::cli
