// The CPU's placement engine (orrery/hssne.hpp, PlacementEngine): per point the arithmetic of
// math/place.hpp, points spread over the threads; the sums at each step's trial places from the
// frozen grid (RepulsionGrid::freeze / sums_at) where it reaches, else by the exact loop over the
// reference. Every point's sums and steps are its own, so the thread count changes no bits.
#include <algorithm>
#include <memory>
#include <numeric>
#include <string>

#include "cpu/engines.hpp"
#include "orrery/engines.hpp"
#include "orrery/error.hpp"
#include "orrery/interp.hpp"
#include "orrery/knn.hpp"
#include "orrery/math/place.hpp"

namespace orrery::cpu {
namespace {

template <int D>
class CpuPlacementEngine final : public PlacementEngine {
 public:
  CpuPlacementEngine(const MatrixD& R, double alpha, const KnnGraph& g, const std::vector<double>& p,
                     const HssneRepulsion& repulsion, int threads)
      : R_(R), alpha_(alpha), g_(g), p_(p), threads_(threads) {
    if (repulsion.interpolated) grid_ = std::make_unique<RepulsionGrid>(D, alpha, repulsion.grid, threads);
  }

  std::string name() const override { return "cpu (" + std::to_string(threads_) + " threads)"; }

  void start() override {
    const index_t M = g_.num_points;
    const int k = g_.k;
    res_.coords = MatrixD(M, D);
    res_.cost.assign(static_cast<size_t>(M), 0.0);
    res_.steps.assign(static_cast<size_t>(M), 0);
    grad_.assign(static_cast<size_t>(M * D), 0.0);
    eta_.assign(static_cast<size_t>(M), 0.0);
    summed_exactly_.assign(static_cast<size_t>(M), 0);
    MatrixD& Y = res_.coords;
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (index_t i = 0; i < M; ++i) {
      math::place_start<D>(R_.data.data(), g_.neighbors(i), p_.data() + i * k, k, Y.row(i));
      eta_[static_cast<size_t>(i)] =
          math::place_first_step<D>(Y.row(i), R_.data.data(), g_.neighbors(i), p_.data() + i * k, k, alpha_);
    }
    if (grid_) grid_->freeze(R_, kPlacementGridMargin);
    active_.resize(static_cast<size_t>(M));
    std::iota(active_.begin(), active_.end(), index_t(0));
    evaluate(Y);
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (index_t i = 0; i < M; ++i) {
      const auto si = static_cast<size_t>(i);
      res_.cost[si] = math::place_cost<D>(Y.row(i), R_.data.data(), g_.neighbors(i), p_.data() + i * k, k, alpha_,
                                          sums_.h[si], sums_.hs[si], sums_.hsy.row(i), grad_.data() + i * D);
    }
  }

  index_t step(double tol) override {
    const auto A = static_cast<index_t>(active_.size());
    const int k = g_.k;
    MatrixD& Y = res_.coords;
    MatrixD T(A, D);
    for (index_t a = 0; a < A; ++a) {
      const index_t i = active_[static_cast<size_t>(a)];
      math::place_trial<D>(Y.row(i), grad_.data() + i * D, eta_[static_cast<size_t>(i)], T.row(a));
    }
    evaluate(T);
    std::vector<unsigned char> moving(static_cast<size_t>(A), 0);
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (index_t a = 0; a < A; ++a) {
      const index_t i = active_[static_cast<size_t>(a)];
      const auto si = static_cast<size_t>(i), sa = static_cast<size_t>(a);
      double gt[D];
      const double c = math::place_cost<D>(T.row(a), R_.data.data(), g_.neighbors(i), p_.data() + i * k, k, alpha_,
                                           sums_.h[sa], sums_.hs[sa], sums_.hsy.row(a), gt);
      ++res_.steps[si];
      moving[sa] = math::place_accept<D>(c, T.row(a), gt, tol, res_.cost[si], Y.row(i), grad_.data() + i * D, eta_[si]);
    }
    std::vector<index_t> next;
    for (index_t a = 0; a < A; ++a)
      if (moving[static_cast<size_t>(a)]) next.push_back(active_[static_cast<size_t>(a)]);
    active_.swap(next);
    return static_cast<index_t>(active_.size());
  }

  PlacementResult result() const override {
    PlacementResult r = res_;
    r.exact_points = grid_ ? std::count(summed_exactly_.begin(), summed_exactly_.end(), 1) : g_.num_points;
    r.interpolated = grid_ != nullptr;
    return r;
  }

 private:
  // The sums at T (row a: the place of the active point active_[a]): from the grid where it
  // reaches, else exactly.
  void evaluate(const MatrixD& T) {
    const index_t A = T.rows;
    if (grid_) {
      grid_->sums_at(T, sums_, inside_);
    } else {
      sums_.h.assign(static_cast<size_t>(A), 0.0);
      sums_.hs.assign(static_cast<size_t>(A), 0.0);
      sums_.hsy = MatrixD(A, D, 0.0);
      inside_.assign(static_cast<size_t>(A), 0);
    }
#pragma omp parallel for schedule(dynamic, 16) num_threads(threads_)
    for (index_t a = 0; a < A; ++a) {
      const auto sa = static_cast<size_t>(a);
      if (inside_[sa]) continue;
      math::HssneRow<double, D> acc;
      math::place_exact_sums<D>(T.row(a), R_.data.data(), R_.rows, alpha_, acc);
      sums_.h[sa] = acc.h_sum;
      sums_.hs[sa] = acc.hs_sum;
      for (int d = 0; d < D; ++d) sums_.hsy(a, d) = acc.hsy[d];
      if (grid_) summed_exactly_[static_cast<size_t>(active_[sa])] = 1;
    }
  }

  const MatrixD& R_;
  double alpha_;
  const KnnGraph& g_;
  const std::vector<double>& p_;
  int threads_;
  std::unique_ptr<RepulsionGrid> grid_;  // null: exact sums
  PlacementResult res_;                  // places, costs, steps
  std::vector<double> grad_, eta_;       // per point: the gradient at its place, its step length
  std::vector<unsigned char> summed_exactly_;
  std::vector<index_t> active_;  // the points still moving, in index order
  RepulsionSums sums_;           // at the last evaluated places, one row per active point
  std::vector<unsigned char> inside_;
};

}  // namespace

std::unique_ptr<PlacementEngine> make_placement_engine(const MatrixD& R, double alpha, const KnnGraph& g,
                                                       const std::vector<double>& p, const HssneRepulsion& repulsion,
                                                       int threads) {
  check_placement_input(R, g, p);
  if (R.cols == 2) return std::make_unique<CpuPlacementEngine<2>>(R, alpha, g, p, repulsion, threads);
  return std::make_unique<CpuPlacementEngine<3>>(R, alpha, g, p, repulsion, threads);
}

}  // namespace orrery::cpu
