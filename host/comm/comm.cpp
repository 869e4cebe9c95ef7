// make_comm (which communicator a run gets) and the checks shared by every Comm's typed calls.
#include <cstdlib>
#include <numeric>

#include "comm/comm_backends.hpp"
#include "orrery/comm.hpp"
#include "orrery/error.hpp"

namespace orrery {

void Comm::check_root(int root, const char* call) const {
  if (root < 0 || root >= size())
    internal_error(std::string(call) + ": root " + std::to_string(root) + " is not a rank of " +
                   std::to_string(size()));
}

void Comm::check_counts(const std::vector<std::size_t>& counts, const char* call) const {
  if (counts.size() != static_cast<std::size_t>(size()))
    internal_error(std::string(call) + ": " + std::to_string(counts.size()) + " counts for " + std::to_string(size()) +
                   " ranks");
}

// Each rank fills its own slot of a zeroed vector and a sum gathers them: one O(size) allreduce,
// no extra primitive for a one-item allgather.
std::vector<std::size_t> Comm::gather_counts(std::size_t count) {
  std::vector<std::int64_t> all(static_cast<std::size_t>(size()), 0);
  all[static_cast<std::size_t>(rank())] = static_cast<std::int64_t>(count);
  allreduce(all.data(), all.size(), ReduceOp::sum);
  return std::vector<std::size_t>(all.begin(), all.end());
}

std::size_t Comm::total(const std::vector<std::size_t>& counts) {
  return std::accumulate(counts.begin(), counts.end(), std::size_t{0});
}

namespace comm {

// mpirun/mpiexec of Open MPI set OMPI_COMM_WORLD_SIZE; MPICH's hydra and srun --mpi=pmi2 PMI_SIZE;
// PMIx launchers (srun --mpi=pmix, prterun) PMIX_RANK; srun SLURM_STEP_NUM_TASKS for every task of
// a step (a batch script itself, which runs outside any step, does not have it).
Launch detect_launch(const std::function<const char*(const char*)>& getenv) {
  for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS", "PMIX_RANK"}) {
    const char* value = getenv(variable);
    if (!value || !*value) continue;
    Launch launch;
    launch.by_launcher = true;
    launch.variable = std::string(variable) + "=" + value;
    if (std::string(variable) != "PMIX_RANK") {
      char* end = nullptr;
      const long size = std::strtol(value, &end, 10);
      if (end && *end == '\0' && size > 0) launch.size = size;
    }
    return launch;
  }
  return {};
}

}  // namespace comm

std::unique_ptr<Comm> make_comm(const std::string& mode, double timeout) {
  if (!(timeout >= 0)) input_error("comm_timeout: expected seconds >= 0 (0: no limit), found " + std::to_string(timeout));
  if (mode == "single") return make_single_comm();
  if (mode == "mpi") return comm::make_mpi_comm(timeout);
  if (mode != "auto") input_error("comm: expected \"auto\", \"single\" or \"mpi\", found \"" + mode + "\"");
  const comm::Launch launch = comm::detect_launch([](const char* name) { return std::getenv(name); });
  if (!launch.by_launcher) return make_single_comm();
  if (mpi_comm_built()) return comm::make_mpi_comm(timeout);
  if (launch.size > 1)
    input_error("comm: \"auto\" sees a launch of " + std::to_string(launch.size) + " processes (" + launch.variable +
                "), but this orrery was built without MPI, so each would compute the whole run alone; configure "
                "with -DORRERY_MPI=ON or start one process");
  return make_single_comm();
}

}  // namespace orrery
