// The grid's placement and cost model (orrery/interp_plan.hpp), shared by the CPU and CUDA grids.
#include "orrery/interp_plan.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "orrery/error.hpp"
#include "orrery/math/interp.hpp"

namespace orrery::interp {
namespace {

bool fft_friendly(long n) {
  for (long f : {2, 3, 5, 7})
    while (n % f == 0) n /= f;
  return n == 1;
}

}  // namespace

GridPlan plan_grid(const Bounds& b, int D, const InterpSettings& s, bool refuse) {
  const int p = s.nodes;
  GridPlan g;
  g.w = s.box_width;
  double widest = 0;
  for (int d = 0; d < D; ++d) widest = std::max(widest, b.hi[d] - b.lo[d]);
  const int min_boxes = s.min_boxes > 0 ? s.min_boxes : (D == 2 ? 32 : 12);
  while (widest < min_boxes * g.w && g.w > s.box_width * 0x1p-40) g.w *= 0.5;
  g.need.resize(static_cast<size_t>(D));
  for (int d = 0; d < D; ++d) {
    g.origin[d] = std::floor(b.lo[d] / g.w) * g.w;
    const double span = (b.hi[d] - g.origin[d]) / g.w;
    if (span * p + p > s.max_nodes_per_axis) {
      if (!refuse) {
        g.need.clear();
        return g;
      }
      input_error("interpolated repulsion: the map spans " + std::to_string(b.hi[d] - b.lo[d]) + " along axis " +
                  std::to_string(d) + ", more than " + std::to_string(s.max_nodes_per_axis) +
                  " grid nodes at box width " + std::to_string(g.w) + " and " + std::to_string(p) +
                  " nodes per box; use a larger params.interp_box or exact repulsion");
    }
    g.need[static_cast<size_t>(d)] = std::max(1, static_cast<int>(std::floor(span)) + 1);
  }
  return g;
}

int friendly_boxes(int n, int p) {
  while (!fft_friendly(2L * n * p)) ++n;
  return n;
}

double plan_cells(const GridPlan& g, int p) {
  if (g.need.empty()) return std::numeric_limits<double>::infinity();
  double cells = 1;
  for (int n : g.need) cells *= 2.0 * friendly_boxes(n, p) * p;
  return cells;
}

double grid_units(double cells, int D) { return (2 * D + 3) * cells * std::log2(std::max(cells, 2.0)); }

std::vector<index_t> trims_to_try(index_t N, double full_units) {
  std::vector<index_t> trims;
  if (full_units < 64.0 * static_cast<double>(N)) return trims;
  for (index_t t = 1; t <= N / 128; t *= 2) trims.push_back(t);
  return trims;
}

Bounds cheapest_bounds(const Bounds& full, const std::vector<Bounds>& candidates, const std::vector<index_t>& trims,
                       index_t N, int D, const InterpSettings& s, double& cells) {
  const int p = s.nodes;
  cells = plan_cells(plan_grid(full, D, s, false), p);
  double best_units = grid_units(cells, D);
  Bounds best = full;
  for (size_t q = 0; q < candidates.size(); ++q) {
    const double c = plan_cells(plan_grid(candidates[q], D, s, false), p);
    const double units =
        grid_units(c, D) + kPairUnits * 2.0 * static_cast<double>(2 * D * trims[q]) * static_cast<double>(N);
    if (units < best_units) best_units = units, best = candidates[q], cells = c;
  }
  return best;
}

bool cheaper_than_pairs(double cells, double units, index_t N) {
  const double n = static_cast<double>(N);
  return cells <= 0x1p27 && units < kPairUnits * n * n;
}

void self_kernel_tables(int D, int p, double h, double alpha, std::vector<double>& self_h, std::vector<double>& self_hs) {
  const int span = 2 * p - 1;
  self_h.assign(static_cast<size_t>(D == 2 ? span * span : span * span * span), 0.0);
  self_hs.assign(self_h.size(), 0.0);
  for (size_t q = 0; q < self_h.size(); ++q) {
    double tau = 0;
    for (int d = 0, rest = static_cast<int>(q); d < D; ++d, rest /= span) {
      const double o = rest % span - (p - 1);
      tau += h * h * o * o;
    }
    self_h[q] = math::tail_kernel_h(tau, alpha);
    self_hs[q] = math::tail_kernel_hs(tau, alpha);
  }
}

}  // namespace orrery::interp
