// DESIGN.md's layers kept by test: scripts/check_layers.sh passes on the tree, and names the file,
// line and rule of each violation in a copy where every rule is broken once.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/cli_runner.hpp"
#include "common/temp_dir.hpp"

namespace fs = std::filesystem;

namespace {

orrery::test::Outcome check_layers(const std::string& root) {
  return orrery::test::run_command("bash '" + std::string(ORRERY_SOURCE_DIR) + "/scripts/check_layers.sh' '" + root + "'");
}

void append(const fs::path& file, const std::string& line) { std::ofstream(file, std::ios::app) << "\n" << line << "\n"; }

}  // namespace

TEST(Layers, TheTreeKeepsTheIncludeLayers) {
  const auto o = check_layers(ORRERY_SOURCE_DIR);
  EXPECT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("layers: ok"), std::string::npos) << o.output;
}

TEST(Layers, EveryBrokenRuleIsNamed) {
  orrery::test::TempDir tmp;
  const fs::path root = tmp.dir() / "tree";
  fs::create_directories(root);
  for (const char* d : {"include", "host", "kernels"})
    fs::copy(fs::path(ORRERY_SOURCE_DIR) / d, root / d, fs::copy_options::recursive);
  append(root / "include/orrery/math/hd.hpp", "#include \"orrery/types.hpp\"");
  append(root / "include/orrery/pe.hpp", "#include \"methods/random.hpp\"");
  append(root / "host/methods/pe.cpp", "#include \"cpu/clones.hpp\"");
  append(root / "host/methods/hssne.cpp", "int g(int device) { return make_thing_cuda(device); }");
  append(root / "host/cli/ne_run.cpp", "bool f(const Backend& b) { return b.is_cuda(); }");
  append(root / "host/cpu/knn.cpp", "#include \"methods/random.hpp\"");
  append(root / "kernels/knn.cu", "#include \"cpu/engines.hpp\"");
  const auto o = check_layers(root.string());
  EXPECT_EQ(o.code, 1) << o.output;
  for (const char* where : {"include/orrery/math/hd.hpp:", "include/orrery/pe.hpp:", "host/methods/pe.cpp:",
                            "host/methods/hssne.cpp:", "host/cli/ne_run.cpp:", "host/cpu/knn.cpp:", "kernels/knn.cu:"})
    EXPECT_NE(o.output.find(where), std::string::npos) << where << " not reported:\n" << o.output;
  EXPECT_EQ(o.output.find("layers: ok"), std::string::npos);
}
