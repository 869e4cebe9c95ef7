// Pieces every method's run shares: timing, the report header, coordinate outputs.
#pragma once
#include <chrono>
#include <string>
#include <vector>

#include "cli/run_config.hpp"
#include "io/writers.hpp"
#include "orrery/backend.hpp"

namespace orrery::cli {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0);
std::string format_seconds(double s);  // "12.3s" or "4m05s"

// Report fields common to every run: orrery build, creation time, method, config file and echo,
// device, threads and seed.
json report_header(const RunConfig& run, const Backend& backend);

// Adds DIR/NAME.npy and/or DIR/NAME.csv (per output.format) holding M, and records the paths in
// outputs[NAME_npy] / outputs[NAME_csv]. CSV columns are x, y[, z] (or c0.. beyond 3 columns).
void add_coordinates(io::OutputSet& out, json& outputs, const RunConfig& run, const std::string& name,
                     const MatrixD& M);

std::vector<int> argmax_rows(const MatrixD& M);

}  // namespace orrery::cli
