// orrery::Error — the one error type. Bad input, broken invariants and CUDA failures
// all travel as this, with a message that names the file, row or config key involved.
#pragma once
#include <stdexcept>
#include <string>

namespace orrery {

enum class ErrorKind { input, internal, cuda };

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
};

// Convenience constructors; they read as the sentence they throw.
[[noreturn]] inline void input_error(const std::string& message) { throw Error(ErrorKind::input, message); }
[[noreturn]] inline void internal_error(const std::string& message) { throw Error(ErrorKind::internal, message); }

// Exit code the CLI uses for an error of this kind: 2 for bad input, 1 otherwise.
inline int exit_code(ErrorKind kind) { return kind == ErrorKind::input ? 2 : 1; }

}  // namespace orrery
