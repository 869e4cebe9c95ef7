#include "cli/view.hpp"

#include <cstdio>
#include <filesystem>

#include "run/map_page.hpp"
#include "run/run_common.hpp"
#include "io/writers.hpp"
#include "orrery/error.hpp"
#include "report/map_page.hpp"

namespace orrery::cli {
using namespace pipeline;
namespace fs = std::filesystem;

int cmd_view(const std::vector<std::string>& args) {
  std::string dir, file;
  bool quiet = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--quiet" || a == "-q") quiet = true;
    else if (a == "-o" || a == "--out") {
      if (i + 1 >= args.size()) input_error("view: " + a + " needs a file name");
      file = args[++i];
    } else if (!a.empty() && a[0] == '-') input_error("view: unknown option '" + a + "'");
    else if (dir.empty()) dir = a;
    else input_error("view: expected one run directory, found a second: '" + a + "'");
  }
  if (dir.empty()) input_error("view: missing RUN_DIR (the output.dir of an orrery run)");
  const fs::path report_path = fs::path(dir) / "report.json";
  if (!fs::is_regular_file(report_path))
    input_error("view: " + dir + " holds no report.json: not the output directory of an orrery run");
  const json report = read_config_json(report_path.string());
  if (!report.contains("config") || !report["config"].is_object() || !report.contains("method"))
    input_error(report_path.string() + ": not an orrery run report (no 'config' or 'method')");
  const RunConfig run =
      parse_run_config(report["config"].dump(), report.value("config_file", report_path.string()));
  std::vector<std::string> warnings;
  const report::MapPage page = map_page_of_run(
      run, report,
      [&](const std::string& name) {
        const fs::path p = fs::path(dir) / name;
        return fs::is_regular_file(p) ? p.string() : std::string();
      },
      &warnings);
  for (const auto& w : warnings) std::fprintf(stderr, "[view] warning: %s\n", w.c_str());
  if (file.empty()) file = (fs::path(dir) / "map.html").string();
  const std::string html = report::render_map_html(page);
  io::OutputSet out;
  out.protect(report_path.string());
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() != ".html") out.protect(e.path().string());
  out.add(file, html);
  out.commit();  // refuses a FILE that would replace the run's report or outputs
  if (!quiet)
    std::fprintf(stderr, "[view] wrote %s: %s points, %.1f MB (%.1f bytes per point)\n", file.c_str(),
                 thousands(page.points.rows).c_str(), static_cast<double>(html.size()) / 1e6,
                 static_cast<double>(html.size()) / static_cast<double>(std::max<index_t>(1, page.points.rows)));
  return 0;
}

}  // namespace orrery::cli
