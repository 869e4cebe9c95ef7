// The map picture: one circle per drawn object, escaped text, legend, subsample note, equal axes.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "io/utf8.hpp"
#include "orrery/error.hpp"
#include "report/svg_map.hpp"

using orrery::MatrixD;
using orrery::report::MapPicture;
using orrery::report::palette_colour;
using orrery::report::render_map_svg;

namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// n objects on a spiral, coloured by i % k.
MapPicture spiral(int n, int k) {
  MapPicture p;
  p.objects = MatrixD(n, 3);
  for (int i = 0; i < n; ++i) {
    p.objects(i, 0) = i * std::cos(0.1 * i);
    p.objects(i, 1) = i * std::sin(0.1 * i);
    p.objects(i, 2) = 99;  // a third coordinate, not drawn
    p.colour_index.push_back(i % k);
  }
  for (int c = 0; c < k; ++c) p.legend.push_back("class " + std::to_string(c));
  return p;
}

}  // namespace

TEST(SvgMap, OneCirclePerObjectAndALegendEntryPerColour) {
  MapPicture p = spiral(50, 3);
  p.title = "Spiral";
  const std::string svg = render_map_svg(p);
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("<svg xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  EXPECT_EQ(count(svg, "<circle"), 50u);
  for (int c = 0; c < 3; ++c) {
    EXPECT_NE(svg.find(">class " + std::to_string(c) + "</text>"), std::string::npos);
    EXPECT_EQ(count(svg, "fill=\"" + palette_colour(c) + "\""), 1u + (c == 0 ? 17u : c == 1 ? 17u : 16u));
  }
  EXPECT_NE(svg.find(">Spiral</text>"), std::string::npos);
  EXPECT_EQ(svg.find("showing"), std::string::npos);
}

TEST(SvgMap, GreyObjectsGetAnUnlabelledEntry) {
  MapPicture p = spiral(4, 2);
  p.colour_index[3] = -1;
  const std::string svg = render_map_svg(p);
  EXPECT_EQ(count(svg, "fill=\"" + palette_colour(-1) + "\""), 2u);  // the dot and its legend swatch
  EXPECT_NE(svg.find("(no label)"), std::string::npos);
}

TEST(SvgMap, EscapesAllText) {
  MapPicture p = spiral(5, 2);
  p.title = "A & B <c>";
  p.subtitle = "it's \"quoted\"";
  p.legend = {"x<y", "tom & jerry"};
  p.classes = MatrixD(2, 2);
  p.classes(1, 0) = 1;
  p.class_names = {"<script>", "a\x01" "b"};
  const std::string svg = render_map_svg(p);
  EXPECT_NE(svg.find("A &amp; B &lt;c&gt;"), std::string::npos);
  EXPECT_NE(svg.find("it&apos;s &quot;quoted&quot;"), std::string::npos);
  EXPECT_NE(svg.find("x&lt;y"), std::string::npos);
  EXPECT_NE(svg.find("tom &amp; jerry"), std::string::npos);
  EXPECT_NE(svg.find("&lt;script&gt;"), std::string::npos);
  EXPECT_NE(svg.find(">a b</text>"), std::string::npos);
  EXPECT_EQ(svg.find("<script>"), std::string::npos);
  EXPECT_EQ(svg.find("x<y"), std::string::npos);
  EXPECT_EQ(svg.find('\x01'), std::string::npos);
}

// Whatever bytes a name holds (names also come from the API, unchecked), the file is well-formed
// XML 1.0: invalid UTF-8 and the non-characters U+FFFE/U+FFFF become U+FFFD, controls spaces.
TEST(SvgMap, AnyNameGivesValidUtf8AndXmlCharacters) {
  MapPicture p = spiral(5, 2);
  p.legend = {"caf\xE9", "\xEF\xBF\xBF|\xEF\xBF\xBE|\xC3\xA9|\x1F|\xED\xA0\x80"};
  p.title = std::string("cut \xE2\x82");
  const std::string svg = render_map_svg(p);
  for (size_t i = 0; i < svg.size();) {
    const size_t n = orrery::io::utf8_length(svg, i);
    ASSERT_NE(n, 0u) << "invalid UTF-8 at byte " << i;
    i += n;
  }
  EXPECT_EQ(svg.find("\xEF\xBF\xBF"), std::string::npos);
  EXPECT_EQ(svg.find("\xEF\xBF\xBE"), std::string::npos);
  EXPECT_NE(svg.find(">caf\xEF\xBF\xBD</text>"), std::string::npos);
  EXPECT_NE(svg.find("\xEF\xBF\xBD|\xEF\xBF\xBD|\xC3\xA9| |\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD<"), std::string::npos);
}

TEST(SvgMap, ClassesAreLabelledDiamondsWithAHalo) {
  MapPicture p = spiral(20, 4);
  p.classes = MatrixD(4, 2);
  for (int k = 0; k < 4; ++k) p.classes(k, 0) = 3.0 * k;
  p.class_names = {"ant", "bee", "cat", "dog"};
  const std::string svg = render_map_svg(p);
  EXPECT_EQ(count(svg, "<path"), 4u);
  EXPECT_EQ(count(svg, "<circle"), 20u);
  EXPECT_EQ(count(svg, "paint-order=\"stroke\""), 4u);
  for (const char* name : {">ant<", ">bee<", ">cat<", ">dog<"}) EXPECT_NE(svg.find(name), std::string::npos) << name;
  // Without names, classes take the legend's.
  p.class_names.clear();
  EXPECT_NE(render_map_svg(p).find(">class 3</text>"), std::string::npos);
}

TEST(SvgMap, LargeMapsAreSubsampledDeterministically) {
  MapPicture p = spiral(1000, 5);
  p.subtitle = "PE, 5 classes";
  p.max_points = 100;
  p.seed = 42;
  const std::string svg = render_map_svg(p);
  EXPECT_EQ(count(svg, "<circle"), 100u);
  EXPECT_NE(svg.find("PE, 5 classes; showing 100 of 1000 points"), std::string::npos);
  EXPECT_EQ(render_map_svg(p), svg);
  p.seed = 43;
  EXPECT_NE(render_map_svg(p), svg);
  p.max_points = 0;
  EXPECT_EQ(count(render_map_svg(p), "<circle"), 1000u);
}

TEST(SvgMap, AxesShareOneScale) {
  // x spans 10 and y spans 1: with equal scales the map is 800 px wide (900 less two 50 px margins),
  // centred on (5, 0.5), and y runs only 80 px.
  MapPicture p;
  p.objects = MatrixD(3, 2);
  p.objects.data = {0, 0, 10, 0, 0, 1};
  const std::string svg = render_map_svg(p);
  EXPECT_NE(svg.find("cx=\"50.0\" cy=\"560.0\""), std::string::npos) << svg;
  EXPECT_NE(svg.find("cx=\"850.0\" cy=\"560.0\""), std::string::npos) << svg;
  EXPECT_NE(svg.find("cx=\"50.0\" cy=\"480.0\""), std::string::npos) << svg;
}

TEST(SvgMap, DegenerateMapsStillRender) {
  MapPicture one;
  one.objects = MatrixD(1, 2, 3.0);
  EXPECT_EQ(count(render_map_svg(one), "<circle"), 1u);
  EXPECT_EQ(count(render_map_svg(MapPicture{}), "<circle"), 0u);
}

TEST(SvgMap, InconsistentPicturesAreInternalErrors) {
  MapPicture p = spiral(5, 2);
  p.colour_index.pop_back();
  EXPECT_THROW(render_map_svg(p), orrery::Error);
  p = spiral(5, 2);
  p.objects(2, 1) = NAN;
  EXPECT_THROW(render_map_svg(p), orrery::Error);
  p = spiral(5, 2);
  p.objects = MatrixD(5, 1);
  EXPECT_THROW(render_map_svg(p), orrery::Error);
}

TEST(SvgPalette, TwentyDistinctColoursThenCycles) {
  std::set<std::string> seen;
  for (int i = 0; i < 20; ++i) seen.insert(palette_colour(i));
  EXPECT_EQ(seen.size(), 20u);
  EXPECT_EQ(seen.count(palette_colour(-1)), 0u);
  EXPECT_EQ(palette_colour(24), palette_colour(0));
  EXPECT_EQ(palette_colour(0).size(), 7u);
}
