// DESIGN.md's layers kept by test: scripts/check_layers.sh passes on the tree and on this build's
// objects, names the file, line and rule of each violation in a copy where every rule is broken once,
// and names the object and symbol of a method object that calls the CPU backend.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/cli_runner.hpp"
#include "common/temp_dir.hpp"

namespace fs = std::filesystem;

namespace {

orrery::test::Outcome check_layers(const std::string& root, const std::string& objects = "") {
  return orrery::test::run_command("bash '" + std::string(ORRERY_SOURCE_DIR) + "/scripts/check_layers.sh' " +
                                   (objects.empty() ? "" : "--objects '" + objects + "' ") + "'" + root + "'");
}

// The build folder of the library this test links: the CLI's folder.
std::string build_dir() { return fs::path(orrery::test::cli_path()).parent_path().string(); }

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
  append(root / "host/methods/pe.cpp", "#include \"cpu/engines.hpp\"");
  append(root / "host/methods/hssne.cpp", "int g(int device) { return make_thing_cuda(device); }");
  append(root / "host/cli/ne_run.cpp", "bool f(const Backend& b) { return b.is_cuda(); }");
  append(root / "host/cpu/knn.cpp", "#include \"methods/random.hpp\"");
  append(root / "host/prep/affinity.cpp", "#include \"cpu/engines.hpp\"");
  append(root / "kernels/knn.cu", "#include \"cpu/engines.hpp\"");
  append(root / "host/comm/comm.cpp", "#include \"methods/random.hpp\"");
  const auto o = check_layers(root.string());
  EXPECT_EQ(o.code, 1) << o.output;
  for (const char* where : {"include/orrery/math/hd.hpp:", "include/orrery/pe.hpp:", "host/methods/pe.cpp:",
                            "host/methods/hssne.cpp:", "host/cli/ne_run.cpp:", "host/cpu/knn.cpp:",
                            "host/prep/affinity.cpp:", "kernels/knn.cu:", "host/comm/comm.cpp:"})
    EXPECT_NE(o.output.find(where), std::string::npos) << where << " not reported:\n" << o.output;
  EXPECT_EQ(o.output.find("layers: ok"), std::string::npos);
}

TEST(Layers, TheMethodObjectsReachTheCpuOnlyThroughBackend) {
  const auto o = check_layers(ORRERY_SOURCE_DIR, build_dir());
  EXPECT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("layers: ok"), std::string::npos) << o.output;
}

TEST(Layers, ACpuCallInAMethodObjectIsNamed) {
  orrery::test::TempDir tmp;
  const fs::path build = tmp.dir() / "build", host = build / "CMakeFiles/orrery_core.dir/host";
  fs::create_directories(host / "methods");
  fs::create_directories(host / "cli");
  const fs::path src = tmp.dir() / "method.cpp";
  std::ofstream(src) << "namespace orrery { struct Backend; Backend* make_cpu_backend(int);\n"
                        "namespace cpu { int rank_rows(int); } }\n"
                        "int fit(int t) { return orrery::make_cpu_backend(t) ? orrery::cpu::rank_rows(t) : 0; }\n";
  const auto cc = orrery::test::run_command("c++ -c '" + src.string() + "' -o '" + (host / "methods/fit.cpp.o").string() + "'");
  if (cc.code != 0) GTEST_SKIP() << "no C++ compiler on PATH to build the example object: " << cc.output;
  fs::copy_file(host / "methods/fit.cpp.o", host / "cli/check.cpp.o");  // orrery check may make the CPU reference
  const auto o = check_layers(ORRERY_SOURCE_DIR, build.string());
  EXPECT_EQ(o.code, 1) << o.output;
  for (const char* what : {"host/methods/fit.cpp.o: orrery::make_cpu_backend(int)", "host/methods/fit.cpp.o: orrery::cpu::rank_rows(int)"})
    EXPECT_NE(o.output.find(what), std::string::npos) << what << " not reported:\n" << o.output;
  EXPECT_EQ(o.output.find("check.cpp.o"), std::string::npos) << o.output;
  EXPECT_EQ(o.output.find("layers: ok"), std::string::npos);
  // without any method object the check refuses to pass
  const auto empty = check_layers(ORRERY_SOURCE_DIR, tmp.dir().string());
  EXPECT_EQ(empty.code, 2) << empty.output;
}
