// The quality report's JSON form (orrery::QualityReport), shared by run reports and `orrery evaluate`.
#pragma once
#include "orrery/config.hpp"
#include "orrery/quality.hpp"

namespace orrery::pipeline {

json quality_json(const QualityReport& rep);

// The largest standard error of the rank measures at any requested K (k-NN accuracy included).
double largest_standard_error(const QualityReport& rep);

}  // namespace orrery::pipeline
