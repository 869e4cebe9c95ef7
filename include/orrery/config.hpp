// Field tables: one table per Params struct drives the JSON reader, the `orrery defaults`
// listing, the report's config echo and the README reference, so each default, range and
// meaning is written once (next to the struct) and cannot drift between them.
#pragma once
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "orrery/error.hpp"

namespace orrery {

using json = nlohmann::json;

inline constexpr double kInf = std::numeric_limits<double>::infinity();

template <class P>
struct Field {
  using Member = std::variant<int P::*, double P::*, bool P::*, std::string P::*>;
  const char* key;
  Member member;
  const char* doc;  // meaning in the paper's terms, trade-off, effect on determinism
  double min = -kInf;
  double max = kInf;
  bool min_exclusive = false;
  std::vector<std::string> choices;  // allowed values of a string field
};

// What `orrery defaults` and the README print for one field.
struct FieldInfo {
  std::string key, type, default_text, range_text, doc;
};

namespace detail {
inline std::string number_text(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::ostringstream os;
  os << v;
  return os.str();
}
template <class P>
std::string range_text(const Field<P>& f) {
  if (!f.choices.empty()) {
    std::string s;
    for (size_t i = 0; i < f.choices.size(); ++i) s += (i ? " | " : "") + f.choices[i];
    return s;
  }
  if (std::holds_alternative<bool P::*>(f.member) || std::holds_alternative<std::string P::*>(f.member)) return "";
  const bool lo = std::isfinite(f.min), hi = std::isfinite(f.max);
  if (lo && hi) return std::string(f.min_exclusive ? "(" : "[") + number_text(f.min) + ", " + number_text(f.max) + "]";
  if (lo) return std::string(f.min_exclusive ? "> " : ">= ") + number_text(f.min);
  if (hi) return "<= " + number_text(f.max);
  return "";
}
template <class P>
void check_number(const Field<P>& f, double v, const std::string& where) {
  const bool below = f.min_exclusive ? !(v > f.min) : !(v >= f.min);
  if (below || !(v <= f.max) || !std::isfinite(v)) {
    input_error(where + "." + f.key + ": expected a value in " + range_text(f) + ", found " + number_text(v));
  }
}
}  // namespace detail

// Reads `j` (a JSON object) into `params`. Keys not in the table, values of the wrong type and
// values out of range are errors naming `where.key`; absent keys keep the in-class default.
template <class P>
void read_fields(const json& j, P& params, const std::vector<Field<P>>& fields, const std::string& where) {
  if (j.is_null()) return;
  if (!j.is_object()) input_error(where + ": expected a JSON object, found " + std::string(j.type_name()));
  for (auto it = j.begin(); it != j.end(); ++it) {
    const Field<P>* f = nullptr;
    for (const auto& cand : fields)
      if (it.key() == cand.key) f = &cand;
    if (!f) {
      std::string known;
      for (const auto& cand : fields) known += (known.empty() ? "" : ", ") + std::string(cand.key);
      input_error(where + ": unknown key '" + it.key() + "' (known keys: " + known + ")");
    }
    const json& v = it.value();
    const std::string name = where + "." + f->key;
    std::visit(
        [&](auto member) {
          using T = std::decay_t<decltype(params.*member)>;
          if constexpr (std::is_same_v<T, bool>) {
            if (!v.is_boolean()) input_error(name + ": expected true or false, found " + v.dump());
            params.*member = v.get<bool>();
          } else if constexpr (std::is_same_v<T, int>) {
            if (!v.is_number_integer()) input_error(name + ": expected an integer, found " + v.dump());
            const double x = static_cast<double>(v.get<long long>());
            detail::check_number(*f, x, where);
            params.*member = static_cast<int>(x);
          } else if constexpr (std::is_same_v<T, double>) {
            if (!v.is_number()) input_error(name + ": expected a number, found " + v.dump());
            detail::check_number(*f, v.get<double>(), where);
            params.*member = v.get<double>();
          } else {
            if (!v.is_string()) input_error(name + ": expected a string, found " + v.dump());
            const std::string s = v.get<std::string>();
            if (!f->choices.empty()) {
              bool ok = false;
              for (const auto& c : f->choices) ok = ok || c == s;
              if (!ok) input_error(name + ": expected one of " + detail::range_text(*f) + ", found \"" + s + "\"");
            }
            params.*member = s;
          }
        },
        f->member);
  }
}

// The values of every field, for the report's config echo.
template <class P>
json fields_to_json(const P& params, const std::vector<Field<P>>& fields) {
  json out = json::object();
  for (const auto& f : fields) std::visit([&](auto member) { out[f.key] = params.*member; }, f.member);
  return out;
}

template <class P>
std::vector<FieldInfo> describe_fields(const std::vector<Field<P>>& fields) {
  static const P defaults = P();
  std::vector<FieldInfo> out;
  for (const auto& f : fields) {
    FieldInfo info;
    info.key = f.key;
    info.doc = f.doc;
    info.range_text = detail::range_text(f);
    std::visit(
        [&](auto member) {
          using T = std::decay_t<decltype(defaults.*member)>;
          if constexpr (std::is_same_v<T, bool>) {
            info.type = "bool";
            info.default_text = (defaults.*member) ? "true" : "false";
          } else if constexpr (std::is_same_v<T, int>) {
            info.type = "int";
            info.default_text = std::to_string(defaults.*member);
          } else if constexpr (std::is_same_v<T, double>) {
            info.type = "number";
            info.default_text = detail::number_text(defaults.*member);
          } else {
            info.type = "string";
            info.default_text = "\"" + (defaults.*member) + "\"";
          }
        },
        f.member);
    out.push_back(info);
  }
  return out;
}

}  // namespace orrery
