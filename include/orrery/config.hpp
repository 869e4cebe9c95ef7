// Field tables: one table per Params struct (and per method's input keys) drives the JSON reader,
// the `orrery defaults` listing, the report's config echo and the parameter tables of docs/, so each
// default, range and meaning is written once (next to the struct) and cannot drift between them.
//
// A field is a member of one of these types: int, index_t (counts beyond 2^31), double, bool,
// std::string, an enum class with names (EnumNames below), a list given inline or as a file path
// (ListInput), or a nested object read by its own table (sub_table). Integers are range-checked
// before they are narrowed, so no value wraps.
#pragma once
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "orrery/error.hpp"
#include "orrery/types.hpp"

namespace orrery {

using json = nlohmann::json;

inline constexpr double kInf = std::numeric_limits<double>::infinity();

// The longest file path a config may give (Linux's PATH_MAX).
inline constexpr size_t kMaxPathLength = 4096;

namespace detail {
// A string from a config as an error message shows it: cut after 80 characters, so that a key or
// value megabytes long cannot flood the terminal.
inline std::string shown_text(const std::string& s) {
  constexpr size_t kMaxText = 80;
  return s.size() <= kMaxText ? s : s.substr(0, kMaxText) + "...(" + std::to_string(s.size()) + " characters)";
}
// Every string a config gives as a file path: one the system can open as written. A NUL would cut
// the path short, so another file would be read (or written) than the one named.
inline void check_path_text(const std::string& s, const std::string& name) {
  if (s.size() > kMaxPathLength)
    input_error(name + ": expected a file path of at most " + std::to_string(kMaxPathLength) + " characters, found " +
                std::to_string(s.size()));
  if (s.find('\0') != std::string::npos) input_error(name + ": a file path cannot contain a NUL character");
}
}  // namespace detail

// The names of an enum class's values, in declaration order, written once next to the enum by a
// specialisation: template <> struct EnumNames<E> { static constexpr std::array<const char*, 2>
// names = {"a", "b"}; };  They are the values a config takes and a report shows.
template <class E>
struct EnumNames;

template <class E>
std::string enum_name(E value) {
  return EnumNames<E>::names[static_cast<size_t>(value)];
}

// "a | b | c".
template <class E>
std::string enum_choices() {
  std::string s;
  for (const char* n : EnumNames<E>::names) s += (s.empty() ? "" : " | ") + std::string(n);
  return s;
}

// The value named `name`; an input error naming `where` (and the choices) otherwise.
template <class E>
E parse_enum(const std::string& name, const std::string& where) {
  for (size_t i = 0; i < EnumNames<E>::names.size(); ++i)
    if (name == EnumNames<E>::names[i]) return static_cast<E>(i);
  input_error(where + ": expected one of " + enum_choices<E>() + ", found \"" + detail::shown_text(name) + "\"");
}

// A list that a config gives inline (a JSON array) or as a file to read (a string: its path).
template <class T>
struct ListInput {
  std::string path;
  std::vector<T> values;
  bool given() const { return !path.empty() || !values.empty(); }
};

// A member of enum type E, seen by the table through its value's index.
template <class P>
struct EnumRef {
  std::function<int(const P&)> get;
  std::function<void(P&, int)> set;
  std::vector<std::string> names;
  template <class E, class = std::enable_if_t<std::is_enum_v<E>>>
  EnumRef(E P::*m)  // NOLINT: implicit, so a table entry reads {"key", &P::member, ...}
      : get([m](const P& p) { return static_cast<int>(p.*m); }),
        set([m](P& p, int v) { p.*m = static_cast<E>(v); }),
        names(EnumNames<E>::names.begin(), EnumNames<E>::names.end()) {}
};

// A member that is itself an object with a field table of its own (`orrery defaults <table>`).
template <class P>
struct SubTable {
  std::string table;  // the name `orrery defaults` knows it by
  std::function<void(const json&, P&, const std::string& where)> read;
  std::function<json(const P&)> to_json;
};

template <class P>
struct Field {
  using Member = std::variant<int P::*, index_t P::*, double P::*, bool P::*, std::string P::*, EnumRef<P>,
                              ListInput<double> P::*, ListInput<std::string> P::*, SubTable<P>>;
  const char* key;
  Member member;
  std::string doc;  // meaning in the paper's terms, trade-off, effect on determinism
  double min = -kInf;
  double max = kInf;
  bool min_exclusive = false;
};

// What `orrery defaults` and the docs' parameter tables print for one field.
struct FieldInfo {
  std::string key, type, default_text, range_text, doc;
};

namespace detail {
// A JSON value as an error message shows it: scalars as written (long strings cut), containers by
// kind and size. Never the whole of an array or object: a value nested 100,000 deep or megabytes
// long must not recurse off the stack or flood the terminal while an error is being reported.
inline std::string shown(const json& v) {
  if (v.is_array()) return "an array of " + std::to_string(v.size()) + " element(s)";
  if (v.is_object()) return "an object with " + std::to_string(v.size()) + " key(s)";
  return shown_text(v.dump());
}
inline std::string number_text(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::ostringstream os;
  os << v;
  return os.str();
}
template <class P>
std::string range_text(const Field<P>& f) {
  if (const auto* e = std::get_if<EnumRef<P>>(&f.member)) {
    std::string s;
    for (const auto& n : e->names) s += (s.empty() ? "" : " | ") + n;
    return s;
  }
  if (!std::holds_alternative<int P::*>(f.member) && !std::holds_alternative<index_t P::*>(f.member) &&
      !std::holds_alternative<double P::*>(f.member))
    return "";
  const bool lo = std::isfinite(f.min), hi = std::isfinite(f.max);
  if (lo && hi) return std::string(f.min_exclusive ? "(" : "[") + number_text(f.min) + ", " + number_text(f.max) + "]";
  if (lo) return std::string(f.min_exclusive ? "> " : ">= ") + number_text(f.min);
  if (hi) return "<= " + number_text(f.max);
  return "";
}
// `found`: the value as the config wrote it (integers exactly, not rounded through a double).
template <class P>
void check_number(const Field<P>& f, double v, const std::string& where, const std::string& found = "") {
  const bool below = f.min_exclusive ? !(v > f.min) : !(v >= f.min);
  if (below || !(v <= f.max) || !std::isfinite(v)) {
    input_error(where + "." + f.key + ": expected a value in " + range_text(f) + ", found " +
                (found.empty() ? number_text(v) : found));
  }
}
// A JSON integer for a field of type T, range-checked in the type it arrives in (nlohmann keeps
// non-negative integers as unsigned 64-bit, negative ones as signed) before it is narrowed to T, so
// that no value wraps: 4294967298 is refused, never read as 2. Then checked against the field's range.
template <class T, class P>
T integer_field(const Field<P>& f, const json& v, const std::string& where) {
  const std::string name = where + "." + f.key;
  if (!v.is_number_integer()) input_error(name + ": expected an integer, found " + shown(v));
  const bool fits = v.is_number_unsigned()
                        ? v.get<unsigned long long>() <= static_cast<unsigned long long>(std::numeric_limits<T>::max())
                        : v.get<long long>() >= static_cast<long long>(std::numeric_limits<T>::min()) &&
                              v.get<long long>() <= static_cast<long long>(std::numeric_limits<T>::max());
  if (!fits)
    input_error(name + ": expected a value in " +
                (range_text(f).empty() ? "[" + std::to_string(std::numeric_limits<T>::min()) + ", " +
                                             std::to_string(std::numeric_limits<T>::max()) + "]"
                                       : range_text(f)) +
                ", found " + v.dump());
  const T x = v.is_number_unsigned() ? static_cast<T>(v.get<unsigned long long>()) : static_cast<T>(v.get<long long>());
  check_number(f, static_cast<double>(x), where, v.dump());
  return x;
}
template <class T>
void read_list(const json& v, ListInput<T>& out, const std::string& name) {
  out = ListInput<T>();
  if (v.is_string()) {
    out.path = v.get<std::string>();
    if (out.path.empty()) input_error(name + ": expected a file path or a list, found an empty string");
    check_path_text(out.path, name);
    return;
  }
  const char* what = std::is_same_v<T, double> ? "numbers" : "strings";
  if (!v.is_array()) input_error(name + ": expected a file path or a list of " + what + ", found " + detail::shown(v));
  for (const auto& x : v) {
    if constexpr (std::is_same_v<T, double>) {
      if (!x.is_number()) input_error(name + ": expected numbers, found " + detail::shown(x));
    } else {
      if (!x.is_string()) input_error(name + ": expected strings, found " + detail::shown(x));
    }
    out.values.push_back(x.get<T>());
  }
}
template <class T>
json list_json(const ListInput<T>& l) {
  if (!l.path.empty()) return l.path;
  return l.values;
}
}  // namespace detail

// A field whose value is an object read through the table `fields` of S (member `m`).
template <class P, class S>
SubTable<P> sub_table(S P::*m, const std::string& table, const std::vector<Field<S>>& (*fields)());

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
      input_error(where + ": unknown key '" + detail::shown_text(it.key()) + "' (known keys: " + known + ")");
    }
    const json& v = it.value();
    const std::string name = where + "." + f->key;
    std::visit(
        [&](const auto& member) {
          using M = std::decay_t<decltype(member)>;
          if constexpr (std::is_same_v<M, EnumRef<P>>) {
            if (!v.is_string()) input_error(name + ": expected a string, found " + detail::shown(v));
            const std::string s = v.get<std::string>();
            for (size_t i = 0; i < member.names.size(); ++i)
              if (member.names[i] == s) return member.set(params, static_cast<int>(i));
            input_error(name + ": expected one of " + detail::range_text(*f) + ", found \"" + detail::shown_text(s) + "\"");
          } else if constexpr (std::is_same_v<M, SubTable<P>>) {
            member.read(v, params, name);
          } else {
            using T = std::decay_t<decltype(params.*member)>;
            if constexpr (std::is_same_v<T, bool>) {
              if (!v.is_boolean()) input_error(name + ": expected true or false, found " + detail::shown(v));
              params.*member = v.get<bool>();
            } else if constexpr (std::is_same_v<T, int> || std::is_same_v<T, index_t>) {
              params.*member = detail::integer_field<T>(*f, v, where);
            } else if constexpr (std::is_same_v<T, double>) {
              if (!v.is_number()) input_error(name + ": expected a number, found " + detail::shown(v));
              detail::check_number(*f, v.get<double>(), where, detail::shown(v));
              params.*member = v.get<double>();
            } else if constexpr (std::is_same_v<T, std::string>) {
              if (!v.is_string()) input_error(name + ": expected a string, found " + detail::shown(v));
              detail::check_path_text(v.get<std::string>(), name);  // every string field is a file path
              params.*member = v.get<std::string>();
            } else {
              detail::read_list(v, params.*member, name);
            }
          }
        },
        f->member);
  }
}

// Checks the numeric fields of params built in code (not read from JSON) against the table's
// ranges; errors name `where.key` as read_fields does.
template <class P>
void check_fields(const P& params, const std::vector<Field<P>>& fields, const std::string& where) {
  for (const auto& f : fields)
    std::visit(
        [&](const auto& member) {
          using M = std::decay_t<decltype(member)>;
          if constexpr (!std::is_same_v<M, EnumRef<P>> && !std::is_same_v<M, SubTable<P>>) {
            using T = std::decay_t<decltype(params.*member)>;
            if constexpr (std::is_same_v<T, int> || std::is_same_v<T, index_t> || std::is_same_v<T, double>)
              detail::check_number(f, static_cast<double>(params.*member), where);
          }
        },
        f.member);
}

// The values of every field, for the report's config echo.
template <class P>
json fields_to_json(const P& params, const std::vector<Field<P>>& fields) {
  json out = json::object();
  for (const auto& f : fields)
    std::visit(
        [&](const auto& member) {
          using M = std::decay_t<decltype(member)>;
          if constexpr (std::is_same_v<M, EnumRef<P>>) {
            out[f.key] = member.names[static_cast<size_t>(member.get(params))];
          } else if constexpr (std::is_same_v<M, SubTable<P>>) {
            out[f.key] = member.to_json(params);
          } else {
            using T = std::decay_t<decltype(params.*member)>;
            if constexpr (std::is_same_v<T, ListInput<double>> || std::is_same_v<T, ListInput<std::string>>)
              out[f.key] = detail::list_json(params.*member);
            else
              out[f.key] = params.*member;
          }
        },
        f.member);
  return out;
}

template <class P, class S>
SubTable<P> sub_table(S P::*m, const std::string& table, const std::vector<Field<S>>& (*fields)()) {
  return SubTable<P>{table, [m, fields](const json& j, P& p, const std::string& where) { read_fields(j, p.*m, fields(), where); },
                     [m, fields](const P& p) { return fields_to_json(p.*m, fields()); }};
}

// `defaults`: the values shown as defaults (a table shared by several methods may differ in them).
template <class P>
std::vector<FieldInfo> describe_fields(const std::vector<Field<P>>& fields, const P& defaults = P()) {
  std::vector<FieldInfo> out;
  for (const auto& f : fields) {
    FieldInfo info;
    info.key = f.key;
    info.doc = f.doc;
    info.range_text = detail::range_text(f);
    std::visit(
        [&](const auto& member) {
          using M = std::decay_t<decltype(member)>;
          if constexpr (std::is_same_v<M, EnumRef<P>>) {
            info.type = "string";
            info.default_text = "\"" + member.names[static_cast<size_t>(member.get(defaults))] + "\"";
          } else if constexpr (std::is_same_v<M, SubTable<P>>) {
            info.type = "object";
            info.default_text = "{}";
            info.range_text = "see `orrery defaults " + member.table + "`";
          } else {
            using T = std::decay_t<decltype(defaults.*member)>;
            if constexpr (std::is_same_v<T, bool>) {
              info.type = "bool";
              info.default_text = (defaults.*member) ? "true" : "false";
            } else if constexpr (std::is_same_v<T, int> || std::is_same_v<T, index_t>) {
              info.type = "int";
              info.default_text = std::to_string(defaults.*member);
            } else if constexpr (std::is_same_v<T, double>) {
              info.type = "number";
              info.default_text = detail::number_text(defaults.*member);
            } else if constexpr (std::is_same_v<T, std::string>) {
              info.type = "string";
              info.default_text = (defaults.*member).empty() ? "none" : "\"" + (defaults.*member) + "\"";
            } else {
              info.type = std::is_same_v<T, ListInput<double>> ? "path or numbers" : "path or strings";
              info.default_text = "none";
            }
          }
        },
        f.member);
    out.push_back(info);
  }
  return out;
}

}  // namespace orrery
