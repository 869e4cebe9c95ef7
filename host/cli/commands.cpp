#include "cli/commands.hpp"

#include <omp.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "cli/check.hpp"
#include "cli/checkpoint.hpp"
#include "cli/evaluate.hpp"
#include "run/methods.hpp"
#include "run/run_common.hpp"
#include "cli/view.hpp"
#include "orrery/backend.hpp"
#include "orrery/build_info.hpp"
#include "orrery/comm.hpp"
#include "orrery/error.hpp"

namespace orrery::cli {
using namespace pipeline;
namespace {

const char* kUsage =
    "usage: orrery <command> [options]\n"
    "\n"
    "commands:\n"
    "  run CONFIG.json [--quiet] [--resume]\n"
    "                                fit the run described by CONFIG and write its outputs; Ctrl-C\n"
    "                                (SIGINT) or SIGTERM stops it with a checkpoint in OUTPUT_DIR,\n"
    "                                and --resume continues it from there\n"
    "  validate CONFIG.json          check the configuration and its input files; fit nothing\n"
    "  defaults TABLE [--markdown]   every parameter of TABLE (a method, e.g. pe, or a sub-model,\n"
    "                                e.g. posterior_model) with default, range and meaning\n"
    "  evaluate --data X --embedding Y [--labels L] [--k 5,10,20] [--kmax K] [--perplexity P]\n"
    "           [--distances | --metric euclidean|cosine|correlation|inner_product]\n"
    "           [--out report.json]\n"
    "           [--svg quality.svg] [--device cpu|cuda|auto]\n"
    "           [--threads T] [--sample Q] [--seed S] [--quiet]\n"
    "                                quality of a map: trustworthiness, continuity, MRRE, LCMC,\n"
    "                                co-ranking, k-NN accuracy, smoothed precision/recall; above\n"
    "                                10,000 points estimated from 4,000 seeded query points\n"
    "                                (--sample: that many, 0 = all points)\n"
    "  check CONFIG.json [--device cuda,cuda:1,cpu] [--iterations N] [--out FILE] [--quiet]\n"
    "                                the config's input through its method's primitives and N\n"
    "                                iterations (default 5) on the CPU reference and on every CUDA\n"
    "                                device (or those listed): agreement per primitive under the\n"
    "                                parity suite's tolerances, written to FILE (default\n"
    "                                OUTPUT_DIR/check.json)\n"
    "  view RUN_DIR [-o FILE] [--quiet]\n"
    "                                the run's interactive map: one self-contained HTML page (WebGL;\n"
    "                                pan, zoom, hover, legend, search), RUN_DIR/map.html by default\n"
    "  info                          version, build and CUDA devices\n"
    "  help                          this text\n"
    "\n"
    "exit codes: 0 success, 2 bad input (config or data), 3 check: a device disagrees with the CPU,\n"
    "            130 run: stopped by a signal with a checkpoint, 1 any other error\n";

// Markdown table cells cannot contain a bare '|'.
std::string md_cell(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

void print_defaults(const std::vector<FieldInfo>& infos, bool markdown) {
  if (markdown) {
    std::printf("| key | type | default | range | meaning |\n|---|---|---|---|---|\n");
    for (const auto& f : infos)
      std::printf("| `%s` | %s | `%s` | %s | %s |\n", f.key.c_str(), f.type.c_str(), f.default_text.c_str(),
                  md_cell(f.range_text).c_str(), md_cell(f.doc).c_str());
    return;
  }
  for (const auto& f : infos) {
    std::printf("%-16s %-7s default %-8s %s\n", f.key.c_str(), f.type.c_str(), f.default_text.c_str(),
                f.range_text.empty() ? "" : ("range " + f.range_text).c_str());
    std::printf("    %s\n", f.doc.c_str());
  }
}

int cmd_defaults(const std::vector<std::string>& args) {
  std::string known;
  for (const auto& m : methods())
    for (const auto& t : m.tables) known += (known.empty() ? "" : ", ") + t.name;
  if (args.empty()) input_error("defaults: name a parameter table: " + known);
  const bool markdown = args.size() > 1 && args[1] == "--markdown";
  if (args.size() > 1 && !markdown) input_error("defaults: unknown option '" + args[1] + "'");
  for (const auto& m : methods())
    for (const auto& t : m.tables)
      if (t.name == args[0]) {
        print_defaults(t.describe(), markdown);
        return 0;
      }
  input_error("defaults: unknown parameter table '" + args[0] + "' (known: " + known + ")");
}

int cmd_info() {
  std::printf("orrery %s (git %s, %s build, %s)\n", ORRERY_VERSION, ORRERY_GIT_REVISION, ORRERY_BUILD_TYPE,
              ORRERY_CXX_COMPILER);
  std::printf("cpu: %d OpenMP threads\n", omp_get_max_threads());
  std::printf("cuda: %s\n", cuda_status().c_str());
  for (const auto& d : cuda_devices())
    std::printf("  cuda:%d %s, compute capability %d.%d, %.1f GiB, %d SMs\n", d.index, d.name.c_str(), d.cc_major,
                d.cc_minor, d.memory_gib, d.multiprocessors);
  return 0;
}

int cmd_run(const std::vector<std::string>& args, bool validate_only) {
  std::string config;
  bool quiet = false, resume = false;
  for (const auto& a : args) {
    if (a == "--quiet" || a == "-q") quiet = true;
    else if (a == "--resume" && !validate_only) resume = true;
    else if (!a.empty() && a[0] == '-') input_error("unknown option '" + a + "'");
    else if (config.empty()) config = a;
    else input_error("expected one configuration file, found a second: '" + a + "'");
  }
  if (config.empty()) input_error(std::string(validate_only ? "validate" : "run") + ": missing CONFIG.json");
  RunConfig cfg = read_run_config(config);
  const MethodEntry* method = find_method(cfg.method);
  check_run_outputs(cfg, method->outputs);  // validate and run alike, before any input is read
  if (validate_only) {
    std::printf("%s: valid (%s)\n", config.c_str(), method->validate(cfg).c_str());
    return 0;
  }
  // Every rank of an MPI launch reads the same configuration and arrives here alike: the refusals
  // below come before any collective, so no rank waits for one that gave up.
  const std::unique_ptr<Comm> comm = make_comm(cfg.comm_mode, cfg.comm_timeout);
  cfg.comm = comm.get();
  check_run_ranks(cfg, *method);
  // Several ranks: each reads a checkpoint to resume from, rank 0 alone writes one (the method's
  // state is gathered whole on every rank at a safe point).
  const bool lead = comm->rank() == 0;
  install_stop_signals();
  CheckpointControl control(cfg, resume, quiet || !lead);
  method->run(cfg, quiet, &control);
  comm->barrier();  // every rank is past its last read of the checkpoint
  if (lead) control.finish();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
      std::fputs(kUsage, args.empty() ? stderr : stdout);
      return args.empty() ? 2 : 0;
    }
    const std::string cmd = args[0];
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    if (cmd == "run") return cmd_run(rest, false);
    if (cmd == "validate") return cmd_run(rest, true);
    if (cmd == "defaults") return cmd_defaults(rest);
    if (cmd == "info") return cmd_info();
    if (cmd == "evaluate") return cmd_evaluate(rest);
    if (cmd == "check") return cmd_check(rest);
    if (cmd == "view") return cmd_view(rest);
    input_error("unknown command '" + cmd + "' (see orrery help)");
  } catch (const Interrupted& e) {
    std::fprintf(stderr, "[orrery] %s\n", e.what());
    return 130;  // 128 + SIGINT, as a shell reports a process ended by Ctrl-C
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return exit_code(e.kind());
  } catch (const std::bad_alloc&) {
    // The runs plan their large arrays and refuse what does not fit; an allocation that still fails
    // is a size the plan does not cover: the same advice, with exit 2.
    std::fprintf(stderr,
                 "error: out of memory: the input is too large for the memory available (reduce it with "
                 "input.limit, use sparse affinities, fewer topics, or a machine with more memory)\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

}  // namespace orrery::cli
