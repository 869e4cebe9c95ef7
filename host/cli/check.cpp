// `orrery check CONFIG.json`: does this machine's GPU (driver, build) agree with the CPU reference on
// this input? The config's input is read as a run would read it; each of its method's primitives
// runs on the CPU and on every device under test from the same state, and a few iterations of the
// fit run on both; every output is compared under the parity suite's named tolerances
// (orrery/parity.hpp). The result is printed and written as JSON; exit 3 on a disagreement.
#include "cli/check.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "run/device_check.hpp"
#include "run/methods.hpp"
#include "run/run_common.hpp"
#include "io/writers.hpp"
#include "orrery/backend.hpp"
#include "orrery/error.hpp"
#include "orrery/parity.hpp"

namespace orrery::cli {
using namespace pipeline;
namespace {

struct Options {
  std::string config, out;
  std::vector<std::string> devices;  // empty: every usable CUDA device
  int iterations = 5;
  bool quiet = false;
};

Options parse(const std::vector<std::string>& args) {
  Options o;
  for (size_t a = 0; a < args.size(); ++a) {
    const std::string& opt = args[a];
    auto value = [&]() -> std::string {
      if (a + 1 >= args.size()) input_error("check: option " + opt + " needs a value");
      return args[++a];
    };
    if (opt == "--device") {
      std::stringstream ss(value());
      for (std::string d; std::getline(ss, d, ',');) o.devices.push_back(d);
    } else if (opt == "--iterations") {
      o.iterations = static_cast<int>(parse_int_option(value(), "check: --iterations", 1, 9999));
    } else if (opt == "--out") {
      o.out = value();
    } else if (opt == "--quiet" || opt == "-q") {
      o.quiet = true;
    } else if (!opt.empty() && opt[0] == '-') {
      input_error("check: unknown option '" + opt + "'");
    } else if (o.config.empty()) {
      o.config = opt;
    } else {
      input_error("check: expected one configuration file, found a second: '" + opt + "'");
    }
  }
  if (o.config.empty()) input_error("check: missing CONFIG.json");
  return o;
}

// A device under test: "cpu" is the CPU with one thread (the reference uses the config's threads).
std::unique_ptr<Backend> device_backend(const std::string& d) {
  if (d == "cpu") return make_cpu_backend(1);
  if (d == "auto") input_error("check: --device: name the devices to check (cuda, cuda:N or cpu), not auto");
  return make_backend(d, 0);
}

}  // namespace

int cmd_check(const std::vector<std::string>& args) {
  const Options o = parse(args);
  const RunConfig run = read_run_config(o.config);
  const std::string out = !o.out.empty() ? o.out : (std::filesystem::path(run.output.dir) / "check.json").string();
  io::check_output_paths({out}, run_inputs(run));
  auto ref = make_cpu_backend(run.threads);
  std::vector<std::string> devices = o.devices;
  std::string note;
  if (devices.empty()) {
    for (const auto& d : cuda_devices()) devices.push_back("cuda:" + std::to_string(d.index));
    if (devices.empty())
      note = "no usable CUDA device (" + cuda_status() +
             "): nothing to compare the CPU reference with (--device cpu compares one CPU thread with all)";
  }
  json report = {{"config", o.config}, {"method", run.method}, {"reference", ref->name()}, {"iterations", o.iterations},
                 {"devices", json::array()}};
  if (!o.quiet) std::printf("orrery check %s: method %s, reference %s\n", o.config.c_str(), run.method.c_str(),
                            ref->name().c_str());
  bool all_ok = true;
  for (const std::string& name : devices) {
    auto dev = device_backend(name);
    if (!o.quiet) std::printf("\n%s\n", dev->name().c_str());
    const Checks checks = find_method(run.method)->check(run, *ref, *dev, o.iterations);
    bool ok = true;
    json groups = json::array();
    for (const CheckGroup& g : checks) {
      groups.push_back(check_group_json(g));
      for (const Comparison& c : g.comparisons) {
        const Agreement& a = c.agreement;
        ok = ok && a.ok();
        if (!o.quiet)
          std::printf("  %-26s %-40s %-22s %10.3g %10.3g  %s\n", g.primitive.c_str(), c.output.c_str(),
                      c.tolerance.c_str(), a.max_rel_error, a.nmse, a.ok() ? "agrees" : "DISAGREES");
        if (!a.ok() && !o.quiet) std::printf("      %s\n", a.describe(c.output).c_str());
      }
    }
    const std::string guard = device_guard_violations();
    if (!guard.empty()) ok = false;
    report["devices"].push_back({{"device", dev->name()}, {"agrees", ok}, {"checks", groups}, {"guard_violation", guard}});
    all_ok = all_ok && ok;
    if (!o.quiet) std::printf("%s: %s\n", dev->name().c_str(), ok ? "agrees with the CPU reference" : "DISAGREES with the CPU reference");
  }
  if (!note.empty()) {
    report["note"] = note;
    if (!o.quiet) std::printf("%s\n", note.c_str());
  }
  report["agrees"] = all_ok;
  io::OutputSet files;
  for (const std::string& p : run_inputs(run)) files.protect(p);
  files.add(out, report.dump(2) + "\n");
  files.commit();
  if (!o.quiet) std::printf("wrote %s\n", out.c_str());
  return all_ok ? 0 : 3;
}

}  // namespace orrery::cli
