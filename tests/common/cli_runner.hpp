// Runs the orrery binary from the source directory (configs use paths relative to it) and
// captures its exit code and its stdout and stderr together. The binary and the source directory
// come from the environment (ORRERY_CLI, ORRERY_SOURCE_DIR) when set, else from the build that
// compiled the test: a test binary copied to another machine (scripts/gpu_check.sh runs test_cuda
// from a copy of the build, beside the source tree at another path) is told where they are.
#pragma once
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace orrery::test {

struct Outcome {
  int code;
  std::string output;
};

// The environment variable `name` when set and not empty, else `fallback`.
inline std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : std::string(fallback);
}

inline std::string source_dir() { return env_or("ORRERY_SOURCE_DIR", ORRERY_SOURCE_DIR); }
inline std::string cli_path() { return env_or("ORRERY_CLI", ORRERY_CLI); }

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
  return run_command("cd '" + source_dir() + "' && '" + cli_path() + "' " + args);
}

}  // namespace orrery::test
