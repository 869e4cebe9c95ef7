#pragma once
#include <memory>
#include <vector>

#include "orrery/backend.hpp"

namespace orrery::cuda {

// PE on the current CUDA device: P uploaded once as float, R resident for the whole fit.
std::unique_ptr<PeEngine> make_pe_engine(const MatrixD& P, const std::vector<double>& log_priors, int dim,
                                         double eta_r);

}  // namespace orrery::cuda
