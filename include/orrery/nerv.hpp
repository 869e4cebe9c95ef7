// NeRV (Venna, Peltonen, Nybo, Aidos, Kaski 2010; MATH.md §3): neighbor retrieval visualisation.
// E = lambda sum_i KL(p_i || q_i) + (1 - lambda) sum_i KL(q_i || p_i), with the input bandwidth
// beta_i = 1 / sigma_i^2 used in the map too; lambda = 1 is SNE (recall), small lambda favours
// precision. Optimised by nonlinear conjugate gradient (Polak-Ribiere+), as in the paper.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "orrery/config.hpp"
#include "orrery/engines.hpp"
#include "orrery/map_start.hpp"
#include "orrery/types.hpp"

namespace orrery {

class RunControl;
struct SparseAffinity;

// NervOptions::precision and NervParams::precision (the enum is orrery/engines.hpp's).
template <>
struct EnumNames<NervPrecision> {
  static constexpr std::array<const char*, 2> names = {"float", "double"};
};
// NervParams::pairs.
enum class NervPairs { automatic, exact, approximate };
template <>
struct EnumNames<NervPairs> {
  static constexpr std::array<const char*, 3> names = {"auto", "exact", "approximate"};
};

struct NervParams {
  // Output dimension D (2 or 3).
  int dim = 2;
  // lambda in [0, 1]: weight of recall (KL(p||q)); 1 - lambda weights precision (KL(q||p)).
  double lambda = 0.3;
  // Conjugate-gradient iteration cap and relative-decrease stop.
  int max_iter = 500;
  double ftol = 1e-9;
  // Standard deviation of the seeded Gaussian start, in units of the median input bandwidth sigma;
  // 0 (the default) = auto: 1 on the exact path, and on the approximate path the spread at which a
  // Gaussian cloud of N points holds about `perplexity` points within sigma of its centre,
  // sqrt(N / (2 perplexity)) in 2-D and (N / (3.76 perplexity))^(1/3) in 3-D (nerv_start_scale), so
  // that the truncated rows start short instead of holding every point.
  double init_scale = 0.0;
  // Start: "random" (seeded Gaussian), "pca" (the input's first D principal components; needs
  // vectors), "spectral" (the leading nontrivial eigenvectors of the affinity graph,
  // orrery/pca.hpp), both scaled so that the first coordinate has standard deviation init_scale x
  // the median bandwidth, or "auto": pca on the approximate path when there are vectors, random
  // otherwise; or the path of an N x D array file, taken as given in the map's units (the input's,
  // as NeRV's maps are), so that a finished map can be continued. From a random start
  // at the approximate path's spread, conjugate gradient's first steps pull every neighbor list
  // together and the map collapses to a ball whose rows hold most points before it spreads again
  // (5,000 Fashion-MNIST images: a median of 4,140 of 5,000 points per truncated row after 10
  // iterations, 400 at 300); from the principal components it keeps about 300 throughout, ends at a
  // lower cost, and runs 3.4x faster.
  std::string init = "auto";
  // Arithmetic of the CPU evaluations: "float" (pair terms in single precision, summed in tiles of
  // 512 columns whose sums, the row totals, the cost and the gradient are double; a dense P and its
  // logs are held in float, half the memory of the double pair) or "double" (the reference). Float
  // is about twice as fast and agrees with double to about 1e-6 relative (tested). The CUDA engine
  // always works in float.
  NervPrecision precision = NervPrecision::float32;
  // Which pairs the cost sums: exact (all N^2, the reference), approximate (the output Gaussian
  // truncated where its weight falls below e^-cutoff of the row's largest, summed over a cell grid:
  // O(N x pairs kept per row); sparse affinities only), or auto: approximate from
  // kNervApproximateFrom points with sparse affinities, exact otherwise.
  NervPairs pairs = NervPairs::automatic;
  // The truncation in nats (approximate pairs): a row keeps the points whose weight
  // exp(-beta_i (d_ij - dmin_i)) is at least e^-cutoff. The kept pairs per row grow as cutoff^(D/2).
  // 12 keeps the cost within about 1e-5 and the gradient within 2e-3 (relative) of the exact ones on
  // Fashion-MNIST maps at every lambda; 8 lets the gradient's error reach 1e-2 (orrery_bench
  // nerv-pairs).
  double cutoff = 12.0;
};

const std::vector<Field<NervParams>>& nerv_fields();

// params.pairs = auto takes the approximate path from this many points (with sparse affinities):
// the crossover measured on 2 CPU cores (bench/README.md, "NeRV at scale").
inline constexpr index_t kNervApproximateFrom = 5000;
// Whether a fit of N points with sparse (or dense) affinities runs the approximate path; an
// approximate request with dense affinities is an input error naming params.pairs.
bool nerv_approximate(const NervParams& params, index_t points, bool sparse);
// The start params.init names, auto resolved: pca on the approximate path when there are vectors.
inline MapStart nerv_start(const NervParams& params, bool approximate, bool vectors) {
  if (params.init == "auto") return approximate && vectors ? MapStart::pca : MapStart::random;
  return map_start(params.init);
}
// The start's standard deviation in units of the median bandwidth (NervParams::init_scale).
double nerv_start_scale(const NervParams& params, index_t points, double perplexity, bool approximate);


// E and dE/dY (N x D) for conditional input probabilities P (rows p_{j|i}, zero diagonal) and
// per-point precisions beta; N >= 2. Exact over all pairs, O(N^2 D) time with one exp per pair (one
// pass over the rows, the pair arithmetic of orrery/math/nerv.hpp), O(N D) memory beyond P and log P
// (row buffers per thread and a fixed number of N x D gradient accumulators). The result does not
// depend on the thread count. This form takes the logs of P row by row on every call (N^2 logs);
// fit_nerv takes them once and uses the second form, logP = nerv_log_probabilities(P) (N x N).
double nerv_objective(const MatrixD& P, const std::vector<double>& beta, const MatrixD& Y, double lambda,
                      MatrixD* grad, int threads = 0);
MatrixD nerv_log_probabilities(const MatrixD& P, int threads = 0);  // log(max(P, floor)) entrywise
double nerv_objective(const MatrixD& P, const MatrixD& logP, const std::vector<double>& beta, const MatrixD& Y,
                      double lambda, MatrixD* grad, int threads = 0);

// Sparse input: P holds conditional rows p_{j|i} in CSR (affinities_sparse's .sparse_conditional,
// each point's k nearest neighbors; no diagonal entries; rows need not sum to 1). q, lse and
// KL(q || p) still run over all N - 1 other points, exactly. Pairs outside row i's list have
// p_{j|i} = 0 in KL(p || q) and in the gradient, and inside log p of KL(q || p) the floor
//   p_floor_i = 1e-3 * (smallest positive p_{j|i} listed in row i)   (1e-3 / (N - 1) for an empty row).
// Unlisted points are farther than every listed neighbor, so their true probability lies below the
// row's smallest listed one; the factor 1e-3 charges q mass on a non-neighbor log(1000) ~ 6.9 nats
// more than on the farthest neighbor, at any N and perplexity. A fixed absolute floor (1e-12, say)
// would not scale with the rows, whose listed p are ~1/k, so its gap to them would change with k and
// the data; a vanishing one (1e-300) would let log(floor) ~ -690 dominate KL(q || p). When the lists
// cover all N - 1 other points no pair uses the floor and the result equals the dense one up to
// round-off.
// O(N^2 D + nnz) time, one exp per pair, O(N D + nnz) memory.
double nerv_objective(const SparseAffinity& P, const std::vector<double>& beta, const MatrixD& Y, double lambda,
                      MatrixD* grad, int threads = 0);

// How far the truncated cost is from the exact one at a map: `rows` rows drawn with the seed (all
// when rows >= N) evaluated both ways (the exact rows over all N points, in double), the difference
// scaled to N rows, relative to the truncated cost of all rows.
struct NervTruncationCheck {
  double truncated = 0.0;           // the truncated cost, all rows
  double estimated_exact = 0.0;     // truncated + the sampled difference scaled to N rows
  double relative_error = 0.0;      // |estimated_exact - truncated| / |estimated_exact|
  index_t rows = 0;                 // rows evaluated exactly
  double mean_row_pairs = 0.0;      // pairs kept per row
};
struct NervResult {
  MatrixD coords;
  std::vector<double> objective_trace;
  int iterations = 0;
  int evaluations = 0;  // objective and gradient evaluations (line-search trials included)
  std::string stop_reason;
  std::string arithmetic;  // of the evaluations: "float" or "double" (NervEngine::arithmetic)
  bool approximate = false;  // the truncated cost (params.pairs)
  double init_scale = 1.0;   // the start's spread used, in units of the median bandwidth
  // The approximate path's check at the final map (nerv_truncation_check on kNervCheckRows rows).
  NervTruncationCheck truncation;
};

// Rows evaluated exactly (over all N points, on the host) to estimate the approximate path's error
// at the final map.
inline constexpr index_t kNervCheckRows = 1000;

// The same objectives evaluated in single precision as params.precision = "float" does (P and log P
// converted to float on each call; tests compare them with the double forms above).
double nerv_objective_float(const MatrixD& P, const std::vector<double>& beta, const MatrixD& Y, double lambda,
                            MatrixD* grad, int threads = 0);
double nerv_objective_float(const SparseAffinity& P, const std::vector<double>& beta, const MatrixD& Y, double lambda,
                            MatrixD* grad, int threads = 0);

// The truncated cost (params.pairs = approximate; math/nerv_cells.hpp has the derivation): the
// sparse rows' cost with each row's output Gaussian cut where its weight falls below e^-cutoff of
// the row's largest, O(N x kept pairs) over a cell grid, in float with double sums, D = 2 or 3. Its
// gradient is exactly that of the truncated cost. row_costs (optional) gets each row's cost. The
// engines evaluate in float; float64 is the same arithmetic in double (tests).
double nerv_objective_truncated(const SparseAffinity& P, const std::vector<double>& beta, const MatrixD& Y,
                                double lambda, double cutoff, MatrixD* grad, int threads = 0,
                                std::vector<double>* row_costs = nullptr,
                                NervPrecision precision = NervPrecision::float32);

NervTruncationCheck nerv_truncation_check(const SparseAffinity& P, const std::vector<double>& beta, const MatrixD& Y,
                                          double lambda, double cutoff, index_t rows, unsigned long long seed,
                                          int threads = 0);

class Backend;
class Comm;

// Fits on the backend's device: the seeded Gaussian start at the input's length scale, then
// Polak-Ribiere conjugate gradient on the engine. `start` (N x D), when given, replaces the
// seeded Gaussian: it is rescaled so that its first column has standard deviation init_scale x
// the median bandwidth (params.init = "pca" or "spectral" pass their vectors here), or, with
// start_as_given, taken as it is, in the map's units (a given array: a finished map continues
// where it ended). With a control (orrery/run_control.hpp) the fit can stop at the end of an
// iteration and continue from the saved state with the same bits. With `shards` (a communicator of
// several ranks, each calling with the same P, beta and start) each evaluation's passes over the
// rows are split over the ranks (NervEngine::shard) and every rank returns the one-process map,
// bit for bit; the state a control captures is then the same on every rank, so a checkpoint
// resumes under any number of ranks.
NervResult fit_nerv(const MatrixD& P, const std::vector<double>& beta, const NervParams& params,
                    unsigned long long seed, Backend& backend, const std::function<void(int, double)>& progress = {},
                    const MatrixD* start = nullptr, RunControl* control = nullptr, bool start_as_given = false,
                    Comm* shards = nullptr);
NervResult fit_nerv(const SparseAffinity& P, const std::vector<double>& beta, const NervParams& params,
                    unsigned long long seed, Backend& backend, const std::function<void(int, double)>& progress = {},
                    const MatrixD* start = nullptr, RunControl* control = nullptr, bool start_as_given = false,
                    Comm* shards = nullptr);

}  // namespace orrery
