#include "report/quality_svg.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <vector>

#include "report/svg_map.hpp"

namespace orrery::report {
namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

}  // namespace

std::string render_quality_svg(const QualityReport& rep, const std::string& title) {
  const std::vector<QualityAtK>& pts = rep.curve.empty() ? rep.at_k : rep.curve;
  const double W = 840, H = 480, left = 70, right = 250, top = 60, bottom = 60;
  const double pw = W - left - right, ph = H - top - bottom;
  double kmin = 1, kmax = 2;
  for (const auto& q : pts) kmax = std::max(kmax, static_cast<double>(q.k));
  const auto x = [&](double k) { return left + pw * (std::log(k) - std::log(kmin)) / (std::log(kmax) - std::log(kmin)); };
  const auto y = [&](double v) { return top + ph * (1.0 - std::clamp(v, 0.0, 1.0)); };
  struct Series {
    const char* name;
    double (*value)(const QualityAtK&);
  };
  const Series series[] = {
      {"trustworthiness", [](const QualityAtK& q) { return q.trustworthiness; }},
      {"continuity", [](const QualityAtK& q) { return q.continuity; }},
      {"1 - MRRE (neighborhood)", [](const QualityAtK& q) { return 1.0 - q.mrre_neighborhood; }},
      {"1 - MRRE (visual)", [](const QualityAtK& q) { return 1.0 - q.mrre_visual; }},
      {"LCMC", [](const QualityAtK& q) { return q.lcmc; }},
  };
  std::ostringstream os;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H << "\" viewBox=\"0 0 " << W
     << " " << H << "\" font-family=\"sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  os << "<text x=\"" << left << "\" y=\"30\" font-size=\"18\" font-weight=\"bold\">" << escape(title) << "</text>\n";
  os << "<text x=\"" << left << "\" y=\"48\" font-size=\"12\" fill=\"#555\">" << rep.num_points
     << " points; higher is better for every curve</text>\n";
  for (int t = 0; t <= 5; ++t) {
    const double v = t / 5.0;
    os << "<line x1=\"" << left << "\" x2=\"" << left + pw << "\" y1=\"" << y(v) << "\" y2=\"" << y(v)
       << "\" stroke=\"#ddd\"/><text x=\"" << left - 8 << "\" y=\"" << y(v) + 4
       << "\" font-size=\"11\" text-anchor=\"end\">" << v << "</text>\n";
  }
  for (double k = 1; k <= kmax; k *= 10)
    os << "<line x1=\"" << x(k) << "\" x2=\"" << x(k) << "\" y1=\"" << top << "\" y2=\"" << top + ph
       << "\" stroke=\"#ddd\"/><text x=\"" << x(k) << "\" y=\"" << top + ph + 16
       << "\" font-size=\"11\" text-anchor=\"middle\">" << k << "</text>\n";
  os << "<text x=\"" << left + pw / 2 << "\" y=\"" << H - 18 << "\" font-size=\"12\" text-anchor=\"middle\">"
     << "neighborhood size K (log scale)</text>\n";
  int s = 0;
  for (const auto& ser : series) {
    const std::string colour = palette_colour(s);
    os << "<polyline fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"2\" points=\"";
    for (const auto& q : pts) os << x(q.k) << "," << y(ser.value(q)) << " ";
    os << "\"/>\n";
    const double ly = top + 14 + 20 * s;
    os << "<line x1=\"" << left + pw + 16 << "\" x2=\"" << left + pw + 40 << "\" y1=\"" << ly - 4 << "\" y2=\""
       << ly - 4 << "\" stroke=\"" << colour << "\" stroke-width=\"3\"/><text x=\"" << left + pw + 46 << "\" y=\""
       << ly << "\" font-size=\"12\">" << escape(ser.name) << "</text>\n";
    ++s;
  }
  os << "</svg>\n";
  return os.str();
}

}  // namespace orrery::report
