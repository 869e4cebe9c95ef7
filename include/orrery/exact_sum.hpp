// Sums of doubles that do not depend on the number of ranks, on how rows are split over them, on
// the number of threads or on the order of the additions: each sum is the exact mathematical sum of
// every value added, rounded once to the nearest double (ties to even).
//
// How: every finite double is an integer multiple of 2^-1074 below 2^1024, so a fixed-point integer
// with its lowest bit at 2^-1074 and 2112 bits holds any of them, and sums of them, exactly. Integer
// addition is associative, so any grouping (rows over ranks, ranks in MPI's reduction tree, threads)
// gives the same integer, and hence the same rounded double. The integer is kept as 66 "digits" of
// 32 bits, each in an int64: the spare 31 bits absorb carries, so a reduction across ranks is a plain
// MPI sum of int64 (exact for fewer than 2^31 ranks), and carries are propagated only when sums
// are merged, reduced or read, and every 2^30 additions.
//
// Precision: correctly rounded, whatever the magnitudes, signs and cancellation (1e300 + 1 - 1e300
// is 1). Range: every finite double may be added; a sum whose magnitude rounds beyond DBL_MAX is an
// error. A NaN or an infinity added anywhere makes `result` throw on every rank, after the
// collective (so no rank is left waiting in it). -0.0 sums to +0.0.
// Cost: 528 bytes per sum in memory and on the wire, three digit updates per addition: for
// statistics of size O(K) and scalars (objectives, norms), not for per-point data.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "orrery/comm.hpp"

namespace orrery {

// n sums, each accumulated exactly. Not thread-safe: give each thread its own and merge them.
class ExactSum {
 public:
  static constexpr int kDigits = 66;          // 32-bit digits per sum
  static constexpr int kDigitBits = 32;
  static constexpr int kLowestExponent = -1074;  // the weight of bit 0: the smallest subnormal

  explicit ExactSum(std::size_t n);
  std::size_t size() const { return n_; }

  void add(std::size_t i, double x);  // sum i += x
  void add(const double* x);          // sum i += x[i] for every i (a row)
  void merge(const ExactSum& other);  // += other, sum by sum (what the reduction across ranks does)
  // Every rank's sums become the sums over every rank's additions. A collective.
  void allreduce(Comm& comm);

  double result(std::size_t i) const;  // rounded to nearest; throws as described above
  void results(double* out) const;     // all n

 private:
  void normalise();
  void check_finite() const;
  std::size_t n_;
  std::vector<std::int64_t> digits_;  // n_ * kDigits digits, then the count of non-finite additions
  std::size_t additions_ = 0;         // since the last normalise()
  std::size_t first_non_finite_;      // sum index of this rank's first non-finite addition
};

// out[i] = the correctly rounded sum over every rank of local[i] (out may be local). A collective.
void exact_allreduce_sum(Comm& comm, const double* local, double* out, std::size_t n);

}  // namespace orrery
