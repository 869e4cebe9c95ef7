// The run config's "comm" and "comm_timeout" keys through the orrery binary: an unknown value, MPI
// asked of a build without it, a timeout that is no number of seconds, and one-process PE and PLSV
// runs that record their communicator in the report.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "common/cli_runner.hpp"
#include "common/temp_dir.hpp"
#include "orrery/comm.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

using orrery::test::Outcome;

// configs/pe_planted_csv.json with its output in `dir`, `comm` set (or absent when empty) and the
// keys of `extra`.
std::string pe_config(const fs::path& dir, const std::string& comm, const json& extra = json::object()) {
  json j = json::parse(orrery::test::slurp(fs::path(ORRERY_SOURCE_DIR) / "configs" / "pe_planted_csv.json"), nullptr,
                       true, true);
  j["output"]["dir"] = (dir / "out").string();
  j["output"]["svg"] = false;
  if (!comm.empty()) j["comm"] = comm;
  j.update(extra);
  const fs::path p = dir / "run.json";
  std::ofstream(p) << j.dump(2);
  return p.string();
}

// `orrery run` with "comm": `mode` exits 2 with an error that starts with "comm: " and holds
// `fragment`, and writes nothing.
void expect_comm_error(const std::string& mode, const std::string& fragment) {
  orrery::test::TempDir tmp;
  const Outcome o = orrery::test::run_orrery("run " + pe_config(tmp.dir(), mode) + " --quiet");
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_EQ(o.output.rfind("error: comm: ", 0), 0u) << o.output;
  EXPECT_NE(o.output.find(fragment), std::string::npos) << o.output;
  EXPECT_FALSE(fs::exists(tmp.dir() / "out"));
}

TEST(CommCli, AnUnknownValueIsAnInputErrorNamingComm) { expect_comm_error("bogus", "bogus"); }

TEST(CommCli, MpiInABuildWithoutMpiIsAnInputErrorNamingComm) {
  if (orrery::mpi_comm_built()) GTEST_SKIP() << "this build has MPI (the mpi-labelled tests run it)";
  expect_comm_error("mpi", "without MPI");
}

TEST(CommCli, ATimeoutThatIsNoNumberOfSecondsIsAnInputErrorNamingIt) {
  for (const json& bad : {json(-1), json("10"), json(nullptr)}) {
    orrery::test::TempDir tmp;
    const Outcome o =
        orrery::test::run_orrery("run " + pe_config(tmp.dir(), "single", {{"comm_timeout", bad}}) + " --quiet");
    EXPECT_EQ(o.code, 2) << o.output;
    EXPECT_EQ(o.output.rfind("error: comm_timeout: expected seconds >= 0", 0), 0u) << o.output;
    EXPECT_FALSE(fs::exists(tmp.dir() / "out"));
  }
  orrery::test::TempDir tmp;  // 0: no limit, a valid value
  EXPECT_EQ(orrery::test::run_orrery("run " + pe_config(tmp.dir(), "single", {{"comm_timeout", 0}}) + " --quiet").code, 0);
}

TEST(CommCli, OneProcessRecordsItsCommunicatorAndItsRows) {
  orrery::test::TempDir tmp;
  const Outcome o = orrery::test::run_orrery("run " + pe_config(tmp.dir(), "single") + " --quiet");
  ASSERT_EQ(o.code, 0) << o.output;
  const json report = json::parse(orrery::test::slurp(tmp.dir() / "out" / "report.json"));
  ASSERT_TRUE(report.contains("comm")) << report.dump(2);
  EXPECT_EQ(report["comm"]["name"], "single");
  EXPECT_EQ(report["comm"]["ranks"], 1);
  EXPECT_EQ(report["comm"]["rows"], json::array({report["input"]["objects"]}));
  ASSERT_EQ(report["comm"]["fit_seconds"].size(), 1u);
}

TEST(CommCli, OnePlsvProcessRecordsItsCommunicatorAndItsDocuments) {
  orrery::test::TempDir tmp;
  std::ofstream(tmp.dir() / "corpus.svm") << "0 1:3 2:1\n0 1:2 3:1\n1 4:2 5:2\n1 4:1 5:3 6:1\n0 2:2 3:2\n";
  const json j = {{"method", "plsv"},
                  {"input", {{"corpus", (tmp.dir() / "corpus.svm").string()}}},
                  {"params", {{"topics", 2}, {"max_iter", 5}}},
                  {"output", {{"dir", (tmp.dir() / "out").string()}, {"svg", false}}},
                  {"device", "cpu"},
                  {"comm", "single"}};
  std::ofstream(tmp.dir() / "run.json") << j.dump(2);
  const Outcome o = orrery::test::run_orrery("run " + (tmp.dir() / "run.json").string() + " --quiet");
  ASSERT_EQ(o.code, 0) << o.output;
  const json report = json::parse(orrery::test::slurp(tmp.dir() / "out" / "report.json"));
  EXPECT_EQ(report["comm"]["name"], "single");
  EXPECT_EQ(report["comm"]["ranks"], 1);
  EXPECT_EQ(report["comm"]["rows"], json::array({5}));
  ASSERT_EQ(report["comm"]["fit_seconds"].size(), 1u);
}

}  // namespace
