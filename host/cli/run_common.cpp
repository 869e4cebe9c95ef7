#include "cli/run_common.hpp"

#include <omp.h>

#include <cstdio>
#include <ctime>
#include <filesystem>

#include "orrery/build_info.hpp"

namespace orrery::cli {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string format_seconds(double s) {
  char buf[32];
  if (s < 60) std::snprintf(buf, sizeof buf, "%.1fs", s);
  else std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s / 60), static_cast<int>(s) % 60);
  return buf;
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
  return report;
}

void add_coordinates(io::OutputSet& out, json& outputs, const RunConfig& run, const std::string& name,
                     const MatrixD& M) {
  namespace fs = std::filesystem;
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

}  // namespace orrery::cli
