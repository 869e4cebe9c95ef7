// Run configurations: JSON text -> the typed run config and its method's keys, parameters and
// input files, as `orrery validate` does (nothing is fitted). The working directory is a scratch
// directory holding small valid inputs, so that mutated configs reach the method readers with
// files that open: posteriors.csv (6 x 3), labels.csv, vectors.csv (6 x 4), classes.txt,
// coords.csv (3 x 2), docs.txt (a text corpus) and vocab.txt.
#include <unistd.h>

#include "run/methods.hpp"
#include "run/run_config.hpp"
#include "fuzz_input.hpp"

namespace {

void make_inputs() {
  using orrery::fuzz::write_file;
  write_file("posteriors.csv",
             "0.8,0.1,0.1\n0.7,0.2,0.1\n0.1,0.8,0.1\n0.2,0.7,0.1\n0.1,0.1,0.8\n0.1,0.2,0.7\n");
  write_file("labels.csv", "0\n0\n1\n1\n2\n2\n");
  write_file("vectors.csv", "0,0,1,0\n0,1,1,0\n5,5,0,1\n5,6,0,1\n9,0,2,2\n9,1,2,3\n");
  write_file("classes.txt", "alpha\nbeta\ngamma\n");
  write_file("coords.csv", "0,0\n1,0\n0,1\n");
  write_file("docs.txt", "apple banana apple\nbanana cherry\ncherry apple banana\ndate apple\n");
  write_file("vocab.txt", "apple\nbanana\ncherry\n");
  if (chdir(orrery::fuzz::scratch_dir().c_str()) != 0) {
    std::perror("chdir");
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace orrery;
  static const bool ready = (make_inputs(), true);
  (void)ready;
  const std::string path =
      fuzz::write_file("config.json", std::string_view(reinterpret_cast<const char*>(data), size));
  fuzz::expect_input_errors_only("validate", [&] {
    const pipeline::RunConfig cfg = pipeline::read_run_config(path);
    pipeline::find_method(cfg.method)->validate(cfg);
  });
  return 0;
}
