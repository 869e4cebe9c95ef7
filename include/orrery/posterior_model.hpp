// Class posteriors for labelled vectors when no classifier is at hand: the soft nearest-neighbor
// model of the PE paper's Appendix D (section 6, handwritten digits). Each class is a mixture of
// Gaussians centred on m of its labelled examples drawn at random; the posterior of an object
// over the classes is then PE's input.
//
//   p(x | c_k) = (1 / m_k) sum_{j in C_k} exp(-|x - x_j|^2 / (2 s^2))
//   p(c_k | x) = pi_k p(x | c_k) / sum_l pi_l p(x | c_l),   pi_k = 1 / K (uniform)
//
// The paper uses the covariance of the whole data set for every component; here the covariance
// is isotropic, s^2 I, with one width s shared by all components, and s is chosen on held-out
// labelled objects unless given. The Gaussian normaliser (2 pi s^2)^{-dim/2} is the same for
// every class and cancels in the posterior. The prior is uniform, not the labelled class
// frequencies: the labelled set is usually a convenience sample whose class balance says little
// about the unlabelled objects, and a uniform prior keeps the map from favouring large classes.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "orrery/config.hpp"
#include "orrery/types.hpp"

namespace orrery {

struct PosteriorModelParams {
  // m: labelled examples drawn per class as mixture centres (the paper used 10 and 100). More
  // centres give smoother, better-calibrated class densities and less overfitting to the
  // chosen examples, at a cost linear in m (distances from every object to K m centres). A
  // class with fewer than m labelled examples uses all of them. Which examples are drawn
  // depends on the seed.
  int per_class = 10;
  // s: the shared isotropic width of every Gaussian component, in the units of the input
  // vectors. 0 chooses s by maximising the mean held-out log-likelihood log p(true class | x)
  // over a log-spaced grid refined by golden-section search; a value > 0 is used as given
  // (the search is skipped). Small s makes the posteriors hard (nearest centre wins), large s
  // makes them uniform.
  double width = 0.0;
  // Number of log-spaced candidate widths of the grid search, spanning 0.05 to 2 times the
  // root of the median squared distance from held-out objects to the centres. More candidates
  // make the bracket found for the golden-section refinement more reliable; each one costs a
  // pass over the held-out distances. The chosen width stays inside the grid's range: where
  // the labelled classes are separable the held-out likelihood keeps rising as s -> 0 (each
  // object goes to its nearest centre's class), and the low end of the grid is then the floor.
  // Ignored when width > 0.
  int width_grid = 24;
  // Most labelled non-centre objects used to score a width (drawn at random, seeded). A larger
  // held-out set gives a less noisy choice of s at a cost linear in its size. Objects labelled
  // -1 are never held out. The held-out objects still receive posteriors like every other.
  int holdout = 2000;
};

const std::vector<Field<PosteriorModelParams>>& posterior_model_fields();

struct PosteriorModelResult {
  MatrixD posteriors;  // N x K, p(c_k | x_n) for every object, labelled or not; rows sum to 1
  double width = 0.0;  // the width s used (chosen or given)
  // Mean of log p(true class | x) over the held-out objects at `width`; NaN when no labelled
  // object was left over after drawing the centres (possible only when width > 0 was given).
  double heldout_loglik = 0.0;
  index_t heldout_size = 0;      // number of held-out objects scored
  std::vector<index_t> centres;  // row indices of the centres, grouped by class (class 0 first)
  // (s, mean held-out log-likelihood) for every width evaluated: the grid first, then the
  // golden-section points in evaluation order. Empty when width > 0 was given.
  std::vector<std::pair<double, double>> width_trace;
};

// Fits the model on the labelled rows of X (N x dim) and returns posteriors for every row.
// labels[n] is the class of row n in 0..K-1, or -1 when unknown; K = max label + 1, and every
// class must have at least one labelled row. Throws orrery::Error (input) naming the problem:
// a length mismatch, a non-finite entry of X (row and column), a label below -1, fewer than
// two classes, a class without labelled rows, a parameter out of range, no held-out objects to
// choose the width on. The same X, labels, params and seed give the same bits for any
// `threads` (<= 0: the OpenMP default).
PosteriorModelResult fit_posterior_model(const MatrixD& X, const std::vector<int>& labels,
                                         const PosteriorModelParams& params, unsigned long long seed,
                                         int threads = 0);

}  // namespace orrery
