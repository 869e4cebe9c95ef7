// Built instead of comm_mpi.cpp when orrery is configured without MPI: asking for it is an input
// error that says how to get it.
#include "comm/comm_backends.hpp"
#include "orrery/error.hpp"

namespace orrery {

bool mpi_comm_built() { return false; }

namespace comm {
std::unique_ptr<Comm> make_mpi_comm(double /*timeout*/) {
  input_error("comm: \"mpi\" requested, but this orrery was built without MPI (install libopenmpi-dev and "
              "configure with -DORRERY_MPI=ON)");
}
}  // namespace comm

}  // namespace orrery
