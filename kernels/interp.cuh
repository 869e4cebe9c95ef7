// Interpolated repulsion on the device: the CPU grid's scheme (host/cpu/interp.cpp, orrery/interp.hpp)
// with the same plan (orrery/interp_plan.hpp: the same boxes, far points and cost model for the same
// map) and the same per-point arithmetic (math/interp.hpp), the transforms by cuFFT. Only kernels.cu
// families include this header.
#pragma once
#include <memory>

#include "orrery/interp.hpp"
#include "orrery/types.hpp"

namespace orrery::cuda {

class DeviceGrid {
 public:
  // A grid for maps of N points in D = 2 or 3 dimensions with tail alpha, on the current device.
  DeviceGrid(int dim, double alpha, const InterpSettings& settings, long long N);
  ~DeviceGrid();
  DeviceGrid(const DeviceGrid&) = delete;
  DeviceGrid& operator=(const DeviceGrid&) = delete;

  // The sums at the device map y (N x D doubles, row-major), self excluded, into `out` on the
  // device: 2 + D rows of N (h, hs, hsy_0, ..., hsy_{D-1}), as RepulsionGrid::sums with whole_h
  // false: the h row holds only what is each point's alone (minus its grid self term, plus its
  // exact sums with the far points), and *z_grid (host) the grid's share of Z, sum_n q_n (H * q)_n
  // from the charges' spectrum (Parseval); Z = *z_grid + sum_i h_i. With only_if_cheaper, a map
  // whose grid would cost more than the exact sums over all pairs (interp::cheaper_than_pairs)
  // returns false and leaves `out` untouched. A few O(1) values (the map's box, order statistics,
  // the far count, the energy's block sums) come to the host per call; the map stays on the device.
  bool sums(const double* y, double* out, bool only_if_cheaper, double* z_grid);

  // A frozen field for placing new points into a fixed map (RepulsionGrid::freeze / sums_at): the
  // charges of the N device points `reference` (N x D doubles) on a grid over their box widened by
  // `margin` map units on every side, scattered and convolved once; sums() replaces it.
  void freeze(const double* reference, double margin);
  // The sums of `count` device query points q (count x D doubles) over ALL reference points, by
  // interpolation alone (O(p^D) a point), into `out` on the device: 2 + D rows of count (h, hs,
  // hsy_0, ...). inside[a] = 0 marks a point outside the grid, whose sums are left 0 for the caller
  // to sum exactly. Asynchronous: nothing comes to the host.
  void sums_at(const double* q, long long count, double* out, unsigned char* inside) const;

  // Seconds per stage over every call, on the device's clock (events recorded between the stages,
  // read here: this waits for the last call's end, the calls themselves do not).
  struct Timings {
    double grid = 0, scatter = 0, fft = 0, gather = 0, far = 0;
    int calls = 0;
    long long far_points = 0;  // at the last call
  };
  Timings timings() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace orrery::cuda
