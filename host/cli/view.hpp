// `orrery view RUN_DIR`: the interactive map of a finished run's directory (run/map_page.hpp).
#pragma once
#include <string>
#include <vector>

namespace orrery::cli {

// orrery view RUN_DIR [-o FILE] [--quiet]: writes the page (default RUN_DIR/map.html).
int cmd_view(const std::vector<std::string>& args);

}  // namespace orrery::cli
