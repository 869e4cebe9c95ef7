// A picture of a 2-D map as one self-contained SVG file: objects as small translucent dots coloured
// by class, classes (or topics) as labelled diamonds, a legend and a title. Only the first two
// coordinate columns are drawn, with equal scales on both axes so distances look as they are.
#pragma once
#include <string>
#include <vector>

#include "orrery/types.hpp"

namespace orrery::report {

struct MapPicture {
  // N x D coordinates, D >= 2; the first two columns are drawn.
  MatrixD objects;
  // Colour per object: an index into the palette (and into `legend`), or -1 for grey. Empty means
  // every object takes palette colour 0.
  std::vector<int> colour_index;
  // Legend name per colour index; colour indices without a name are drawn but not listed.
  std::vector<std::string> legend;
  // K x D class/topic coordinates, or empty; drawn as white diamonds with a black outline.
  MatrixD classes;
  // Label per class; empty falls back to legend[k], then to the number k.
  std::vector<std::string> class_names;
  std::string title;
  std::string subtitle;
  // Above this many objects a seeded random subset is drawn and the subtitle says so; 0 draws all.
  index_t max_points = 20000;
  // Seeds the subset and the drawing order; the picture depends on nothing else.
  unsigned long long seed = 0;
};

// Throws Error(internal) when sizes disagree or a drawn coordinate is not finite.
std::string render_map_svg(const MapPicture& picture);

// Colour i of a qualitative palette of 24 distinguishable colours, cycling beyond; grey for i < 0.
// Returned as "#rrggbb".
std::string palette_colour(int i);

}  // namespace orrery::report
