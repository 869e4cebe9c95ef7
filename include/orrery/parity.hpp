// How a device's results are compared with the CPU reference (DESIGN.md, rule 4), for the parity
// suite (tests/cuda) and `orrery check` alike: one comparison and one table of named tolerances,
// each with the reason for its size.
//
// An output agrees when every entry satisfies |device - cpu| <= rel |cpu| + abs + scaled max|cpu|
// (the last term for entries that cancel, measured against the output's largest), no entry is NaN,
// and an infinity on one side is matched by the same infinity on the other; the normalised mean
// squared error NMSE = sum (device - cpu)^2 / sum cpu^2 is reported beside the worst relative error
// and, where the tolerance bounds it, checked too.
#pragma once
#include <string>
#include <vector>

#include "orrery/types.hpp"

namespace orrery {

struct Tolerance {
  const char* name;    // "hssne.sums": the primitive's output it applies to
  double rel = 0.0;    // of each entry's own size
  double abs = 0.0;    // absolute
  double scaled = 0.0;  // of the output's largest |entry|
  double nmse = 0.0;   // bound on NMSE; 0 = not checked
  const char* reason = "";
};

// The named tolerances (parity.cpp lists each with its reason). Exact outputs (integers, and
// values whose arithmetic is the same on both) have every bound 0.
const Tolerance& tolerance(const std::string& name);
const std::vector<Tolerance>& tolerances();

struct Agreement {
  size_t count = 0;
  size_t failed = 0;            // entries outside the tolerance, or non-finite mismatches
  size_t nonfinite = 0;         // of which non-finite on one side (or NaN on both)
  double max_rel_error = 0.0;   // max |device - cpu| / max(|cpu|, tiny)
  double nmse = 0.0;
  size_t worst = 0;             // the first failing entry, else the largest relative error
  double cpu_value = 0.0, device_value = 0.0;  // at `worst`
  bool size_mismatch = false;
  bool nmse_exceeded = false;   // NMSE above the tolerance's bound
  bool ok() const { return !size_mismatch && failed == 0 && !nmse_exceeded; }
  // "hssne.sums h (case): 3 of 1337 entries disagree; first at 12: cpu 1.5 device 1.7 (allowed 3e-5);
  // max rel error 0.13, NMSE 1e-3" or "... agree: max rel error 2e-7, NMSE 1e-14".
  std::string describe(const std::string& what) const;
};

// `scale` is what tol.scaled multiplies: the output's largest |cpu| entry by default (scale < 0),
// or another output's size where that is what the entries' rounding follows.
Agreement compare(const std::vector<double>& cpu, const std::vector<double>& device, const Tolerance& tol,
                  double scale = -1.0);
// One value.
Agreement compare(double cpu, double device, const Tolerance& tol, double scale = -1.0);

// One compared output of a primitive.
struct Comparison {
  std::string output;     // "sums h after the steps"
  std::string tolerance;  // its name in tolerances()
  Agreement agreement;
};
using Comparisons = std::vector<Comparison>;

// Engine comparisons shared by the gpu suite and `orrery check`: the same operations on the
// reference engine and the device's, from the same state, every output compared under its named
// tolerance. They leave both engines in the state the operations reach.
class PeEngine;
class HssneEngine;
class NervEngine;
class PlsvEngine;
class PlacementEngine;
struct PlacementParams;
// PE: objective at (R, Phi), the Newton sweep's objective, R and class gradient, the objective after.
Comparisons compare_pe_engines(PeEngine& ref, PeEngine& dev, const MatrixD& R, const std::vector<double>& phi);
// HSSNE: the sums and totals at Y, then a fixed-point proposal with exaggeration, a damping, the
// accepted trial, a proposal with momentum, a gradient step, and the sums after.
Comparisons compare_hssne_engines(HssneEngine& ref, HssneEngine& dev, const MatrixD& Y);
// HSSNE checkpoint: a saved state (from any engine: the CPU's, to resume on a device) restored into
// both, read back (exactly what went in), the totals and sums there, then a proposal with momentum
// (from the restored previous iterate) and a gradient step (from the restored velocity and gains).
struct HssneState;
Comparisons compare_hssne_restore(HssneEngine& ref, HssneEngine& dev, const HssneState& s);
// NeRV: cost and gradient at Y, then one conjugate-gradient round (direction, dots, a trial point
// with its cost and gradient, acceptance, the next direction).
Comparisons compare_nerv_engines(NervEngine& ref, NervEngine& dev, const MatrixD& Y);
// PLSV: the E-step's sums, the theta M-step, the Newton solves with the topic gradient and a
// relocation, from documents X, theta (Z x W) and topic coordinates phi.
Comparisons compare_plsv_engines(PlsvEngine& ref, PlsvEngine& dev, const MatrixD& X, const MatrixD& theta,
                                 const std::vector<double>& phi, double alpha, double gamma);
// Placement (both engines made from the same map, lists and repulsion): the start places and costs,
// the places, costs and moving counts after `early` steps, then the places, costs and exact-sum
// counts once both stop (params.max_iter steps at most, params.tol).
Comparisons compare_placement_engines(PlacementEngine& ref, PlacementEngine& dev, const PlacementParams& params,
                                      int early = 3);
// A trace of objective values, iteration by iteration.
Comparison compare_traces(const std::string& output, const std::string& tolerance_name, const std::vector<double>& ref,
                          const std::vector<double>& dev);

}  // namespace orrery
