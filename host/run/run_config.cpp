#include "run/run_config.hpp"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "run/methods.hpp"
#include "orrery/error.hpp"

namespace orrery::pipeline {

void check_keys(const json& j, const std::string& where, const std::vector<std::string>& known) {
  if (!j.is_object()) input_error(where + ": expected a JSON object, found " + std::string(j.type_name()));
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool ok = false;
    for (const auto& k : known) ok = ok || k == it.key();
    if (!ok) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      input_error(where + ": unknown key '" + detail::shown_text(it.key()) + "' (known keys: " + list + ")");
    }
  }
}

std::string get_path(const json& j, const std::string& key, const std::string& where) {
  if (!j.contains(key)) return "";
  if (!j[key].is_string() || j[key].get<std::string>().empty())
    input_error(where + "." + key + ": expected a non-empty string (a file path), found " + detail::shown(j[key]));
  detail::check_path_text(j[key].get<std::string>(), where + "." + key);
  return j[key].get<std::string>();
}

bool get_bool(const json& j, const std::string& key, const std::string& where, bool fallback) {
  if (!j.contains(key)) return fallback;
  if (!j[key].is_boolean()) input_error(where + "." + key + ": expected true or false, found " + detail::shown(j[key]));
  return j[key].get<bool>();
}

index_t count_value(const json& v, const std::string& name, index_t lo, index_t hi) {
  // Compared in the type nlohmann holds (unsigned for non-negative integers) before narrowing.
  const bool ok = v.is_number_unsigned() ? v.get<unsigned long long>() >= static_cast<unsigned long long>(lo) &&
                                               v.get<unsigned long long>() <= static_cast<unsigned long long>(hi)
                                         : v.is_number_integer() && v.get<long long>() >= lo && v.get<long long>() <= hi;
  if (!ok)
    input_error(name + ": expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], found " +
                detail::shown(v));
  return static_cast<index_t>(v.get<long long>());
}

index_t get_count(const json& j, const std::string& key, const std::string& where, index_t fallback, index_t lo,
                  index_t hi) {
  return j.contains(key) ? count_value(j[key], where + "." + key, lo, hi) : fallback;
}

long long parse_int_option(const std::string& text, const std::string& option, long long lo, long long hi) {
  const std::string expected =
      option + ": expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], found '" + text + "'";
  // Digits only (an optional minus), at most 18 of them, so the value is exact in long long.
  const size_t digits = text.size() - (!text.empty() && text[0] == '-');
  if (digits == 0 || digits > 18 || text.find_first_not_of("0123456789", text.size() - digits) != std::string::npos)
    input_error(expected);
  const long long v = std::stoll(text);
  if (v < lo || v > hi) input_error(expected);
  return v;
}

double parse_real_option(const std::string& text, const std::string& option, double lo, double hi, bool lo_exclusive) {
  const std::string expected = option + ": expected a number in " + (lo_exclusive ? "(" : "[") +
                               detail::number_text(lo) + ", " + detail::number_text(hi) + "], found '" + text + "'";
  double v = 0.0;
  try {
    size_t used = 0;
    v = std::stod(text, &used);
    if (used != text.size()) input_error(expected);
  } catch (const std::logic_error&) {  // not a number, or beyond double's range
    input_error(expected);
  }
  const bool below = lo_exclusive ? !(v > lo) : !(v >= lo);
  if (below || !(v <= hi) || !std::isfinite(v)) input_error(expected);
  return v;
}

int parse_threads_option(const std::string& text, const std::string& option) {
  return static_cast<int>(parse_int_option(text, option + " (0 = all cores)", 0, kMaxThreads));
}

json parse_config_json(const std::string& text, const std::string& path) {
  // The parser is iterative, but dump() and the destructors of nested values recurse: refuse
  // nesting while parsing, before a deep value exists.
  const json::parser_callback_t depth_limit = [&path](int depth, json::parse_event_t event, json&) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        depth >= kMaxJsonDepth)
      input_error(path + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                  " levels (a run configuration nests a few)");
    return true;
  };
  try {
    return json::parse(text, depth_limit, /*allow_exceptions=*/true, /*ignore_comments=*/true);
  } catch (const json::parse_error& e) {
    input_error(path + ": not valid JSON: " + e.what());
  } catch (const json::exception& e) {  // e.g. a number beyond double's range (1e309)
    input_error(path + ": not a usable JSON value: " + e.what());
  }
}

json read_config_json(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    input_error(path + ": is a directory; expected a run configuration file (JSON)");
  std::ifstream in(path, std::ios::binary);
  if (!in) input_error(path + ": cannot open the run configuration: " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) input_error(path + ": cannot read the run configuration: " + std::strerror(errno));
  return parse_config_json(text.str(), path);
}

namespace {

// A JSON integer >= 0: parsed text gives it as unsigned, a config built in a program (a bench,
// nlohmann's json from an int) may hold it signed.
bool non_negative_integer(const json& v) {
  return v.is_number_unsigned() || (v.is_number_integer() && v.get<long long>() >= 0);
}

}  // namespace

RunConfig run_config_from_json(json raw, const std::string& path) {
  RunConfig cfg;
  cfg.path = path;
  cfg.raw = std::move(raw);
  const json& j = cfg.raw;
  check_keys(j, path, {"method", "input", "params", "output", "device", "threads", "seed", "comm", "comm_timeout"});
  std::string known;
  for (const auto& m : methods()) known += (known.empty() ? "" : ", ") + std::string(m.name);
  if (!j.contains("method")) input_error(path + ": missing key 'method' (one of: " + known + ")");
  if (!j["method"].is_string() || !find_method(j["method"].get<std::string>()))
    input_error(path + ": method: expected one of: " + known + ", found " + detail::shown(j["method"]));
  cfg.method = j["method"].get<std::string>();
  if (!j.contains("input")) input_error(path + ": missing key 'input'");
  if (!j["input"].is_object()) input_error("input: expected a JSON object, found " + detail::shown(j["input"]));
  cfg.input = j["input"];
  if (j.contains("params")) {
    if (!j["params"].is_object()) input_error("params: expected a JSON object, found " + detail::shown(j["params"]));
    cfg.params = j["params"];
  }

  if (!j.contains("output")) input_error(path + ": missing key 'output' (at least {\"dir\": ...})");
  const json& out = j["output"];
  if (!out.is_object()) input_error("output: expected a JSON object, found " + detail::shown(out));
  for (auto it = out.begin(); it != out.end(); ++it)
    if (it.key() != "dir" && it.key() != "format" && it.key() != "svg" && it.key() != "html" &&
        it.key() != "checkpoint_seconds")
      cfg.output_extra[it.key()] = it.value();
  cfg.output.dir = get_path(out, "dir", "output");
  if (cfg.output.dir.empty()) input_error("output.dir: required (directory for the embedding, report and map)");
  if (out.contains("format")) {
    const json& f = out["format"];
    if (!f.is_string() || (f != "npy" && f != "csv" && f != "both"))
      input_error("output.format: expected one of npy | csv | both, found " + detail::shown(f));
    cfg.output.format = f.get<std::string>();
  }
  cfg.output.svg = get_bool(out, "svg", "output", true);
  cfg.output.html = get_bool(out, "html", "output", false);
  if (out.contains("checkpoint_seconds")) {
    const json& c = out["checkpoint_seconds"];
    if (!c.is_number() || !(c.get<double>() >= 0) || c.get<double>() > 1e9)
      input_error("output.checkpoint_seconds: expected a number of seconds in [0, 1e9] (0 = only when stopped), found " +
                  c.dump());
    cfg.output.checkpoint_seconds = c.get<double>();
  }

  if (j.contains("device")) {
    if (!j["device"].is_string()) input_error("device: expected auto, cpu, cuda or cuda:N, found " + detail::shown(j["device"]));
    cfg.device = j["device"].get<std::string>();
    const bool ok = cfg.device == "auto" || cfg.device == "cpu" || cfg.device == "cuda" ||
                    (cfg.device.rfind("cuda:", 0) == 0 && cfg.device.size() > 5 &&
                     cfg.device.find_first_not_of("0123456789", 5) == std::string::npos);
    if (!ok) input_error("device: expected auto, cpu, cuda or cuda:N, found \"" + detail::shown_text(cfg.device) + "\"");
  }
  if (j.contains("threads")) {
    const json& t = j["threads"];
    if (!non_negative_integer(t) || t.get<unsigned long long>() > static_cast<unsigned long long>(kMaxThreads))
      input_error("threads: expected an integer in [0, " + std::to_string(kMaxThreads) + "] (0 = all cores), found " +
                  detail::shown(t));
    cfg.threads = static_cast<int>(t.get<unsigned long long>());
  }
  if (j.contains("comm")) {
    const json& c = j["comm"];
    if (!c.is_string() || (c != "auto" && c != "single" && c != "mpi"))
      input_error("comm: expected auto, single or mpi, found " + detail::shown(c));
    cfg.comm_mode = c.get<std::string>();
  }
  if (j.contains("comm_timeout")) {
    const json& t = j["comm_timeout"];
    if (!t.is_number() || !(t.get<double>() >= 0) || !std::isfinite(t.get<double>()))
      input_error("comm_timeout: expected seconds >= 0 (0: no limit), found " + detail::shown(t));
    cfg.comm_timeout = t.get<double>();
  }
  if (j.contains("seed")) {
    if (!non_negative_integer(j["seed"])) input_error("seed: expected a non-negative integer, found " + detail::shown(j["seed"]));
    cfg.seed = j["seed"].get<unsigned long long>();
  }
  return cfg;
}

RunConfig read_run_config(const std::string& path) { return run_config_from_json(read_config_json(path), path); }

RunConfig parse_run_config(const std::string& text, const std::string& path) {
  return run_config_from_json(parse_config_json(text, path), path);
}

}  // namespace orrery::pipeline
