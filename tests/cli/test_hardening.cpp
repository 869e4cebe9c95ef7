// Bad input of every kind ends in an input error (exit 2) naming the key, option or file, before
// any work and without output: numbers beyond their field's range or type, JSON too deep or out of
// double's range, configs that are not files; results that are not finite are never written, and
// outputs never replace inputs or anything but a regular file.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "run/ne_config.hpp"
#include "run/pe_config.hpp"
#include "run/plsv_run.hpp"
#include "run/run_common.hpp"
#include "common/cli_runner.hpp"
#include "common/temp_dir.hpp"
#include "orrery/config.hpp"
#include "orrery/error.hpp"
#include "orrery/hssne.hpp"
#include "orrery/nerv.hpp"
#include "orrery/pe.hpp"
#include "orrery/plsv.hpp"
#include "orrery/posterior_model.hpp"
#include "orrery/snerv.hpp"
#include "report/svg_map.hpp"

namespace fs = std::filesystem;
using namespace orrery;
using orrery::test::Outcome;
using orrery::test::TempDir;
using orrery::test::slurp;

namespace {

// Expects `o` to be an input error whose message holds every fragment.
void expect_refused(const Outcome& o, const std::vector<std::string>& fragments) {
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_EQ(o.output.rfind("error: ", 0), 0u) << o.output;
  for (const auto& f : fragments) EXPECT_NE(o.output.find(f), std::string::npos) << "missing '" << f << "' in: " << o.output;
}

// 60 points in three clusters (5 dimensions) and their labels, as CSV.
struct Points {
  std::string vectors, labels;
};
Points write_points(const TempDir& t) {
  std::string x, l;
  for (int i = 0; i < 60; ++i) {
    for (int d = 0; d < 5; ++d) x += (d ? "," : "") + std::to_string((i / 20) * 3.0 + 0.1 * ((i * 7 + d * 13) % 11));
    x += "\n";
    l += std::to_string(i / 20) + "\n";
  }
  return {t.write("x.csv", x), t.write("labels.csv", l)};
}

std::string write_json(const TempDir& t, const std::string& name, const json& j) { return t.write(name, j.dump(2)); }

// Every value refused by field `f` of a table: one past each end of its range, and integers that
// wrap into the range when narrowed without a check (2^32 + min for an int; 2^63 and 2^64 - 1).
template <class P>
std::vector<json> beyond(const Field<P>& f, bool integer, bool is_int) {
  std::vector<json> out = {json(1e308), json(-1e308)};
  if (integer) {
    out.push_back(json(static_cast<unsigned long long>(f.max) + 1));
    out.push_back(json(static_cast<long long>(f.min) - 1));
    if (is_int) out.push_back(json(4294967296LL + static_cast<long long>(f.min)));
    out.push_back(json(9223372036854775808ULL));
    out.push_back(json(18446744073709551615ULL));
  } else {
    out.push_back(json(std::nextafter(f.max, kInf)));
    out.push_back(json(f.min_exclusive ? f.min : std::nextafter(f.min, -kInf)));
  }
  return out;
}

// Every int and number field of the table has a finite range, refuses every value beyond it in
// the type the value arrives in, and takes both ends of it exactly.
template <class P>
void expect_bounded(const std::vector<Field<P>>& fields, const std::string& table) {
  for (const auto& f : fields) {
    const bool is_int = std::holds_alternative<int P::*>(f.member);
    const bool integer = is_int || std::holds_alternative<index_t P::*>(f.member);
    if (!integer && !std::holds_alternative<double P::*>(f.member)) continue;
    const std::string key = table + "." + f.key;
    EXPECT_TRUE(std::isfinite(f.min) && std::isfinite(f.max)) << key << ": no finite range";
    if (!std::isfinite(f.min) || !std::isfinite(f.max)) continue;
    for (const json& v : beyond(f, integer, is_int)) {
      P p;
      try {
        read_fields(json{{f.key, v}}, p, fields, table);
        ADD_FAILURE() << key << " accepted " << v.dump();
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::input);
        EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
      }
    }
    const double lo = f.min_exclusive ? std::nextafter(f.min, kInf) : f.min;
    for (double end : {integer ? std::ceil(lo) : lo, f.max}) {
      P p;
      read_fields(json{{f.key, integer ? json(static_cast<long long>(end)) : json(end)}}, p, fields, table);
      const json echoed = fields_to_json(p, fields)[f.key];
      EXPECT_EQ(echoed.get<double>(), end) << key;
    }
  }
}

}  // namespace

TEST(Hardening, EveryNumericFieldIsBoundedAndCheckedBeforeItIsNarrowed) {
  expect_bounded(pe_fields(), "pe");
  expect_bounded(pipeline::pe_input_fields(), "pe_input");
  expect_bounded(posterior_model_fields(), "posterior_model");
  expect_bounded(hssne_fields(), "hssne");
  expect_bounded(nerv_fields(), "nerv");
  for (const NeMethod m : {NeMethod::hssne, NeMethod::nerv, NeMethod::snerv})
    expect_bounded(ne_input_fields(m), std::string(ne_method_name(m)) + "_input");
  expect_bounded(class_mixture_fields(), "metric");
  expect_bounded(plsv_fields(), "plsv");
  expect_bounded(pipeline::plsv_input_fields(), "plsv_input");
  expect_bounded(pipeline::text_fields(), "text");
}

TEST(Hardening, EveryCommandLineAndConfigNumberOutsideItsRangeIsRefused) {
  TempDir t;
  const Points pts = write_points(t);
  const std::string out = t.path("out");
  // Config keys outside the field tables.
  const json ne = {{"method", "nerv"},
                   {"input", {{"vectors", pts.vectors}, {"perplexity", 5}}},
                   {"params", {{"max_iter", 2}}},
                   {"output", {{"dir", out}}},
                   {"device", "cpu"}};
  json threads = ne;
  threads["threads"] = 4097;
  expect_refused(orrery::test::run_orrery("run " + write_json(t, "threads.json", threads)), {"threads", "4096"});
  threads["threads"] = 18446744073709551615ULL;
  expect_refused(orrery::test::run_orrery("run " + write_json(t, "threads2.json", threads)), {"threads"});
  std::string docs;
  for (int i = 0; i < 20; ++i) docs += std::string(i % 2 ? "apple banana cherry apple" : "dog cat mouse dog") + "\n";
  const json plsv = {{"method", "plsv"},
                     {"input", {{"corpus", t.write("docs.txt", docs)}}},
                     {"params", {{"topics", 2}, {"max_iter", 1}}},
                     {"output", {{"dir", out}, {"top_words", 2147483648LL}}},
                     {"device", "cpu"}};
  expect_refused(orrery::test::run_orrery("run " + write_json(t, "plsv.json", plsv)), {"output.top_words"});
  json pe = json::parse(slurp(fs::path(ORRERY_SOURCE_DIR) / "configs" / "pe_planted_csv.json"));
  pe["output"] = {{"dir", out}, {"prec_h", {10, 9223372036854775808ULL}}};
  expect_refused(orrery::test::run_orrery("validate " + write_json(t, "pe.json", pe)), {"output.prec_h"});
  EXPECT_FALSE(fs::exists(out));

  // Command-line numbers: evaluate and check.
  const std::string ev = "evaluate --data " + pts.vectors + " --embedding " + pts.vectors + " --quiet ";
  expect_refused(orrery::test::run_orrery(ev + "--threads 100000"), {"--threads", "4096"});
  expect_refused(orrery::test::run_orrery(ev + "--threads 4294967297"), {"--threads"});
  expect_refused(orrery::test::run_orrery(ev + "--perplexity 1e-300"), {"--perplexity"});
  expect_refused(orrery::test::run_orrery(ev + "--perplexity nan"), {"--perplexity"});
  expect_refused(orrery::test::run_orrery(ev + "--perplexity 1e400"), {"--perplexity"});
  expect_refused(orrery::test::run_orrery(ev + "--k 5,4294967301"), {"--k"});
  expect_refused(orrery::test::run_orrery(ev + "--kmax 99999999999999999999"), {"--kmax"});
  const std::string cfg = write_json(t, "ne.json", ne);
  expect_refused(orrery::test::run_orrery("check " + cfg + " --device cpu --iterations 4294967297"), {"--iterations"});
  EXPECT_EQ(orrery::test::run_orrery(ev + "--threads 3 --perplexity 5 --k 5").code, 0);
}

TEST(Hardening, JsonThatIsNotAUsableConfigIsAnInputErrorNamingTheFile) {
  TempDir t;
  const Points pts = write_points(t);
  // Nested 100,000 deep: parsing stops at the depth limit instead of the stack's end.
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::string deep_cfg = t.write("deep.json", "{\"method\": \"nerv\", \"input\": {\"vectors\": " + deep +
                                                        "}, \"output\": {\"dir\": \"" + t.path("out") + "\"}}");
  expect_refused(orrery::test::run_orrery("validate " + deep_cfg), {"deep.json", "nested deeper"});
  expect_refused(orrery::test::run_orrery("run " + deep_cfg), {"deep.json", "nested deeper"});
  const std::string huge = t.write("huge.json", "{\"method\": \"nerv\", \"input\": {\"vectors\": \"" + pts.vectors +
                                                    "\", \"perplexity\": 1e309}, \"output\": {\"dir\": \"o\"}}");
  expect_refused(orrery::test::run_orrery("validate " + huge), {"huge.json", "1e309"});
  fs::create_directories(t.path("cfgdir"));
  expect_refused(orrery::test::run_orrery("run " + t.path("cfgdir")), {"cfgdir", "directory"});
  expect_refused(orrery::test::run_orrery("check " + t.path("cfgdir")), {"cfgdir", "directory"});
  // A wrong value is shown by kind and size, never dumped whole.
  json big = json::array();
  for (int i = 0; i < 100000; ++i) big.push_back(i);
  const json wrong = {{"method", "nerv"}, {"input", {{"vectors", big}}}, {"output", {{"dir", t.path("out")}}}};
  const Outcome o = orrery::test::run_orrery("validate " + write_json(t, "wrong.json", wrong));
  expect_refused(o, {"input.vectors", "an array of 100000 element(s)"});
  EXPECT_LT(o.output.size(), 400u);
  // Nor a key or a string of a megabyte.
  json long_key = wrong;
  long_key["input"] = {{std::string(1 << 20, 'k'), 1}};
  const Outcome k = orrery::test::run_orrery("validate " + write_json(t, "key.json", long_key));
  expect_refused(k, {"unknown key 'kkkk", "(1048576 characters)"});
  EXPECT_LT(k.output.size(), 400u);
  json long_device = wrong;
  long_device["input"] = {{"vectors", pts.vectors}};
  long_device["device"] = std::string(1 << 20, 'd');
  const Outcome d = orrery::test::run_orrery("validate " + write_json(t, "device.json", long_device));
  expect_refused(d, {"device"});
  EXPECT_LT(d.output.size(), 400u);
  // A path the system would cut short at a NUL reads another file: refused.
  json nul = wrong;
  nul["input"] = {{"vectors", pts.vectors + std::string(1, '\0') + ".ignored"}};
  expect_refused(orrery::test::run_orrery("validate " + write_json(t, "nul.json", nul)), {"input.vectors", "NUL"});
  nul["input"] = {{"vectors", pts.vectors}};
  nul["output"]["dir"] = t.path("out") + std::string(1, '\0') + "x";
  expect_refused(orrery::test::run_orrery("validate " + write_json(t, "nul2.json", nul)), {"output.dir", "NUL"});
  EXPECT_FALSE(fs::exists(t.path("out")));
}

TEST(Hardening, NonFiniteResultsAreNeverWritten) {
  TempDir t;
  const Points pts = write_points(t);
  const std::string out = t.path("out");
  // The obvious cause is refused before the fit.
  const json hssne = {{"method", "hssne"},
                      {"input", {{"vectors", pts.vectors}, {"perplexity", 5}}},
                      {"params", {{"init_scale", 1e300}, {"max_iter", 20}}},
                      {"output", {{"dir", out}}},
                      {"device", "cpu"}};
  expect_refused(orrery::test::run_orrery("run " + write_json(t, "scale.json", hssne) + " --quiet"),
                 {"params.init_scale"});
  // Affinities near the largest double: whatever becomes of them, no map or report with NaN in it.
  std::string mtx = "%%MatrixMarket matrix coordinate real general\n60 60 3540\n";
  for (int i = 1; i <= 60; ++i)
    for (int j = 1; j <= 60; ++j)
      if (i != j) mtx += std::to_string(i) + " " + std::to_string(j) + " 1e308\n";
  const json huge = {{"method", "hssne"},
                     {"input", {{"affinity_matrix", t.write("huge.mtx", mtx)}}},
                     {"params", {{"max_iter", 20}}},
                     {"output", {{"dir", out}}},
                     {"device", "cpu"}};
  expect_refused(orrery::test::run_orrery("run " + write_json(t, "huge.json", huge) + " --quiet"), {});
  EXPECT_FALSE(fs::exists(out));

  // A finite map spanning nearly all doubles is drawn with finite numbers.
  report::MapPicture pic;
  pic.objects = MatrixD(3, 2);
  pic.objects.data = {1e308, -1.7e308, 1.7e308, 1.7e308, 1.5e308, 0};
  const std::string svg = report::render_map_svg(pic);
  for (const char* bad : {"nan", "inf"}) EXPECT_EQ(svg.find(bad), std::string::npos) << bad;

  // What every run's outputs pass through before anything is written.
  pipeline::RunConfig run;
  run.method = "hssne";
  run.output.dir = out;
  MatrixD Y(3, 2);
  Y.data = {0, 1, 2, 3, std::nan(""), 5};
  io::OutputSet set;
  json outputs;
  try {
    pipeline::add_coordinates(set, outputs, run, "embedding", Y);
    ADD_FAILURE() << "NaN coordinates accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_NE(std::string(e.what()).find("embedding coordinates (row 3)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("init_scale"), std::string::npos) << e.what();
  }
  for (const char* key : {"result", "trace"}) {
    json report = {{"result", {{"objective", 1.0}}}, {"trace", {1.0, 2.0}}};
    if (std::string(key) == "result") report["result"]["objective"] = kInf;
    else report["trace"][1] = std::nan("");
    io::OutputSet files;
    files.add(t.path("out/embedding.npy"), "x");
    try {
      pipeline::commit_run(files, report, run);
      ADD_FAILURE() << "a non-finite " << key << " was written";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::input);
      EXPECT_NE(std::string(e.what()).find(std::string(key) == "result" ? "result.objective" : "trace[1]"),
                std::string::npos)
          << e.what();
    }
    EXPECT_FALSE(fs::exists(out));
  }
}

TEST(Hardening, OutputsNeverReplaceInputs) {
  TempDir t;
  const Points pts = write_points(t);
  // evaluate --out naming its own --data.
  const std::string data = t.write("data.csv", slurp(pts.vectors));
  expect_refused(orrery::test::run_orrery("evaluate --data " + data + " --embedding " + pts.vectors + " --out " + data +
                                          " --quiet"),
                 {"data.csv", "would replace the input"});
  expect_refused(orrery::test::run_orrery("evaluate --data " + pts.vectors + " --embedding " + data + " --svg " +
                                          t.path("sub/../data.csv") + " --quiet"),
                 {"would replace the input"});
  EXPECT_EQ(slurp(data), slurp(pts.vectors));
  // A NeRV run whose output directory holds its input as embedding.csv, reached through "..".
  fs::create_directories(t.path("out"));
  const std::string inside = t.write("out/embedding.csv", slurp(pts.vectors));
  const json ne = {{"method", "nerv"},
                   {"input", {{"vectors", inside}, {"perplexity", 5}}},
                   {"params", {{"max_iter", 2}}},
                   {"output", {{"dir", t.path("out/../out")}, {"format", "both"}}},
                   {"device", "cpu"}};
  expect_refused(orrery::test::run_orrery("run " + write_json(t, "ne.json", ne) + " --quiet"),
                 {"embedding.csv", "would replace the input"});
  // A PLSV run writing into its corpus directory.
  fs::create_directories(t.path("corpus/a"));
  t.write("corpus/a/1.txt", "apple banana cherry apple\n");
  t.write("corpus/a/2.txt", "dog cat mouse dog\n");
  const json plsv = {{"method", "plsv"},
                     {"input", {{"corpus", t.path("corpus")}}},
                     {"params", {{"topics", 2}, {"max_iter", 1}}},
                     {"output", {{"dir", t.path("corpus/run")}}},
                     {"device", "cpu"}};
  expect_refused(orrery::test::run_orrery("run " + write_json(t, "plsv.json", plsv) + " --quiet"),
                 {"inside the input directory"});
  // A report that would go to the terminal through a symlink.
  fs::create_directories(t.path("term"));
  fs::create_symlink("/dev/stdout", t.path("term/report.json"));
  json to_term = ne;
  to_term["input"]["vectors"] = pts.vectors;
  to_term["output"]["dir"] = t.path("term");
  expect_refused(orrery::test::run_orrery("run " + write_json(t, "term.json", to_term) + " --quiet"),
                 {"report.json", "symbolic link"});
  // The config is an input too.
  fs::create_directories(t.path("self"));
  json self = to_term;
  self["output"]["dir"] = t.path("self");
  const std::string self_cfg = write_json(t, "self/report.json", self);
  expect_refused(orrery::test::run_orrery("run " + self_cfg + " --quiet"), {"report.json", "would replace the input"});
  EXPECT_EQ(json::parse(slurp(self_cfg)), self);
  EXPECT_EQ(slurp(inside), slurp(pts.vectors));
  EXPECT_EQ(t.listing(), (std::vector<std::string>{"corpus/a/1.txt", "corpus/a/2.txt", "data.csv", "labels.csv",
                                                   "ne.json", "out/embedding.csv", "plsv.json", "self/report.json",
                                                   "term.json", "x.csv"}));
}

TEST(Hardening, ValidateRefusesWhatRunRefusesBeforeFitting) {
  TempDir t;
  const Points pts = write_points(t);
  fs::create_directories(t.path("out"));
  const std::string inside = t.write("out/embedding.npy", "not a result");
  const json ok = {{"method", "nerv"},
                   {"input", {{"vectors", pts.vectors}, {"perplexity", 5}}},
                   {"params", {{"max_iter", 2}}},
                   {"output", {{"dir", t.path("out2")}}},
                   {"device", "cpu"}};
  std::vector<json> refused;
  json j = ok;
  j["output"]["dir"] = t.path("out");  // replaces out/embedding.npy, an input below
  j["input"]["labels"] = inside;
  refused.push_back(j);
  j = ok;
  j["input"]["perplexity"] = 59;  // not below N - 1
  refused.push_back(j);
  j = ok;
  j["input"]["pca"] = 4294967298LL;
  refused.push_back(j);
  j = ok;
  j["output"]["dir"] = t.path("null_dir");
  fs::create_directories(t.path("null_dir"));
  fs::create_symlink("/dev/null", t.path("null_dir/map.svg"));
  refused.push_back(j);
  j = ok;
  j["output"]["dir"] = t.path("fifo_dir");
  fs::create_directories(t.path("fifo_dir"));
  ASSERT_EQ(::mkfifo(t.path("fifo_dir/embedding.npy").c_str(), 0600), 0);
  refused.push_back(j);
  for (size_t i = 0; i < refused.size(); ++i) {
    const std::string cfg = write_json(t, "c" + std::to_string(i) + ".json", refused[i]);
    const Outcome run = orrery::test::run_orrery("run " + cfg + " --quiet");
    const Outcome validate = orrery::test::run_orrery("validate " + cfg);
    EXPECT_EQ(run.code, 2) << run.output;
    EXPECT_EQ(validate.code, 2) << refused[i].dump() << "\n" << validate.output;
    EXPECT_EQ(validate.output, run.output);
  }
  EXPECT_EQ(slurp(inside), "not a result");
  EXPECT_EQ(orrery::test::run_orrery("validate " + write_json(t, "ok.json", ok)).code, 0);
}
