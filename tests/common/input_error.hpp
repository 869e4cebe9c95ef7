// Runs a reader (or any call) that must fail on bad input, and returns the message it gave.
#pragma once
#include <gtest/gtest.h>

#include <exception>
#include <functional>
#include <string>

#include "orrery/error.hpp"

namespace orrery::test {

// Expects an orrery::Error of kind input (not a failed allocation or another exception).
inline std::string input_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input) << e.what();
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected an orrery::Error, got " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected an orrery::Error";
  return "";
}

}  // namespace orrery::test
