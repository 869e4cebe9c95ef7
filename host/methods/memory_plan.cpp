// The methods' memory plans (orrery/memory_plan.hpp): what each step of a run allocates, in the
// arrays' own sizes.
#include "orrery/memory_plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "orrery/affinity.hpp"
#include "orrery/error.hpp"

namespace orrery {

double MemoryPlan::host_peak() const {
  double s = kMemoryMargin;
  for (const auto& i : items) s += i.host_bytes;
  return s;
}

double MemoryPlan::device_peak() const {
  double s = 0.0;
  for (const auto& i : items) s += i.device_bytes;
  return s;
}

std::string format_bytes(double bytes) {
  char buf[64];
  if (bytes >= 1024.0 * 1024 * 1024) std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / (1024.0 * 1024 * 1024));
  else std::snprintf(buf, sizeof buf, "%.0f MiB", std::ceil(bytes / (1024.0 * 1024)));
  return buf;
}

void check_memory_plan(const MemoryPlan& plan, const MemoryInfo& available, bool has_device) {
  const double host = plan.host_peak() + (has_device ? 0.0 : plan.device_peak());
  const double device = has_device ? plan.device_peak() : 0.0;
  const bool host_short = host > available.host_bytes, device_short = has_device && device > available.device_bytes;
  if (!host_short && !device_short) return;
  // The largest item where memory is short names the key to change.
  const MemoryItem* worst = nullptr;
  double worst_bytes = -1.0;
  for (const auto& i : plan.items) {
    const double b = device_short && !host_short ? i.device_bytes : i.host_bytes + (has_device ? 0.0 : i.device_bytes);
    if (b > worst_bytes) worst_bytes = b, worst = &i;
  }
  std::string msg = device_short && !host_short
                        ? "this run needs about " + format_bytes(device) + " of GPU memory, but " +
                              format_bytes(available.device_bytes) + " is free"
                        : "this run needs about " + format_bytes(host) + " of memory, but " +
                              format_bytes(available.host_bytes) + " is available";
  if (worst) msg = worst->key + ": " + msg + "; the largest part is " + worst->what + " (" + format_bytes(worst_bytes) + "): " + worst->remedy;
  input_error(msg);
}

namespace {

double sq(index_t n) { return static_cast<double>(n) * static_cast<double>(n); }

}  // namespace

MemoryPlan plan_neighbor_embedding(const NePlanInput& in, bool device) {
  const index_t N = in.points;
  const double n = static_cast<double>(N), nn = sq(N);
  const double k = std::min(n - 1.0, static_cast<double>(sparse_neighbors(in.perplexity)));
  const std::string fewer = " or fewer points (input.limit)";
  MemoryPlan p;
  if (in.method == NeMethod::snerv) {
    p.add({"the learning-metric distances, N^2 doubles", "method", "supervised NeRV needs every pair's distance: use" + fewer,
           8.0 * nn, device ? 8.0 * nn : 0.0});
  }
  if (in.dense) {
    p.add({"dense affinities: P and its conditional rows, 2 N^2 doubles", "input.affinities",
           "use \"sparse\" or \"auto\" (each point's ceil(3 perplexity) nearest neighbors)" + fewer, 16.0 * nn, 0.0});
  } else {
    // kNN graph (index and distance), conditional rows (column and value), symmetrised P (up to 2 N k).
    p.add({"sparse affinities: the neighbor lists and P, about 64 N k bytes", "input.perplexity",
           "a smaller perplexity (k = ceil(3 perplexity) neighbors)" + fewer, 64.0 * n * k, 0.0});
  }
  if (in.method == NeMethod::hssne) {
    if (in.mixing)
      p.add({"semi-supervised mixing: a second dense P, N^2 doubles", "params.rho", "set it to 0" + fewer, 8.0 * nn, 0.0});
    if (in.dense && device)
      p.add({"the HSSNE engine's P, N^2 floats on the GPU (and staged on the host)", "input.affinities",
             "use \"sparse\"" + fewer, 4.0 * nn, 4.0 * nn});
    if (!in.dense && device) p.add({"the HSSNE engine's lists", "input.perplexity", "a smaller perplexity" + fewer, 0.0, 32.0 * n * k});
    if (!in.dense && !device && (in.grid_engine || in.tree_engine))
      p.add({std::string("the ") + (in.grid_engine ? "grid" : "tree") +
                 " engine's copy of P in breadth-first order, up to 16 N k bytes (32-bit columns, float values)" +
                 (in.ranks > 1 ? ", this rank's 1/" + std::to_string(in.ranks) + " of it" : ""),
             "input.perplexity", "a smaller perplexity" + fewer, 16.0 * n * k / std::max(1, in.ranks), 0.0});
    if (!in.dense && !device && in.grid_engine) {
      // per point: D p stencil weights, D centred coordinates, cell, order and sorted cell, the sums h, hs
      p.add({"the interpolation grid's per-point arrays, up to N (24 p + 64) bytes", "params.interp_nodes",
             "fewer nodes per box (p)" + fewer, n * (24.0 * in.grid_nodes + 64.0), 0.0});
    }
    // order, scratch and the sorted coordinates (16 + 8 D bytes a point), the cells (~N / 16 of 64
    // bytes): the tree engine's, or auto's beside the grid
    if (!in.dense && !device && (in.tree_engine || (in.grid_engine && in.repulsion_auto)))
      p.add({"the Barnes-Hut tree, about 48 N bytes", "params.repulsion", "\"interpolated\" (the grid alone)" + fewer,
             48.0 * n, 0.0});
    if (!in.dense && device && in.grid_engine)
      p.add({"the interpolation grid's per-point arrays on the GPU, up to N (24 p + 64) bytes", "params.interp_nodes",
             "fewer nodes per box (p)" + fewer, 0.0, n * (24.0 * in.grid_nodes + 64.0)});
  } else {
    if (in.dense && device)
      p.add({"the NeRV engine's P and log P and their transposes, 4 N^2 floats on the GPU (2 staged on the host)",
             "input.affinities", "use \"sparse\"" + fewer, 8.0 * nn, 16.0 * nn});
    else if (in.dense)
      p.add({std::string("the NeRV engine's ") + (in.nerv_double ? "log P, N^2 doubles" : "P and log P, 2 N^2 floats"),
             "input.affinities", "use \"sparse\"" + fewer, 8.0 * nn, 0.0});
    else if (in.nerv_approximate)
      // the lists in float and their transpose (p and log p copied into its order), with 4-byte
      // columns on the CPU (24 bytes an entry) and 8-byte ones on the GPU (32), about 60 values per
      // point (coordinates by dimension in two orders, the rows' scalars in both, permutation, sums
      // and gradient parts; on the CPU 8 more, the rows' values packed) and up to 4 cells per point
      // (start, radius, reach)
      p.add({std::string("the approximate NeRV engine's lists, per-point arrays and cell grid, about N (") +
                 (device ? "32 k + 400" : "24 k + 432") + ") bytes",
             "input.perplexity", "a smaller perplexity" + fewer, device ? 24.0 * n * k : n * (24.0 * k + 432.0),
             device ? n * (32.0 * k + 400.0) : 0.0});
    else
      p.add({"the NeRV engine's rows and their transposes" +
                 std::string(device ? "" : ", and 64 gradient accumulators of N D floats"),
             "input.perplexity", "a smaller perplexity" + fewer,
             device ? 24.0 * n * k : 16.0 * n * k + 64.0 * 4.0 * 3.0 * n, device ? 48.0 * n * k : 0.0});
  }
  return p;
}

MemoryPlan plan_pe(index_t objects, index_t classes, bool device) {
  MemoryPlan p;
  const double nk = static_cast<double>(objects) * static_cast<double>(classes);
  if (device)
    p.add({"the PE engine's posteriors, N K floats on the GPU (staged on the host)", "input.limit",
           "fewer objects (input.limit), or device \"cpu\" (which reads P in place)", 4.0 * nk, 4.0 * nk});
  return p;
}

MemoryPlan plan_plsv(index_t docs, index_t words, int topics, index_t nonzeros, bool device, bool extrapolation) {
  MemoryPlan p;
  const double nz = static_cast<double>(docs) * topics, wz = static_cast<double>(words) * topics,
               nnz = static_cast<double>(nonzeros);
  const std::string remedy = "fewer topics (params.topics) or a smaller vocabulary (input.text.max_vocab)";
  // The vocabulary's arrays are named apart: W is the corpus's largest word id (or what its header
  // declares), which a sparse file can set far above the words it uses.
  const std::string fewer_ids = "a corpus of fewer word ids (W is its vocabulary size: an svmlight file's largest word "
                            "id, or what a header or word list declares) or fewer topics (params.topics)";
  // Start (PE on the documents' topic posteriors) and the engine: P, R (N Z), u and the word-major
  // index (nnz); theta and S (W Z).
  p.add({"the start's document-topic posteriors, N Z doubles", "params.topics", remedy, 8.0 * nz, 0.0});
  // SQUAREM's cycle (host/methods/plsv.cpp) at its peak, in a jump, on the host: the two earlier
  // points and the one to return to, the three thetas' logarithms, the new point's theta and the
  // copy the engine hands out (8 W Z doubles, counted with the word arrays, which W sets), and the
  // documents of those points (N D each, D <= 3)
  const double squarem_wz = extrapolation ? 64.0 * wz : 0.0;
  const std::string squarem_what = extrapolation ? " and SQUAREM's copies of theta and its logarithms (8 W Z doubles)" : "";
  if (device) {
    p.add({"the PLSV engine's document arrays (N Z and per nonzero) in float on the GPU", "params.topics", remedy,
           16.0 * nnz, 8.0 * nz + 24.0 * nnz});
    p.add({"the PLSV engine's word arrays, theta and its statistics (W Z) in float on the GPU" + squarem_what,
           "input.corpus", fewer_ids, 4.0 * wz + squarem_wz, 8.0 * wz});
  } else {
    p.add({"the PLSV engine's document arrays (N Z and per nonzero) in double", "params.topics", remedy,
           16.0 * nz + 24.0 * nnz, 0.0});
    p.add({"the PLSV engine's word arrays, theta (W Z doubles) and its statistics (W Z, 24 bytes each in fixed "
           "point)" + squarem_what,
           "input.corpus", fewer_ids, 32.0 * wz + squarem_wz, 0.0});
  }
  if (extrapolation)
    p.add({"SQUAREM's stored document coordinates (4 N D doubles at a jump)", "params.extrapolation",
           "params.extrapolation none", 8.0 * 4.0 * 3.0 * static_cast<double>(docs), 0.0});
  return p;
}

}  // namespace orrery
