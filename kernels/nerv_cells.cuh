// NeRV's truncated cost on the GPU (math/nerv_cells.hpp; the CPU's host/cpu/nerv_cells.cpp runs the
// same steps): the CUDA NeRV engine's evaluation when params.pairs is approximate.
#pragma once
#include <memory>
#include <vector>

#include "orrery/affinity.hpp"

namespace orrery::cuda {

class NervCellsDevice {
 public:
  // Uploads P's lists, their transpose, the floors and beta (float); dim 2 or 3.
  NervCellsDevice(const SparseAffinity& P, const std::vector<double>& beta, double cutoff, int dim);
  ~NervCellsDevice();
  NervCellsDevice(const NervCellsDevice&) = delete;
  NervCellsDevice& operator=(const NervCellsDevice&) = delete;
  // E at the map y (N x D doubles on the device); dE/dy into grad (device, N x D) when given.
  double evaluate(const double* y, double lambda, double* grad);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace orrery::cuda
