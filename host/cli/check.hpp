// `orrery check CONFIG.json [--device LIST] [--iterations N] [--out FILE] [--quiet]`: the config's
// input through its method's primitives and a few iterations on the CPU reference and on every
// device under test, compared under the parity suite's named tolerances (check.cpp).
#pragma once
#include <string>
#include <vector>

namespace orrery::cli {

// Returns the exit code: 0 when every device agrees (or none is there to check), 3 otherwise.
int cmd_check(const std::vector<std::string>& args);

}  // namespace orrery::cli
