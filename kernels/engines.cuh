// The CUDA backend's engines and primitives, one .cu file per family; backend.cu hands them out.
// Only backend.cu and the families' own files include this header: methods reach these through
// Backend. Each runs on `device` (made current by every call that launches work).
#pragma once
#include <memory>
#include <vector>

#include "orrery/backend.hpp"

namespace orrery::cuda {

std::unique_ptr<PeEngine> make_pe_engine(int device, const MatrixD& P, const std::vector<double>& log_priors, int dim,
                                         double eta_r);                                    // pe_engine.cu
std::unique_ptr<HssneEngine> make_hssne_engine(int device, const MatrixD* dense, const SparseAffinity* sparse,
                                               double alpha, int dim,
                                               const HssneRepulsion& repulsion = {});      // hssne.cu
std::unique_ptr<NervEngine> make_nerv_engine(int device, const MatrixD* dense, const SparseAffinity* sparse,
                                             const std::vector<double>& beta, const NervOptions& options);  // nerv.cu
std::unique_ptr<PlsvEngine> make_plsv_engine(int device, const Corpus& corpus, int topics, int dim);  // plsv.cu
std::unique_ptr<PlacementEngine> make_placement_engine(int device, const MatrixD& R, double alpha, const KnnGraph& g,
                                                       const std::vector<double>& p,
                                                       const HssneRepulsion& repulsion);  // place.cu
NervPlacementResult place_nerv(int device, const MatrixD& R, const KnnGraph& g, const std::vector<double>& p,
                               const std::vector<double>& beta, double lambda,
                               const NervPlacementParams& params);  // nerv_place.cu
KnnGraph exact_knn(const MatrixD& X, int k, int device,
                   const std::function<void(index_t, index_t)>& progress);  // knn.cu
RankRows rank_rows(const MatrixD& X, const MatrixD& Y, int kmax, RankInput input,
                  const std::vector<index_t>& queries, int device);  // quality.cu
MatrixD learning_metric_distances(const ClassMixture& model, const MatrixD& X, int pieces, int device);  // snerv.cu
std::vector<double> learning_metric_pairs(const ClassMixture& model, const MatrixD& X, const KnnGraph& graph,
                                          int pieces, int device);  // snerv.cu

}  // namespace orrery::cuda
