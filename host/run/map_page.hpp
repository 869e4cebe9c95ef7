// The interactive map of a run (report/map_page.hpp): `orrery view RUN_DIR` for a finished run's
// directory, and output.html for a run that writes map.html with its other outputs. Both build the
// page the same way, from the run's config, its report and its output files, so a run's map.html
// and `orrery view` of its directory are the same bytes. The inputs the config names are read again
// for what the outputs do not hold: labels and class names (colours, legend), input.names (tooltips,
// search), PE's posteriors (each object's top classes) and PLSV's corpus (document names, labels,
// each document's most frequent words).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "run/run_config.hpp"
#include "io/writers.hpp"
#include "report/map_page.hpp"

namespace orrery::pipeline {

// Where the page takes a run's output file NAME ("embedding.npy", "topics.csv") from: a path the
// readers open, or "" when the run has no such file.
using OutputPath = std::function<std::string(const std::string& name)>;

// The page of a run of `report["method"]`. `warnings` (may be null) gets what could not be shown
// (an input file that is gone): the page is drawn without it. Errors in the outputs themselves
// (no coordinates, a report of another shape) are input errors naming the file.
report::MapPage map_page_of_run(const RunConfig& run, const json& report, const OutputPath& output,
                                std::vector<std::string>* warnings);

// The page's method-specific part (points, groups, tooltips, title) of each family, as the method
// registry (run/methods.hpp) names them; map_page_of_run adds what every page shares.
void ne_page(report::MapPage& page, const RunConfig& run, const json& report, const OutputPath& output,
             std::vector<std::string>* warnings);
void pe_page(report::MapPage& page, const RunConfig& run, const json& report, const OutputPath& output,
             std::vector<std::string>* warnings);
void plsv_page(report::MapPage& page, const RunConfig& run, const json& report, const OutputPath& output,
               std::vector<std::string>* warnings);

// output.html: adds OUTPUT_DIR/map.html to `out`, built from the files already in it, and records it
// in report["outputs"]["map_html"]. Called by commit_run before the report is written.
void add_map_html(io::OutputSet& out, json& report, const RunConfig& run);

}  // namespace orrery::pipeline
