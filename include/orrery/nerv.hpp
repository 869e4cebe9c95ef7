// NeRV (Venna, Peltonen, Nybo, Aidos, Kaski 2010; MATH.md §3): neighbour retrieval visualisation.
// E = lambda sum_i KL(p_i || q_i) + (1 - lambda) sum_i KL(q_i || p_i), with the input bandwidth
// beta_i = 1 / sigma_i^2 used in the map too; lambda = 1 is SNE (recall), small lambda favours
// precision. Optimised by nonlinear conjugate gradient (Polak-Ribiere+), as in the paper.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "orrery/config.hpp"
#include "orrery/types.hpp"

namespace orrery {

struct SparseAffinity;

struct NervParams {
  // Output dimension D (2 or 3).
  int dim = 2;
  // lambda in [0, 1]: weight of recall (KL(p||q)); 1 - lambda weights precision (KL(q||p)).
  double lambda = 0.3;
  // Conjugate-gradient iteration cap and relative-decrease stop.
  int max_iter = 500;
  double ftol = 1e-9;
  // Standard deviation of the seeded Gaussian start, in units of the median input bandwidth.
  double init_scale = 1.0;
  // Start: "random" (seeded Gaussian) or "pca" (the input's first D principal components, scaled
  // so that the first has standard deviation init_scale x the median bandwidth; needs vectors).
  std::string init = "random";
  // Arithmetic of the CPU evaluations: "float" (pair terms in single precision, summed in tiles of
  // 512 columns whose sums, the row totals, the cost and the gradient are double; a dense P and its
  // logs are held in float, half the memory of the double pair) or "double" (the reference). Float is about twice as fast and agrees with
  // double to about 1e-6 relative (tested). The CUDA engine always works in float.
  std::string precision = "float";
};

const std::vector<Field<NervParams>>& nerv_fields();

// Input probabilities below kNervProbabilityFloor count as the floor inside log p, so KL(q || p)
// stays finite for pairs whose Gaussian input probability underflowed.
constexpr double kNervProbabilityFloor = 1e-300;

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
// each point's k nearest neighbours; no diagonal entries; rows need not sum to 1). q, lse and
// KL(q || p) still run over all N - 1 other points, exactly. Pairs outside row i's list have
// p_{j|i} = 0 in KL(p || q) and in the gradient, and inside log p of KL(q || p) the floor
//   p_floor_i = 1e-3 * (smallest positive p_{j|i} listed in row i)   (1e-3 / (N - 1) for an empty row).
// Unlisted points are farther than every listed neighbour, so their true probability lies below the
// row's smallest listed one; the factor 1e-3 charges q mass on a non-neighbour log(1000) ~ 6.9 nats
// more than on the farthest neighbour, at any N and perplexity. A fixed absolute floor (1e-12, say)
// would not scale with the rows, whose listed p are ~1/k, so its gap to them would change with k and
// the data; a vanishing one (1e-300) would let log(floor) ~ -690 dominate KL(q || p). When the lists
// cover all N - 1 other points no pair uses the floor and the result equals the dense one up to
// round-off.
// O(N^2 D + nnz) time, one exp per pair, O(N D + nnz) memory.
double nerv_objective(const SparseAffinity& P, const std::vector<double>& beta, const MatrixD& Y, double lambda,
                      MatrixD* grad, int threads = 0);

struct NervResult {
  MatrixD coords;
  std::vector<double> objective_trace;
  int iterations = 0;
  int evaluations = 0;  // objective and gradient evaluations (line-search trials included)
  std::string stop_reason;
};

// The same objectives evaluated in single precision as params.precision = "float" does (P and log P
// converted to float on each call; tests compare them with the double forms above).
double nerv_objective_float(const MatrixD& P, const std::vector<double>& beta, const MatrixD& Y, double lambda,
                            MatrixD* grad, int threads = 0);
double nerv_objective_float(const SparseAffinity& P, const std::vector<double>& beta, const MatrixD& Y, double lambda,
                            MatrixD* grad, int threads = 0);

NervResult fit_nerv(const MatrixD& P, const std::vector<double>& beta, const NervParams& params,
                    unsigned long long seed, int threads = 0, const std::function<void(int, double)>& progress = {});

// The objective on a CUDA device (kernels/nerv.cu): P and log P (N x N, rows p_{j|i}) held there in
// float, the pairs summed in float tiles and the tiles in double. evaluate returns E and, when
// grad is non-null, dE/dY.
class NervEngine {
 public:
  virtual ~NervEngine() = default;
  virtual double evaluate(const MatrixD& Y, MatrixD* grad) = 0;
};
std::unique_ptr<NervEngine> make_nerv_engine_cuda(int device, const MatrixD& P, const MatrixD& logP,
                                                  const std::vector<double>& beta, double lambda, int dim);

// Fits on the backend's device: the CPU as above, or CUDA (sparse rows are expanded there to
// N x N with their floors, so the device holds 4 N^2 floats: P, log P and their transposes).
class Backend;
// `start` (N x D), when given, replaces the seeded Gaussian: it is rescaled so that its first
// column has standard deviation init_scale x the median bandwidth (params.init = "pca" passes the
// principal components here).
NervResult fit_nerv(const MatrixD& P, const std::vector<double>& beta, const NervParams& params,
                    unsigned long long seed, Backend& backend, const std::function<void(int, double)>& progress = {},
                    const MatrixD* start = nullptr);
NervResult fit_nerv(const SparseAffinity& P, const std::vector<double>& beta, const NervParams& params,
                    unsigned long long seed, Backend& backend, const std::function<void(int, double)>& progress = {},
                    const MatrixD* start = nullptr);
// The sparse input of nerv_objective above; the same start and optimiser.
NervResult fit_nerv(const SparseAffinity& P, const std::vector<double>& beta, const NervParams& params,
                    unsigned long long seed, int threads = 0, const std::function<void(int, double)>& progress = {});

}  // namespace orrery
