// Backend: the one seam between the methods and their devices (DESIGN.md, rule 3). Methods talk
// only to this interface; CpuBackend (host/cpu) is the reference, CudaBackend (kernels/) the fast
// path. No CUDA types appear here. Big arrays live in backend-owned buffers (engines) for the
// whole fit; per call only O(K D) values (class coordinates, gradients) and scalars cross.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "orrery/engines.hpp"
#include "orrery/interp.hpp"
#include "orrery/types.hpp"

namespace orrery {

class Comm;
struct Corpus;
struct KnnGraph;
struct RankRows;
enum class RankInput;  // orrery/quality.hpp
struct SparseAffinity;

// Memory a backend can use now, for planning a run before its large allocations (Numbers in
// DESIGN.md): host bytes available to this process (MemAvailable, capped by a cgroup limit) and,
// on a device, its free memory (0 for the CPU backend).
struct MemoryInfo {
  double host_bytes = 0.0;
  double device_bytes = 0.0;
};

// Where a method's work runs. Every method family reaches its device through this interface only:
// a factory per family returns an engine that owns the family's big arrays (PeEngine, HssneEngine,
// PlacementEngine, NervEngine, PlsvEngine: orrery/engines.hpp), and a few whole primitives
// return host results (neighbor lists, rank rows, learning-metric distances). CpuBackend
// (host/cpu) is the reference; CudaBackend (kernels/) runs the same arithmetic on a GPU. A method
// never asks which one it has.
class Backend {
 public:
  virtual ~Backend() = default;
  // "cpu (N threads)" or "cuda:0 NVIDIA H100 ..."; goes into reports.
  virtual std::string name() const = 0;
  // CPU threads (OpenMP) this backend uses; 0 for CUDA. Host-side work of a method (affinities,
  // reductions of small results) uses this many threads.
  virtual int threads() const { return 0; }
  // What can still be allocated (see MemoryInfo).
  virtual MemoryInfo memory() const = 0;
  // Memory bandwidth of this device as a copy of `bytes` into another buffer: bytes read plus
  // bytes written per second, best of 5. Benchmarks relate their passes over data to it.
  virtual double copy_bandwidth(size_t bytes) const = 0;

  // --- PE (orrery/pe.hpp). P is N x K with rows validated by the caller; log_priors has K
  // entries; dim is 2 or 3. P must outlive the engine: the CPU backend reads it in place (no
  // second O(NK) copy), the CUDA backend copies it to the device once.
  virtual std::unique_ptr<PeEngine> make_pe(const MatrixD& P, const std::vector<double>& log_priors, int dim,
                                            double eta_r) = 0;
  // --- HSSNE (orrery/hssne.hpp): joint affinities, dense N x N or sparse CSR, which must outlive
  // the engine; alpha >= 0; dim 2 or 3.
  virtual std::unique_ptr<HssneEngine> make_hssne(const MatrixD& P, double alpha, int dim) = 0;
  // Whether make_hssne can interpolate the repulsion on this device.
  virtual bool has_interpolated_repulsion() const { return false; }
  // Whether make_hssne honours HssneRepulsion::tree_when_grid_dearer (a Barnes-Hut tree).
  virtual bool has_tree_repulsion() const { return false; }
  // Sparse P may take its repulsion from an interpolation grid (orrery/interp.hpp) instead of all pairs.
  virtual std::unique_ptr<HssneEngine> make_hssne(const SparseAffinity& P, double alpha, int dim,
                                                  const HssneRepulsion& repulsion = {}) = 0;
  // --- Out-of-sample placement into a frozen HSSNE map (orrery/hssne.hpp, place_points): the new
  // points' k nearest reference points (to_reference, M rows) with their conditional probabilities p
  // (M x k, row-major), and the reference map (N x D, D 2 or 3); all three must outlive the engine.
  // With repulsion.interpolated the sums over the reference come from a frozen grid over the map
  // widened by kPlacementGridMargin (exactly for a point outside it); exact_when_cheaper is place_points'
  // to resolve before, and is not read here.
  virtual std::unique_ptr<PlacementEngine> make_placement(const MatrixD& reference, double alpha,
                                                          const KnnGraph& to_reference, const std::vector<double>& p,
                                                          const HssneRepulsion& repulsion) = 0;
  // --- NeRV (orrery/nerv.hpp): conditional input probabilities p_{j|i} (dense N x N rows, or
  // sparse CSR rows with the documented floor outside the lists) and the per-point precisions
  // beta; both must outlive the engine.
  virtual std::unique_ptr<NervEngine> make_nerv(const MatrixD& P, const std::vector<double>& beta,
                                                const NervOptions& options) = 0;
  virtual std::unique_ptr<NervEngine> make_nerv(const SparseAffinity& P, const std::vector<double>& beta,
                                                const NervOptions& options) = 0;
  // --- Out-of-sample placement into a frozen NeRV map (orrery/nerv_place.hpp, place_nerv_points):
  // the new points' k nearest reference points (to_reference, M rows), their conditional
  // probabilities p (M x k, row-major) and precisions beta (M), the reference map (N x D, D 2 or 3).
  // Every point minimised on the device to the end (math/nerv_place.hpp); only the result comes back.
  virtual NervPlacementResult place_nerv(const MatrixD& reference_map, const KnnGraph& to_reference,
                                         const std::vector<double>& p, const std::vector<double>& beta, double lambda,
                                         const NervPlacementParams& params) const = 0;
  // --- PLSV (orrery/plsv.hpp): the corpus must outlive the engine; topics >= 2, dim 2 or 3.
  virtual std::unique_ptr<PlsvEngine> make_plsv(const Corpus& corpus, int topics, int dim) = 0;

  // --- Whole primitives, host in and host out.
  // The k nearest neighbors of every row of X (orrery/knn.hpp's conventions: self excluded,
  // ascending squared distance, ties by lower index); 1 <= k <= N - 1.
  virtual KnnGraph knn(const MatrixD& X, int k) const = 0;
  // knn that reports progress (rows done, N) on a long search; a device without reports runs knn.
  // (defined in host/cpu/knn.cpp)
  virtual KnnGraph knn_reporting(const MatrixD& X, int k, const std::function<void(index_t, index_t)>& progress) const;
  // The quality measures' rank rows (orrery/quality.hpp) of map Y against input X (vectors, an N x
  // N distance matrix or inner-product references, as `input` says), for the points `queries`
  // (empty: all points).
  virtual RankRows rank_rows(const MatrixD& X, const MatrixD& Y, int kmax, RankInput input,
                             const std::vector<index_t>& queries) const = 0;
  // Learning-metric distances between all rows of X under the class-mixture model (N x N,
  // symmetric, zero diagonal; orrery/snerv.hpp), straight paths of `pieces` pieces.
  virtual MatrixD learning_metric_distances(const ClassMixture& model, const MatrixD& X, int pieces) const = 0;
  // The learning-metric distance of every listed pair (i, graph.index[i k + q]) of X's rows, in the
  // graph's layout (num_points x k; graph.num_points = X.rows), each equal to the N x N matrix's
  // entry: supervised NeRV's candidate path, which never forms that matrix (O(N k) time and memory).
  virtual std::vector<double> learning_metric_pairs(const ClassMixture& model, const MatrixD& X,
                                                    const KnnGraph& graph, int pieces) const = 0;
};

// One CUDA device as `orrery info` lists it.
struct DeviceInfo {
  int index = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  double memory_gib = 0.0;
  int multiprocessors = 0;
};

// Host memory this process can still allocate (bytes): MemAvailable, capped by a cgroup v2 limit
// less its current use; every backend's MemoryInfo::host_bytes.
double available_host_memory();

std::unique_ptr<Backend> make_cpu_backend(int threads);  // threads <= 0: OpenMP default
// Throws Error(cuda) when orrery was built without CUDA or no device is usable.
std::unique_ptr<Backend> make_cuda_backend(int device);
bool cuda_built();                       // compiled with CUDA support
std::vector<DeviceInfo> cuda_devices();  // empty when none (or not built with CUDA)
std::string cuda_status();               // one line: why CUDA is or is not usable

// device: "auto" (CUDA when a device is present, else CPU), "cpu", "cuda", "cuda:N".
std::unique_ptr<Backend> make_backend(const std::string& device, int threads);
// The backend of one rank of a run over comm: with several ranks, "cuda" (and "auto" where the node
// has GPUs) gives each rank a GPU of its node in turn (device_for_rank); otherwise make_backend's.
std::unique_ptr<Backend> make_backend(const std::string& device, int threads, const Comm& comm);
// The device a rank takes: "cuda:I" for "cuda", or "auto" with `gpus` not empty, when there are
// several ranks, I the index of gpus[node_rank mod gpus.size()] (so the ranks on one machine spread
// over its GPUs, and share them when there are more ranks than GPUs); `device` as given otherwise
// ("cuda:N" puts every rank on GPU N; "cuda" with no GPU is left for make_backend to refuse).
std::string device_for_rank(const std::string& device, int ranks, int node_rank, const std::vector<DeviceInfo>& gpus);
// How many of the node_size ranks on a machine run on the GPU that device_for_rank gives rank
// node_rank there (itself included): node_size for "cuda:N", those whose turn falls on the same GPU
// for "cuda" and "auto"; 1 on the CPU or for one rank.
int ranks_sharing_device(const std::string& device, int node_size, int node_rank, const std::vector<DeviceInfo>& gpus);
// The same for this rank of comm, over the GPUs this process sees.
int ranks_sharing_device(const std::string& device, const Comm& comm);

// With the environment variable ORRERY_GUARD_BUFFERS=1 every device buffer carries guard bytes
// before and after its elements, checked when it is read back or freed. The first violation seen
// in this process, naming the buffer's size and the side overwritten; "" when none (always on the
// CPU, or without the variable).
std::string device_guard_violations();

}  // namespace orrery
