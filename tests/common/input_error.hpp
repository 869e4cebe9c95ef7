// The message of the input error a call raises, for tests of bad input.
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "orrery/error.hpp"

namespace orrery::test {

// Runs f, expects an orrery::Error of kind input and returns its message ("" and a failure when
// f raises none).
inline std::string input_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected an orrery::Error";
  return "";
}

}  // namespace orrery::test
