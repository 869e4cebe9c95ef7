// Corpora drawn from PLSV's generative process (paper section 2.1), for tests and benchmarks.
// The samplers are written out on mt19937_64 (no std:: distributions, whose streams differ between
// standard libraries), so a seed gives the same corpus everywhere.
#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "methods/random.hpp"
#include "orrery/error.hpp"
#include "orrery/math/plsv.hpp"
#include "orrery/plsv.hpp"

namespace orrery {
namespace {

double normal(std::mt19937_64& rng) {
  const double u1 = uniform01(rng), u2 = uniform01(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

// Gamma(shape, 1) by Marsaglia and Tsang; shape < 1 through Gamma(shape + 1) U^(1/shape).
double gamma_variate(double shape, std::mt19937_64& rng) {
  if (shape < 1.0) return gamma_variate(shape + 1.0, rng) * std::pow(uniform01(rng), 1.0 / shape);
  const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    const double x = normal(rng), v0 = 1.0 + c * x;
    if (v0 <= 0) continue;
    const double v = v0 * v0 * v0, u = uniform01(rng);
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
  }
}

// Poisson(mean) by inversion from the mode outwards would be faster; products of uniforms are
// enough for the document lengths used here (mean up to a few hundred, split into chunks of 500).
index_t poisson(double mean, std::mt19937_64& rng) {
  index_t k = 0;
  while (mean > 500.0) {
    k += poisson(500.0, rng);
    mean -= 500.0;
  }
  const double limit = std::exp(-mean);
  double prod = uniform01(rng);
  while (prod > limit) {
    ++k;
    prod *= uniform01(rng);
  }
  return k;
}

// Index drawn from cumulative weights (last entry = total).
int draw(const std::vector<double>& cum, std::mt19937_64& rng) {
  const double t = uniform01(rng) * cum.back();
  const auto it = std::upper_bound(cum.begin(), cum.end(), t);
  return static_cast<int>(std::min<std::ptrdiff_t>(it - cum.begin(), static_cast<std::ptrdiff_t>(cum.size()) - 1));
}

}  // namespace

PlantedPlsv sample_plsv_corpus(index_t N, index_t W, int Z, int D, double mean_length, unsigned long long seed,
                               double topic_sd, double doc_sd, double theta_concentration) {
  if (N < 1 || W < 1 || Z < 2 || (D != 2 && D != 3) || !(mean_length >= 1))
    input_error("sample_plsv_corpus: needs N >= 1, W >= 1, Z >= 2, D in {2, 3}, mean length >= 1");
  std::mt19937_64 rng(seed);
  PlantedPlsv out;
  MatrixD& Phi = out.model.topic_coords;
  Phi = MatrixD(Z, D);
  // Gaussian positions, not a ring: with equal norms |phi_z| the proportions softmax(x.phi_z -
  // |phi_z|^2 / 2) would be nearly invariant to scaling X up and Phi down.
  for (int z = 0; z < Z; ++z)
    for (int d = 0; d < D; ++d) Phi(z, d) = topic_sd * normal(rng);
  MatrixD& theta = out.model.theta;
  theta = MatrixD(Z, W);
  std::vector<std::vector<double>> word_cum(static_cast<size_t>(Z), std::vector<double>(static_cast<size_t>(W)));
  for (int z = 0; z < Z; ++z) {
    double t = 0.0;
    for (index_t w = 0; w < W; ++w) t += (theta(z, w) = gamma_variate(theta_concentration, rng) + 1e-300);
    double acc = 0.0;
    for (index_t w = 0; w < W; ++w) {
      theta(z, w) /= t;
      word_cum[static_cast<size_t>(z)][static_cast<size_t>(w)] = (acc += theta(z, w));
    }
  }
  out.doc_coords = MatrixD(N, D);
  Corpus& c = out.corpus;
  c.num_words = W;
  c.row_ptr.assign(1, 0);
  std::vector<double> p(static_cast<size_t>(Z)), topic_cum(static_cast<size_t>(Z));
  std::map<int, double> counts;
  for (index_t n = 0; n < N; ++n) {
    for (int d = 0; d < D; ++d) out.doc_coords(n, d) = doc_sd * normal(rng);
    if (D == 2)
      math::plsv_topic_proportions<double, 2>(out.doc_coords.row(n), Phi.data.data(), Z, p.data());
    else
      math::plsv_topic_proportions<double, 3>(out.doc_coords.row(n), Phi.data.data(), Z, p.data());
    double acc = 0.0;
    for (int z = 0; z < Z; ++z) topic_cum[static_cast<size_t>(z)] = (acc += p[static_cast<size_t>(z)]);
    const index_t M = 1 + poisson(mean_length - 1.0, rng);
    counts.clear();
    for (index_t m = 0; m < M; ++m) {
      const int z = draw(topic_cum, rng);
      counts[draw(word_cum[static_cast<size_t>(z)], rng)] += 1.0;
    }
    for (const auto& [w, k] : counts) {
      c.word.push_back(w);
      c.count.push_back(k);
    }
    c.row_ptr.push_back(static_cast<index_t>(c.word.size()));
    c.doc_index.push_back(n);
  }
  return out;
}

}  // namespace orrery
