// PLSV benchmark: time per EM iteration and E-step nonzeros per second on corpora drawn from the
// PLSV model (bench plsv --docs 1000,10000,100000 --words 10000 --topics 50), and fits to
// convergence of a 1,000-document corpus with about 7,000 distinct words (the paper's 20 News
// setting, 20 minutes there).
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "orrery/backend.hpp"
#include "orrery/error.hpp"
#include "orrery/plsv.hpp"

namespace orrery {
namespace {

std::vector<index_t> parse_list(const std::string& s) {
  std::vector<index_t> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(std::stoll(item));
  return out;
}

}  // namespace

int run_plsv_bench(int argc, char** argv) {
  std::vector<index_t> docs = {1000, 10000, 100000};
  index_t words = 10000;
  int topics = 50, iters = 10, threads = 0;
  double length = 100;
  std::string device = "cpu", out;
  bool converge = true;
  for (int i = 2; i < argc; ++i) {
    const std::string f = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) input_error(f + ": expected a value");
      return argv[++i];
    };
    if (f == "--docs") docs = parse_list(next());
    else if (f == "--words") words = std::stoll(next());
    else if (f == "--topics") topics = std::stoi(next());
    else if (f == "--iters") iters = std::stoi(next());
    else if (f == "--length") length = std::stod(next());
    else if (f == "--device") device = next();
    else if (f == "--threads") threads = std::stoi(next());
    else if (f == "--out") out = next();
    else if (f == "--no-converge") converge = false;
    else input_error("bench plsv: unknown flag " + f +
                     " (--docs --words --topics --iters --length --device --threads --out --no-converge)");
  }
  auto backend = make_backend(device, threads);
  json records = json::array();
  std::printf("PLSV on %s: corpora from the PLSV model, W = %lld, Z = %d, %g words per document\n",
              backend->name().c_str(), static_cast<long long>(words), topics, length);
  std::printf("%9s %10s %12s %14s %14s\n", "docs", "nonzeros", "s/iteration", "nnz/s (E+M)", "log posterior");
  for (index_t N : docs) {
    const auto planted = sample_plsv_corpus(N, words, topics, 2, length, 42);
    PlsvParams prm;
    prm.topics = topics;
    prm.max_iter = iters;
    prm.tol = 0;
    const PlsvResult r = fit_plsv(*backend, planted.corpus, prm, 1);
    // Iterations 1..iters (iteration 0 is the first E-step only).
    const double per_iter = (r.trace.back().seconds - r.trace.front().seconds) / std::max(1, iters);
    const double nnz = static_cast<double>(planted.corpus.nnz());
    std::printf("%9lld %10.0f %12.4f %14.3g %14.8g\n", static_cast<long long>(N), nnz, per_iter, nnz / per_iter,
                r.log_posterior);
    records.push_back({{"bench", "plsv"}, {"device", backend->name()}, {"docs", N}, {"words", words},
                       {"topics", topics}, {"nonzeros", nnz}, {"seconds_per_iteration", per_iter},
                       {"nonzeros_per_second", nnz / per_iter}, {"seconds_init", r.seconds_init},
                       {"iterations", iters}});
  }
  if (converge) {
    // 1,000 short documents over a 7,000-word vocabulary, Z = 50, the paper's priors, to convergence.
    const auto planted = sample_plsv_corpus(1000, 7000, 50, 2, 100, 7);
    PlsvParams prm;
    prm.topics = 50;
    const PlsvResult r = fit_plsv(*backend, planted.corpus, prm, 1);
    const double total = r.seconds_init + r.seconds_fit;
    std::printf("to convergence: 1000 documents, 7000 words, %lld nonzeros, Z = 50: %d iterations (%s), "
                "%.2f s (init %.2f s), collapsed: %s\n",
                static_cast<long long>(planted.corpus.nnz()), r.iterations, r.stop_reason.c_str(), total,
                r.seconds_init, r.collapsed ? "yes" : "no");
    records.push_back({{"bench", "plsv-converge"}, {"device", backend->name()}, {"docs", 1000}, {"words", 7000},
                       {"topics", 50}, {"nonzeros", planted.corpus.nnz()}, {"iterations", r.iterations},
                       {"stop_reason", r.stop_reason}, {"seconds", total}, {"seconds_init", r.seconds_init},
                       {"collapsed", r.collapsed}, {"paper_seconds", 1200}});
  }
  if (!out.empty()) bench::write_records(out, records);
  return 0;
}

}  // namespace orrery
