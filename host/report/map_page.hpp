// An interactive map as one self-contained HTML file: the viewer page (report/viewer/page.html and
// the pieces it includes: hand-written WebGL2 with a Canvas 2D fallback, no library, no network),
// with the map's data embedded in it as one JSON object. Coordinates travel as little-endian
// float32 and group indices as uint16, both base64, so a point costs 4/3 (4 D + 2) bytes (13.3 in
// 2-D) plus its name; the page decodes them into typed arrays without a per-point object.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "orrery/config.hpp"
#include "orrery/types.hpp"

namespace orrery::report {

struct MapPage {
  std::string method;     // pe | plsv | hssne | nerv | snerv
  std::string title, subtitle;
  MatrixD points;         // N x D, D = 2 or 3
  // Colour groups: group[i] indexes `groups` (-1: none, drawn grey); empty: one colour for all.
  std::string colour_by;  // the legend's heading: "label", "arg-max class", "dominant topic"
  std::vector<int> group;
  std::vector<std::string> groups;
  std::vector<std::string> names;  // N names (tooltips, search), or empty: points are "#index"
  // Each point's `top_m` most probable markers (PE classes, PLSV topics), descending: N x top_m
  // marker indices and probabilities.
  int top_m = 0;
  std::vector<std::uint16_t> top_index;
  std::vector<float> top_prob;
  std::vector<std::string> text;   // N lines of text (a document's top words), or empty
  // Markers drawn over the points (PE classes, PLSV topics), with their names and words.
  std::string marker_kind;  // "class" | "topic"
  MatrixD markers;          // K x D, or 0 x 0
  std::vector<std::string> marker_names;
  std::vector<std::vector<std::string>> marker_words;  // K lists, or empty
  // The quality chart: {"k": [...], "trustworthiness": [...], "continuity": [...], "lcmc": [...]},
  // or null for none.
  json quality;
};

// Group indices above this are refused (they travel as uint16, 65535 meaning none).
inline constexpr int kMaxPageGroups = 65535;

// The page's bytes. Throws Error(internal) when sizes disagree or a coordinate is not finite.
std::string render_map_html(const MapPage& page);

// The data object render_map_html embeds (tests read it back).
json map_page_data(const MapPage& page);

// RFC 4648 base64 of `bytes` (with padding).
std::string base64(const std::string& bytes);

// The viewer page with its data token (report/viewer/page.html with its pieces inlined), compiled in.
const std::string& map_viewer_template();

}  // namespace orrery::report
