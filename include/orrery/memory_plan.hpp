// Memory is planned, not discovered (DESIGN.md, Numbers): before its large allocations a run adds
// up what each step will hold at its peak, on the host and on the backend's device, compares it with
// what the backend says is available, and refuses with a clear message (an input error naming the
// size, the config key that causes it and what to change) instead of failing with bad_alloc after
// minutes. The estimates count the O(N^2), O(N k) and O(N K) arrays a method allocates (what the
// input files already hold is in use, so it is not counted again); small and O(N D) arrays are
// covered by a fixed margin.
#pragma once
#include <string>
#include <vector>

#include "orrery/backend.hpp"
#include "orrery/types.hpp"

namespace orrery {

// One array (or group of arrays) of a run.
struct MemoryItem {
  std::string what;  // "dense affinities: P and its conditional rows, 2 N^2 doubles"
  std::string key;   // the config key that decides it: "input.affinities"
  std::string remedy;  // what to change: "use \"sparse\" (or \"auto\")"
  double host_bytes = 0.0;
  double device_bytes = 0.0;  // 0 on the CPU backend (its engines live in host memory)
};

struct MemoryPlan {
  std::vector<MemoryItem> items;
  double host_peak() const;
  double device_peak() const;
  void add(const MemoryItem& item) { items.push_back(item); }
};

// Bytes held at once beyond the items: O(N D) vectors, row buffers, the report (fixed).
inline constexpr double kMemoryMargin = 64.0 * 1024 * 1024;

// Throws an input error when the plan does not fit in `available`: names the peak, what is
// available, and the largest item's key and remedy. On a backend without a device (device_bytes 0
// available) the items' device bytes count as host bytes.
void check_memory_plan(const MemoryPlan& plan, const MemoryInfo& available, bool has_device);

// "1.23 GiB", "456 MiB".
std::string format_bytes(double bytes);

// Plans of the methods' large arrays. `device`: the backend holds its engines on a device (CUDA);
// they then count there, and their host staging copies on the host.
//
// Neighbor embedding from N points: affinities (dense: P and the conditional rows, N^2 doubles
// each; sparse: each point's k = ceil(3 perplexity) neighbors in CSR, the symmetrised P up to 2 N k
// entries), and the engine (HSSNE: dense P read in place on the CPU, N^2 floats on a device; NeRV:
// P and log P, in float or double on the CPU, both and their transposes in float on a device).
// `metric`: supervised NeRV's N x N learning-metric distances (double; and on the device).
enum class NeMethod { hssne, nerv, snerv };
struct NePlanInput {
  NeMethod method = NeMethod::hssne;
  index_t points = 0;
  bool dense = true;
  double perplexity = 0.0;  // required: the run's (plan_ne_run sets it)
  bool nerv_double = false;  // NeRV's CPU arithmetic is double
  bool nerv_approximate = false;  // NeRV's truncated cost (params.pairs): O(N) per-point arrays and a cell grid
  bool mixing = false;       // HSSNE's semi-supervised mixing: a second N^2 P
  bool from_distances = false;  // input is an N x N distance matrix (already read)
  // HSSNE with interpolated repulsion: on the CPU a renumbered copy of P; on either device the
  // grid's per-point arrays (weights of grid_nodes per axis, keys, orders, far-point lists)
  bool grid_engine = false;
  bool tree_engine = false;  // HSSNE's repulsion tree (the CPU engine's tree at every map)
  bool repulsion_auto = false;  // HSSNE's repulsion auto: the CPU engine may also build a tree
  int grid_nodes = 4;
  // The ranks of a sharded run: the CPU engine's renumbered copy of P keeps only this rank's rows
  // (1 / ranks of it); everything else is planned whole on every rank.
  int ranks = 1;
};
MemoryPlan plan_neighbor_embedding(const NePlanInput& in, bool device);

// PE on N objects and K classes: P in float on a device (its staging copy on the host).
MemoryPlan plan_pe(index_t objects, index_t classes, bool device);

// PLSV on N documents, W words, Z topics and nnz nonzeros: the CPU engine's doubles (X, P, R:
// N Z; theta and its statistics: W Z; u: nnz; the word-major index), or the device's floats; with
// `extrapolation` (a fit with params.extrapolation squarem) the host copies its cycle keeps.
MemoryPlan plan_plsv(index_t docs, index_t words, int topics, index_t nonzeros, bool device, bool extrapolation = false);

}  // namespace orrery
