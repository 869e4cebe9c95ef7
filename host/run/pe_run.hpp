#pragma once
#include "run/pe_config.hpp"
#include "orrery/run_control.hpp"

namespace orrery::pipeline {

// Runs a prepared PE configuration (prepare_pe): fit, evaluate, and write embedding, report and map as one
// atomic set. Progress goes to stderr unless quiet. Returns the report.
json run_pe(PePrepared prepared, bool quiet, RunControl* control = nullptr);

}  // namespace orrery::pipeline
