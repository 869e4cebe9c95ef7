#pragma once
#include <string>
#include <vector>

#include "orrery/config.hpp"
#include "orrery/quality.hpp"

namespace orrery::cli {

// `orrery evaluate --data X --embedding Y [--labels L] [--k 5,10,20] ...`: prints a table,
// writes the JSON report and the quality-against-K chart.
int cmd_evaluate(const std::vector<std::string>& args);

// The report's JSON form, shared with `orrery run` reports.
json quality_json(const QualityReport& rep);

}  // namespace orrery::cli
