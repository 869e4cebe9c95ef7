// The orrery command line; the commands live in cli/commands.cpp.
#include "cli/commands.hpp"

int main(int argc, char** argv) { return orrery::cli::main(argc, argv); }
