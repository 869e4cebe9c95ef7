// NeRV's truncated cost on the CPU (math/nerv_cells.hpp has the derivation): the grid built on the
// host each evaluation, the sweeps in parallel over points, every sum in a fixed order.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "orrery/affinity.hpp"
#include "orrery/math/nerv_cells.hpp"
#include "orrery/types.hpp"

namespace orrery {
class Comm;
}

namespace orrery::cpu {

// T: float (the engine's arithmetic) or double (tests of the gradient against finite differences).
template <class T>
class NervCellsEvaluator {
 public:
  // P: sparse conditional rows (validated as nerv.hpp's sparse form), beta: per-point precisions,
  // cutoff: c in nats (> 0), dim 2 or 3. P and beta are copied into T.
  // gather: each point's column terms by its own sweep (the CUDA kernels' way, twice the pair terms;
  // tests) instead of scattered from the rows that own them, and the listed terms read from the
  // separate per-row arrays, as the kernels read them, instead of the packed rows.
  NervCellsEvaluator(const SparseAffinity& P, const std::vector<double>& beta, double cutoff, int dim, int threads,
                     bool gather = false);
  // E at Y (N x D) and, with grad, dE/dY; row_costs (optional) gets each row's cost.
  double evaluate(const MatrixD& Y, double lambda, MatrixD* grad, std::vector<double>* row_costs = nullptr);
  // Splits each evaluation's per-point sweeps over comm's ranks (NervEngine::shard): every rank
  // holds the whole map and gets the whole cost and gradient, with the bits of one process.
  void shard(Comm* comm) { comm_ = comm; }
  // Mean |S_i| (pairs kept per row) at the last evaluation.
  double mean_row_pairs() const { return mean_row_pairs_; }

 private:
  template <int D>
  double run(const MatrixD& Y, double lambda, MatrixD* grad, std::vector<double>* row_costs);

  index_t n_;
  int dim_, threads_;
  bool gather_;
  Comm* comm_ = nullptr;
  double cutoff_, h0_;
  double mean_row_pairs_ = 0.0;
  // input (float), by row; the transpose of the lists
  std::vector<long long> row_ptr_;
  std::vector<std::int32_t> col_;  // 32-bit, so that the loops over the lists vectorise
  std::vector<T> p_, lp_, lpf_, beta_;
  math::NervListsTranspose<T, std::int32_t> transpose_;
  // per evaluation, input order
  std::array<std::vector<T>, 3> yo_;
  std::vector<T> dmin_o_, r2_o_, lz_o_, klqp_o_, psum_o_, qs_o_;
  // per evaluation, cell order
  std::array<std::vector<T>, 3> ys_;
  std::vector<long long> perm_, start_;
  std::vector<std::int32_t> wide_;
  std::vector<T> beta_s_, lpf_s_, dmin_s_, r2_s_, colr2_s_, lz_s_, klqp_s_, psum_s_, qs_s_;
  std::vector<T> cell_r2_, reach2_, scatter_, wide_packed_, row_packed_;
};

extern template class NervCellsEvaluator<float>;
extern template class NervCellsEvaluator<double>;

}  // namespace orrery::cpu
