// The named tolerances of CPU-vs-device comparisons, and the comparison itself (orrery/parity.hpp).
#include "orrery/parity.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "cpu/fft.hpp"
#include "orrery/error.hpp"

namespace orrery {

const std::vector<Tolerance>& tolerances() {
  static const bool double_fft = std::string(cpu::RealRows::library()) == "fftw3";
  // {name, rel, abs, scaled, nmse, reason}
  static const std::vector<Tolerance> all = {
      {"exact", 0, 0, 0, 0,
       "integers, and values both sides compute by the same arithmetic or merely store and return"},
      {"pe.objective", 1e-5, 1e-9, 0, 0,
       "J = sum_n J_n, each J_n >= 0 a float sum over K terms (~1e-7 relative, device exp and log included), totalled "
       "in double; 1e-5 leaves room for R differing by pe.objects after a solve"},
      {"pe.objects", 0, 2e-3, 0, 0,
       "both solvers stop at |g|^2 < eps_r = 1e-8 and H >= 2 eta_r I = 0.2 I, so each r_n is within 5e-4 of the "
       "exact minimiser; float evaluation adds far less"},
      {"pe.class_gradient", 0, 2e-4, 2e-4, 0,
       "sums over N objects of float forces (P_nk - q_nk)(phi_k - r_n) that largely cancel, at r_n differing by up "
       "to pe.objects; against the largest entry"},
      {"pe.objects_roundtrip", 5.9604645e-8, 0, 0, 0,
       "R is stored in float on the device: what comes back is what went in rounded to float, within 2^-24 of it"},
      {"pe.fit_objective", 1e-4, 0, 0, 0,
       "float and double arithmetic can stop at slightly different iterates of a long fit"},
      {"hssne.row_sums", 2e-5, 0, 2e-14, 0,
       "per point sum_j H_ij (and H_ij S_ij): pairs in float tiles of 256, tiles in double, so rounding grows with "
       "the tile, not N; Gaussian terms (alpha 0) underflow in float below 1e-38, hence the floor at 1e-9 of the "
       "largest row, where such a row is nothing next to Z"},
      {"hssne.attraction", 2e-5, 2e-17, 0, 0,
       "per point sum_j P_ij S_ij and sum_j P_ij log H_ij: the same float tiles (dense) or double lists (sparse)"},
      {"hssne.weighted_sums", 2e-5, 0, 2e-5, 0,
       "sum_j w_ij y_j partly cancel: against the size of the weights' own row sums (hs or a) times the map"},
      {"hssne.moved_sums", 1e-3, 0, 1e-3, 0,
       "the sums above at maps that agree only to hssne.map after a few steps: a kernel term changes by at most "
       "its relative slope (<= 1 per bandwidth) times the move; measured on an H200 4e-5 (3-D, 700 points), "
       "while a wrong index or formula changes sums by O(1)"},
      {"hssne.totals", 2e-5, 2e-5, 0, 0,
       "Z and sum P log H in double from the per-point sums above, in a fixed order"},
      {"hssne.map", 0, 0, 1e-4, 0,
       "a step is double arithmetic on sums that agree to 2e-5, and the fixed-point map divides sums that partly "
       "cancel: 1e-4 of the map's extent"},
      {"hssne.trace", 1e-5, 0, 0, 0, "KL per iteration from totals that agree to 2e-5"},
      // The grid's tolerances follow the CPU's FFT library, fixed when the library was built (CMake
      // ORRERY_FFT; cpu::RealRows::library() names it): FFTW transforms in double, Debian's KISS FFT
      // in float (host/cpu/fft_kiss.cpp), against cuFFT's double transforms on the device.
      double_fft ? Tolerance{"hssne.grid", 0, 0, 1e-10, 0,
                             "interpolated sums: the same grid, weights and sums in the same order in double on both; "
                             "only the transforms (FFTW against cuFFT), the far points' exact rows (vectorised on the "
                             "CPU) and fused multiply-adds round differently: 1e-10 of the largest entry"}
                 : Tolerance{"hssne.grid", 0, 0, 1e-5, 0,
                             "interpolated sums: the same grid, weights and sums in the same order, but the CPU's "
                             "transforms in float (KISS FFT) against cuFFT's double ones: float rounding (6e-8) grown "
                             "by the transforms' log2 length and the convolution's sums is relative to the largest "
                             "potential on the grid, about 1e-6 of the largest entry; 1e-5 of it"},
      double_fft ? Tolerance{"place.cost", 1e-8, 1e-7, 0, 0,
                             "a new point's C_i = log h_i + sum_l p_l (log p_l - log H_il) from sums over the reference "
                             "that agree to hssne.grid (1e-10 of the largest h; more of a small h, as a point's far "
                             "from the map) or to the exact loop's order (~1e-15): log h_i turns h_i's error relative "
                             "to itself into an absolute one"}
                 : Tolerance{"place.cost", 1e-5, 1e-4, 0, 0,
                             "as with FFTW, from grid sums that agree to 1e-5 of the largest h (the CPU's transforms "
                             "in float): log h_i turns that into an absolute error of 1e-5 h_max / h_i, which is under "
                             "1e-4 for a point within the map's bulk (h_i above a tenth of the largest)"},
      double_fft ? Tolerance{"place.steps", 0, 1e-6, 1e-8, 0,
                             "a few steps eta_i grad_i from the same start, the gradients from sums that agree as for "
                             "place.cost and partly cancel (y hs - hsy): 1e-8 of the map's extent, and 1e-6 for a "
                             "point that starts at its minimum (|grad| < 1e-6, whose trial may be taken on one side "
                             "only); any other point's trial taken on one side only differs by a step"}
                 : Tolerance{"place.steps", 0, 1e-4, 1e-5, 0,
                             "as with FFTW, from gradients whose grid sums agree to 1e-5 of the largest (the CPU's "
                             "transforms in float): 1e-5 of the map's extent, and 1e-4 for a point near its minimum"},
      {"place.map", 0, 1e-3, 0, 0,
       "both sides stop a point when its step is under tol = 1e-4 map units, within a few such steps of its minimum; "
       "a trial whose cost lies within rounding of the point's (late, tiny steps) may be taken on one side only, "
       "after which the step lengths differ"},
      {"place.end_cost", 1e-6, 1e-6, 0, 0,
       "the cost at places that agree to place.map near a minimum: about the curvature times tol^2"},
      {"knn.graph", 0, 0, 0, 0,
       "the same double distances summed in the same order and the same bounded heap: identical graphs wherever the "
       "distances are identical (integer-valued points), ties by index"},
      {"knn.distances", 1e-13, 0, 0, 0, "the same double sums in the same order; a fused multiply-add may round differently"},
      {"knn.affinities", 1e-9, 0, 0, 0,
       "the same graph and distances into the same host code: the bisection's stopping point moves with the last bits"},
      {"nerv.cost", 1e-4, 0, 0, 0,
       "pair terms in float (one exp each, to float rounding), summed in float tiles of 256, tiles and rows in double"},
      {"nerv.gradient", 0, 0, 1e-3, 0,
       "sums over pairs of c_ij (y_i - y_j) that cancel, in float: against the largest entry"},
      {"nerv.fit_first", 1e-4, 0, 0, 0, "the first iterate's cost: one float evaluation against a double one"},
      {"nerv.fit_last", 1e-2, 0, 0, 0,
       "five conjugate-gradient steps in float against double from the same start: line searches pick steps that "
       "differ in the last digits, and the costs drift apart"},
      {"plsv.log_likelihood", 1e-5, 0, 0, 0, "X, theta and P stored in float; per-document sums of float terms in double"},
      {"plsv.theta_log_prior", 1e-6, 0, 0, 0, "sum of log theta in double from float theta"},
      {"plsv.docs_sq", 1e-6, 0, 0, 0, "sum |x_n|^2 in double from float X"},
      {"plsv.topic_counts", 1e-4, 1e-5, 0, 0,
       "R_nz from float P and theta over a document's words: a few hundred float operations per value"},
      {"plsv.theta", 1e-4, 1e-9, 0, 0, "the M-step from float statistics"},
      {"plsv.solve_objective", 1e-5, 0, 0, 0, "float Newton solves to eps_x, objective summed in double"},
      {"plsv.docs", 1e-3, 1e-3, 0, 0, "float Newton iterates stopped by the same test as the double ones"},
      {"plsv.topic_gradient", 1e-3, 0, 1e-3, 0, "sums over documents of float forces that cancel: against the largest"},
      {"plsv.relocated", 0, 1, 0.01, 0,
       "documents whose candidate positions score within float rounding of each other may move on one side only: "
       "1% of the documents (the scale) plus one"},
      {"plsv.em_trace", 1e-4, 0, 0, 0, "a few EM iterations in float against double"},
      {"quality.rank_rows", 0, 0, 0, 0,
       "the same selection and counting over the same double distances: identical integers for integer-valued data"},
      {"quality.measures", 0, 0, 0, 0, "sums of identical integers in the same order"},
      {"snerv.distances", 1e-10, 1e-10, 0, 0,
       "the same double arithmetic per pair (math/fisher.hpp); exp and sqrt may round differently by an ulp"},
  };
  return all;
}

const Tolerance& tolerance(const std::string& name) {
  for (const auto& t : tolerances())
    if (name == t.name) return t;
  internal_error("parity: no tolerance named " + name);
}

namespace {

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

Agreement compare(const std::vector<double>& cpu, const std::vector<double>& device, const Tolerance& tol,
                  double scale) {
  Agreement a;
  a.count = cpu.size();
  if (cpu.size() != device.size()) {
    a.size_mismatch = true;
    a.cpu_value = static_cast<double>(cpu.size());
    a.device_value = static_cast<double>(device.size());
    return a;
  }
  if (scale < 0) {
    scale = 0.0;
    for (double v : cpu)
      if (std::isfinite(v)) scale = std::max(scale, std::abs(v));
  }
  const double floor = tol.abs + tol.scaled * scale;
  double num = 0.0, den = 0.0, worst_rel = -1.0;
  size_t worst_ok = 0;
  for (size_t i = 0; i < cpu.size(); ++i) {
    const double c = cpu[i], d = device[i];
    bool ok;
    if (std::isfinite(c) && std::isfinite(d)) {
      const double err = std::abs(d - c);
      ok = err <= tol.rel * std::abs(c) + floor;
      const double rel = err / std::max(std::abs(c), std::numeric_limits<double>::min());
      if (rel > worst_rel) worst_rel = rel, worst_ok = i;
      a.max_rel_error = std::max(a.max_rel_error, rel);
      num += err * err;
      den += c * c;
    } else {
      ok = !std::isnan(c) && !std::isnan(d) && c == d;  // the same infinity
      if (!ok) ++a.nonfinite;
    }
    if (!ok && a.failed++ == 0) a.worst = i;
  }
  a.nmse = den > 0 ? num / den : (num > 0 ? std::numeric_limits<double>::infinity() : 0.0);
  a.nmse_exceeded = tol.nmse > 0 && a.nmse > tol.nmse;
  if (a.failed == 0) a.worst = worst_ok;
  if (!cpu.empty()) a.cpu_value = cpu[a.worst], a.device_value = device[a.worst];
  return a;
}

Agreement compare(double cpu, double device, const Tolerance& tol, double scale) {
  return compare(std::vector<double>{cpu}, std::vector<double>{device}, tol, scale);
}

std::string Agreement::describe(const std::string& what) const {
  if (size_mismatch)
    return what + ": the cpu has " + number(cpu_value) + " entries, the device " + number(device_value);
  const std::string stats = "max rel error " + number(max_rel_error) + ", NMSE " + number(nmse);
  if (ok()) return what + ": " + std::to_string(count) + " entries agree; " + stats;
  if (failed == 0) return what + ": NMSE " + number(nmse) + " is above its bound; " + stats;
  return what + ": " + std::to_string(failed) + " of " + std::to_string(count) + " entries disagree" +
         (nonfinite ? " (" + std::to_string(nonfinite) + " non-finite on one side)" : "") + "; first at index " +
         std::to_string(worst) + ": cpu " + number(cpu_value) + ", device " + number(device_value) + "; " + stats;
}

}  // namespace orrery
