// `orrery_bench hssne`: exact HSSNE (alpha = 1, the t-SNE kernel) against the t-SNE peers that
// Debian ships, on identical arrays in the same run: scikit-learn's TSNE, exact and Barnes-Hut
// (python3-sklearn), and Rtsne (r-cran-rtsne, van der Maaten's bhtsne), Barnes-Hut and exact; and
// FIt-SNE 1.2.1, built from source outside the repository (FITSNE_DIR). The data: Fashion-MNIST
// test images 4 x 4 average-pooled to 49 dimensions, or (--data fashion) the first N of all 70,000
// images / 255 after PCA to 50. For every seed and side:
// seconds (affinities included), and every map scored here by the same code: leave-one-out 5-NN
// accuracy and KL(P || Q) under orrery's affinities (each peer optimises its own P, computed its
// own way; this says how well each map fits one common P).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <sstream>

#include "bench_common.hpp"
#include "io/readers.hpp"
#include "io/writers.hpp"
#include "orrery/affinity.hpp"
#include "orrery/backend.hpp"
#include "orrery/knn.hpp"
#include "cli/ne_config.hpp"
#include "orrery/pca.hpp"
#include "orrery/config.hpp"
#include "orrery/error.hpp"
#include "orrery/hssne.hpp"
#include "orrery/quality.hpp"
#include "report/svg_map.hpp"

namespace orrery {

namespace {

// Leave-one-out 5-NN accuracy of a map, by orrery's measure (the same for every peer's map).
double knn5(const MatrixD& Y, const std::vector<int>& labels) {
  QualityRequest req;
  req.ks = {5};
  req.curve = false;
  req.queries = 0;  // all points: the peers' maps are compared exactly
  return evaluate_quality(Y, Y, labels, req).at_k[0].knn_accuracy;
}

// The peers: the command that runs one (it prints a JSON line with "seconds" and writes its map).
struct Peer {
  std::string name;
  std::function<std::string(unsigned long long seed)> command;
  std::string map_path;
};

std::vector<Peer> make_peers(const std::vector<std::string>& names, const std::string& python, double perplexity,
                             int iters, int threads) {
  const std::string xp = "/tmp/orrery_bench_ne_X.npy", yp = "/tmp/orrery_bench_ne_y.npy",
                    xc = "/tmp/orrery_bench_ne_X.csv";
  const std::string tail = " " + std::to_string(perplexity) + " " + std::to_string(iters) + " ";
  std::vector<Peer> peers;
  for (const std::string& n : names) {
    if (n == "sklearn_exact" || n == "sklearn_bh") {
      const std::string method = n == "sklearn_exact" ? "exact" : "barnes_hut", mp = "/tmp/orrery_bench_ne_map.npy";
      peers.push_back({n, [=](unsigned long long seed) {
                         return python + " bench/sklearn_tsne.py " + xp + " " + yp + " " + method + tail +
                                std::to_string(seed) + " " + mp;
                       }, mp});
    } else if (n == "rtsne_bh" || n == "rtsne_exact") {
      const std::string theta = n == "rtsne_exact" ? "0" : "0.5", mp = "/tmp/orrery_bench_ne_map.csv";
      peers.push_back({n, [=](unsigned long long seed) {
                         return "Rscript bench/rtsne.R " + xc + " " + theta + tail + std::to_string(seed) + " " +
                                std::to_string(threads) + " " + mp;
                       }, mp});
    } else if (n == "fitsne") {
      // FIt-SNE 1.2.1 through its fast_tsne.py, from the directory in FITSNE_DIR (bench/fitsne.py)
      const std::string mp = "/tmp/orrery_bench_ne_map.npy";
      peers.push_back({n, [=](unsigned long long seed) {
                         return python + " bench/fitsne.py " + xp + " " + yp + tail + std::to_string(seed) + " " +
                                std::to_string(threads) + " " + mp;
                       }, mp});
    } else if (n != "none") {
      input_error("hssne: unknown peer '" + n + "' (sklearn_exact, sklearn_bh, rtsne_bh, rtsne_exact, fitsne, none)");
    }
  }
  return peers;
}

double mean_of(const json& runs, const std::string& key) {
  double s = 0;
  int n = 0;
  for (const json& r : runs)
    if (r.contains(key) && r[key].is_number()) s += r[key].get<double>(), ++n;
  return n ? s / n : std::nan("");
}

std::vector<std::string> split(const std::string& v) {
  std::vector<std::string> items;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, ',')) items.push_back(item);
  return items;
}

}  // namespace

int run_ne_bench(int argc, char** argv) {
  std::vector<index_t> sizes = {2000};
  std::vector<unsigned long long> seeds = {1};
  std::vector<std::string> peer_names = {"sklearn_exact", "sklearn_bh", "rtsne_bh"};
  int iters = 1000, threads = 0;
  double perplexity = 30;
  bool sparse = false, run_orrery = true;
  std::string out, python = "/usr/bin/python3", optimizer = "auto", data = "pooled";
  std::string neighbors = "auto", repulsion = "auto", map_svg;
  for (int a = 2; a < argc; ++a) {
    const std::string opt = argv[a];
    if (opt == "--sparse") {
      sparse = true;
      continue;
    }
    if (a + 1 >= argc) input_error("hssne: option " + opt + " needs a value");
    const std::string v = argv[++a];
    if (opt == "--n") {
      sizes = bench::count_list(v);
    } else if (opt == "--seeds") {
      seeds.clear();
      for (const std::string& i : split(v)) seeds.push_back(std::stoull(i));
    } else if (opt == "--peers") peer_names = split(v);
    else if (opt == "--iters") iters = std::stoi(v);
    else if (opt == "--perplexity") perplexity = std::stod(v);
    else if (opt == "--threads") threads = std::stoi(v);
    else if (opt == "--python") python = v;
    else if (opt == "--optimizer") optimizer = v;
    else if (opt == "--neighbors") neighbors = v;
    else if (opt == "--repulsion") repulsion = v;
    else if (opt == "--data") data = v;
    else if (opt == "--orrery") {
      if (v != "on" && v != "off") input_error("hssne: --orrery takes on or off, not '" + v + "'");
      run_orrery = v == "on";
    } else if (opt == "--out") out = v;
    else if (opt == "--map") map_svg = v;
    else input_error("hssne: unknown option '" + opt + "'");
  }
  if (data != "pooled" && data != "fashion") input_error("hssne: --data takes pooled or fashion, not '" + data + "'");
  // All 70,000 images: P is the kNN one (as in hssne-scale), a dense P of N^2 doubles would not fit.
  const bool fashion = data == "fashion";
  sparse = sparse || fashion;
  const std::vector<Peer> peers = make_peers(peer_names, python, perplexity, iters, threads);
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  const bench::LabelledImages images =
      fashion ? bench::fashion_all(dir) : bench::LabelledImages{io::read_matrix(dir + "/t10k-images-idx3-ubyte.gz"),
                                                                io::read_labels(dir + "/t10k-labels-idx1-ubyte.gz")};
  json records = json::array();
  std::printf("%6s %5s  %-20s %9s %10s %7s %7s %8s\n", "N", "seed", "method", "seconds", "pairs/s", "5nn", "KL",
              "ratio");
  // One line per side: seconds, pairs/s (orrery), 5-NN, KL by the common P, and the time ratio
  // side / orrery.
  const auto line = [&](index_t n, const std::string& seed, const std::string& who, const json& r, double base) {
    const auto v = [&](const char* key) { return r.contains(key) && r[key].is_number() ? r[key].get<double>() : std::nan(""); };
    std::printf("%6lld %5s  %-20s %9.2f %10.3g %7.4f %7.4f %7.1fx\n", static_cast<long long>(n), seed.c_str(),
                who.c_str(), v("seconds"), v("pairs_per_second"), v("knn5_accuracy"), v("kl"), v("seconds") / base);
    std::fflush(stdout);
  };
  for (index_t N : sizes) {
    if (N > images.pixels.rows)
      input_error("hssne: --n " + std::to_string(N) + " exceeds the " + std::to_string(images.pixels.rows) +
                  " images of --data " + data);
    // Every side gets the same array: pooled test images, or the first N of all 70,000 / 255 after
    // orrery's PCA to 50 dimensions (not timed: input preparation common to all sides).
    const MatrixD X = fashion ? pca_project(bench::first_rows(images.pixels, N, 255.0), 50, threads)
                              : bench::pooled_images(images.pixels, N);
    const std::vector<int> labels(images.labels.begin(), images.labels.begin() + N);
    io::OutputSet files;
    files.add("/tmp/orrery_bench_ne_X.npy", io::npy_bytes(X));
    files.add("/tmp/orrery_bench_ne_X.csv", io::csv_bytes(X));
    files.add("/tmp/orrery_bench_ne_y.npy", io::npy_bytes(labels));
    files.commit();
    json runs = json::array();
    for (unsigned long long seed : seeds) {
      HssneParams prm;
      prm.max_iter = iters;
      prm.tol = 0;  // run every iteration, as the peers do
      prm.optimizer = parse_enum<HssneOptimizer>(optimizer, "--optimizer");
      prm.repulsion = parse_enum<HssneRepulsionMode>(repulsion, "--repulsion");
      // The common P every map is scored by: exact neighbours (untimed). orrery's own P (timed as its
      // first stage) is the same unless its neighbour search is approximate (--neighbors, as the
      // run's input.neighbors: auto is approximate above kExactNeighborsMaxPoints).
      const bool approx = sparse && (neighbors == "approximate" || (neighbors == "auto" && N > cli::kExactNeighborsMaxPoints));
      if (neighbors != "auto" && neighbors != "exact" && neighbors != "approximate")
        input_error("hssne: --neighbors takes auto, exact or approximate, not '" + neighbors + "'");
      const auto t_common = std::chrono::steady_clock::now();
      const AffinityResult P = sparse ? affinities_sparse(X, perplexity, threads) : affinities_dense(X, perplexity, threads);
      const double common_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_common).count();
      const auto t_own = std::chrono::steady_clock::now();
      const AffinityResult own =
          approx ? affinities_from_knn(approximate_knn(X, sparse_neighbours(perplexity), seed, threads), perplexity, threads)
                 : AffinityResult();
      const double aff_s =
          approx ? std::chrono::duration<double>(std::chrono::steady_clock::now() - t_own).count() : common_s;
      const AffinityResult& mine = approx ? own : P;
      const auto kl = [&](const MatrixD& Y) {
        return sparse ? hssne_objective(P.sparse, Y, 1.0, nullptr, threads) : hssne_objective(P.dense, Y, 1.0, nullptr, threads);
      };
      json run = {{"seed", seed}};
      double secs = std::nan("");  // orrery's seconds, the ratios' base (none with --orrery off)
      if (run_orrery) {
        const auto t_fit = std::chrono::steady_clock::now();
        const HssneResult fit =
            sparse ? fit_hssne(mine.sparse, prm, seed, threads) : fit_hssne(mine.dense, {}, prm, seed, threads);
        secs = aff_s + std::chrono::duration<double>(std::chrono::steady_clock::now() - t_fit).count();
        // one evaluation = one pass over all N (N - 1) ordered pairs
        const double pairs = static_cast<double>(N) * (N - 1) * fit.evaluations;
        run["orrery"] = {{"seconds", secs}, {"affinity_seconds", aff_s}, {"pairs_per_second", pairs / secs},
                         {"neighbors", approx ? "approximate" : "exact"},
                         {"knn5_accuracy", knn5(fit.coords, labels)}, {"kl", kl(fit.coords)},
                         {"evaluations", fit.evaluations}, {"restarts", fit.restarts}, {"damped_steps", fit.damped_steps}};
        line(N, std::to_string(seed), "orrery " + optimizer, run["orrery"], secs);
        if (!map_svg.empty()) {  // orrery's map with every point drawn (the README's picture)
          report::MapPicture pic;
          pic.objects = fit.coords;
          pic.colour_index = labels;
          if (fashion)
            pic.legend = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
                          "Ankle boot"};
          pic.title = "HSSNE (t-SNE tail): " + std::to_string(N) + " Fashion-MNIST images";
          pic.subtitle = "repulsion " + repulsion + ", optimizer " + optimizer + ", seed " + std::to_string(seed) +
                         "; 5-NN accuracy " + std::to_string(run["orrery"]["knn5_accuracy"].get<double>()).substr(0, 5);
          pic.max_points = 0;
          pic.seed = seed;
          io::OutputSet svg;
          svg.add(map_svg, report::render_map_svg(pic));
          svg.commit();
        }
      }
      for (const Peer& peer : peers) {
        json r = bench::run_json_command(peer.command(seed));
        if (r.contains("seconds")) {
          const MatrixD Y = io::read_matrix(peer.map_path);
          r["knn5_accuracy"] = knn5(Y, labels);  // the peer's own figure, if any, is replaced by ours
          r["kl"] = kl(Y);
          r["ratio"] = r["seconds"].get<double>() / secs;
        }
        line(N, std::to_string(seed), peer.name, r, secs);
        run[peer.name] = r;
      }
      runs.push_back(run);
    }
    // Means over the seeds (each side fitted once per seed): the figures bench/README.md quotes.
    json mean = {{"bench", "hssne"}, {"n", N}, {"affinities", sparse ? "sparse" : "dense"},
                 {"data", fashion ? "fashion-mnist all 70,000 / 255, PCA 50" : "fashion-mnist test, pooled 4 x 4"},
                 {"dims", X.cols},
                 {"perplexity", perplexity}, {"iterations", iters}, {"optimizer", optimizer}, {"seeds", seeds},
                 {"threads", threads}};
    std::vector<std::string> sides;
    if (run_orrery) sides.push_back("orrery");
    for (const Peer& peer : peers) sides.push_back(peer.name);
    const double base = [&] {
      json col = json::array();
      for (const json& r : runs)
        if (r.contains("orrery")) col.push_back(r["orrery"]);
      return mean_of(col, "seconds");
    }();
    for (const std::string& side : sides) {
      json col = json::array();
      for (const json& r : runs) col.push_back(r[side]);
      json m;
      for (const char* key : {"seconds", "knn5_accuracy", "kl"}) m[key] = mean_of(col, key);
      m["ratio"] = m["seconds"].get<double>() / base;
      if (side == "orrery")
        for (const char* key : {"pairs_per_second", "affinity_seconds"}) m[key] = mean_of(col, key);
      mean[side] = m;
      line(N, "mean", side == "orrery" ? "orrery " + optimizer : side, m, base);
    }
    mean["runs"] = runs;
    records.push_back(mean);
    bench::write_records(out, records);
  }
  return 0;
}

// `orrery_bench hssne-scale`: HSSNE alpha = 1 (sparse P, the run's defaults: repulsion and
// optimizer auto) on the first N of all 70,000 Fashion-MNIST images (training then test set), PCA to
// --pca dimensions, or (--source mixture) on N points of a seeded 50-D Gaussian mixture of 20
// components (bench_common.hpp), on one device. Times each stage apart: PCA on the host; the
// neighbour search (approximate above kExactNeighborsMaxPoints points on the CPU, as a run's
// input.neighbors auto, with the run's recall estimate), then the affinity rows on the host (aff_s
// includes knn_s); the fit; and, outside the total, the report's quality estimate (5-NN accuracy
// from 4,000 seeded query points above 10,000 points, all points below) and --steps plain steps at
// the final map (pairs per second of one fixed-point step, and an evaluation split into its stages:
// all pairs, or the grid's plan, scatter, FFT, gather and far points, then the attraction; 0 skips
// them). --dim 3 for 3-D maps.
int run_ne_scale_bench(int argc, char** argv) {
  const auto o = bench::options(argc, argv,
                                {"--n", "--iters", "--pca", "--perplexity", "--device", "--threads", "--data", "--source",
                                 "--neighbors", "--steps", "--dim", "--out"},
                                "hssne-scale");
  const std::vector<index_t> sizes = bench::count_list(bench::opt(o, "--n", "2000,10000,70000"));
  const int iters = std::stoi(bench::opt(o, "--iters", "1000")), threads = std::stoi(bench::opt(o, "--threads", "0")),
            steps = std::stoi(bench::opt(o, "--steps", "20")), dim = std::stoi(bench::opt(o, "--dim", "2"));
  if (dim != 2 && dim != 3) input_error("hssne-scale: --dim takes 2 or 3, not " + std::to_string(dim));
  int pca = std::stoi(bench::opt(o, "--pca", "-1"));
  const double perplexity = std::stod(bench::opt(o, "--perplexity", "30"));
  const std::string device = bench::opt(o, "--device", "auto"), dir = bench::opt(o, "--data", "/usr/share/datasets/fashion-mnist"),
                    out = bench::opt(o, "--out", ""), source = bench::opt(o, "--source", "fashion"),
                    neighbors = bench::opt(o, "--neighbors", "auto");
  if (source != "fashion" && source != "mixture") input_error("hssne-scale: --source takes fashion or mixture, not '" + source + "'");
  if (neighbors != "auto" && neighbors != "exact" && neighbors != "approximate")
    input_error("hssne-scale: --neighbors takes auto, exact or approximate, not '" + neighbors + "'");
  if (pca < 0) pca = source == "fashion" ? 50 : 0;  // the mixture is 50-D already
  auto backend = make_backend(device, threads);
  std::cerr << "[hssne-scale] " << backend->name() << "\n";
  const auto clock = [] { return std::chrono::steady_clock::now(); };
  const auto since = [](auto t) { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count(); };
  index_t largest = 0;
  for (index_t N : sizes) largest = std::max(largest, N);
  const bench::LabelledImages data = source == "fashion" ? bench::fashion_all(dir) : bench::gaussian_mixture(largest, 50, 1);
  const MatrixD& all = data.pixels;
  const std::vector<int>& all_labels = data.labels;
  json records = json::array();
  std::printf("%8s %6s %8s %8s %7s %8s %8s %8s %8s %10s %12s %6s\n", "N", "iters", "pca_s", "knn_s", "recall", "aff_s",
              "fit_s", "total_s", "qual_s", "s/iter", "pairs/s step", "5nn");
  for (index_t N : sizes) {
    if (N > all.rows) input_error("hssne-scale: --n " + std::to_string(N) + " exceeds the " + std::to_string(all.rows) + " points");
    const MatrixD X = bench::first_rows(all, N, source == "fashion" ? 255.0 : 1.0);
    const std::vector<int> labels(all_labels.begin(), all_labels.begin() + N);
    const auto t0 = clock();
    const MatrixD Xp = pca > 0 ? pca_project(X, pca, threads) : X;
    const double pca_s = since(t0);
    const auto t1 = clock();
    const int k = sparse_neighbours(perplexity);
    const bool approx = neighbors == "approximate" || (neighbors == "auto" && backend->name().rfind("cpu", 0) == 0 &&
                                                       N > cli::kExactNeighborsMaxPoints);
    double recall = 1;
    KnnGraph graph;
    if (approx) {
      graph = approximate_knn(Xp, k, 1, backend->threads());
      recall = estimate_knn_recall(Xp, graph, cli::kNeighborRecallSample, 1, backend->threads()).recall;
    } else {
      graph = backend->knn(Xp, k);
    }
    const double knn_s = since(t1);
    const AffinityResult aff = affinities_from_knn(graph, perplexity, threads);
    graph = KnnGraph();
    const double aff_s = since(t1);
    HssneParams prm;
    prm.dim = dim;
    prm.max_iter = iters;
    prm.tol = 0;
    const HssneRepulsion rep = resolve_repulsion(prm, N, *backend);
    const HssneParams resolved = resolve_optimizer(prm, N, rep);
    const auto t2 = clock();
    const HssneResult fit = fit_hssne(aff.sparse, prm, 1, *backend);
    const double fit_s = since(t2);
    const double pairs = static_cast<double>(N) * (N - 1);
    // One plain fixed-point step at the final map (the step, the sums of every point, the totals
    // back to the host), repeated: the unit of work of an iteration without the optimiser's logic.
    double step_s = std::nan("");
    json stage_ms = json::object();
    if (steps > 0) {
      auto engine = backend->make_hssne(aff.sparse, prm.alpha, prm.dim, rep);
      engine->start(fit.coords);
      engine->propose(1.0, 1.0, 0.0);
      const HssneStageTimes before = engine->stage_times();
      const auto t3 = clock();
      for (int r = 0; r < steps; ++r) engine->propose(1.0, 1.0, 0.0);
      step_s = since(t3) / steps;
      // One evaluation at the final map split into its stages (the grid's or all pairs, then the attraction).
      const HssneStageTimes after = engine->stage_times();
      const double per = 1e3 / (after.evaluations - before.evaluations);
      stage_ms = {{"pairs", (after.pairs - before.pairs) * per},
                  {"grid_plan", (after.grid_plan - before.grid_plan) * per},
                  {"scatter", (after.scatter - before.scatter) * per},
                  {"fft", (after.fft - before.fft) * per},
                  {"gather", (after.gather - before.gather) * per},
                  {"far", (after.far - before.far) * per},
                  {"attraction", (after.attraction - before.attraction) * per}};
    }
    QualityRequest req;
    req.ks = {5};
    req.curve = false;
    req.seed = 1;  // the default rule: all points up to kQualitySampleAbove, a seeded sample above
    const auto t4 = clock();
    const double acc = evaluate_quality(fit.coords, fit.coords, labels, req, backend.get()).at_k[0].knn_accuracy;
    const double qual_s = since(t4);
    const double total = pca_s + aff_s + fit_s;
    std::printf("%8lld %6d %8.2f %8.2f %7.4f %8.2f %8.2f %8.2f %8.2f %10.4f %12.3g %6.3f\n", static_cast<long long>(N),
                fit.iterations, pca_s, knn_s, recall, aff_s, fit_s, total, qual_s, fit_s / fit.iterations, pairs / step_s,
                acc);
    if (steps > 0)
      std::printf("%8s ms an evaluation at the final map: pairs %.2f, grid plan %.2f, scatter %.2f, FFT %.2f, gather "
                  "%.2f, far points %.2f, attraction %.2f\n",
                  "", stage_ms["pairs"].get<double>(), stage_ms["grid_plan"].get<double>(),
                  stage_ms["scatter"].get<double>(), stage_ms["fft"].get<double>(), stage_ms["gather"].get<double>(),
                  stage_ms["far"].get<double>(), stage_ms["attraction"].get<double>());
    std::fflush(stdout);
    records.push_back({{"bench", "hssne-scale"}, {"device", backend->name()}, {"source", source}, {"n", N}, {"dim", dim}, {"pca", pca},
                       {"perplexity", perplexity}, {"neighbors", approx ? "approximate" : "exact"},
                       {"knn_recall_estimate", recall}, {"repulsion", rep.interpolated ? "interpolated" : "exact"},
                       {"optimizer", EnumNames<HssneOptimizer>::names[static_cast<size_t>(resolved.optimizer)]}, {"iterations", fit.iterations}, {"evaluations", fit.evaluations},
                       {"restarts", fit.restarts}, {"damped_steps", fit.damped_steps}, {"pca_seconds", pca_s},
                       {"knn_seconds", knn_s}, {"affinity_seconds", aff_s}, {"fit_seconds", fit_s},
                       {"total_seconds", total}, {"quality_seconds", qual_s}, {"step_seconds", step_s},
                       {"pairs_per_second_step", pairs / step_s}, {"stage_ms", stage_ms}, {"knn5_accuracy", acc},
                       {"objective", fit.objective_trace.back()}});
  }
  bench::write_records(out, records);
  return 0;
}

}  // namespace orrery
