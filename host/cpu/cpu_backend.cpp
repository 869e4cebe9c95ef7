// CpuBackend: the reference path. Its engines and primitives live one file per family beside this
// one (cpu/engines.hpp); this file hands them out with the backend's thread count, and chooses a
// backend from a device string.
#include <omp.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <string>

#include "cpu/engines.hpp"
#include "orrery/backend.hpp"
#include "orrery/comm.hpp"
#include "orrery/engines.hpp"
#include "orrery/error.hpp"
#include "orrery/knn.hpp"
#include "orrery/quality.hpp"
#include "orrery/snerv.hpp"

namespace orrery {
namespace {

// The first number on the line of `file` that starts with `key`, times `unit`; -1 when absent.
double read_meminfo(const std::string& file, const std::string& key, double unit) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) {
      try {
        return std::stod(line.substr(key.size())) * unit;
      } catch (const std::exception&) {
        return -1.0;
      }
    }
  return -1.0;
}

// A single number in `file` (cgroup v2 memory.max / memory.current); -1 when absent or "max".
double read_number(const std::string& file) {
  std::ifstream in(file);
  std::string v;
  if (!(in >> v) || v == "max") return -1.0;
  try {
    return std::stod(v);
  } catch (const std::exception&) {
    return -1.0;
  }
}

}  // namespace

double available_host_memory() {
  double avail = read_meminfo("/proc/meminfo", "MemAvailable:", 1024.0);
  const double limit = read_number("/sys/fs/cgroup/memory.max"), used = read_number("/sys/fs/cgroup/memory.current");
  if (limit > 0 && used >= 0) avail = avail < 0 ? limit - used : std::min(avail, limit - used);
  return avail > 0 ? avail : 0.0;
}

namespace {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int threads) : threads_(threads > 0 ? threads : omp_get_max_threads()) {}
  std::string name() const override { return "cpu (" + std::to_string(threads_) + " threads)"; }
  int threads() const override { return threads_; }
  MemoryInfo memory() const override { return {available_host_memory(), 0.0}; }

  // Parallel copy of double arrays; both are first touched in the same static partition, so pages
  // are local to the threads that copy them. Write-allocate traffic is not counted.
  double copy_bandwidth(size_t bytes) const override {
    const size_t count = std::max<size_t>(bytes / sizeof(double), 1);
    const size_t block = size_t(1) << 16;
    const auto blocks = static_cast<index_t>((count + block - 1) / block);
    std::unique_ptr<double[]> src(new double[count]), dst(new double[count]);
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (index_t b = 0; b < blocks; ++b) {
      const size_t lo = static_cast<size_t>(b) * block, hi = std::min(count, lo + block);
      for (size_t i = lo; i < hi; ++i) src[i] = static_cast<double>(i), dst[i] = 0.0;
    }
    double best = 1e300;
    for (int rep = 0; rep < 5; ++rep) {
      const double t0 = omp_get_wtime();
#pragma omp parallel for schedule(static) num_threads(threads_)
      for (index_t b = 0; b < blocks; ++b) {
        const size_t lo = static_cast<size_t>(b) * block, hi = std::min(count, lo + block);
        std::copy(src.get() + lo, src.get() + hi, dst.get() + lo);
      }
      best = std::min(best, omp_get_wtime() - t0);
    }
    volatile double sink = dst[count / 3];  // keeps the copies observable
    (void)sink;
    return 2.0 * static_cast<double>(count * sizeof(double)) / best;
  }

  std::unique_ptr<PeEngine> make_pe(const MatrixD& P, const std::vector<double>& log_priors, int dim,
                                    double eta_r) override {
    return cpu::make_pe_engine(P, log_priors, dim, eta_r, threads_);
  }
  std::unique_ptr<HssneEngine> make_hssne(const MatrixD& P, double alpha, int dim) override {
    return cpu::make_hssne_engine(&P, nullptr, alpha, dim, threads_);
  }
  bool has_interpolated_repulsion() const override { return true; }
  bool has_tree_repulsion() const override { return true; }
  std::unique_ptr<HssneEngine> make_hssne(const SparseAffinity& P, double alpha, int dim,
                                          const HssneRepulsion& repulsion = {}) override {
    return cpu::make_hssne_engine(nullptr, &P, alpha, dim, threads_, repulsion);
  }
  std::unique_ptr<PlacementEngine> make_placement(const MatrixD& reference, double alpha, const KnnGraph& to_reference,
                                                  const std::vector<double>& p,
                                                  const HssneRepulsion& repulsion) override {
    return cpu::make_placement_engine(reference, alpha, to_reference, p, repulsion, threads_);
  }
  NervPlacementResult place_nerv(const MatrixD& reference_map, const KnnGraph& to_reference,
                                 const std::vector<double>& p, const std::vector<double>& beta, double lambda,
                                 const NervPlacementParams& params) const override {
    return cpu::place_nerv(reference_map, to_reference, p, beta, lambda, params, threads_);
  }
  std::unique_ptr<NervEngine> make_nerv(const MatrixD& P, const std::vector<double>& beta,
                                        const NervOptions& options) override {
    return cpu::make_nerv_engine(&P, nullptr, beta, options, threads_);
  }
  std::unique_ptr<NervEngine> make_nerv(const SparseAffinity& P, const std::vector<double>& beta,
                                        const NervOptions& options) override {
    return cpu::make_nerv_engine(nullptr, &P, beta, options, threads_);
  }
  std::unique_ptr<PlsvEngine> make_plsv(const Corpus& corpus, int topics, int dim) override {
    return cpu::make_plsv_engine(corpus, topics, dim, threads_);
  }
  KnnGraph knn(const MatrixD& X, int k) const override { return exact_knn(X, k, threads_); }
  KnnGraph knn_reporting(const MatrixD& X, int k, const KnnProgress& progress) const override {
    return exact_knn(X, k, threads_, progress);
  }
  RankRows rank_rows(const MatrixD& X, const MatrixD& Y, int kmax, RankInput input,
                     const std::vector<index_t>& queries) const override {
    return cpu::rank_rows(X, Y, kmax, input, queries, threads_);
  }
  MatrixD learning_metric_distances(const ClassMixture& model, const MatrixD& X, int pieces) const override {
    return orrery::learning_metric_distances(model, X, pieces, threads_);
  }
  std::vector<double> learning_metric_pairs(const ClassMixture& model, const MatrixD& X, const KnnGraph& graph,
                                            int pieces) const override {
    return orrery::learning_metric_pairs(model, X, graph, pieces, threads_);
  }

 private:
  int threads_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(int threads) { return std::make_unique<CpuBackend>(threads); }

std::unique_ptr<Backend> make_backend(const std::string& device, int threads) {
  if (device == "cpu") return make_cpu_backend(threads);
  if (device == "auto") return cuda_devices().empty() ? make_cpu_backend(threads) : make_cuda_backend(0);
  if (device == "cuda") return make_cuda_backend(0);
  if (device.rfind("cuda:", 0) == 0) {
    const std::string idx = device.substr(5);
    if (idx.empty() || idx.size() > 6 || idx.find_first_not_of("0123456789") != std::string::npos)
      input_error("device: expected auto, cpu, cuda or cuda:N, found \"" + device + "\"");
    return make_cuda_backend(std::stoi(idx));
  }
  input_error("device: expected auto, cpu, cuda or cuda:N, found \"" + device + "\"");
}

std::string device_for_rank(const std::string& device, int ranks, int node_rank, const std::vector<DeviceInfo>& gpus) {
  if (ranks <= 1 || (device != "cuda" && device != "auto") || gpus.empty()) return device;
  const auto turn = static_cast<size_t>(std::max(0, node_rank)) % gpus.size();
  return "cuda:" + std::to_string(gpus[turn].index);
}

int ranks_sharing_device(const std::string& device, int node_size, int node_rank, const std::vector<DeviceInfo>& gpus) {
  if (device == "cpu" || gpus.empty()) return 1;
  const std::string mine = device_for_rank(device, node_size, node_rank, gpus);
  int sharing = 0;
  for (int r = 0; r < node_size; ++r) sharing += device_for_rank(device, node_size, r, gpus) == mine;
  return std::max(1, sharing);
}

int ranks_sharing_device(const std::string& device, const Comm& comm) {
  if (comm.size() <= 1 || device == "cpu") return 1;
  return ranks_sharing_device(device, comm.node_size(), comm.node_rank(), cuda_devices());
}

std::unique_ptr<Backend> make_backend(const std::string& device, int threads, const Comm& comm) {
  if (comm.size() <= 1 || device == "cpu") return make_backend(device, threads);
  return make_backend(device_for_rank(device, comm.size(), comm.node_rank(), cuda_devices()), threads);
}

}  // namespace orrery
