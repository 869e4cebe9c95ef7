// What host/comm/comm.cpp needs from the communicator implementations, and the launcher detection
// behind make_comm("auto") (a function of the environment, so a test can hand it any environment).
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "orrery/comm.hpp"

namespace orrery::comm {

// MPI_COMM_WORLD's processes (comm_mpi.cpp), or the input error of a build without MPI (no_mpi.cpp);
// timeout as make_comm's.
std::unique_ptr<Comm> make_mpi_comm(double timeout);

struct Launch {
  bool by_launcher = false;  // an MPI launcher (mpirun/mpiexec, srun) started this process
  long size = 1;             // the number of processes it started, when it says (1 otherwise)
  std::string variable;      // the variable that told, for messages
};

// Reads the launchers' variables through `getenv` (std::getenv in make_comm).
Launch detect_launch(const std::function<const char*(const char*)>& getenv);

}  // namespace orrery::comm
