// The gpu suite's parameterised parity test: one TEST_P (parity.cpp) over every family's registry of
// cases; each family's file instantiates it with its cases (INSTANTIATE_PARITY).
#pragma once
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/parity.hpp"

// In the global namespace: gtest pastes the suite's name into identifiers.
class Parity : public ::testing::TestWithParam<orrery::test::ParityCase> {};

inline std::string parity_name(const ::testing::TestParamInfo<orrery::test::ParityCase>& info) {
  return info.param.name;
}

// Each family's registry (test_<family>_parity.cpp).
namespace orrery::test {
std::vector<ParityCase> pe_parity_cases();
std::vector<ParityCase> hssne_parity_cases();
std::vector<ParityCase> knn_parity_cases();
std::vector<ParityCase> knn_gemm_parity_cases();  // test_knn_parity.cpp
std::vector<ParityCase> nerv_parity_cases();
std::vector<ParityCase> place_parity_cases();  // test_place_parity.cpp
std::vector<ParityCase> plsv_parity_cases();
std::vector<ParityCase> quality_parity_cases();
std::vector<ParityCase> snerv_parity_cases();
}  // namespace orrery::test

#define INSTANTIATE_PARITY(Family, cases) INSTANTIATE_TEST_SUITE_P(Family, Parity, ::testing::ValuesIn(cases), parity_name)
