// NeRV (Venna, Peltonen, Nybo, Aidos, Kaski 2010; MATH.md §3): neighbour retrieval visualisation.
// E = lambda sum_i KL(p_i || q_i) + (1 - lambda) sum_i KL(q_i || p_i), with the input bandwidth
// beta_i = 1 / sigma_i^2 used in the map too; lambda = 1 is SNE (recall), small lambda favours
// precision. Optimised by nonlinear conjugate gradient (Polak-Ribiere+), as in the paper.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "orrery/config.hpp"
#include "orrery/types.hpp"

namespace orrery {

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
};

const std::vector<Field<NervParams>>& nerv_fields();

// E and dE/dY (N x D) for conditional input probabilities P (rows p_{j|i}, zero diagonal) and
// per-point precisions beta. Exact, O(N^2 D).
double nerv_objective(const MatrixD& P, const std::vector<double>& beta, const MatrixD& Y, double lambda,
                      MatrixD* grad, int threads = 0);

struct NervResult {
  MatrixD coords;
  std::vector<double> objective_trace;
  int iterations = 0;
  std::string stop_reason;
};

NervResult fit_nerv(const MatrixD& P, const std::vector<double>& beta, const NervParams& params,
                    unsigned long long seed, int threads = 0, const std::function<void(int, double)>& progress = {});

}  // namespace orrery
