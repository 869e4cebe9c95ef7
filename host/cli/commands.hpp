#pragma once

namespace orrery::cli {

// Runs the command line; returns the process exit code (0 ok, 2 bad input, 1 other errors).
int main(int argc, char** argv);

}  // namespace orrery::cli
