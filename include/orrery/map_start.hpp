// params.init of the neighbour-embedding methods (hssne, nerv, snerv): the map a fit starts from.
#pragma once
#include <string>

namespace orrery {

// random: a seeded Gaussian; pca: the input vectors' principal components; spectral: the affinity
// graph's leading nontrivial eigenvectors (orrery/pca.hpp, spectral_start); given: an N x dim
// array file (or an in-memory array), taken as given.
enum class MapStart { random, pca, spectral, given };

// The start a params.init value names (anything but the three names is a path: `given`).
inline MapStart map_start(const std::string& init) {
  if (init == "random") return MapStart::random;
  if (init == "pca") return MapStart::pca;
  if (init == "spectral") return MapStart::spectral;
  return MapStart::given;
}

}  // namespace orrery
