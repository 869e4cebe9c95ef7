#include "cli/run_config.hpp"

#include <fstream>

#include "cli/methods.hpp"
#include "orrery/error.hpp"

namespace orrery::cli {

void check_keys(const json& j, const std::string& where, const std::vector<std::string>& known) {
  if (!j.is_object()) input_error(where + ": expected a JSON object, found " + std::string(j.type_name()));
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool ok = false;
    for (const auto& k : known) ok = ok || k == it.key();
    if (!ok) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      input_error(where + ": unknown key '" + it.key() + "' (known keys: " + list + ")");
    }
  }
}

std::string get_path(const json& j, const std::string& key, const std::string& where) {
  if (!j.contains(key)) return "";
  if (!j[key].is_string() || j[key].get<std::string>().empty())
    input_error(where + "." + key + ": expected a non-empty string (a file path), found " + j[key].dump());
  return j[key].get<std::string>();
}

bool get_bool(const json& j, const std::string& key, const std::string& where, bool fallback) {
  if (!j.contains(key)) return fallback;
  if (!j[key].is_boolean()) input_error(where + "." + key + ": expected true or false, found " + j[key].dump());
  return j[key].get<bool>();
}

index_t get_count(const json& j, const std::string& key, const std::string& where, index_t fallback) {
  if (!j.contains(key)) return fallback;
  if (!j[key].is_number_integer() || j[key].get<long long>() < 0)
    input_error(where + "." + key + ": expected a non-negative integer, found " + j[key].dump());
  return j[key].get<long long>();
}

RunConfig read_run_config(const std::string& path) {
  RunConfig cfg;
  cfg.path = path;
  std::ifstream in(path);
  if (!in) input_error(path + ": cannot open the run configuration");
  try {
    cfg.raw = json::parse(in, nullptr, true, /*ignore_comments=*/true);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number too large for a double
    input_error(path + ": not valid JSON: " + e.what());
  }
  const json& j = cfg.raw;
  check_keys(j, path, {"method", "input", "params", "output", "device", "threads", "seed"});
  std::string known;
  for (const auto& m : methods()) known += (known.empty() ? "" : ", ") + std::string(m.name);
  if (!j.contains("method")) input_error(path + ": missing key 'method' (one of: " + known + ")");
  if (!j["method"].is_string() || !find_method(j["method"].get<std::string>()))
    input_error(path + ": method: expected one of: " + known + ", found " + j["method"].dump());
  cfg.method = j["method"].get<std::string>();
  if (!j.contains("input")) input_error(path + ": missing key 'input'");
  if (!j["input"].is_object()) input_error("input: expected a JSON object, found " + j["input"].dump());
  cfg.input = j["input"];
  if (j.contains("params")) {
    if (!j["params"].is_object()) input_error("params: expected a JSON object, found " + j["params"].dump());
    cfg.params = j["params"];
  }

  if (!j.contains("output")) input_error(path + ": missing key 'output' (at least {\"dir\": ...})");
  const json& out = j["output"];
  if (!out.is_object()) input_error("output: expected a JSON object, found " + out.dump());
  for (auto it = out.begin(); it != out.end(); ++it)
    if (it.key() != "dir" && it.key() != "format" && it.key() != "svg") cfg.output_extra[it.key()] = it.value();
  cfg.output.dir = get_path(out, "dir", "output");
  if (cfg.output.dir.empty()) input_error("output.dir: required (directory for the embedding, report and map)");
  if (out.contains("format")) {
    const json& f = out["format"];
    if (!f.is_string() || (f != "npy" && f != "csv" && f != "both"))
      input_error("output.format: expected one of npy | csv | both, found " + f.dump());
    cfg.output.format = f.get<std::string>();
  }
  cfg.output.svg = get_bool(out, "svg", "output", true);

  if (j.contains("device")) {
    if (!j["device"].is_string()) input_error("device: expected auto, cpu, cuda or cuda:N, found " + j["device"].dump());
    cfg.device = j["device"].get<std::string>();
    const bool ok = cfg.device == "auto" || cfg.device == "cpu" || cfg.device == "cuda" ||
                    (cfg.device.rfind("cuda:", 0) == 0 && cfg.device.size() > 5 &&
                     cfg.device.find_first_not_of("0123456789", 5) == std::string::npos);
    if (!ok) input_error("device: expected auto, cpu, cuda or cuda:N, found \"" + cfg.device + "\"");
  }
  if (j.contains("threads")) {
    if (!j["threads"].is_number_integer() || j["threads"].get<long long>() < 0 || j["threads"].get<long long>() > 4096)
      input_error("threads: expected an integer in [0, 4096] (0 = all cores), found " + j["threads"].dump());
    cfg.threads = j["threads"].get<int>();
  }
  if (j.contains("seed")) {
    if (!j["seed"].is_number_unsigned()) input_error("seed: expected a non-negative integer, found " + j["seed"].dump());
    cfg.seed = j["seed"].get<unsigned long long>();
  }
  return cfg;
}

}  // namespace orrery::cli
