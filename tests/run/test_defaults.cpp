// One default per parameter: every field of every parameter table (the registry's, as `orrery
// defaults` lists them) has its default written once, in the struct behind its table. A second
// `key = <the same number>` in the library, the pipeline, the kernels or the Python package is a copy
// that will drift (the perplexity's 30 was once written in four places); code that needs a default
// takes it from the struct (`NervParams{}.lambda`). Tests and benches choose their own values and are
// not read; nor is host/optim, whose optimisers keep their own defaults (an L-BFGS tolerance is the
// optimiser's, which a method's table sets explicitly), nor include/orrery/engines.hpp, whose option
// structs give the defaults of a direct engine call (runs pass their table's values). Small whole
// numbers (a map's 2 dimensions) and 0, 1, -1 are too common to tell a copy from a value; a match
// inside a string literal is prose.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "run/methods.hpp"

using namespace orrery;
namespace fs = std::filesystem;

namespace {

// Where each table's defaults are written: the struct behind it.
const std::map<std::string, std::string> kHome = {
    {"pe", "include/orrery/pe.hpp"},
    {"posterior_model", "include/orrery/posterior_model.hpp"},
    {"pe_input", "host/run/pe_config.hpp"},
    {"hssne", "include/orrery/hssne.hpp"},
    {"hssne_input", "include/orrery/ne_input.hpp"},
    {"nerv_input", "include/orrery/ne_input.hpp"},
    {"snerv_input", "include/orrery/ne_input.hpp"},
    {"nerv", "include/orrery/nerv.hpp"},
    {"metric", "include/orrery/snerv.hpp"},
    {"plsv", "include/orrery/plsv.hpp"},
    {"plsv_input", "host/run/plsv_run.hpp"},
    {"text", "host/io/corpus.hpp"},
};

bool ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

struct Hit {
  std::string file;
  int line;
};

// Every `name = NUMBER` (or `name=NUMBER`) in `text` whose number equals `value`.
std::vector<int> assignments(const std::string& text, const std::string& name, double value) {
  std::vector<int> lines;
  for (size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1)) {
    // part of a longer name (max_name, ns::name) is another name; a member write (prm.name = ...) counts
    if (at > 0 && (ident(text[at - 1]) || text[at - 1] == ':')) continue;
    size_t i = at + name.size();
    if (i < text.size() && ident(text[i])) continue;
    while (i < text.size() && text[i] == ' ') ++i;
    if (i >= text.size() || text[i] != '=' || (i + 1 < text.size() && text[i + 1] == '=')) continue;
    ++i;
    while (i < text.size() && text[i] == ' ') ++i;
    const char* start = text.c_str() + i;
    char* end = nullptr;
    const double v = std::strtod(start, &end);
    if (end == start || v != value) continue;
    const size_t line_start = text.rfind('\n', at) == std::string::npos ? 0 : text.rfind('\n', at) + 1;
    if (std::count(text.begin() + static_cast<long>(line_start), text.begin() + static_cast<long>(at), '"') % 2 == 1)
      continue;  // inside a string literal
    const char next = *end;
    if (ident(next) || next == '.') continue;  // 30 in 30.5, or 2 in 2 * x
    if (next == ' ' && end[1] && std::string("*/+-").find(end[1]) != std::string::npos) continue;
    lines.push_back(1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n')));
  }
  return lines;
}

std::map<std::string, std::string> sources() {
  std::map<std::string, std::string> out;
  const fs::path root = ORRERY_SOURCE_DIR;
  for (const char* dir : {"include/orrery", "host/methods", "host/run", "host/prep", "host/cpu", "host/cli", "host/io",
                          "host/report", "kernels", "python/orrery", "python/src"}) {
    for (const auto& e : fs::directory_iterator(root / dir)) {
      const std::string ext = e.path().extension().string();
      if (!e.is_regular_file() || (ext != ".hpp" && ext != ".cpp" && ext != ".cu" && ext != ".cuh" && ext != ".py"))
        continue;
      if (e.path().filename() == "engines.hpp") continue;  // the engines' option structs (see above)
      std::ifstream f(e.path());
      std::stringstream ss;
      ss << f.rdbuf();
      out[fs::relative(e.path(), root).generic_string()] = ss.str();
    }
  }
  return out;
}

}  // namespace

TEST(Defaults, EachIsWrittenOnceInItsTablesStruct) {
  const auto files = sources();
  ASSERT_GT(files.size(), 50u) << "the sources under " << ORRERY_SOURCE_DIR;
  // (name, default) -> the files of the tables that have such a field: several methods may each
  // have, say, max_iter = 1000 in their own struct.
  std::map<std::pair<std::string, double>, std::set<std::string>> homes;
  std::map<std::pair<std::string, double>, std::string> text, table_of;
  std::set<std::string> tables;
  for (const auto& m : pipeline::methods())
    for (const auto& t : m.tables) {
      if (!tables.insert(t.name).second) continue;
      const auto home = kHome.find(t.name);
      ASSERT_NE(home, kHome.end()) << "table " << t.name << ": name the file of its struct in kHome";
      for (const FieldInfo& f : t.describe()) {
        char* end = nullptr;
        const double value = std::strtod(f.default_text.c_str(), &end);
        if (f.default_text.empty() || *end != '\0' || (value == std::floor(value) && std::abs(value) < 10)) continue;
        const auto key = std::make_pair(f.key.substr(f.key.rfind('.') == std::string::npos ? 0 : f.key.rfind('.') + 1), value);
        homes[key].insert(home->second);
        text[key] = f.default_text;
        table_of[key] = t.name;
      }
    }
  EXPECT_GT(homes.size(), 20u) << "numeric defaults checked";
  for (const auto& [key, where] : homes) {
    std::map<std::string, int> in_home;
    for (const auto& [file, body] : files)
      for (int line : assignments(body, key.first, key.second)) {
        if (where.count(file)) {
          ++in_home[file];
          continue;
        }
        ADD_FAILURE() << file << ":" << line << ": " << key.first << " = " << text[key] << " is a copy of table "
                      << table_of[key] << "'s default (written in " << *where.begin()
                      << "): take it from the struct";
      }
    for (const auto& [file, n] : in_home)
      EXPECT_LE(n, 2) << key.first << " = " << text[key] << " written " << n << " times in " << file;
  }
}

// The scanner finds what it is for, and not what it is not.
TEST(Defaults, TheScannerFindsAssignmentsOfTheValue) {
  EXPECT_EQ(assignments("  double perplexity = 30.0;  // x\n", "perplexity", 30.0), std::vector<int>{1});
  EXPECT_EQ(assignments("\nperplexity=30,\n", "perplexity", 30.0), std::vector<int>{2});
  EXPECT_EQ(assignments("p.perplexity = 30;", "perplexity", 30.0), std::vector<int>{1});
  EXPECT_TRUE(assignments("double perplexity = 30.5;", "perplexity", 30.0).empty());
  EXPECT_TRUE(assignments("max_perplexity = 30;", "perplexity", 30.0).empty());
  EXPECT_TRUE(assignments("perplexity == 30", "perplexity", 30.0).empty());
  EXPECT_TRUE(assignments("perplexity = 30 * k;", "perplexity", 30.0).empty());
  EXPECT_TRUE(assignments("perplexity = 3;", "perplexity", 30.0).empty());
  EXPECT_TRUE(assignments("why(\"perplexity = 30 here\")", "perplexity", 30.0).empty());
}
