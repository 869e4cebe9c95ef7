#pragma once
#include <string>

#include "orrery/quality.hpp"

namespace orrery::report {

// Line chart of trustworthiness, continuity, LCMC and 1 - MRRE (both) against K (log axis),
// from the report's curve (or its requested Ks when no curve was computed).
std::string render_quality_svg(const QualityReport& rep, const std::string& title);

}  // namespace orrery::report
