// Delimited text matrices: the first byte picks .csv, .tsv or .txt, the rest is the file; read as
// a matrix (all rows and the first two) and as labels.
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const char* const kNames[3] = {"x.csv", "x.tsv", "x.txt"};
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  orrery::fuzz::read_dense(orrery::fuzz::write_file(orrery::fuzz::named(kNames[data[0] % 3], bytes), bytes));
  return 0;
}
