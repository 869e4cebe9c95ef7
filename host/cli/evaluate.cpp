#include "cli/evaluate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "run/ne_config.hpp"
#include "run/quality_json.hpp"
#include "run/run_common.hpp"
#include "io/readers.hpp"
#include "io/writers.hpp"
#include "orrery/backend.hpp"
#include "orrery/error.hpp"
#include "report/quality_svg.hpp"


namespace orrery::cli {
using namespace pipeline;
namespace {

// Neighborhood sizes; each is also checked against N - 1 once the data is read.
constexpr long long kMaxNeighbors = 1000000000;
// Perplexity is an effective number of neighbors: at most 1 leaves no neighbor to calibrate on
// (the bandwidth search would run off to 0 and the measures come out NaN).
constexpr double kMaxPerplexity = 1e9;
// --sample (query points) and --seed.
constexpr long long kMaxPoints = 1000000000000LL;
constexpr long long kMaxSeed = 9007199254740991LL;  // 2^53 - 1: exact in the JSON report

std::vector<int> parse_int_list(const std::string& text, const std::string& option) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ','))
    out.push_back(static_cast<int>(parse_int_option(item, option + " (a comma list)", 1, kMaxNeighbors)));
  if (out.empty()) input_error(option + ": expected a comma list of positive integers, found '" + text + "'");
  return out;
}

}  // namespace

int cmd_evaluate(const std::vector<std::string>& args) {
  std::string data, embedding, labels_path, out, svg;
  QualityRequest req;
  bool quiet = false;
  std::string device = "cpu", metric_name = "euclidean";
  for (size_t a = 0; a < args.size(); ++a) {
    const std::string& opt = args[a];
    auto value = [&]() -> std::string {
      if (a + 1 >= args.size()) input_error("evaluate: option " + opt + " needs a value");
      return args[++a];
    };
    if (opt == "--data") data = value();
    else if (opt == "--embedding") embedding = value();
    else if (opt == "--labels") labels_path = value();
    else if (opt == "--k") req.ks = parse_int_list(value(), "--k");
    else if (opt == "--kmax") req.kmax = static_cast<int>(parse_int_option(value(), "--kmax", 1, kMaxNeighbors));
    else if (opt == "--perplexity") req.perplexity = parse_real_option(value(), "--perplexity", 1, kMaxPerplexity, true);
    else if (opt == "--distances") req.input_is_distance_matrix = true;
    else if (opt == "--metric") metric_name = value();
    else if (opt == "--out") out = value();
    else if (opt == "--svg") svg = value();
    else if (opt == "--threads") req.threads = parse_threads_option(value(), "--threads");
    else if (opt == "--sample") req.queries = parse_int_option(value(), "--sample", 0, kMaxPoints);
    else if (opt == "--seed") req.seed = static_cast<unsigned long long>(parse_int_option(value(), "--seed", 0, kMaxSeed));
    else if (opt == "--device") device = value();
    else if (opt == "--quiet" || opt == "-q") quiet = true;
    else input_error("evaluate: unknown option '" + opt + "'");
  }
  const VectorMetric metric = parse_enum<VectorMetric>(metric_name, "--metric");
  if (metric != VectorMetric::euclidean && req.input_is_distance_matrix)
    input_error("--metric: " + metric_name + " compares vectors; with --distances the matrix holds the distances already");
  if (data.empty()) input_error("evaluate: --data (input vectors, or distances with --distances) is required");
  if (embedding.empty()) input_error("evaluate: --embedding (the map, N x D) is required");
  std::vector<std::string> inputs = {data, embedding}, outputs;
  if (!labels_path.empty()) inputs.push_back(labels_path);
  for (const std::string& p : {out, svg})
    if (!p.empty()) outputs.push_back(p);
  io::check_output_paths(outputs, inputs);  // before the work, and again when the files are committed
  const auto t0 = Clock::now();
  MatrixD X = read_keyed("--data", [&] { return io::read_matrix(data); });
  if (scales_rows(metric)) unit_rows(X, metric, "--data " + data);
  req.inner_product = metric == VectorMetric::inner_product;
  const MatrixD Y = read_keyed("--embedding", [&] { return io::read_matrix(embedding); });
  if (X.rows != Y.rows)
    input_error(data + " has " + std::to_string(X.rows) + " rows but " + embedding + " has " + std::to_string(Y.rows));
  std::vector<int> labels;
  if (!labels_path.empty()) {
    labels = read_keyed("--labels", [&] { return io::read_categories(labels_path); }).index;
    if (static_cast<index_t>(labels.size()) != Y.rows)
      input_error(labels_path + ": " + std::to_string(labels.size()) + " labels for " + std::to_string(Y.rows) +
                  " points in " + embedding);
  }
  const auto backend = make_backend(device, req.threads);
  const QualityReport rep = evaluate_quality(X, Y, labels, req, *backend);
  const double seconds = seconds_since(t0);

  if (!quiet) {
    std::printf("%8s %10s %10s %10s %10s %10s %10s\n", "K", "trust", "contin", "MRRE_n", "MRRE_v", "LCMC", "kNN_acc");
    for (const auto& q : rep.at_k)
      std::printf("%8d %10.6f %10.6f %10.6f %10.6f %10.6f %10.6f\n", q.k, q.trustworthiness, q.continuity,
                  q.mrre_neighborhood, q.mrre_visual, q.lcmc, q.knn_accuracy);
    if (!labels.empty()) std::printf("1-NN homogeneity: %.6f\n", rep.homogeneity_1nn);
    if (req.perplexity > 0)
      std::printf("smoothed precision %.6g, smoothed recall %.6g (perplexity %g)\n", rep.smoothed_precision,
                  rep.smoothed_recall, req.perplexity);
    if (rep.queries < rep.num_points)
      std::printf("estimated from %lld seeded query points (seed %llu); standard errors up to %.2g\n",
                  static_cast<long long>(rep.queries), rep.seed, largest_standard_error(rep));
    std::printf("%lld points, %.2f s\n", static_cast<long long>(rep.num_points), seconds);
  }
  io::OutputSet files;
  for (const std::string& p : inputs) files.protect(p);
  if (!out.empty()) {
    json j = quality_json(rep);
    j["data"] = data;
    j["embedding"] = embedding;
    j["labels"] = labels_path;
    j["seconds"] = seconds;
    files.add(out, j.dump(2) + "\n");
  }
  if (!svg.empty())
    files.add(svg, report::render_quality_svg(rep, "Map quality: " + std::filesystem::path(embedding).filename().string()));
  files.commit();
  return 0;
}

}  // namespace orrery::cli
