// Maps two well separated groups with HSSNE through the installed library and scores the map:
// prints "trustworthiness T" and exits 0 when the groups stay apart (T > 0.9), 1 otherwise.
#include <orrery/affinity.hpp>
#include <orrery/backend.hpp>
#include <orrery/hssne.hpp>
#include <orrery/quality.hpp>

#include <cstdio>
#include <random>

int main() {
  const int n = 60, d = 5;
  orrery::MatrixD X(n, d);
  std::mt19937_64 rng(1);
  std::normal_distribution<double> g(0.0, 1.0);
  std::vector<int> labels(n);
  for (int i = 0; i < n; ++i) {
    labels[i] = i < n / 2 ? 0 : 1;
    for (int j = 0; j < d; ++j) X(i, j) = g(rng) + (labels[i] ? 10.0 : 0.0);
  }
  orrery::HssneParams params;
  params.max_iter = 300;
  const orrery::AffinityResult a = orrery::affinities_dense(X, 10.0);
  const orrery::HssneResult r = orrery::fit_hssne(a.dense, labels, params, 7, *orrery::make_cpu_backend(0));
  orrery::QualityRequest req;
  req.ks = {5};
  req.curve = false;
  const orrery::QualityReport q = orrery::evaluate_quality(X, r.coords, labels, req, *orrery::make_cpu_backend(0));
  std::printf("trustworthiness %.4f, 5-NN accuracy %.4f\n", q.at_k[0].trustworthiness, q.at_k[0].knn_accuracy);
  return q.at_k[0].trustworthiness > 0.9 && q.at_k[0].knn_accuracy > 0.95 ? 0 : 1;
}
