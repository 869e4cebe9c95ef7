// Built instead of kernels/ when orrery is configured without CUDA.
#include "orrery/backend.hpp"
#include "orrery/error.hpp"

namespace orrery {

bool cuda_built() { return false; }
std::vector<DeviceInfo> cuda_devices() { return {}; }
std::string cuda_status() { return "not built with CUDA (configure with -DORRERY_CUDA=ON and nvcc on PATH)"; }
std::unique_ptr<Backend> make_cuda_backend(int) {
  throw Error(ErrorKind::cuda, "device: CUDA requested, but this orrery was " + cuda_status());
}

}  // namespace orrery

#include "orrery/quality.hpp"

namespace orrery {

RankRows rank_rows_cuda(const MatrixD&, const MatrixD&, int, bool, int) {
  throw Error(ErrorKind::cuda, "device: CUDA requested for the quality measures, but this orrery was " + cuda_status());
}

}  // namespace orrery

#include "orrery/hssne.hpp"
#include "orrery/knn.hpp"

namespace orrery {

std::unique_ptr<HssneEngine> make_hssne_engine_cuda(int, const MatrixD*, const SparseAffinity*, double, int) {
  throw Error(ErrorKind::cuda, "device: CUDA requested for HSSNE, but this orrery was " + cuda_status());
}

KnnGraph exact_knn_cuda(const MatrixD&, int, int) {
  throw Error(ErrorKind::cuda, "device: CUDA requested for the neighbour search, but this orrery was " + cuda_status());
}

}  // namespace orrery

#include "orrery/snerv.hpp"

namespace orrery {

MatrixD learning_metric_distances_cuda(const ClassMixture&, const MatrixD&, int, int) {
  throw Error(ErrorKind::cuda, "device: CUDA requested for the learning-metric distances, but this orrery was " +
                                   cuda_status());
}

}  // namespace orrery

#include "orrery/nerv.hpp"

namespace orrery {

std::unique_ptr<NervEngine> make_nerv_engine_cuda(int, const MatrixD&, const MatrixD&, const std::vector<double>&, double,
                                                  int) {
  throw Error(ErrorKind::cuda, "device: CUDA requested for NeRV, but this orrery was " + cuda_status());
}

}  // namespace orrery

#include "orrery/plsv.hpp"

namespace orrery {

std::unique_ptr<PlsvEngine> make_plsv_engine_cuda(int, const Corpus&, int, int) {
  throw Error(ErrorKind::cuda, "device: CUDA requested for PLSV, but this orrery was " + cuda_status());
}

}  // namespace orrery
