// Interrupt and resume: for every method on the CPU, a run stopped after iteration k (by
// ORRERY_STOP_AT_ITERATION, which takes the signal's path, or by a real SIGINT) and resumed with
// --resume ends with the same coordinate files, byte for byte, and the same objective trace as an
// uninterrupted run; a resume without a checkpoint, or with a changed config or input, is refused
// with exit 2 and nothing written.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

#include "common/cli_runner.hpp"
#include "common/temp_dir.hpp"
#include "orrery/plsv.hpp"

extern char** environ;

namespace fs = std::filesystem;
using json = nlohmann::json;
using orrery::test::run_command;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Three Gaussian clusters in 5-D with their labels (CSV), the input of the neighbor methods.
void write_vectors(const orrery::test::TempDir& tmp, int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> z(0.0, 1.0);
  std::ostringstream x, y;
  for (int i = 0; i < n; ++i) {
    const int c = i % 3;
    for (int d = 0; d < 5; ++d) x << (d ? "," : "") << z(rng) + 4.0 * (d == c);
    x << "\n";
    y << c << "\n";
  }
  tmp.write("x.csv", x.str());
  tmp.write("y.csv", y.str());
}

// A corpus from PLSV's generative model as "label id:count ..." lines (svmlight).
void write_corpus(const orrery::test::TempDir& tmp) {
  const auto planted = orrery::sample_plsv_corpus(120, 60, 4, 2, 30, 11, 3.0, 1.5, 0.05);
  const auto& c = planted.corpus;
  std::ostringstream out;
  for (orrery::index_t n = 0; n < c.num_docs(); ++n) {
    out << 0;
    for (orrery::index_t i = c.row_ptr[n]; i < c.row_ptr[n + 1]; ++i) out << ' ' << c.word[i] + 1 << ':' << c.count[i];
    out << "\n";
  }
  tmp.write("docs.svm", out.str());
}

struct Case {
  const char* name;
  int stop_at;  // iterations done when the run is stopped
};

// The configuration of each case, writing into `out`.
json config_of(const std::string& name, const orrery::test::TempDir& tmp, const std::string& out) {
  json output = {{"dir", tmp.path(out)}, {"format", "npy"}, {"svg", false}};
  const json vectors = {{"vectors", tmp.path("x.csv")}, {"labels", tmp.path("y.csv")}, {"perplexity", 10}};
  if (name == "pe") {
    const std::string data = std::string(ORRERY_SOURCE_DIR) + "/configs/data/";
    return {{"method", "pe"},
            {"input", {{"posteriors", data + "planted_posteriors.csv"}, {"labels", data + "planted_labels.csv"}}},
            {"params", {{"eta_phi", 1.0}, {"max_iter", 30}, {"eps_phi", 1e-30}, {"ftol", 0}}},
            {"output", output}, {"device", "cpu"}, {"seed", 3}};
  }
  if (name == "plsv") {
    write_corpus(tmp);
    return {{"method", "plsv"},
            {"input", {{"corpus", tmp.path("docs.svm")}, {"format", "svmlight"}}},
            {"params", {{"topics", 4}, {"max_iter", 12}, {"tol", 0}, {"relocate_every", 3}}},
            {"output", output}, {"device", "cpu"}, {"seed", 2}};
  }
  write_vectors(tmp, 90, 5);
  json cfg = {{"input", vectors}, {"output", output}, {"device", "cpu"}, {"seed", 4}};
  if (name == "nerv") cfg.merge_patch({{"method", "nerv"}, {"params", {{"max_iter", 30}, {"ftol", 0}}}});
  if (name == "snerv")
    cfg.merge_patch({{"method", "snerv"},
                     {"input", {{"metric", {{"components", 3}, {"width", 2.0}, {"pieces", 4}, {"model_max_iter", 50}}}}},
                     {"params", {{"max_iter", 30}, {"ftol", 0}}}});
  if (name == "hssne")  // the stop falls inside the early exaggeration, with the momentum running
    cfg.merge_patch({{"method", "hssne"},
                     {"params", {{"max_iter", 40}, {"tol", 0}, {"exaggeration", 4}, {"exaggeration_iter", 10}}}});
  if (name == "hssne_gradient")
    cfg.merge_patch({{"method", "hssne"},
                     {"params", {{"optimizer", "gradient"}, {"max_iter", 40}, {"exaggeration_iter", 10},
                                 {"momentum_switch", 15}}}});
  return cfg;
}

std::string write_config(const orrery::test::TempDir& tmp, const std::string& file, const json& cfg) {
  return tmp.write(file, cfg.dump(2));
}

orrery::test::Outcome orrery_run(const std::string& args, const std::string& env = "") {
  return run_command(env + " '" + std::string(ORRERY_CLI) + "' run " + args + " --quiet");
}

json report(const fs::path& dir) { return json::parse(slurp(dir / "report.json")); }

// The objective trace without its timings.
json trace_of(const json& r) {
  json t = r["trace"];
  for (auto& e : t)
    if (e.is_object()) e.erase("seconds");
  return t;
}

// Every .npy the run wrote, by name, with its bytes.
std::map<std::string, std::string> arrays(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".npy") out[e.path().filename().string()] = slurp(e.path());
  return out;
}

void expect_same_run(const fs::path& a, const fs::path& b, const std::string& what) {
  const auto fa = arrays(a), fb = arrays(b);
  ASSERT_FALSE(fa.empty()) << what;
  EXPECT_EQ(fa.size(), fb.size()) << what;
  for (const auto& [name, bytes] : fa) {
    ASSERT_TRUE(fb.count(name)) << what << ": " << name << " missing after the resume";
    EXPECT_TRUE(bytes == fb.at(name)) << what << ": " << name << " differs from the uninterrupted run";
  }
  EXPECT_EQ(trace_of(report(a)), trace_of(report(b))) << what;
  EXPECT_EQ(report(a)["result"]["iterations"], report(b)["result"]["iterations"]) << what;
}

class Resume : public ::testing::TestWithParam<Case> {};

}  // namespace

TEST_P(Resume, StoppedAtIterationKThenResumedEqualsUninterrupted) {
  orrery::test::TempDir tmp;
  const Case c = GetParam();
  const json cfg = config_of(c.name, tmp, "full");
  const auto full = orrery_run(write_config(tmp, "full.json", cfg));
  ASSERT_EQ(full.code, 0) << full.output;
  ASSERT_GT(report(tmp.path("full"))["result"]["iterations"].get<int>(), c.stop_at + 1)
      << "the run must go on past the stop for the test to mean anything";

  json parted = cfg;
  parted["output"]["dir"] = tmp.path("parted");
  const std::string path = write_config(tmp, "parted.json", parted);
  const auto stopped = orrery_run(path, "ORRERY_STOP_AT_ITERATION=" + std::to_string(c.stop_at));
  ASSERT_EQ(stopped.code, 130) << stopped.output;
  EXPECT_NE(stopped.output.find("after iteration " + std::to_string(c.stop_at)), std::string::npos) << stopped.output;
  EXPECT_NE(stopped.output.find(path + " --resume"), std::string::npos) << "says how to resume: " << stopped.output;
  EXPECT_TRUE(fs::exists(tmp.path("parted/checkpoint.orrery")));
  EXPECT_FALSE(fs::exists(tmp.path("parted/report.json"))) << "a stopped run writes no results";

  const auto resumed = orrery_run(path + " --resume");
  ASSERT_EQ(resumed.code, 0) << resumed.output;
  expect_same_run(tmp.path("full"), tmp.path("parted"), c.name);
  EXPECT_FALSE(fs::exists(tmp.path("parted/checkpoint.orrery"))) << "a finished run removes its checkpoint";
}

INSTANTIATE_TEST_SUITE_P(EveryMethod, Resume,
                         ::testing::Values(Case{"pe", 5}, Case{"plsv", 4}, Case{"nerv", 7}, Case{"snerv", 7},
                                           Case{"hssne", 6}, Case{"hssne_gradient", 12}),
                         [](const auto& p) { return std::string(p.param.name); });

// PLSV's extrapolation keeps a cycle's earlier points (and, after a jump, the point to return to) in
// the checkpoint: a stop after any iteration of the cycles, a jump kept or not, resumes to the same map.
TEST(ResumePlsv, StoppedAnywhereInItsExtrapolationCyclesResumesToTheSameMap) {
  orrery::test::TempDir tmp;
  json cfg = config_of("plsv", tmp, "full");
  cfg["params"]["relocate_every"] = 0;  // every cycle extrapolates
  cfg["params"]["max_iter"] = 14;
  const auto full = orrery_run(write_config(tmp, "full.json", cfg));
  ASSERT_EQ(full.code, 0) << full.output;
  const json jumps = report(tmp.path("full"))["result"]["extrapolation"];
  ASSERT_GE(jumps["jumps"].get<int>(), 3) << jumps;
  ASSERT_GE(jumps["kept"].get<int>(), 1) << "a jump kept: " << jumps;
  ASSERT_GE(jumps["jumps"].get<int>() - jumps["kept"].get<int>(), 1) << "a jump not kept: " << jumps;
  for (int stop_at = 1; stop_at <= 12; ++stop_at) {
    json parted = cfg;
    parted["output"]["dir"] = tmp.path("parted" + std::to_string(stop_at));
    const std::string path = write_config(tmp, "parted" + std::to_string(stop_at) + ".json", parted);
    const auto stopped = orrery_run(path, "ORRERY_STOP_AT_ITERATION=" + std::to_string(stop_at));
    ASSERT_EQ(stopped.code, 130) << stopped.output;
    const auto resumed = orrery_run(path + " --resume");
    ASSERT_EQ(resumed.code, 0) << resumed.output;
    expect_same_run(tmp.path("full"), parted["output"]["dir"].get<std::string>(),
                    "plsv stopped after iteration " + std::to_string(stop_at));
    EXPECT_EQ(report(tmp.path("full"))["result"]["extrapolation"],
              report(parted["output"]["dir"].get<std::string>())["result"]["extrapolation"]);
  }
}

TEST(ResumeRefused, NoCheckpointChangedConfigOrInputExitTwoNamingWhat) {
  orrery::test::TempDir tmp;
  const json cfg = config_of("nerv", tmp, "out");
  const std::string path = write_config(tmp, "run.json", cfg);

  const auto none = orrery_run(path + " --resume");
  EXPECT_EQ(none.code, 2) << none.output;
  EXPECT_NE(none.output.find("no checkpoint at " + tmp.path("out/checkpoint.orrery")), std::string::npos)
      << none.output;
  EXPECT_FALSE(fs::exists(tmp.path("out/report.json")));

  ASSERT_EQ(orrery_run(path, "ORRERY_STOP_AT_ITERATION=3").code, 130);
  const std::string checkpoint = slurp(tmp.path("out/checkpoint.orrery"));

  json changed = cfg;
  changed["params"]["lambda"] = 0.5;
  const auto c1 = orrery_run(write_config(tmp, "changed.json", changed) + " --resume");
  EXPECT_EQ(c1.code, 2) << c1.output;
  EXPECT_NE(c1.output.find("params.lambda"), std::string::npos) << c1.output;

  // A different interval between checkpoints is not a different run.
  json interval = cfg;
  interval["output"]["checkpoint_seconds"] = 5;
  const std::string ipath = write_config(tmp, "interval.json", interval);

  const std::string x = slurp(tmp.path("x.csv"));
  tmp.write("x.csv", x + "9,9,9,9,9\n");
  const auto c2 = orrery_run(ipath + " --resume");
  EXPECT_EQ(c2.code, 2) << c2.output;
  EXPECT_NE(c2.output.find("input.vectors"), std::string::npos) << c2.output;
  EXPECT_FALSE(fs::exists(tmp.path("out/report.json"))) << "a refused resume writes nothing";
  EXPECT_TRUE(slurp(tmp.path("out/checkpoint.orrery")) == checkpoint) << "and keeps the checkpoint";

  json bad = cfg;
  bad["output"]["checkpoint_seconds"] = -1;
  const auto c3 = orrery_run(write_config(tmp, "bad.json", bad));
  EXPECT_EQ(c3.code, 2) << c3.output;
  EXPECT_NE(c3.output.find("output.checkpoint_seconds"), std::string::npos) << c3.output;

  tmp.write("x.csv", x);
  const auto ok = orrery_run(ipath + " --resume");
  EXPECT_EQ(ok.code, 0) << ok.output;

  // A damaged checkpoint is refused, not resumed from.
  ASSERT_EQ(orrery_run(path, "ORRERY_STOP_AT_ITERATION=3").code, 130);
  std::string bytes = slurp(tmp.path("out/checkpoint.orrery"));
  bytes[bytes.size() / 2] ^= 1;
  tmp.write("out/checkpoint.orrery", bytes);
  const auto damaged = orrery_run(path + " --resume");
  EXPECT_EQ(damaged.code, 2) << damaged.output;
  EXPECT_NE(damaged.output.find("checksum"), std::string::npos) << damaged.output;
}

// `orrery run CONFIG` in the background, its stderr into `log`.
pid_t start_run(const std::string& config, const std::string& log) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::string cli = ORRERY_CLI, run = "run", path = config;
  std::vector<char*> argv = {cli.data(), run.data(), path.data(), nullptr};
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, cli.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

// Polls (up to a minute) until `ready` holds.
template <class F>
void wait_until(F ready) {
  for (int i = 0; i < 1200 && !ready(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

// A run of `config` stopped after iteration k at no iteration chosen in advance is compared with an
// uninterrupted one where both have done the same number of iterations: a resume to k + 5 and a
// fresh run stopped at k + 5 leave checkpoints (the whole state) with the same bytes.
void expect_continues_exactly(const orrery::test::TempDir& tmp, const std::string& config, int k) {
  const std::string stop = "ORRERY_STOP_AT_ITERATION=" + std::to_string(k + 5);
  const auto resumed_run = orrery_run(config + " --resume", stop);
  ASSERT_EQ(resumed_run.code, 130) << resumed_run.output;
  const std::string resumed = slurp(tmp.path("out/checkpoint.orrery"));
  fs::remove_all(tmp.path("out"));
  ASSERT_EQ(orrery_run(config, stop).code, 130);
  EXPECT_TRUE(slurp(tmp.path("out/checkpoint.orrery")) == resumed)
      << "stopped after iteration " << k << ", resumed to " << k + 5 << ": not the state of an uninterrupted run at "
      << k + 5;
}

TEST(ResumeSignal, SigintStopsWithCheckpointAndTheResumeContinuesExactly) {
  orrery::test::TempDir tmp;
  json cfg = config_of("hssne_gradient", tmp, "out");
  cfg["params"]["max_iter"] = 100000000;  // runs until the signal
  const std::string path = write_config(tmp, "run.json", cfg), log = tmp.path("log.txt");
  const pid_t pid = start_run(path, log);
  ASSERT_GT(pid, 0);
  // Progress lines start with the first iteration: the handlers are in place by then.
  wait_until([&] { return slurp(log).find("iter") != std::string::npos; });
  EXPECT_EQ(kill(pid, SIGINT), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  const std::string text = slurp(log);
  ASSERT_TRUE(WIFEXITED(status)) << "the first signal stops the run cleanly: " << text;
  ASSERT_EQ(WEXITSTATUS(status), 130) << text;
  EXPECT_NE(text.find(path + " --resume"), std::string::npos) << text;
  const size_t at = text.find("stopped after iteration ");
  ASSERT_NE(at, std::string::npos) << text;
  expect_continues_exactly(tmp, path, std::stoi(text.substr(at + 24)));
}

// A run killed outright (a crash, an out-of-memory kill) has its last periodic checkpoint, whole
// (written to a temporary file and renamed), and resumes from it exactly.
TEST(ResumeSignal, KilledRunResumesFromItsLastPeriodicCheckpoint) {
  orrery::test::TempDir tmp;
  json cfg = config_of("hssne_gradient", tmp, "out");
  cfg["params"]["max_iter"] = 100000000;
  cfg["output"]["checkpoint_seconds"] = 1e-6;  // a checkpoint at every iteration
  const std::string path = write_config(tmp, "run.json", cfg), checkpoint = tmp.path("out/checkpoint.orrery");
  const pid_t pid = start_run(path, tmp.path("log.txt"));
  ASSERT_GT(pid, 0);
  wait_until([&] { return fs::exists(checkpoint); });
  EXPECT_EQ(kill(pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  const std::string bytes = slurp(checkpoint);
  const size_t at = bytes.find("\"iteration\":");
  ASSERT_NE(at, std::string::npos);
  expect_continues_exactly(tmp, path, std::stoi(bytes.substr(at + 12)));
}

// A periodic checkpoint that cannot be written does not end a run that can still finish.
TEST(Checkpoint, UnwritableCheckpointWarnsAndTheRunFinishes) {
  orrery::test::TempDir tmp;
  json cfg = config_of("hssne_gradient", tmp, "out");
  cfg["output"]["checkpoint_seconds"] = 1e-6;
  fs::create_directories(tmp.path("out/checkpoint.orrery"));  // where the file would go
  const auto o = orrery_run(write_config(tmp, "run.json", cfg));
  EXPECT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("warning: no checkpoint after iteration 1"), std::string::npos) << o.output;
  EXPECT_TRUE(fs::exists(tmp.path("out/embedding.npy")));
}
