// NumPy .npy (and .npy.gz) through read_matrix, with and without a row limit, and read_labels.
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  orrery::fuzz::read_dense(orrery::fuzz::write_file(orrery::fuzz::named("x.npy", bytes), bytes));
  return 0;
}
