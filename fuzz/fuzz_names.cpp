// Name lists (object and class names): one name per non-blank line.
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace orrery;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::string path = fuzz::write_file(fuzz::named("names.txt", bytes), bytes);
  fuzz::expect_input_errors_only("read_names", [&] { io::read_names(path); });
  return 0;
}
