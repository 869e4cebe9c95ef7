// `orrery_bench quality`: trustworthiness and continuity (with every other rank measure, which
// the same pass computes) against scikit-learn's trustworthiness on identical arrays, in one run.
// Data: the first N Fashion-MNIST test images, 4 x 4 average-pooled to 7 x 7 = 49 dimensions
// (deterministic, no fitted model), and a fixed seeded random 2-D projection of them as the map.
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <random>
#include <sstream>

#include "bench_common.hpp"
#include "io/readers.hpp"
#include "io/writers.hpp"
#include "orrery/config.hpp"
#include "orrery/error.hpp"
#include "orrery/quality.hpp"

namespace orrery {

int run_quality_bench(int argc, char** argv) {
  std::vector<index_t> sizes = {2000, 5000, 10000};
  int k = 10;
  std::string images = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz", out, python = "/usr/bin/python3";
  int threads = 0;
  for (int a = 2; a < argc; ++a) {
    const std::string opt = argv[a];
    if (a + 1 >= argc) input_error("quality: option " + opt + " needs a value");
    const std::string v = argv[++a];
    if (opt == "--n") {
      sizes.clear();
      std::stringstream ss(v);
      std::string item;
      while (std::getline(ss, item, ',')) sizes.push_back(static_cast<index_t>(std::stod(item)));
    } else if (opt == "--k") k = std::stoi(v);
    else if (opt == "--images") images = v;
    else if (opt == "--threads") threads = std::stoi(v);
    else if (opt == "--python") python = v;
    else if (opt == "--out") out = v;
    else input_error("quality: unknown option '" + opt + "'");
  }
  const MatrixD raw = io::read_matrix(images);
  json records = json::array();
  std::printf("%8s %4s %10s %10s %12s %12s %9s %14s %14s\n", "N", "K", "orrery_s", "sklearn_s", "speedup", "|dT|",
              "|dC|", "rss_MiB", "sklearn");
  for (index_t N : sizes) {
    if (N > raw.rows) input_error("quality: --n " + std::to_string(N) + " exceeds the " + std::to_string(raw.rows) +
                                  " images in " + images);
    const MatrixD X = bench::pooled_images(raw, N);
    MatrixD Y(N, 2, 0.0);
    std::mt19937_64 rng(7);
    std::normal_distribution<double> z(0.0, 1.0);
    std::vector<double> proj(49 * 2);
    for (double& v : proj) v = z(rng);
    for (index_t n = 0; n < N; ++n)
      for (int d = 0; d < 2; ++d)
        for (int j = 0; j < 49; ++j) Y(n, d) += X(n, j) * proj[j * 2 + d];
    QualityRequest req;
    req.ks = {k};
    req.curve = false;
    req.threads = threads;
    const auto t0 = std::chrono::steady_clock::now();
    const QualityReport rep = evaluate_quality(X, Y, {}, req);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    const double rss = ru.ru_maxrss / 1024.0;

    // scikit-learn on the same arrays, in the same run
    const std::string xp = "/tmp/orrery_bench_quality_X.npy", yp = "/tmp/orrery_bench_quality_Y.npy";
    io::OutputSet files;
    files.add(xp, io::npy_bytes(X));
    files.add(yp, io::npy_bytes(Y));
    files.commit();
    const std::string cmd = python + " bench/sklearn_trustworthiness.py " + xp + " " + yp + " " + std::to_string(k);
    const json sk = bench::run_json_command(cmd);
    const double sk_s = sk.contains("seconds_trustworthiness")
                            ? sk["seconds_trustworthiness"].get<double>() + sk["seconds_continuity"].get<double>()
                            : std::nan("");
    const double dT = sk.contains("trustworthiness") ? std::abs(sk["trustworthiness"].get<double>() - rep.at_k[0].trustworthiness) : std::nan("");
    const double dC = sk.contains("continuity") ? std::abs(sk["continuity"].get<double>() - rep.at_k[0].continuity) : std::nan("");
    std::printf("%8lld %4d %10.3f %10.3f %11.1fx %12.2e %9.2e %14.0f %14s\n", static_cast<long long>(N), k, secs,
                sk_s, sk_s / secs, dT, dC, rss, sk.value("sklearn", std::string("n/a")).c_str());
    std::fflush(stdout);
    records.push_back({{"bench", "quality"}, {"n", N}, {"k", k}, {"dims", 49}, {"orrery_seconds", secs},
                       {"orrery_trustworthiness", rep.at_k[0].trustworthiness},
                       {"orrery_continuity", rep.at_k[0].continuity}, {"peak_rss_mib", rss}, {"sklearn", sk}});
  }
  bench::write_records(out, records);
  return 0;
}

}  // namespace orrery
