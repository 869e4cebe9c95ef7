#include "run/run_common.hpp"

#include "run/methods.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <new>
#include <mutex>
#include <ctime>
#include <filesystem>

#include "run/map_page.hpp"
#include "io/readers.hpp"
#include "orrery/backend.hpp"
#include "orrery/build_info.hpp"
#include "orrery/error.hpp"
#include "orrery/run_control.hpp"

namespace orrery::pipeline {


std::string format_seconds(double s) {
  char buf[32];
  if (s < 60) std::snprintf(buf, sizeof buf, "%.1fs", s);
  else std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s / 60), static_cast<int>(s) % 60);
  return buf;
}

namespace {
std::mutex sink_mutex;
ProgressSink& current_sink() {
  static ProgressSink sink;
  return sink;
}
}  // namespace

void progress_line(const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list again;
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  std::string line(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(line.data(), line.size() + 1, format, again);
  va_end(again);
  ProgressSink sink;
  {
    std::lock_guard<std::mutex> lock(sink_mutex);
    sink = current_sink();
  }
  if (sink) sink(line);
  else std::fputs(line.c_str(), stderr);
}

ScopedProgressSink::ScopedProgressSink(ProgressSink sink) {
  std::lock_guard<std::mutex> lock(sink_mutex);
  previous_ = std::move(current_sink());
  current_sink() = std::move(sink);
}

ScopedProgressSink::~ScopedProgressSink() {
  std::lock_guard<std::mutex> lock(sink_mutex);
  current_sink() = std::move(previous_);
}

void StageProgress::operator()(index_t done, index_t total) {
  const double t = seconds_since(start);
  if (quiet || t < 2.0 || (last > 0.0 && t - last < 5.0) || done <= 0 || done >= total) return;
  last = t;
  const double f = static_cast<double>(done) / static_cast<double>(total);
  progress_line("[%s] %s: %3.0f%%, %s, about %s left\n", tag.c_str(), what.c_str(), 100.0 * f,
               format_seconds(t).c_str(), format_seconds(t * (1.0 - f) / f).c_str());
}

std::vector<std::string> read_point_names(const std::string& path, index_t n, index_t limit, const std::string& key,
                                          const std::string& source) {
  if (path.empty()) return {};
  std::vector<std::string> names = io::read_names(path);
  if (limit > 0 && static_cast<index_t>(names.size()) > limit) names.resize(static_cast<size_t>(limit));
  if (static_cast<index_t>(names.size()) != n)
    input_error(key + ": " + path + " holds " + std::to_string(names.size()) + " names for the " + std::to_string(n) +
                " points in " + source + " (one name per line, one line per point)");
  return names;
}

json report_header(const RunConfig& run, const Backend& backend) {
  std::time_t t = std::time(nullptr);
  char created[32];
  std::strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  json report;
  report["orrery"] = {{"version", ORRERY_VERSION}, {"git", ORRERY_GIT_REVISION}, {"build", ORRERY_BUILD_TYPE},
                      {"compiler", ORRERY_CXX_COMPILER}};
  report["created"] = created;
  report["method"] = run.method;
  report["config_file"] = run.path;
  report["config"] = run.raw;
  report["device"] = backend.name();
  report["threads"] = backend.threads();
  report["seed"] = run.seed;
  Comm& comm = run_comm(run);
  report["comm"] = {{"name", comm.name()}, {"ranks", comm.size()}};
  return report;
}

void on_every_rank(const RunConfig& run, const std::function<void()>& step) {
  Comm& comm = run_comm(run);
  if (comm.size() == 1) return step();
  std::exception_ptr failure;
  std::int64_t kind = 0;  // 0 done, 1 internal, 2 input (as the exit codes)
  try {
    step();
  } catch (const Error& e) {
    failure = std::current_exception();
    kind = exit_code(e.kind());
  } catch (const std::bad_alloc&) {
    failure = std::current_exception();
    kind = 2;  // the command line's out-of-memory advice exits 2 too
  } catch (...) {
    failure = std::current_exception();
    kind = 1;
  }
  std::int64_t worst = kind, first = kind ? comm.rank() : comm.size();
  comm.allreduce(&worst, 1, ReduceOp::max);
  comm.allreduce(&first, 1, ReduceOp::min);
  if (failure) std::rethrow_exception(failure);
  if (worst == 0) return;
  const std::string what = "comm: rank " + std::to_string(first) + " of " + std::to_string(comm.size()) +
                           " stopped before the fit (its message says why); rank " + std::to_string(comm.rank()) +
                           " stops with it";
  if (worst == 2) input_error(what);
  internal_error(what);
}

void fit_on_every_rank(Comm& comm, const std::function<void()>& fit) {
  try {
    fit();
  } catch (const Interrupted&) {
    throw;
  } catch (const Error& e) {
    if (comm.size() > 1) comm.abort(exit_code(e.kind()), e.what());
    throw;
  } catch (const std::exception& e) {
    if (comm.size() > 1) comm.abort(1, e.what());
    throw;
  }
}

void check_rank_memory(const MemoryPlan& plan, const MemoryInfo& mem, bool device, const RunConfig& run) {
  const Comm& comm = run_comm(run);
  const int node = std::max(1, comm.node_size());
  const int gpu = device ? ranks_sharing_device(run.device, comm) : 1;
  if (comm.size() <= 1 || (node <= 1 && gpu <= 1)) return check_memory_plan(plan, mem, device);
  MemoryInfo share = mem;
  share.host_bytes /= node;
  share.device_bytes /= gpu;
  try {
    check_memory_plan(plan, share, device);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::input) throw;
    std::string why = std::string(e.what()) + " (rank " + std::to_string(comm.rank()) + " of " +
                      std::to_string(comm.size()) + ": ";
    if (node > 1) why += "the " + std::to_string(node) + " ranks on its machine each plan within 1/" + std::to_string(node) + " of its free memory";
    if (node > 1 && gpu > 1) why += ", and ";
    if (gpu > 1) why += "the " + std::to_string(gpu) + " ranks on its GPU within 1/" + std::to_string(gpu) + " of the GPU's";
    input_error(why + "; fewer ranks a machine, or more machines, give each more)");
  }
}

Comm& run_comm(const RunConfig& run) {
  if (run.comm) return *run.comm;
  static const std::unique_ptr<Comm> single = make_single_comm();  // holds no state: shared by every run
  return *single;
}

void add_coordinates(io::OutputSet& out, json& outputs, const RunConfig& run, const std::string& name,
                     const MatrixD& M) {
  namespace fs = std::filesystem;
  check_finite_result(run, name + " coordinates", M);
  if (run.result) {  // in process: the matrix itself, no file
    run.result->arrays[name] = M;
    return;
  }
  const fs::path dir(run.output.dir);
  if (run.output.format != "csv") {
    const std::string p = (dir / (name + ".npy")).string();
    out.add(p, io::npy_bytes(M));
    outputs[name + "_npy"] = p;
  }
  if (run.output.format != "npy") {
    std::vector<std::string> header;
    for (index_t c = 0; c < M.cols; ++c)
      header.push_back(M.cols <= 3 ? std::string(1, "xyz"[c]) : "c" + std::to_string(c));
    const std::string p = (dir / (name + ".csv")).string();
    out.add(p, io::csv_bytes(M, header));
    outputs[name + "_csv"] = p;
  }
}

std::vector<int> argmax_rows(const MatrixD& M) {
  std::vector<int> out(static_cast<size_t>(M.rows));
  for (index_t n = 0; n < M.rows; ++n) {
    int best = 0;
    for (index_t k = 1; k < M.cols; ++k)
      if (M(n, k) > M(n, best)) best = static_cast<int>(k);
    out[static_cast<size_t>(n)] = best;
  }
  return out;
}

namespace {

void collect_paths(const json& j, const std::string& where, std::vector<std::pair<std::string, std::string>>& out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) collect_paths(it.value(), where + "." + it.key(), out);
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) collect_paths(j[i], where + "[" + std::to_string(i) + "]", out);
  } else if (j.is_string()) {
    std::error_code ec;
    const std::string& p = j.get_ref<const std::string&>();
    if (!p.empty() && std::filesystem::exists(p, ec)) out.emplace_back(where, p);
  }
}

[[noreturn]] void non_finite(const RunConfig& run, const std::string& what) {
  input_error(run.method + ": " + what + " is not finite: the fit diverged (likely causes: " +
              std::string(find_method(run.method)->divergence_causes) + "); nothing was written");
}

// Every number below `j`; the path of the first non-finite one, or "".
std::string first_non_finite(const json& j, const std::string& where) {
  if (j.is_number_float() && !std::isfinite(j.get<double>())) return where;
  if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) {
      const std::string w = first_non_finite(j[i], where + "[" + std::to_string(i) + "]");
      if (!w.empty()) return w;
    }
  } else if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string w = first_non_finite(it.value(), where + "." + it.key());
      if (!w.empty()) return w;
    }
  }
  return "";
}

}  // namespace

std::vector<std::pair<std::string, std::string>> input_paths(const RunConfig& run) {
  std::vector<std::pair<std::string, std::string>> out;
  collect_paths(run.input, "input", out);
  return out;
}

std::vector<std::string> run_inputs(const RunConfig& run) {
  std::vector<std::string> out;
  if (!run.path.empty()) out.push_back(run.path);  // the config itself
  for (const auto& named : input_paths(run)) out.push_back(named.second);
  return out;
}

std::vector<std::string> run_outputs(const RunConfig& run, const std::vector<std::string>& names) {
  const std::filesystem::path dir(run.output.dir);
  std::vector<std::string> out;
  for (const std::string& n : names) {
    if (n.size() > 2 && n.compare(n.size() - 2, 2, ".*") == 0) {
      const std::string stem = n.substr(0, n.size() - 2);
      if (run.output.format != "csv") out.push_back((dir / (stem + ".npy")).string());
      if (run.output.format != "npy") out.push_back((dir / (stem + ".csv")).string());
    } else if (run.output.svg || n.size() < 4 || n.compare(n.size() - 4, 4, ".svg") != 0) {  // pictures: with output.svg
      out.push_back((dir / n).string());
    }
  }
  return out;
}

void check_run_outputs(const RunConfig& run, const std::vector<std::string>& names) {
  io::check_output_paths(run_outputs(run, names), run_inputs(run));
}

void check_finite_result(const RunConfig& run, const std::string& what, const MatrixD& M) {
  for (size_t i = 0; i < M.data.size(); ++i)
    if (!std::isfinite(M.data[i]))
      non_finite(run, what + " (row " + std::to_string(static_cast<index_t>(i) / M.cols + 1) + ")");
}

void commit_run(io::OutputSet& out, const json& report_in, const RunConfig& run) {
  json report = report_in;
  if (run.output.html) add_map_html(out, report, run);  // before the report, which records it
  // The result and its trace; quality measures may be NaN by definition (no labels) and say so.
  for (const char* key : {"result", "trace"})
    if (report.contains(key)) {
      const std::string w = first_non_finite(report[key], key);
      if (!w.empty()) non_finite(run, "the report's " + w);
    }
  out.add((std::filesystem::path(run.output.dir) / "report.json").string(), report.dump(2) + "\n");
  if (run.result) {
    for (const auto& [path, bytes] : out.files())
      run.result->files[std::filesystem::path(path).filename().string()] = bytes;
    return;
  }
  for (const std::string& p : run_inputs(run)) out.protect(p);
  out.commit();
}

std::string thousands(index_t n) {
  std::string s = std::to_string(n), out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i > 0 && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return out;
}

}  // namespace orrery::pipeline
