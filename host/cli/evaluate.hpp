#pragma once
#include <string>
#include <vector>


namespace orrery::cli {

// `orrery evaluate --data X --embedding Y [--labels L] [--k 5,10,20] ...`: prints a table,
// writes the JSON report and the quality-against-K chart.
int cmd_evaluate(const std::vector<std::string>& args);

}  // namespace orrery::cli
