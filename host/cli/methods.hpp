// The methods a run configuration can name. Adding a method = one entry in methods.cpp plus its
// own cli/<method>_run.cpp; the shared keys (output, device, threads, seed) are read for it.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "cli/run_config.hpp"
#include "orrery/config.hpp"
#include "orrery/run_control.hpp"

namespace orrery::cli {

struct ParamTable {
  std::string name;  // as given to `orrery defaults NAME`
  std::function<std::vector<FieldInfo>()> describe;
};

struct MethodEntry {
  const char* name;
  const char* summary;
  std::vector<ParamTable> tables;  // the method's own table first, then sub-models
  // Reads the method's keys and its input files; returns a one-line description for `validate`.
  std::function<std::string(const RunConfig&)> validate;
  // Fits and writes the outputs; returns the report. The control (null: none) lets a long fit
  // stop and resume (cli/checkpoint.hpp).
  std::function<json(const RunConfig&, bool quiet, RunControl* control)> run;
  // The files a run may write in output.dir (run_common.hpp: run_outputs), checked against the
  // inputs before anything is read or fitted.
  std::vector<std::string> outputs;
};

const std::vector<MethodEntry>& methods();
const MethodEntry* find_method(const std::string& name);

}  // namespace orrery::cli
