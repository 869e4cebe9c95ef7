// The interactive map's data (report/map_page.hpp): base64 against RFC 4648's vectors, the embedded
// object decoded back to the map's values, names that cannot close the page's script, and refusals
// of inconsistent pages. What the page does with the data is tested in a browser (tests/viewer).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "orrery/error.hpp"
#include "report/map_page.hpp"

namespace orrery::report {
namespace {

std::string unbase64(const std::string& s) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
  };
  std::string out;
  unsigned acc = 0;
  int bits = 0;
  for (char c : s) {
    const int v = value(c);
    if (v < 0) break;
    acc = (acc << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return out;
}

MapPage small_page() {
  MapPage p;
  p.method = "pe";
  p.title = "t";
  p.points = MatrixD(3, 2);
  const double xy[] = {0.5, -1.25, 1e-8, 3.0, -7.0, 123456.789};
  for (int i = 0; i < 6; ++i) p.points.data[static_cast<size_t>(i)] = xy[i];
  p.colour_by = "label";
  p.group = {1, -1, 0};
  p.groups = {"a", "b"};
  p.names = {"x", "</script><script>alert(1)</script>", "<!--<script>"};
  p.marker_kind = "class";
  p.markers = MatrixD(2, 2);
  p.marker_names = {"A", "B"};
  p.top_m = 2;
  p.top_index = {1, 0, 0, 1, 1, 0};
  p.top_prob = {0.75f, 0.25f, 1.0f, 0.0f, 0.5f, 0.5f};
  return p;
}

TEST(MapPage, Base64MatchesRfc4648) {
  EXPECT_EQ(base64(""), "");
  EXPECT_EQ(base64("f"), "Zg==");
  EXPECT_EQ(base64("fo"), "Zm8=");
  EXPECT_EQ(base64("foo"), "Zm9v");
  EXPECT_EQ(base64("foob"), "Zm9vYg==");
  EXPECT_EQ(base64("fooba"), "Zm9vYmE=");
  EXPECT_EQ(base64("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64(std::string("\xff\xfe\x00", 3)), "//4A");
}

TEST(MapPage, DataDecodesToTheMapsValues) {
  const MapPage p = small_page();
  const json d = map_page_data(p);
  EXPECT_EQ(d["n"], 3);
  EXPECT_EQ(d["dim"], 2);
  const std::string coords = unbase64(d["coords"].get<std::string>());
  ASSERT_EQ(coords.size(), 6u * 4u);
  for (size_t i = 0; i < 6; ++i) {
    float v;
    std::memcpy(&v, coords.data() + 4 * i, 4);
    EXPECT_EQ(v, static_cast<float>(p.points.data[i])) << i;
  }
  const std::string groups = unbase64(d["group_of"].get<std::string>());
  ASSERT_EQ(groups.size(), 6u);
  std::uint16_t g[3];
  std::memcpy(g, groups.data(), 6);
  EXPECT_EQ(g[0], 1);
  EXPECT_EQ(g[1], 65535);  // no group
  EXPECT_EQ(g[2], 0);
  const std::string prob = unbase64(d["top"]["prob"].get<std::string>());
  ASSERT_EQ(prob.size(), 6u);
  EXPECT_EQ(static_cast<unsigned char>(prob[0]), 191);  // round(0.75 * 255)
  EXPECT_EQ(static_cast<unsigned char>(prob[2]), 255);
  EXPECT_EQ(static_cast<unsigned char>(prob[3]), 0);
  EXPECT_EQ(d["names"][1], p.names[1]);
  EXPECT_EQ(d["palette"].size(), 24u);
  EXPECT_FALSE(d.contains("quality"));
}

TEST(MapPage, PageEmbedsTheDataOnceAndNoNameReachesTheHtmlParser) {
  const MapPage p = small_page();
  const std::string& tpl = map_viewer_template();
  const size_t token = tpl.find("/*ORRERY_DATA*/null");
  ASSERT_NE(token, std::string::npos);
  EXPECT_EQ(tpl.find("/*ORRERY_DATA*/null", token + 1), std::string::npos);
  const std::string html = render_map_html(p);
  const std::string before = tpl.substr(0, token), after = tpl.substr(token + std::strlen("/*ORRERY_DATA*/null"));
  ASSERT_EQ(html.compare(0, before.size(), before), 0);
  ASSERT_EQ(html.compare(html.size() - after.size(), after.size(), after), 0);
  const std::string data = html.substr(before.size(), html.size() - before.size() - after.size());
  EXPECT_EQ(data.find('<'), std::string::npos);  // "\u003c" instead: the same JSON string
  EXPECT_EQ(json::parse(data), map_page_data(p));
}

TEST(MapPage, InconsistentPagesAreRefused) {
  MapPage p = small_page();
  p.group = {0, 5, 0};  // beyond the groups
  EXPECT_THROW(map_page_data(p), Error);
  p = small_page();
  p.names.pop_back();
  EXPECT_THROW(map_page_data(p), Error);
  p = small_page();
  p.top_index[1] = 2;  // beyond the markers
  EXPECT_THROW(map_page_data(p), Error);
  p = small_page();
  p.points(1, 1) = std::nan("");
  EXPECT_THROW(map_page_data(p), Error);
  p = small_page();
  p.points = MatrixD(3, 4);
  EXPECT_THROW(map_page_data(p), Error);
}

}  // namespace
}  // namespace orrery::report
