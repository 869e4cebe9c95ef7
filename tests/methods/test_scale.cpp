// Scale-free neighbor methods: the input multiplied by any factor c in [1e-30, 1e30] gives the
// same affinities (beta / c^2), the same NeRV map times c (its map is in input units), the same
// supervised NeRV and HSSNE maps (theirs are unitless), the same PCA times c and the same quality
// measures, on the double and the float arithmetic. Factors that are powers of two give the same
// numbers bit for bit (every rescaling inside is then exact); other factors differ by the rounding
// of c x, which a few dozen iterations amplify only to the tolerances stated below.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "orrery/affinity.hpp"
#include "orrery/backend.hpp"
#include "orrery/hssne.hpp"
#include "orrery/nerv.hpp"
#include "orrery/pca.hpp"
#include "orrery/quality.hpp"
#include "orrery/snerv.hpp"

using namespace orrery;

namespace {

const double kFactors[] = {1e-30, 1e-6, 1e6, 1e30};

// Three Gaussian blobs in d dimensions, offset along the first three axes.
MatrixD blobs(index_t n, int d, unsigned seed, std::vector<int>* labels) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0, 1);
  MatrixD X(n, d);
  labels->assign(static_cast<size_t>(n), 0);
  for (index_t i = 0; i < n; ++i) {
    const int c = static_cast<int>(i % 3);
    (*labels)[static_cast<size_t>(i)] = c;
    for (int k = 0; k < d; ++k) X(i, k) = (k == c ? 4.0 : 0.0) + z(rng);
  }
  return X;
}

MatrixD times(const MatrixD& X, double c) {
  MatrixD Y = X;
  for (double& v : Y.data) v *= c;
  return Y;
}

// max |A / c - B| relative to max |B|
double relative_gap(const MatrixD& A, double c, const MatrixD& B) {
  double gap = 0.0, top = 0.0;
  for (size_t q = 0; q < B.data.size(); ++q) {
    gap = std::max(gap, std::abs(A.data[q] / c - B.data[q]));
    top = std::max(top, std::abs(B.data[q]));
  }
  return gap / top;
}

double trustworthiness10(const MatrixD& X, const MatrixD& Y) {
  QualityRequest req;
  req.ks = {10};
  req.curve = false;
  return evaluate_quality(X, Y, {}, req, *make_cpu_backend(0)).at_k[0].trustworthiness;
}

struct NervCase {
  bool sparse;
  NervPrecision precision;
};

NervResult nerv_map(const MatrixD& X, const NervCase& c) {
  NervParams prm;
  prm.max_iter = 40;
  prm.precision = c.precision;
  const AffinityResult a = c.sparse ? affinities_sparse(X, 10.0, 2) : affinities_dense(X, 10.0, 2);
  return c.sparse ? fit_nerv(a.sparse_conditional, a.beta, prm, 5, *make_cpu_backend(2)) : fit_nerv(a.conditional, a.beta, prm, 5, *make_cpu_backend(2));
}

}  // namespace

TEST(ScaleFree, AffinitiesDependOnlyOnTheShapeOfThePoints) {
  std::vector<int> y;
  const MatrixD X = blobs(60, 4, 1, &y);
  const AffinityResult dense = affinities_dense(X, 8.0, 2), sparse = affinities_sparse(X, 8.0, 2);
  for (double c : kFactors) {
    const AffinityResult dc = affinities_dense(times(X, c), 8.0, 2), sc = affinities_sparse(times(X, c), 8.0, 2);
    for (size_t q = 0; q < dense.dense.data.size(); ++q)
      ASSERT_NEAR(dc.dense.data[q], dense.dense.data[q], 1e-9 * dense.dense.data[q] + 1e-300) << "factor " << c;
    ASSERT_EQ(sc.sparse.col, sparse.sparse.col) << "factor " << c;
    for (size_t q = 0; q < sparse.sparse.val.size(); ++q)
      ASSERT_NEAR(sc.sparse.val[q], sparse.sparse.val[q], 1e-9 * sparse.sparse.val[q]) << "factor " << c;
    for (size_t i = 0; i < dense.beta.size(); ++i) {
      ASSERT_NEAR(dc.beta[i] * c * c, dense.beta[i], 1e-9 * dense.beta[i]) << "factor " << c << ", row " << i;
      ASSERT_NEAR(sc.beta[i] * c * c, sparse.beta[i], 1e-9 * sparse.beta[i]) << "factor " << c << ", row " << i;
    }
  }
}

// Before the maps worked in internal units, NeRV on the same points times 1e6 or 1e-20 stopped
// after 0-1 iterations with a near-random map (trustworthiness 0.53 instead of 0.85).
TEST(ScaleFree, NervMapIsInInputUnitsOnEveryPath) {
  std::vector<int> y;
  const MatrixD X = blobs(90, 5, 2, &y);
  for (const NervCase nc : {NervCase{false, NervPrecision::float64}, NervCase{true, NervPrecision::float64},
                            NervCase{false, NervPrecision::float32}, NervCase{true, NervPrecision::float32}}) {
    const std::string what = std::string(nc.sparse ? "sparse" : "dense") +
                             (nc.precision == NervPrecision::float32 ? ", float" : ", double");
    const NervResult base = nerv_map(X, nc);
    ASSERT_GT(base.iterations, 20) << what;
    const double t_base = trustworthiness10(X, base.coords);
    for (double c : {std::ldexp(1.0, -100), std::ldexp(1.0, 100)}) {
      const NervResult r = nerv_map(times(X, c), nc);
      EXPECT_EQ(relative_gap(r.coords, c, base.coords), 0.0) << what << ", factor " << c;
    }
    for (double c : kFactors) {
      const NervResult r = nerv_map(times(X, c), nc);
      EXPECT_EQ(r.iterations, base.iterations) << what << ", factor " << c;
      // double: rounding of c x only; float: the pair terms round at 6e-8 relative, and 40 CG
      // iterations carry that to about 1e-5 of the map's extent
      const double tol = nc.precision == NervPrecision::float64 ? 1e-7 : 1e-3;
      EXPECT_LT(relative_gap(r.coords, c, base.coords), tol) << what << ", factor " << c;
      EXPECT_NEAR(trustworthiness10(times(X, c), r.coords), t_base, 1e-3) << what << ", factor " << c;
    }
  }
}

// The class model's width is chosen by validation on the double path and given (in input units,
// so times c) on the float path.
TEST(ScaleFree, SupervisedNervMapIsTheSameAtEveryScale) {
  std::vector<int> y;
  const MatrixD X = blobs(90, 5, 3, &y);
  for (const NervPrecision precision : {NervPrecision::float64, NervPrecision::float32}) {
    const bool dbl = precision == NervPrecision::float64;
    auto map = [&](double c) {
      SnervParams prm;
      prm.metric.components = 6;
      prm.metric.max_iter = 40;
      prm.metric.width = dbl ? 0.0 : 1.5 * c;
      prm.nerv.max_iter = 30;
      prm.nerv.precision = precision;
      return fit_snerv(times(X, c), y, prm, 7, *make_cpu_backend(2));
    };
    const SnervResult base = map(1.0);
    for (double c : kFactors) {
      const SnervResult r = map(c);
      const char* what = dbl ? "double" : "float";
      EXPECT_NEAR(r.model.width / c, base.model.width, 1e-9 * base.model.width) << what << ", factor " << c;
      // the metric is unitless; the class model's 40 CG iterations carry the rounding of c x to
      // about 1e-8 of it
      EXPECT_LT(relative_gap(r.metric_distances, 1.0, base.metric_distances), 1e-6) << what << ", factor " << c;
      // and the map's 30 iterations that to about 3e-6 of the map's extent (double), 1e-2
      // (float, whose pair terms round at 6e-8); the failures were of order 1
      EXPECT_LT(relative_gap(r.nerv.coords, 1.0, base.nerv.coords), dbl ? 3e-5 : 3e-2) << what << ", factor " << c;
    }
  }
}

TEST(ScaleFree, HssneMapIsTheSameAtEveryScale) {
  std::vector<int> y;
  const MatrixD X = blobs(90, 5, 4, &y);
  HssneParams prm;
  prm.max_iter = 60;
  prm.exaggeration_iter = 20;
  for (const bool sparse : {false, true}) {
    auto map = [&](const MatrixD& P) {
      return sparse ? fit_hssne(affinities_sparse(P, 10.0, 2).sparse, prm, 9, *make_cpu_backend(2)).coords
                    : fit_hssne(affinities_dense(P, 10.0, 2).dense, {}, prm, 9, *make_cpu_backend(2)).coords;
    };
    const MatrixD base = map(X);
    for (double c : kFactors)
      EXPECT_LT(relative_gap(map(times(X, c)), 1.0, base), 1e-6) << (sparse ? "sparse" : "dense") << ", factor " << c;
  }
}

TEST(ScaleFree, PcaScalesWithItsInput) {
  std::vector<int> y;
  const MatrixD X = blobs(60, 6, 5, &y);
  const MatrixD base = pca_project(X, 3, 2);
  for (double c : kFactors) EXPECT_LT(relative_gap(pca_project(times(X, c), 3, 2), c, base), 1e-9) << "factor " << c;
}

TEST(ScaleFree, QualityMeasuresDependOnlyOnTheShapes) {
  std::vector<int> y;
  const MatrixD X = blobs(80, 5, 6, &y);
  MatrixD Y(80, 2);
  for (index_t i = 0; i < 80; ++i) Y(i, 0) = X(i, 0) + 0.3 * X(i, 3), Y(i, 1) = X(i, 1) - 0.2 * X(i, 4);
  QualityRequest req;
  req.ks = {5, 10};
  req.curve = false;
  req.perplexity = 10.0;
  const QualityReport base = evaluate_quality(X, Y, y, req, *make_cpu_backend(0));
  for (double c : kFactors) {
    const QualityReport r = evaluate_quality(times(X, c), times(Y, c), y, req, *make_cpu_backend(0));
    for (size_t k = 0; k < base.at_k.size(); ++k) {
      EXPECT_EQ(r.at_k[k].trustworthiness, base.at_k[k].trustworthiness) << "factor " << c;
      EXPECT_EQ(r.at_k[k].continuity, base.at_k[k].continuity) << "factor " << c;
    }
    EXPECT_NEAR(r.smoothed_precision, base.smoothed_precision, 1e-9 * std::abs(base.smoothed_precision)) << c;
    EXPECT_NEAR(r.smoothed_recall, base.smoothed_recall, 1e-9 * std::abs(base.smoothed_recall)) << c;
  }
}
