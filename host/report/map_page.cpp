#include "report/map_page.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <utility>

#include "orrery/error.hpp"
#include "report/svg_map.hpp"

namespace orrery::report {
namespace {

constexpr const char* kDataToken = "/*ORRERY_DATA*/null";
constexpr int kPaletteColours = 24;  // svg_map.cpp's palette, cycled the same way in the page

// Little-endian bytes of a value (every target orrery builds for is little-endian; the check keeps
// it so rather than assuming).
template <class T>
void put(std::string& out, T v) {
  static_assert(std::is_trivially_copyable_v<T>);
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  const std::uint16_t probe = 1;
  if (*reinterpret_cast<const unsigned char*>(&probe) != 1)
    for (size_t i = 0; i < sizeof(T) / 2; ++i) std::swap(b[i], b[sizeof(T) - 1 - i]);
  out.append(b, sizeof(T));
}

void check_page(const MapPage& p) {
  const index_t n = p.points.rows;
  if (p.points.cols != 2 && p.points.cols != 3) internal_error("map page: points must be N x 2 or N x 3");
  auto sized = [&](size_t size, const char* what) {
    if (size != 0 && size != static_cast<size_t>(n)) internal_error(std::string("map page: ") + what + " is not one per point");
  };
  sized(p.group.size(), "group");
  sized(p.names.size(), "names");
  sized(p.text.size(), "text");
  for (int g : p.group)
    if (g < -1 || g >= static_cast<int>(p.groups.size()) || g >= kMaxPageGroups)
      internal_error("map page: a group index lies outside the groups");
  if (p.groups.size() > static_cast<size_t>(kMaxPageGroups)) internal_error("map page: too many groups");
  const size_t top = static_cast<size_t>(n) * static_cast<size_t>(p.top_m);
  if (p.top_m < 0 || p.top_index.size() != top || p.top_prob.size() != top)
    internal_error("map page: the top markers are not top_m per point");
  for (std::uint16_t k : p.top_index)
    if (k >= p.markers.rows) internal_error("map page: a top marker lies outside the markers");
  if (p.markers.rows > 0 && p.markers.cols != p.points.cols) internal_error("map page: markers and points differ in D");
  if (p.marker_names.size() != static_cast<size_t>(p.markers.rows))
    internal_error("map page: one name per marker expected");
  if (!p.marker_words.empty() && p.marker_words.size() != static_cast<size_t>(p.markers.rows))
    internal_error("map page: marker words are not one list per marker");
  for (double v : p.points.data)
    if (!std::isfinite(v)) internal_error("map page: a coordinate is not finite");
  for (double v : p.markers.data)
    if (!std::isfinite(v)) internal_error("map page: a marker coordinate is not finite");
}

}  // namespace

std::string base64(const std::string& bytes) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const unsigned v = (b[i] << 16) | (b[i + 1] << 8) | b[i + 2];
    out += kAlphabet[v >> 18], out += kAlphabet[(v >> 12) & 63], out += kAlphabet[(v >> 6) & 63], out += kAlphabet[v & 63];
  }
  if (i + 1 == bytes.size()) {
    const unsigned v = b[i] << 16;
    out += kAlphabet[v >> 18], out += kAlphabet[(v >> 12) & 63], out += "==";
  } else if (i + 2 == bytes.size()) {
    const unsigned v = (b[i] << 16) | (b[i + 1] << 8);
    out += kAlphabet[v >> 18], out += kAlphabet[(v >> 12) & 63], out += kAlphabet[(v >> 6) & 63], out += '=';
  }
  return out;
}

json map_page_data(const MapPage& p) {
  check_page(p);
  const index_t n = p.points.rows;
  const int D = static_cast<int>(p.points.cols);
  json d;
  d["format"] = "orrery-map-1";
  d["title"] = p.title;
  d["subtitle"] = p.subtitle;
  d["method"] = p.method;
  d["n"] = n;
  d["dim"] = D;
  {
    std::string raw;
    raw.reserve(static_cast<size_t>(n) * static_cast<size_t>(D) * 4);
    for (double v : p.points.data) put(raw, static_cast<float>(v));
    d["coords"] = base64(raw);
  }
  d["colour_by"] = p.colour_by;
  d["groups"] = p.groups;
  if (!p.group.empty()) {
    std::string raw;
    raw.reserve(static_cast<size_t>(n) * 2);
    for (int g : p.group) put(raw, static_cast<std::uint16_t>(g < 0 ? 65535 : g));
    d["group_of"] = base64(raw);
  }
  json palette = json::array();
  for (int c = 0; c < kPaletteColours; ++c) palette.push_back(palette_colour(c));
  d["palette"] = palette;
  if (!p.names.empty()) d["names"] = p.names;
  if (p.top_m > 0) {
    std::string idx, prob;
    for (std::uint16_t k : p.top_index) put(idx, k);
    for (float v : p.top_prob)
      prob += static_cast<char>(static_cast<unsigned char>(std::lround(std::clamp(static_cast<double>(v), 0.0, 1.0) * 255.0)));
    d["top"] = {{"kind", p.marker_kind}, {"m", p.top_m}, {"index", base64(idx)}, {"prob", base64(prob)}};
  }
  if (!p.text.empty()) d["text"] = p.text;
  json markers = json::array();
  for (index_t k = 0; k < p.markers.rows; ++k) {
    json c = json::array();
    for (int a = 0; a < D; ++a) c.push_back(p.markers(k, a));
    json m = {{"name", p.marker_names[static_cast<size_t>(k)]}, {"coords", c}};
    if (!p.marker_words.empty()) m["words"] = p.marker_words[static_cast<size_t>(k)];
    markers.push_back(m);
  }
  d["markers"] = markers;
  d["marker_kind"] = p.marker_kind;
  if (!p.quality.is_null()) d["quality"] = p.quality;
  return d;
}

std::string render_map_html(const MapPage& page) {
  // Invalid UTF-8 in a name becomes U+FFFD rather than failing a finished run. Every '<' (only ever
  // inside a string) is written \u003c, the same JSON string, so no name can close the page's script
  // element or open a comment or script inside it ("<!--<script>" would otherwise swallow the page).
  const std::string text = map_page_data(page).dump(-1, ' ', false, json::error_handler_t::replace);
  std::string data;
  data.reserve(text.size() + text.size() / 64);
  for (char c : text) {
    if (c == '<') data += "\\u003c";
    else data += c;
  }
  const std::string& tpl = map_viewer_template();
  const size_t at = tpl.find(kDataToken);
  if (at == std::string::npos) internal_error("map page: the viewer template has no data token");
  std::string out;
  out.reserve(tpl.size() + data.size());
  out.append(tpl, 0, at);
  out += data;
  out.append(tpl, at + std::strlen(kDataToken), std::string::npos);
  return out;
}

}  // namespace orrery::report
