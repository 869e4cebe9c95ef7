// Supervised NeRV (Peltonen, Aidos, Kaski; MATH.md §3): NeRV on learning-metric distances. A
// class-posterior model p(c|x), the discriminative mixture of labelled Gaussians
//   p(c|x) = sum_k beta_ck exp(-|x - m_k|^2 / 2s^2) / sum_k exp(-|x - m_k|^2 / 2s^2),
// is fitted to the labelled points by conjugate gradient on the conditional class log-likelihood
// (beta_.k = softmax(theta_.k), so it stays on the simplex); K and s are chosen by internal k-fold
// validation of that likelihood unless given. The Fisher information of the model defines a local
// metric; distances are integrated along straight paths in T pieces (math/fisher.hpp).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "orrery/affinity.hpp"
#include "orrery/config.hpp"
#include "orrery/nerv.hpp"
#include "orrery/types.hpp"

namespace orrery {

class Backend;

struct ClassMixtureParams {
  // K, the number of Gaussian components; 0 chooses it from {C, 2C, 4C} (C classes, at most a
  // quarter of the labelled points) by validation.
  int components = 0;
  // s, the shared width; 0 chooses it from {1/2, 1, 2} x the root median squared distance of a
  // labelled point to its nearest initial centre, by validation.
  double width = 0.0;
  // Folds of the internal validation (over the labelled points) that choose K and s.
  int folds = 5;
  // Conjugate-gradient iterations of the final fit (validation fits use at most 100).
  int max_iter = 200;
  // Pieces T of the straight-path distance.
  int pieces = 10;
  // eta: weight of the isotropic term eta |dx|^2 / s^2 added to the Fisher metric (math/fisher.hpp),
  // so that distances within a class, where the posterior is flat, stay positive; 0 = pure Fisher.
  double euclidean = 0.2;
};

const std::vector<Field<ClassMixtureParams>>& class_mixture_fields();

struct ValidationPoint {
  int components = 0;
  double width = 0.0;
  double loglik = 0.0;  // mean held-out log p(true class | x) over the folds
};

struct ClassMixture {
  int num_classes = 0;
  double width = 0.0;
  double euclidean = 0.0;  // eta of the metric (ClassMixtureParams::euclidean)
  MatrixD centres;  // K x d
  MatrixD beta;     // K x C, rows on the simplex
  double train_loglik = 0.0;  // mean log p(true class | x) over the labelled points
  int iterations = 0;         // CG iterations of the final fit
  std::vector<ValidationPoint> selection;  // every (K, s) validated, in order; empty when both given
};

// Fits on the rows with labels >= 0 (labels -1 are ignored); C = max label + 1. Errors (input):
// length mismatch, fewer than two classes, a class without labelled points, non-finite X.
ClassMixture fit_class_mixture(const MatrixD& X, const std::vector<int>& labels, const ClassMixtureParams& params,
                               unsigned long long seed, int threads = 0);

// p(c | x) for every row (N x C).
MatrixD class_mixture_posteriors(const ClassMixture& model, const MatrixD& X);

// The fit's objective for fixed width and class count: the mean negative log-likelihood of the
// labelled rows at parameters z = [centres (K x d, row-major), theta (K x C)], and its gradient.
double class_mixture_loss(const MatrixD& X, const std::vector<int>& labels, int num_classes, double width, int K,
                          const std::vector<double>& z, std::vector<double>* grad, int threads = 0);

// v' J(x) v for the model's Fisher information at x (tests; the distances use the shared math).
double class_mixture_fisher(const ClassMixture& model, const double* x, const double* v);

// Learning-metric distances between all rows (N x N, symmetric, zero diagonal), straight paths of
// `pieces` pieces, on the CPU (rows of pairs in parallel): the reference of
// Backend::learning_metric_distances (CUDA: a thread per pair, kernels/snerv.cu).
MatrixD learning_metric_distances(const ClassMixture& model, const MatrixD& X, int pieces, int threads = 0);

// What every backend's distances start from: the projections U (N x K) of the rows on the centres,
// u_k(x) = m_k . x, half their squared norms h_k = |m_k|^2 / 2 and w = 1 / s^2 (math/fisher.hpp).
struct MetricProjections {
  MatrixD U;
  std::vector<double> h;
  double w = 0.0;
};
MetricProjections metric_projections(const ClassMixture& model, const MatrixD& X, int threads = 0);

// Supervised NeRV as one method: class model -> learning-metric distances -> affinities -> NeRV.
struct SnervParams {
  ClassMixtureParams metric;  // the class-posterior model behind the metric
  NervParams nerv;            // the map (params.init = pca starts from the vectors' principal components)
  // The affinities' perplexity; 0 takes the paper's effective number of neighbours, 0.5 N / K
  // (K the model's components), clamped to [2, (N - 1) / 3].
  double perplexity = 0.0;
  // true: each point's ceil(3 perplexity) nearest in the metric, with NeRV's row floor elsewhere
  // (sparse rows); false: every pair's probability (dense rows).
  bool sparse = true;
};

// The perplexity SnervParams::perplexity = 0 stands for: 0.5 N / K for N points and K components,
// clamped to [2, (N - 1) / 3]; a given perplexity (> 0) is returned as it is.
double snerv_perplexity(double given, index_t points, index_t components);

// Supervised NeRV's affinities from the metric distances (N x N): each point's ceil(3 perplexity)
// nearest with NeRV's row floor elsewhere (sparse), or every pair.
AffinityResult snerv_affinities(const MatrixD& metric_distances, double perplexity, bool sparse, int threads);

struct SnervResult {
  ClassMixture model;
  MatrixD metric_distances;  // N x N: the map's input space, for the quality measures
  double perplexity = 0.0;   // the one used
  NervResult nerv;
};

// X: N x d vectors, labels: N entries (-1 unknown; at least two classes labelled). The distances
// and the map run on `backend`; the class model on the host with the backend's threads. A control
// (orrery/run_control.hpp) reaches the map's iterations only: a resumed fit recomputes the class
// model and the distances (deterministic, and short next to the map), then continues the map.
SnervResult fit_snerv(const MatrixD& X, const std::vector<int>& labels, const SnervParams& params,
                      unsigned long long seed, Backend& backend, const std::function<void(int, double)>& progress = {},
                      RunControl* control = nullptr);

}  // namespace orrery
