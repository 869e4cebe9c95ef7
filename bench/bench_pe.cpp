// orrery_bench: the benchmark driver. `orrery_bench pe` times full PE fits over a grid of
// (N, K, D) on posteriors drawn from PE's own model, and relates the time per objective
// evaluation to the memory bandwidth of the same device, because one evaluation is (close to)
// one pass over P: the figure that says how far the implementation is from the hardware limit.
// Results go to a JSON array (one record per configuration) and a table on stdout; progress
// goes to stderr. See bench/README.md.
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.hpp"
#include "orrery/backend.hpp"
#include "orrery/build_info.hpp"
#include "orrery/clock.hpp"
#include "orrery/config.hpp"
#include "orrery/error.hpp"
#include "orrery/pe.hpp"

namespace {

using namespace orrery;


const char* kUsage =
    "usage: orrery_bench pe [--n 1e4,1e5,1e6] [--k 10,100] [--dim 2,3] [--device auto|cpu|cuda|cpu,cuda]\n"
    "                       [--threads T] [--max-iter I] [--seed S] [--out FILE.json]\n"
    "Times full PE fits for every (N, K, D) on posteriors drawn from PE's own model and relates\n"
    "the time per objective evaluation to the device's copy bandwidth. Values are comma lists\n"
    "(--device too: every configuration on each device, in the same run); the bracketed values\n"
    "are the defaults. --threads 0 uses the OpenMP default.\n"
    "The other benchmarks and their options: bench/README.md.\n";

struct Options {
  std::vector<index_t> n = {10000, 100000, 1000000};
  std::vector<index_t> k = {10, 100};
  std::vector<index_t> dim = {2, 3};
  std::string device = "auto";
  int threads = 0;
  int max_iter = PeParams{}.max_iter;
  unsigned long long seed = 1;
  std::string out;
};

// A whole number written as an integer or in scientific notation ("1e6").
index_t parse_count(const std::string& text, const std::string& flag, double lo, double hi) {
  size_t used = 0;
  double v = 0.0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !std::isfinite(v) || v != std::floor(v) || v < lo || v > hi)
    input_error(flag + ": expected a whole number in [" + std::to_string(static_cast<long long>(lo)) + ", " +
                std::to_string(static_cast<long long>(hi)) + "], found \"" + text + "\"");
  return static_cast<index_t>(v);
}

std::vector<index_t> parse_list(const std::string& text, const std::string& flag, double lo, double hi) {
  std::vector<index_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(parse_count(item, flag, lo, hi));
  if (out.empty()) input_error(flag + ": expected a comma-separated list, found \"" + text + "\"");
  return out;
}

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "-h" || flag == "--help") {
      std::cout << kUsage;
      std::exit(0);
    }
    if (i + 1 >= argc) input_error(flag + ": expected a value after it (see orrery_bench --help)");
    const std::string v = argv[++i];
    if (flag == "--n") o.n = parse_list(v, flag, 1, 1e10);
    else if (flag == "--k") o.k = parse_list(v, flag, 2, 1e6);
    else if (flag == "--dim") o.dim = parse_list(v, flag, 2, 3);
    else if (flag == "--device") o.device = v;
    else if (flag == "--threads") o.threads = static_cast<int>(parse_count(v, flag, 0, 4096));
    else if (flag == "--max-iter") o.max_iter = static_cast<int>(parse_count(v, flag, 0, 1e9));
    else if (flag == "--seed") o.seed = static_cast<unsigned long long>(parse_count(v, flag, 0, 9e15));
    else if (flag == "--out") o.out = v;
    else input_error("unknown option '" + flag + "' (see orrery_bench --help)");
  }
  return o;
}

// Posteriors from PE's own model: class coordinates Phi* ~ N(0, 3^2 I), each object at a random
// class plus unit Gaussian noise, P = softmax_k(-|r_n - phi_k|^2 / 2). These are exactly
// representable by PE, so the fit's work is the algorithm's, not a struggle with misfit data.
// Objects are generated in fixed chunks with their own seeded streams: fast in parallel, and
// the same P for any thread count.
MatrixD planted_posteriors(index_t N, int K, int D, unsigned long long seed) {
  constexpr index_t kChunk = 1 << 14;
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0.0, 1.0);
  std::vector<double> phi(static_cast<size_t>(K) * D);
  for (double& v : phi) v = 3.0 * z(rng);
  MatrixD P(N, K);
  const index_t chunks = (N + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(dynamic)
  for (index_t c = 0; c < chunks; ++c) {
    std::mt19937_64 g(seed ^ (0x9e3779b97f4a7c15ULL * static_cast<unsigned long long>(c + 1)));
    std::normal_distribution<double> zz(0.0, 1.0);
    double r[3];
    for (index_t n = c * kChunk; n < std::min(N, (c + 1) * kChunk); ++n) {
      const auto home = static_cast<int>(g() % static_cast<unsigned long long>(K));
      for (int d = 0; d < D; ++d) r[d] = phi[home * D + d] + zz(g);
      double* p = P.row(n);
      double m = -kInf;
      for (int k = 0; k < K; ++k) {
        double d2 = 0.0;
        for (int d = 0; d < D; ++d) d2 += (r[d] - phi[k * D + d]) * (r[d] - phi[k * D + d]);
        p[k] = -0.5 * d2;
        m = std::max(m, p[k]);
      }
      double s = 0.0;
      for (int k = 0; k < K; ++k) s += (p[k] = std::exp(p[k] - m));
      for (int k = 0; k < K; ++k) p[k] /= s;
    }
  }
  return P;
}

// Peak resident set (VmHWM) in MiB. Writing "5" to clear_refs resets the peak (Linux >= 4.0),
// which makes the figure per configuration; where that is refused it is the process's peak.
double peak_rss_mib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;  // value is in kB
  return -1.0;
}
bool reset_peak_rss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

json machine_facts(const Backend& backend, int threads) {
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "unknown");
  std::string cpu = "unknown";
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);)
    if (line.rfind("model name", 0) == 0) {
      cpu = line.substr(line.find(':') + 2);
      break;
    }
  return {{"hostname", host},
          {"nproc", static_cast<long>(sysconf(_SC_NPROCESSORS_ONLN))},
          {"cpu", cpu},
          {"omp_threads", threads},
          {"backend", backend.name()},
          {"date", utc_now()},
          {"git_revision", ORRERY_GIT_REVISION},
          {"version", ORRERY_VERSION},
          {"build_type", ORRERY_BUILD_TYPE},
          {"compiler", ORRERY_CXX_COMPILER}};
}

// The results written so far, as a whole file: written to a temporary name and renamed, so an
// interrupted sweep leaves the last complete array rather than a truncated one.
void write_results(const std::string& path, const json& records) {
  const std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << records.dump(2) << "\n";
    if (!out) input_error(path + ": cannot write the results");
  }
  std::filesystem::rename(tmp, path);
}

json null_if_nan(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

// One device's share of `orrery_bench pe`: every (N, K, D) on `backend`, its records appended to
// `records` (rewritten to --out after each); first_fit holds the first device's fit_s per
// configuration, the fit/dev1 column's base (filled while the first device runs).
void run_pe_on(const Options& o, const std::string& label, std::unique_ptr<Backend> backend, json& records,
               std::vector<double>& first_fit) {
  const bool first_device = first_fit.empty();
  size_t config = 0;
  const bool cuda = backend->name().rfind("cuda", 0) == 0;  // the figures' units differ (float P on CUDA)
  const int threads = o.threads > 0 ? o.threads : omp_get_max_threads();
  std::cerr << "[pe] backend " << backend->name() << "\n";

  std::cerr << "[pe] measuring copy bandwidth (512 MiB, best of 5)\n";
  const double copy_bw = backend->copy_bandwidth(size_t(512) << 20);
  const std::string copy_note = cuda ? "device-to-device copy of 512 MiB, bytes read + written per second, best of 5"
                                     : "host parallel copy of 512 MiB, bytes read + written per second, best of 5";
  std::cout << "copy bandwidth: " << copy_bw / 1e9 << " GB/s (" << backend->name() << ")\n";
  const json machine = machine_facts(*backend, threads);
  const double bytes_per_entry = cuda ? 4.0 : 8.0;  // float on the GPU, double on the CPU

  std::printf("%-8s %9s %4s %2s %6s %6s %9s %9s %10s %10s %9s %9s %7s %9s %8s  %s\n", "device", "N", "K", "D", "iters",
              "evals", "fit_s", "total_s", "s/iter", "s/eval", "ns/entry", "P GB/s", "%copy", "rss_MiB", "fit/dev1", "stop");
  for (const index_t N : o.n)
    for (const index_t K : o.k)
      for (const index_t D : o.dim) {
        const std::string tag = "[pe] N=" + std::to_string(N) + " K=" + std::to_string(K) + " D=" + std::to_string(D);
        const bool rss_per_config = reset_peak_rss();
        std::cerr << tag << ": generating posteriors\n";
        const auto tg = Clock::now();
        PeInput input;
        input.posteriors = planted_posteriors(N, static_cast<int>(K), static_cast<int>(D), o.seed);
        const double gen_s = seconds_since(tg);

        PeParams params;
        params.dim = static_cast<int>(D);
        params.max_iter = o.max_iter;
        // Upload alone: what creating an engine costs (P copied into backend buffers).
        std::cerr << tag << ": upload\n";
        const auto tu = Clock::now();
        {
          const std::vector<double> log_priors(static_cast<size_t>(K), -std::log(static_cast<double>(K)));
          auto engine = backend->make_pe(input.posteriors, log_priors, params.dim, params.eta_r);
          engine->set_objects(MatrixD(N, D, 0.0));
          (void)engine->objects();  // waits for the device, as the fit's first sweep would
        }
        const double upload_s = seconds_since(tu);

        std::cerr << tag << ": fitting\n";
        const auto tf = Clock::now();
        const PeResult res = fit_pe(*backend, input, params, o.seed, [&](const PeTraceEntry& e) {
          if (e.iteration % 25 == 0)
            std::cerr << tag << ": iteration " << e.iteration << ", J = " << e.objective << ", |dJ/dPhi|^2 = "
                      << e.class_grad_sq << ", " << e.seconds << " s\n";
        });
        const double total_s = seconds_since(tf);

        const double entries = static_cast<double>(N) * static_cast<double>(K);
        const double evals = std::max(res.evaluations, 1);
        const double s_per_eval = res.seconds_fit / evals;
        const double p_rate = entries * bytes_per_entry / s_per_eval;
        const double frac = p_rate / copy_bw;
        const double rss = peak_rss_mib();
        json rec = {
            {"bench", "pe"},
            {"config",
             {{"n", N}, {"k", K}, {"dim", D}, {"device", label}, {"threads", o.threads}, {"seed", o.seed},
              {"max_iter", o.max_iter}}},
            {"params", fields_to_json(params, pe_fields())},
            {"result",
             {{"iterations", res.iterations},
              {"evaluations", res.evaluations},
              {"objective", res.objective},
              {"stop_reason", res.stop_reason},
              {"objects_converged", res.objects_converged},
              {"newton_steps", res.trace.empty() ? index_t(0) : res.trace.back().newton_steps}}},
            {"timings",
             {{"generate_s", gen_s},
              {"upload_s", upload_s},
              {"init_s", res.seconds_init},
              {"fit_s", res.seconds_fit},
              {"total_s", total_s}}},
            {"derived",
             {{"s_per_iteration", res.seconds_fit / std::max(res.iterations, 1)},
              {"s_per_evaluation", s_per_eval},
              {"ns_per_entry_evaluation", s_per_eval / entries * 1e9},
              {"p_bytes_per_entry", bytes_per_entry},
              {"p_read_bytes_per_s", p_rate},
              {"p_read_fraction_of_copy", null_if_nan(frac)}}},
            {"memory",
             {{"copy_bandwidth_bytes_per_s", null_if_nan(copy_bw)},
              {"copy_note", copy_note},
              {"peak_rss_mib", rss},
              {"peak_rss_scope", rss_per_config ? "configuration" : "process"}}},
            {"machine", machine}};
        records.push_back(rec);
        if (!o.out.empty()) write_results(o.out, records);

        char pct[16] = "n/a";
        if (!cuda) std::snprintf(pct, sizeof pct, "%.1f", 100.0 * frac);
        if (first_device) first_fit.push_back(res.seconds_fit);
        std::printf("%-8s %9lld %4lld %2lld %6d %6d %9.3f %9.3f %10.4g %10.4g %9.3f %9.2f %7s %9.0f %8.3f  %s\n",
                    label.c_str(), static_cast<long long>(N), static_cast<long long>(K), static_cast<long long>(D),
                    res.iterations, res.evaluations, res.seconds_fit, total_s,
                    res.seconds_fit / std::max(res.iterations, 1), s_per_eval, s_per_eval / entries * 1e9, p_rate / 1e9,
                    pct, rss, res.seconds_fit / first_fit[config++], res.stop_reason.c_str());
        std::fflush(stdout);
        std::cerr << tag << ": done in " << total_s << " s (fit " << res.seconds_fit << " s)\n";
      }
}

int run_pe(const Options& o) {
  std::vector<bench::Device> devices = bench::make_devices(o.device, o.threads, "pe");
  json records = json::array();
  std::vector<double> first_fit;
  for (bench::Device& d : devices) run_pe_on(o, d.label, std::move(d.backend), records, first_fit);
  if (!o.out.empty()) std::cerr << "[pe] wrote " << records.size() << " records to " << o.out << "\n";
  return 0;
}

}  // namespace

namespace orrery {
int run_quality_bench(int argc, char** argv);  // bench/bench_quality.cpp
int run_ne_bench(int argc, char** argv);       // bench/bench_ne.cpp
int run_ne_scale_bench(int argc, char** argv);  // bench/bench_ne_scale.cpp
int run_gpu_vs_cpu_bench(int argc, char** argv);  // bench/bench_ne_scale.cpp
int run_interp_bench(int argc, char** argv);    // bench/bench_interp.cpp
int run_place_bench(int argc, char** argv);     // bench/bench_place.cpp
int run_nerv_bench(int argc, char** argv);            // bench/bench_nerv.cpp
int run_snerv_distance_bench(int argc, char** argv);  // bench/bench_nerv.cpp
int run_snerv_cv_bench(int argc, char** argv);        // bench/bench_nerv.cpp
int run_snerv_paths_bench(int argc, char** argv);     // bench/bench_nerv.cpp
int run_nerv_pairs_bench(int argc, char** argv);      // bench/bench_nerv_scale.cpp
int run_nerv_fit_bench(int argc, char** argv);        // bench/bench_nerv_scale.cpp
int run_plsv_bench(int argc, char** argv);            // bench/bench_plsv.cpp
int run_knn_bench(int argc, char** argv);             // bench/bench_knn.cpp
}

int main(int argc, char** argv) {
  try {
    if (argc < 2) {
      std::cerr << kUsage;
      return 2;
    }
    if (std::string(argv[1]) == "-h" || std::string(argv[1]) == "--help") {
      std::cout << kUsage;
      return 0;
    }
    const std::string what = argv[1];
    if (what == "quality") return orrery::run_quality_bench(argc, argv);
    if (what == "hssne") return orrery::run_ne_bench(argc, argv);
    if (what == "hssne-scale") return orrery::run_ne_scale_bench(argc, argv);
    if (what == "gpu-vs-cpu") return orrery::run_gpu_vs_cpu_bench(argc, argv);
    if (what == "hssne-interp") return orrery::run_interp_bench(argc, argv);
    if (what == "hssne-place") return orrery::run_place_bench(argc, argv);
    if (what == "nerv") return orrery::run_nerv_bench(argc, argv);
    if (what == "snerv-distances") return orrery::run_snerv_distance_bench(argc, argv);
    if (what == "snerv-cv") return orrery::run_snerv_cv_bench(argc, argv);
    if (what == "snerv-paths") return orrery::run_snerv_paths_bench(argc, argv);
    if (what == "nerv-pairs") return orrery::run_nerv_pairs_bench(argc, argv);
    if (what == "nerv-fit") return orrery::run_nerv_fit_bench(argc, argv);
    if (what == "plsv") return orrery::run_plsv_bench(argc, argv);
    if (what == "knn") return orrery::run_knn_bench(argc, argv);
    if (what != "pe")
      input_error("unknown benchmark '" + what +
                  "'; expected: pe, quality, hssne, hssne-scale, gpu-vs-cpu, hssne-interp, hssne-place, nerv, nerv-pairs, nerv-fit, snerv-distances, snerv-cv, snerv-paths, plsv, knn");
    return run_pe(parse_options(argc, argv));
  } catch (const orrery::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return orrery::exit_code(e.kind());
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
