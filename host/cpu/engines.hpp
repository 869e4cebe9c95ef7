// The CPU backend's engines and primitives, one file per family (pe_engine.cpp, hssne_engine.cpp,
// nerv_engine.cpp, plsv_engine.cpp, rank_rows.cpp; knn.cpp and learning_metric.cpp implement the
// public CPU references of orrery/knn.hpp and orrery/snerv.hpp). Only cpu_backend.cpp, the
// engines' own files and the grid (interp.cpp) include this header; methods reach these through
// Backend.
#pragma once
#include <memory>
#include <vector>

#include "orrery/backend.hpp"
#include "orrery/interp.hpp"

namespace orrery::cpu {

// threads > 0 everywhere below (CpuBackend resolves 0 to the OpenMP default).
std::unique_ptr<PeEngine> make_pe_engine(const MatrixD& P, const std::vector<double>& log_priors, int dim,
                                         double eta_r, int threads);
// Exactly one of dense, sparse is non-null.
std::unique_ptr<HssneEngine> make_hssne_engine(const MatrixD* dense, const SparseAffinity* sparse, double alpha,
                                               int dim, int threads, const HssneRepulsion& repulsion = {});
std::unique_ptr<NervEngine> make_nerv_engine(const MatrixD* dense, const SparseAffinity* sparse,
                                             const std::vector<double>& beta, const NervOptions& options,
                                             int threads);
std::unique_ptr<PlsvEngine> make_plsv_engine(const Corpus& corpus, int topics, int dim, int threads);
// place_engine.cpp: R, g and p are read in place.
std::unique_ptr<PlacementEngine> make_placement_engine(const MatrixD& R, double alpha, const KnnGraph& g,
                                                       const std::vector<double>& p, const HssneRepulsion& repulsion,
                                                       int threads);
// nerv_place_engine.cpp (orrery/nerv_place.hpp).
NervPlacementResult place_nerv(const MatrixD& R, const KnnGraph& g, const std::vector<double>& p,
                               const std::vector<double>& beta, double lambda, const NervPlacementParams& params,
                               int threads);
// Interpolated repulsion's far points (interp.cpp), summed exactly: each point of `far` (indices into
// Y, N x D with D 2 or 3) gets its sums over every other point of Y, replacing its entries of out;
// every other point gets its sums over the far points added to its entries. O(|far| N) pairs; each
// point's sums in a fixed order, so the thread count changes no bits. Only rows [first, end) are
// touched (a shard's rows; end < 0: to the last).
void add_far_repulsion(const MatrixD& Y, const std::vector<index_t>& far, double alpha, RepulsionSums& out,
                       int threads, index_t first = 0, index_t end = -1);
RankRows rank_rows(const MatrixD& X, const MatrixD& Y, int kmax, RankInput input,
                  const std::vector<index_t>& queries, int threads);

}  // namespace orrery::cpu
