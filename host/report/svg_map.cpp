#include "report/svg_map.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <numeric>

#include "io/utf8.hpp"
#include "orrery/error.hpp"

namespace orrery::report {
namespace {

constexpr double kPlot = 900;     // the square map area
constexpr double kTitleH = 70;    // band above it for title and subtitle
constexpr double kLegendW = 260;  // column to its right
constexpr double kMargin = 50;    // inside the map area, room for dots and class labels at the edge
constexpr size_t kMaxLegendRows = 60;
constexpr size_t kMaxNameBytes = 34;

// Chosen for distinguishability on white: the Tableau 10 hues without their grey (grey means
// "no colour" here), their light partners, then darker tones.
constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                                    "#e377c2", "#17becf", "#bcbd22", "#393b79", "#aec7e8", "#ffbb78",
                                    "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#9edae5",
                                    "#dbdb8d", "#637939", "#e7ba52", "#843c39", "#7b4173", "#6b6ecf"};
constexpr int kPaletteSize = static_cast<int>(sizeof kPalette / sizeof kPalette[0]);
constexpr const char* kGrey = "#b0b0b0";

// XML 1.0 allows tab, LF, CR and the characters from U+0020 up except U+FFFE and U+FFFF (and
// surrogates, which valid UTF-8 cannot hold). Readers reject invalid UTF-8, but names also come
// from the API: other control characters become spaces, and invalid bytes, U+FFFE and U+FFFF
// become U+FFFD, so the file is well-formed whatever the names.
std::string xml(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    const size_t n = io::utf8_length(s, i);
    if (n != 1) {
      const bool nonchar = n == 3 && static_cast<unsigned char>(c) == 0xEF && static_cast<unsigned char>(s[i + 1]) == 0xBF &&
                           static_cast<unsigned char>(s[i + 2]) >= 0xBE;
      out += n == 0 || nonchar ? std::string("\xEF\xBF\xBD") : s.substr(i, n);
      i += n == 0 ? 1 : n;
      continue;
    }
    ++i;
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        out.push_back(static_cast<unsigned char>(c) < 0x20 && c != '\t' ? ' ' : c);
    }
  }
  return out;
}

// Cuts on a UTF-8 character boundary so a long name never ends in half a character.
std::string shorten(const std::string& s) {
  if (s.size() <= kMaxNameBytes) return s;
  size_t cut = kMaxNameBytes - 3;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return s.substr(0, cut) + "...";
}

// Fixed one-decimal numbers, independent of the C locale (printf would write "12,5" under some).
std::string num(double v) {
  char buf[48];
  const auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, 1);
  return std::string(buf, res.ptr);
}

// splitmix64: tiny, well mixed, and the same on every platform (std:: distributions are not).
struct Rng {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
};

void check_picture(const MapPicture& p) {
  const auto n = static_cast<size_t>(p.objects.rows);
  if (p.objects.rows > 0 && p.objects.cols < 2)
    internal_error("render_map_svg: objects have " + std::to_string(p.objects.cols) + " columns, need at least 2");
  if (p.classes.rows > 0 && p.classes.cols < 2)
    internal_error("render_map_svg: classes have " + std::to_string(p.classes.cols) + " columns, need at least 2");
  if (!p.colour_index.empty() && p.colour_index.size() != n)
    internal_error("render_map_svg: " + std::to_string(p.colour_index.size()) + " colour indices for " +
                   std::to_string(n) + " objects");
  if (!p.class_names.empty() && p.class_names.size() != static_cast<size_t>(p.classes.rows))
    internal_error("render_map_svg: " + std::to_string(p.class_names.size()) + " class names for " +
                   std::to_string(p.classes.rows) + " classes");
  if (p.max_points < 0) internal_error("render_map_svg: max_points must be >= 0");
  for (size_t i = 0; i < p.colour_index.size(); ++i)
    if (p.colour_index[i] < -1)
      internal_error("render_map_svg: object " + std::to_string(i) + " has colour index " +
                     std::to_string(p.colour_index[i]) + ", expected -1 or more");
  const auto check_finite = [](const MatrixD& m, const char* what) {
    for (index_t i = 0; i < m.rows; ++i)
      if (!std::isfinite(m(i, 0)) || !std::isfinite(m(i, 1)))
        internal_error(std::string("render_map_svg: ") + what + " " + std::to_string(i) +
                       " has a non-finite coordinate");
  };
  check_finite(p.objects, "object");
  check_finite(p.classes, "class");
}

// Maps data coordinates to the page with one scale for both axes, centred on the data. Centre,
// offsets and span are taken in halves, so that maps reaching towards the largest double stay
// finite on the page (lo + hi or hi - lo would overflow).
struct Frame {
  double cx = 0, cy = 0, scale = 1;  // scale: page units per half data unit
  double x(double v) const { return kPlot / 2 + (v / 2 - cx / 2) * scale; }
  double y(double v) const { return kTitleH + kPlot / 2 - (v / 2 - cy / 2) * scale; }
};

Frame fit_frame(const MapPicture& p) {
  double lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY};
  for (const MatrixD* m : {&p.objects, &p.classes})
    for (index_t i = 0; i < m->rows; ++i)
      for (int a = 0; a < 2; ++a) {
        lo[a] = std::min(lo[a], (*m)(i, a));
        hi[a] = std::max(hi[a], (*m)(i, a));
      }
  Frame f;
  if (!(lo[0] <= hi[0])) return f;  // nothing to draw
  f.cx = lo[0] / 2 + hi[0] / 2;
  f.cy = lo[1] / 2 + hi[1] / 2;
  double half_span = std::max(hi[0] / 2 - lo[0] / 2, hi[1] / 2 - lo[1] / 2);
  // A single point or a collapsed map still needs a finite scale.
  if (!(half_span > 0)) half_span = std::max(0.5, std::abs(f.cx) / 2 + std::abs(f.cy) / 2);
  f.scale = (kPlot - 2 * kMargin) / half_span;
  return f;
}

// The first `m` entries of a seeded partial Fisher-Yates shuffle: a uniform subset in random order.
// Random drawing order keeps the last class from painting over all the others.
std::vector<index_t> drawing_order(index_t n, index_t m, unsigned long long seed) {
  std::vector<index_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), index_t{0});
  Rng rng{seed};
  for (index_t i = 0; i < m && i + 1 < n; ++i) {
    const auto j = i + static_cast<index_t>(rng.next() % static_cast<std::uint64_t>(n - i));
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
  }
  order.resize(static_cast<size_t>(m));
  return order;
}

void draw_legend(std::string& out, const MapPicture& p) {
  std::vector<std::pair<std::string, std::string>> entries;  // colour, name
  for (size_t k = 0; k < p.legend.size(); ++k) entries.emplace_back(palette_colour(static_cast<int>(k)), p.legend[k]);
  const bool any_grey = std::find(p.colour_index.begin(), p.colour_index.end(), -1) != p.colour_index.end();
  if (any_grey && !entries.empty()) entries.emplace_back(kGrey, "(no label)");
  if (entries.empty()) return;
  size_t hidden = 0;
  if (entries.size() > kMaxLegendRows) {
    hidden = entries.size() - (kMaxLegendRows - 1);
    entries.resize(kMaxLegendRows - 1);
  }
  const size_t rows = entries.size() + (hidden ? 1 : 0);
  const double row_h = std::min(22.0, (kPlot - 40) / static_cast<double>(rows));
  const double font = std::min(14.0, row_h - 3);
  const double x = kPlot + 16;
  double y = kTitleH + 30;
  out += "<g class=\"legend\" font-size=\"" + num(font) + "\">\n";
  for (const auto& [colour, name] : entries) {
    out += "<rect x=\"" + num(x) + "\" y=\"" + num(y - font * 0.8) + "\" width=\"" + num(font * 0.8) + "\" height=\"" +
           num(font * 0.8) + "\" fill=\"" + colour + "\"/>";
    out += "<text x=\"" + num(x + font * 1.3) + "\" y=\"" + num(y) + "\">" + xml(shorten(name)) + "</text>\n";
    y += row_h;
  }
  if (hidden) out += "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\">... and " + std::to_string(hidden) + " more</text>\n";
  out += "</g>\n";
}

}  // namespace

std::string palette_colour(int i) { return i < 0 ? kGrey : kPalette[i % kPaletteSize]; }

std::string render_map_svg(const MapPicture& p) {
  check_picture(p);
  const index_t n = p.objects.rows;
  const index_t m = p.max_points > 0 ? std::min(n, p.max_points) : n;
  std::string subtitle = p.subtitle;
  if (m < n) {
    const std::string note = "showing " + std::to_string(m) + " of " + std::to_string(n) + " points";
    subtitle = subtitle.empty() ? note : subtitle + "; " + note;
  }

  const double width = kPlot + kLegendW, height = kTitleH + kPlot;
  std::string out;
  out.reserve(static_cast<size_t>(m) * 64 + 4096);
  out += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(width) + "\" height=\"" + num(height) +
         "\" viewBox=\"0 0 " + num(width) + " " + num(height) + "\" font-family=\"DejaVu Sans, Arial, sans-serif\">\n";
  out += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  out += "<rect x=\"0.5\" y=\"" + num(kTitleH + 0.5) + "\" width=\"" + num(kPlot - 1) + "\" height=\"" +
         num(kPlot - 1) + "\" fill=\"none\" stroke=\"#dddddd\"/>\n";
  out += "<text x=\"16\" y=\"32\" font-size=\"22\" font-weight=\"bold\">" + xml(p.title) + "</text>\n";
  out += "<text x=\"16\" y=\"56\" font-size=\"14\" fill=\"#555555\">" + xml(subtitle) + "</text>\n";

  const Frame f = fit_frame(p);
  // Smaller dots as the map fills, so dense clusters keep their shape instead of becoming blobs.
  const double r = std::clamp(45.0 / std::sqrt(static_cast<double>(std::max<index_t>(m, 1))), 1.2, 4.0);
  const std::string radius = num(r);
  out += "<g class=\"objects\" fill-opacity=\"0.6\" stroke=\"none\">\n";
  for (index_t i : drawing_order(n, m, p.seed)) {
    const int c = p.colour_index.empty() ? 0 : p.colour_index[static_cast<size_t>(i)];
    out += "<circle cx=\"" + num(f.x(p.objects(i, 0))) + "\" cy=\"" + num(f.y(p.objects(i, 1))) + "\" r=\"" + radius +
           "\" fill=\"" + palette_colour(c) + "\"/>\n";
  }
  out += "</g>\n";

  if (p.classes.rows > 0) {
    out += "<g class=\"classes\">\n";
    for (index_t k = 0; k < p.classes.rows; ++k) {
      const double x = f.x(p.classes(k, 0)), y = f.y(p.classes(k, 1)), s = 7;
      out += "<path d=\"M" + num(x) + "," + num(y - s) + " L" + num(x + s) + "," + num(y) + " L" + num(x) + "," +
             num(y + s) + " L" + num(x - s) + "," + num(y) + " Z\" fill=\"white\" stroke=\"black\" stroke-width=\"1.5\"/>\n";
      const auto uk = static_cast<size_t>(k);
      const std::string name = !p.class_names.empty() ? p.class_names[uk]
                               : uk < p.legend.size() ? p.legend[uk]
                                                      : std::to_string(k);
      // The white stroke painted under the glyphs keeps labels readable on top of dense dots.
      out += "<text x=\"" + num(x) + "\" y=\"" + num(y - s - 4) +
             "\" font-size=\"13\" font-weight=\"bold\" text-anchor=\"middle\" fill=\"black\" stroke=\"white\" "
             "stroke-width=\"3\" stroke-linejoin=\"round\" paint-order=\"stroke\">" +
             xml(shorten(name)) + "</text>\n";
    }
    out += "</g>\n";
  }
  draw_legend(out, p);
  out += "</svg>\n";
  return out;
}

}  // namespace orrery::report
