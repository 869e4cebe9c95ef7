// Runs the orrery binary from the source directory (configs use paths relative to it) and
// captures its exit code and its stdout and stderr together.
#pragma once
#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace orrery::test {

struct Outcome {
  int code;
  std::string output;
};

// Any shell command line, with stderr joined to stdout.
inline Outcome run_command(const std::string& command) {
  const std::string cmd = command + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

inline Outcome run_orrery(const std::string& args) {
  return run_command(std::string("cd '") + ORRERY_SOURCE_DIR + "' && '" + ORRERY_CLI + "' " + args);
}

}  // namespace orrery::test
