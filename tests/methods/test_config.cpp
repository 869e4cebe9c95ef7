// Field tables (orrery/config.hpp): every kind of field reads, echoes and describes itself, and bad
// values are errors naming the key; the memory plan refuses a run that does not fit.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>

#include "orrery/config.hpp"
#include "orrery/error.hpp"
#include "orrery/hssne.hpp"
#include "orrery/memory_plan.hpp"
#include "orrery/ne_input.hpp"
#include "orrery/nerv.hpp"
#include "orrery/parity.hpp"

using namespace orrery;

namespace {

enum class Colour { red, green };

struct Inner {
  int depth = 2;
};

const std::vector<Field<Inner>>& inner_fields() {
  static const std::vector<Field<Inner>> f = {{"depth", &Inner::depth, "Depth.", 1, 9}};
  return f;
}

}  // namespace

namespace orrery {
template <>
struct EnumNames<Colour> {
  static constexpr std::array<const char*, 2> names = {"red", "green"};
};
}  // namespace orrery

namespace {

struct Spec {
  int count = 3;
  index_t big = 5;
  double x = 0.5;
  bool on = false;
  std::string path;
  Colour colour = Colour::red;
  ListInput<double> weights;
  ListInput<std::string> names;
  Inner inner;
};

const std::vector<Field<Spec>>& spec_fields() {
  static const std::vector<Field<Spec>> f = {
      {"count", &Spec::count, "A count.", 0, 1e6},
      {"big", &Spec::big, "A large count.", 0, 1e15},
      {"x", &Spec::x, "A number.", 0, 1, true},
      {"on", &Spec::on, "A switch."},
      {"path", &Spec::path, "A file."},
      {"colour", &Spec::colour, "A colour."},
      {"weights", &Spec::weights, "Weights."},
      {"names", &Spec::names, "Names."},
      {"inner", sub_table(&Spec::inner, "inner", &inner_fields), "Nested."},
  };
  return f;
}

std::string error_of(const json& j) {
  Spec s;
  try {
    read_fields(j, s, spec_fields(), "input");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    return e.what();
  }
  return "";
}

}  // namespace

TEST(FieldTables, EveryKindReadsAndEchoes) {
  Spec s;
  read_fields(json{{"count", 7},
                   {"big", 5000000000LL},
                   {"x", 0.25},
                   {"on", true},
                   {"path", "a.csv"},
                   {"colour", "green"},
                   {"weights", {1.5, 2.5}},
                   {"names", "names.txt"},
                   {"inner", {{"depth", 4}}}},
              s, spec_fields(), "input");
  EXPECT_EQ(s.count, 7);
  EXPECT_EQ(s.big, 5000000000LL);
  EXPECT_EQ(s.x, 0.25);
  EXPECT_TRUE(s.on);
  EXPECT_EQ(s.path, "a.csv");
  EXPECT_EQ(s.colour, Colour::green);
  EXPECT_EQ(s.weights.values, (std::vector<double>{1.5, 2.5}));
  EXPECT_EQ(s.names.path, "names.txt");
  EXPECT_TRUE(s.names.values.empty());
  EXPECT_EQ(s.inner.depth, 4);
  const json echo = fields_to_json(s, spec_fields());
  EXPECT_EQ(echo["colour"], "green");
  EXPECT_EQ(echo["weights"], json({1.5, 2.5}));
  EXPECT_EQ(echo["names"], "names.txt");
  EXPECT_EQ(echo["inner"]["depth"], 4);
  Spec back;
  read_fields(echo, back, spec_fields(), "input");  // an echo reads back to the same values
  EXPECT_EQ(fields_to_json(back, spec_fields()), echo);
}

TEST(FieldTables, BadValuesNameTheKey) {
  EXPECT_NE(error_of({{"colour", "blue"}}).find("input.colour: expected one of red | green, found \"blue\""),
            std::string::npos);
  EXPECT_NE(error_of({{"colour", 1}}).find("input.colour: expected a string"), std::string::npos);
  // 2^32 + 2 must not wrap to 2, nor an unsigned beyond long long to anything.
  EXPECT_NE(error_of({{"count", 4294967298LL}}).find("input.count: expected a value in [0, 1e+06]"), std::string::npos);
  EXPECT_NE(error_of({{"big", 18446744073709551615ULL}}).find("input.big"), std::string::npos);
  EXPECT_NE(error_of({{"count", 1.5}}).find("input.count: expected an integer"), std::string::npos);
  EXPECT_NE(error_of({{"x", 0}}).find("input.x: expected a value in (0, 1]"), std::string::npos);
  EXPECT_NE(error_of({{"weights", {1, "a"}}}).find("input.weights: expected numbers"), std::string::npos);
  EXPECT_NE(error_of({{"names", 3}}).find("input.names: expected a file path or a list of strings"), std::string::npos);
  EXPECT_NE(error_of({{"inner", {{"depth", 0}}}}).find("input.inner.depth: expected a value in [1, 9]"),
            std::string::npos);
  EXPECT_NE(error_of({{"inner", {{"width", 1}}}}).find("input.inner: unknown key 'width' (known keys: depth)"),
            std::string::npos);
  EXPECT_NE(error_of({{"colour_", "red"}}).find("unknown key 'colour_'"), std::string::npos);
}

TEST(FieldTables, DescribeGivesTypesDefaultsAndRanges) {
  Spec d;
  d.count = 11;  // a table shared by several methods shows the caller's defaults
  const auto infos = describe_fields(spec_fields(), d);
  ASSERT_EQ(infos.size(), spec_fields().size());
  EXPECT_EQ(infos[0].default_text, "11");
  EXPECT_EQ(infos[2].range_text, "(0, 1]");
  EXPECT_EQ(infos[4].default_text, "none");
  EXPECT_EQ(infos[5].type, "string");
  EXPECT_EQ(infos[5].default_text, "\"red\"");
  EXPECT_EQ(infos[5].range_text, "red | green");
  EXPECT_EQ(infos[6].type, "path or numbers");
  EXPECT_EQ(infos[8].type, "object");
  EXPECT_EQ(infos[8].range_text, "see `orrery defaults inner`");
}

TEST(FieldTables, MethodEnumsAreNamedOnce) {
  HssneParams h;
  read_fields(json{{"optimizer", "gradient"}}, h, hssne_fields(), "params");
  EXPECT_EQ(h.optimizer, HssneOptimizer::gradient);
  EXPECT_EQ(fields_to_json(h, hssne_fields())["optimizer"], "gradient");
  NervParams n;
  read_fields(json{{"precision", "double"}, {"init", "pca"}}, n, nerv_fields(), "params");
  EXPECT_EQ(n.precision, NervPrecision::float64);
  EXPECT_EQ(n.init, "pca");
  EXPECT_EQ(enum_name(NervPrecision::float32), "float");
  EXPECT_EQ(parse_enum<NervPrecision>("double", "x"), NervPrecision::float64);
  EXPECT_THROW(parse_enum<NervPrecision>("half", "x"), Error);
}

TEST(FieldTables, CheckFieldsCatchesParamsBuiltInCode) {
  HssneParams h;
  EXPECT_NO_THROW(check_fields(h, hssne_fields(), "params"));
  h.alpha = -1;
  try {
    check_fields(h, hssne_fields(), "params");
    FAIL() << "alpha -1 passed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("params.alpha"), std::string::npos) << e.what();
  }
}

// The plan fits or names its largest part's key and remedy, on the host or on a device.
TEST(MemoryPlan, RefusesWhatDoesNotFitAndNamesTheKey) {
  NePlanInput in;
  in.points = 70000;
  in.perplexity = 30;
  in.dense = true;
  const MemoryPlan dense = plan_neighbor_embedding(in, false);
  EXPECT_NEAR(dense.host_peak() - kMemoryMargin, 16.0 * 70000.0 * 70000.0, 1.0) << "P and its conditional rows";
  const MemoryInfo small{24.0 * (1 << 30), 0.0};
  try {
    check_memory_plan(dense, small, false);
    FAIL() << "a 73 GiB plan fitted in 24 GiB";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::input);
    for (const char* part : {"input.affinities", "73.0", "GiB", "24.00 GiB is available", "\"sparse\""})
      EXPECT_NE(m.find(part), std::string::npos) << part << " in " << m;
  }
  in.dense = false;
  const MemoryPlan sparse = plan_neighbor_embedding(in, false);
  EXPECT_LT(sparse.host_peak(), 1e9) << "sparse affinities are O(N k)";
  EXPECT_NO_THROW(check_memory_plan(sparse, small, false));
  // The CPU grid engine's renumbered copy of P (up to 2 N k entries of 8 bytes: 32-bit columns,
  // float values) and the grid's per-point arrays (N (24 p + 64) bytes at p = 4 nodes per axis).
  in.grid_engine = true;
  EXPECT_NEAR(plan_neighbor_embedding(in, false).host_peak() - sparse.host_peak(),
              16.0 * 70000.0 * 90.0 + 70000.0 * (24.0 * 4 + 64.0), 1.0);
  // Over 4 ranks each keeps its quarter of that copy; the rest is planned whole on every rank.
  in.ranks = 4;
  EXPECT_NEAR(plan_neighbor_embedding(in, false).host_peak() - sparse.host_peak(),
              16.0 * 70000.0 * 90.0 / 4 + 70000.0 * (24.0 * 4 + 64.0), 1.0);
  in.ranks = 1;
  in.grid_engine = false;
  // On a device the engine's arrays count against its memory.
  in.method = NeMethod::nerv;
  in.dense = true;
  in.points = 20000;
  const MemoryPlan gpu = plan_neighbor_embedding(in, true);
  EXPECT_NEAR(gpu.device_peak(), 16.0 * 20000.0 * 20000.0, 1.0) << "P, log P and transposes in float";
  try {
    check_memory_plan(gpu, MemoryInfo{1e12, 4e9}, true);
    FAIL() << "6.4 GB fitted in 4 GB of GPU memory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("GPU memory"), std::string::npos) << e.what();
  }
  in.dense = false;
  EXPECT_LT(plan_neighbor_embedding(in, true).device_peak(), 1e8) << "sparse NeRV keeps O(N k) on the device";
  // The device grid's per-point arrays: O(N p), on the device only.
  in.method = NeMethod::hssne;
  const MemoryPlan lists = plan_neighbor_embedding(in, true);
  in.grid_engine = true;
  in.grid_nodes = 5;
  const MemoryPlan grid = plan_neighbor_embedding(in, true);
  EXPECT_NEAR(grid.device_peak() - lists.device_peak(), 20000.0 * (24.0 * 5 + 64.0), 1.0);
  EXPECT_NEAR(grid.host_peak(), lists.host_peak(), 1.0) << "no renumbered copy of P on the host for a device";
}

// PLSV's plan holds SQUAREM's copies when the fit extrapolates: theta's with the word arrays (W, the
// vocabulary, sets them: a corpus with a huge word id is still named as the cause), the documents'
// under params.extrapolation.
TEST(MemoryPlan, PlsvCountsTheExtrapolationsCopies) {
  const index_t N = 1000, W = 200000;
  const int Z = 50;
  for (bool device : {false, true}) {
    const MemoryPlan plain = plan_plsv(N, W, Z, 30000, device), squarem = plan_plsv(N, W, Z, 30000, device, true);
    EXPECT_NEAR(squarem.host_peak() - plain.host_peak(), 8.0 * (8.0 * W * Z + 4.0 * 3.0 * N), 1.0) << device;
    EXPECT_EQ(squarem.device_peak(), plain.device_peak()) << "the copies live on the host";
    ASSERT_EQ(squarem.items.size(), plain.items.size() + 1);
    EXPECT_EQ(squarem.items.back().key, "params.extrapolation");
    bool named = false;
    for (const MemoryItem& item : squarem.items)
      named |= item.key == "input.corpus" && item.what.find("SQUAREM") != std::string::npos;
    EXPECT_TRUE(named) << "theta's copies count with the word arrays";
  }
  const MemoryPlan plain = plan_plsv(N, W, Z, 30000, false), squarem = plan_plsv(N, W, Z, 30000, false, true);
  MemoryInfo tight;
  tight.host_bytes = plain.host_peak() + kMemoryMargin + 1e6;  // the plain fit fits, the copies do not
  EXPECT_NO_THROW(check_memory_plan(plain, tight, false));
  try {
    check_memory_plan(squarem, tight, false);
    ADD_FAILURE() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_NE(std::string(e.what()).find("SQUAREM"), std::string::npos) << e.what();
  }
}

// The comparison behind the parity suite and `orrery check`: bounds, NaN and infinities, the
// report naming index and values.
TEST(Parity, CompareFollowsItsTolerance) {
  const Tolerance tol{"t", 1e-3, 1e-6, 0, 0, "test"};
  EXPECT_TRUE(compare({1.0, -2.0, 0.0}, {1.0009, -2.0019, 9e-7}, tol).ok());
  const Agreement a = compare({1.0, -2.0, 0.0}, {1.0009, -2.003, 0.0}, tol);
  EXPECT_FALSE(a.ok());
  EXPECT_EQ(a.failed, 1u);
  EXPECT_EQ(a.worst, 1u);
  const std::string d = a.describe("x");
  for (const char* part : {"x: 1 of 3 entries disagree", "first at index 1", "cpu -2", "device -2.003", "NMSE"})
    EXPECT_NE(d.find(part), std::string::npos) << part << " in " << d;
  // A NaN never agrees, not even with a NaN; an infinity only with the same infinity.
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  EXPECT_FALSE(compare({1.0}, {nan}, tol).ok());
  EXPECT_FALSE(compare({nan}, {nan}, tol).ok());
  EXPECT_EQ(compare({1.0}, {nan}, tol).nonfinite, 1u);
  EXPECT_TRUE(compare({inf}, {inf}, tol).ok());
  EXPECT_FALSE(compare({inf}, {-inf}, tol).ok());
  EXPECT_FALSE(compare({5.0}, {inf}, tol).ok());
  EXPECT_FALSE(compare({1.0, 2.0}, {1.0}, tol).ok());
  // scaled: against the output's largest entry, or a given scale.
  const Tolerance sc{"s", 0, 0, 1e-3, 0, "test"};
  EXPECT_TRUE(compare({1000.0, 0.0}, {1000.0, 0.9}, sc).ok());
  EXPECT_FALSE(compare({1000.0, 0.0}, {1000.0, 0.9}, sc, 1.0).ok());
  // NMSE bound
  const Tolerance nm{"n", 1, 0, 0, 1e-6, "test"};
  EXPECT_FALSE(compare({1.0, 1.0}, {1.01, 1.0}, nm).ok());
  EXPECT_TRUE(compare({1.0, 1.0}, {1.0001, 1.0}, nm).ok());
}

TEST(Parity, EveryNamedToleranceHasAReasonAndAUniqueName) {
  std::set<std::string> names;
  for (const Tolerance& t : tolerances()) {
    EXPECT_TRUE(names.insert(t.name).second) << t.name;
    EXPECT_GT(std::string(t.reason).size(), 20u) << t.name;
    EXPECT_GE(t.rel, 0.0);
    EXPECT_EQ(&tolerance(t.name), &t);
  }
  EXPECT_THROW(tolerance("no.such"), Error);
}

// input.affinities "auto" (orrery/ne_input.hpp): HSSNE takes dense P only where its sparse lists
// would hold every pair anyway (N - 1 <= ceil(3 perplexity) = 90 at perplexity 30); NeRV keeps
// dense up to kDenseAutoMaxPoints; a run that asks for interpolated repulsion is sparse at any N.
TEST(AutoAffinities, HssneIsDenseOnlyWhereEveryPairIsANeighbor) {
  NeSpec spec;
  spec.input.vectors = "X.npy";  // named only: planning reads no file
  spec.input.perplexity = 30;
  const MemoryInfo plenty{1e13, 0.0};
  EXPECT_FALSE(plan_ne_run(spec, 91, plenty, false, 10).sparse);
  EXPECT_TRUE(plan_ne_run(spec, 92, plenty, false, 10).sparse);
  EXPECT_TRUE(plan_ne_run(spec, 2000, plenty, false, 10).sparse);
  EXPECT_TRUE(plan_ne_run(spec, 92, plenty, false, 10).automatic);
  spec.method = NeMethod::nerv;
  EXPECT_FALSE(plan_ne_run(spec, 2000, plenty, false, 10).sparse);
  EXPECT_FALSE(plan_ne_run(spec, kDenseAutoMaxPoints, plenty, false, 10).sparse);
  EXPECT_TRUE(plan_ne_run(spec, kDenseAutoMaxPoints + 1, plenty, false, 10).sparse);
}
