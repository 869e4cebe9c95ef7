// HSSNE (Yang, King, Xu, Oja 2009; MATH.md §4): symmetric SNE with the heavy-tail family
// H(tau) = (alpha tau + 1)^(-1/alpha), optimised by the paper's fixed-point update, or by
// gradient descent with momentum and early exaggeration (the t-SNE schedule) for comparison.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "orrery/affinity.hpp"
#include "orrery/config.hpp"
#include "orrery/types.hpp"

namespace orrery {

class Backend;

struct HssneParams {
  // Output dimension D (2 or 3).
  int dim = 2;
  // alpha >= 0: tail heaviness; 0 is Gaussian SSNE, 1 is t-SNE, larger is heavier.
  double alpha = 1.0;
  // "fixed_point" (the paper's update, no learning rate) or "gradient" (momentum, early
  // exaggeration).
  std::string optimizer = "fixed_point";
  // Iteration cap.
  int max_iter = 1000;
  // Stop when the relative decrease of J over an iteration is below tol (fixed point only).
  double tol = 1e-7;
  // gradient: step size, momentum before/after momentum_switch, exaggeration factor and length.
  double learning_rate = 200.0;
  double momentum = 0.5;
  double final_momentum = 0.8;
  int momentum_switch = 250;
  double exaggeration = 12.0;
  int exaggeration_iter = 250;
  // Semi-supervised mixing P~ = (1 - rho) P + rho U, U uniform over known same-class pairs.
  double rho = 0.0;
  // Initial coordinates: Gaussian with this standard deviation (seeded). The fixed-point update
  // barely expands a tiny start (it stalls near the collapsed map), hence 1, not t-SNE's 1e-4.
  double init_scale = 1.0;
};

const std::vector<Field<HssneParams>>& hssne_fields();

struct HssneResult {
  MatrixD coords;
  std::vector<double> objective_trace;  // J = KL(P~ || Q) per iteration
  int iterations = 0;
  int damped_steps = 0;  // fixed-point steps that raised J and were damped
  std::string stop_reason;  // "tol", "max_iter"
};

// Unnormalised per-row sums of one evaluation at Y, from one pass over all pairs (MATH.md §4):
// everything the objective, the gradient and the fixed-point update need. Z = sum_i h_i.
struct HssneSums {
  std::vector<double> h;        // sum_j H_ij              (row i's share of Z)
  std::vector<double> p_log_h;  // sum_j P_ij log H_ij
  std::vector<double> a;        // A_i = sum_j P_ij S_ij
  std::vector<double> hs;       // Z B_i = sum_j H_ij S_ij
  MatrixD ay;                   // sum_j P_ij S_ij y_j      (N x D)
  MatrixD hsy;                  // sum_j H_ij S_ij y_j      (N x D)
};

// Affinities resident on one backend. The CPU engine sums in double with the rows spread over
// threads; the CUDA engine keeps P on the device, sums tiles of pairs in float and tiles into
// double, in a fixed order (same input, same device: same bits).
class HssneEngine {
 public:
  virtual ~HssneEngine() = default;
  virtual std::string name() const = 0;
  virtual void sums(const MatrixD& Y, HssneSums& out) = 0;
};

// P (dense N x N, or sparse CSR) must outlive the engine. alpha >= 0, dim 2 or 3.
std::unique_ptr<HssneEngine> make_hssne_engine(Backend& backend, const MatrixD& P, double alpha, int dim);
std::unique_ptr<HssneEngine> make_hssne_engine(Backend& backend, const SparseAffinity& P, double alpha, int dim);
// The CUDA engine (kernels/hssne.cu); exactly one of dense, sparse is non-null.
std::unique_ptr<HssneEngine> make_hssne_engine_cuda(int device, const MatrixD* dense, const SparseAffinity* sparse,
                                                    double alpha, int dim);

// KL(P || Q) and its gradient (N x D) at Y for dense P, by the definition; used by the tests and
// by the optimisers.
double hssne_objective(const MatrixD& P, const MatrixD& Y, double alpha, MatrixD* grad, int threads = 0);

// The same for sparse P (the repulsive normaliser is still exact over all pairs).
double hssne_objective(const SparseAffinity& P, const MatrixD& Y, double alpha, MatrixD* grad, int threads = 0);

// Fits on dense P; labels (-1 unknown) are used only when rho > 0. The backend evaluates the
// sums over pairs (the optimiser's few O(N D) steps run on the host); `threads` means the CPU.
HssneResult fit_hssne(const MatrixD& P, const std::vector<int>& labels, const HssneParams& params,
                      unsigned long long seed, Backend& backend, const std::function<void(int, double)>& progress = {});
HssneResult fit_hssne(const MatrixD& P, const std::vector<int>& labels, const HssneParams& params,
                      unsigned long long seed, int threads = 0,
                      const std::function<void(int, double)>& progress = {});

// Fits on sparse P (kNN affinities): the attraction runs over the neighbour lists only, the
// repulsion still over all pairs (exact). rho > 0 is an input error (mixing needs dense P).
HssneResult fit_hssne(const SparseAffinity& P, const HssneParams& params, unsigned long long seed, Backend& backend,
                      const std::function<void(int, double)>& progress = {});
HssneResult fit_hssne(const SparseAffinity& P, const HssneParams& params, unsigned long long seed, int threads = 0,
                      const std::function<void(int, double)>& progress = {});

// One fixed-point update of MATH.md §4 on dense P (exposed for tests): returns J at the input Y.
double hssne_fixed_point_step(const MatrixD& P, double alpha, MatrixD& Y, int threads = 0);

// Semi-supervised affinities: (1 - rho) P + rho U, U uniform over ordered pairs of distinct
// points sharing a known label.
MatrixD mix_same_class_pairs(const MatrixD& P, const std::vector<int>& labels, double rho);

}  // namespace orrery
