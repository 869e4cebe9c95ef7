// Runs of PLSV: a corpus (UCI bag-of-words, SVMlight, Matrix Market or plain text) -> document and
// topic coordinates, the topics' word distributions, their top words and a map; or, with
// input.model, the fold-in of new documents into a saved model.
#pragma once
#include <string>

#include "cli/run_config.hpp"

namespace orrery::cli {

std::string validate_plsv(const RunConfig& run);
json run_plsv(const RunConfig& run, bool quiet);

}  // namespace orrery::cli
