#include "cli/commands.hpp"

#include <iostream>

namespace orrery::cli {

int main(int, char**) {
  std::cerr << "error: not implemented yet\n";
  return 1;
}

}  // namespace orrery::cli
