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
#include "orrery/clock.hpp"
#include "orrery/knn.hpp"
#include "run/ne_config.hpp"
#include "orrery/pca.hpp"
#include "orrery/config.hpp"
#include "orrery/error.hpp"
#include "orrery/hssne.hpp"
#include "orrery/quality.hpp"
#include "report/svg_map.hpp"

namespace orrery {

namespace {

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
    } else if (n == "fitsne" || n == "umap" || n == "orrery_defaults") {
      // FIt-SNE 1.2.1 through its fast_tsne.py, from the directory in FITSNE_DIR (bench/fitsne.py);
      // umap-learn with its defaults (bench/umap_peer.py), the method users pick when t-SNE is slow;
      // `orrery run` with the documented defaults, the whole process timed (bench/orrery_defaults.sh).
      // Each takes X.npy labels.npy PERPLEXITY ITERS SEED THREADS OUT.npy.
      const std::string runner = n == "fitsne" ? python + " bench/fitsne.py"
                                 : n == "umap" ? python + " bench/umap_peer.py"
                                               : std::string("bash bench/orrery_defaults.sh");
      const std::string mp = "/tmp/orrery_bench_ne_map.npy";
      peers.push_back({n, [=](unsigned long long seed) {
                         return runner + " " + xp + " " + yp + tail + std::to_string(seed) + " " +
                                std::to_string(threads) + " " + mp;
                       }, mp});
    } else if (n != "none") {
      input_error("hssne: unknown peer '" + n + "' (sklearn_exact, sklearn_bh, rtsne_bh, rtsne_exact, fitsne, umap, orrery_defaults, none)");
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
      // The common P every map is scored by: exact neighbors (untimed). orrery's own P (timed as its
      // first stage) is the same unless its neighbor search is approximate (--neighbors, as the
      // run's input.neighbors: auto is approximate above kExactNeighborsMaxPoints).
      const bool approx = sparse && (neighbors == "approximate" || (neighbors == "auto" && N > kExactNeighborsMaxPoints));
      if (neighbors != "auto" && neighbors != "exact" && neighbors != "approximate")
        input_error("hssne: --neighbors takes auto, exact or approximate, not '" + neighbors + "'");
      const auto t_common = std::chrono::steady_clock::now();
      const AffinityResult P = sparse ? affinities_sparse(X, perplexity, threads) : affinities_dense(X, perplexity, threads);
      const double common_s = seconds_since(t_common);
      const auto t_own = std::chrono::steady_clock::now();
      const AffinityResult own =
          approx ? affinities_from_knn(approximate_knn(X, sparse_neighbors(perplexity), seed, threads), perplexity, threads)
                 : AffinityResult();
      const double aff_s =
          approx ? seconds_since(t_own) : common_s;
      const AffinityResult& mine = approx ? own : P;
      const auto kl = [&](const MatrixD& Y) {
        return sparse ? hssne_objective(P.sparse, Y, 1.0, nullptr, *make_cpu_backend(threads)) : hssne_objective(P.dense, Y, 1.0, nullptr, *make_cpu_backend(threads));
      };
      json run = {{"seed", seed}};
      double secs = std::nan("");  // orrery's seconds, the ratios' base (none with --orrery off)
      if (run_orrery) {
        const auto t_fit = std::chrono::steady_clock::now();
        const HssneResult fit =
            sparse ? fit_hssne(mine.sparse, prm, seed, *make_cpu_backend(threads)) : fit_hssne(mine.dense, {}, prm, seed, *make_cpu_backend(threads));
        secs = aff_s + seconds_since(t_fit);
        // one evaluation = one pass over all N (N - 1) ordered pairs
        const double pairs = static_cast<double>(N) * (N - 1) * fit.evaluations;
        run["orrery"] = {{"seconds", secs}, {"affinity_seconds", aff_s}, {"pairs_per_second", pairs / secs},
                         {"neighbors", approx ? "approximate" : "exact"},
                         {"knn5_accuracy", bench::knn5_all_points(fit.coords, labels)}, {"kl", kl(fit.coords)},
                         {"evaluations", fit.evaluations}, {"restarts", fit.restarts}, {"damped_steps", fit.damped_steps}};
        line(N, std::to_string(seed), "orrery " + optimizer, run["orrery"], secs);
        if (!map_svg.empty()) {  // orrery's map with every point drawn (the picture of README.md and docs/hssne.md)
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
        // with --orrery off the first peer (e.g. orrery_defaults) is the ratios' base
        if (!run_orrery && &peer == &peers.front() && r.contains("seconds")) secs = r["seconds"].get<double>();
        if (r.contains("seconds")) {
          const MatrixD Y = io::read_matrix(peer.map_path);
          r["knn5_accuracy"] = bench::knn5_all_points(Y, labels);  // the peer's own figure, if any, is replaced by ours
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
      const std::string first = run_orrery || peers.empty() ? "orrery" : peers.front().name;
      for (const json& r : runs)
        if (r.contains(first)) col.push_back(r[first]);
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

}  // namespace orrery
