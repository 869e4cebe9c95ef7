// PLSV's algorithm (paper section 2.2, MATH.md §2), written once for every backend: a generalised
// EM whose E-step and coordinate solves run on the engine (CPU or CUDA), with L-BFGS on the topic
// coordinates on the host (Z x D values per evaluation cross). See orrery/plsv.hpp for the
// M-step's design.
//
// Over several ranks each engine holds a block of documents; what the topic steps need from all of
// them (the word-topic statistics, the topic gradient, the objective, the log-likelihood) is summed
// exactly, so every rank takes the same topic steps as one process would, bit for bit.
#include "orrery/plsv.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>

#include "methods/random.hpp"
#include "methods/row_blocks.hpp"
#include "optim/lbfgs.hpp"
#include "orrery/clock.hpp"
#include "orrery/error.hpp"
#include "orrery/exact_sum.hpp"
#include "orrery/math/exp.hpp"
#include "orrery/math/plsv.hpp"
#include "orrery/pe.hpp"
#include "prep/clones.hpp"

namespace orrery {

// The defaults for engines that cannot hand over their chunk sums (orrery/engines.hpp): their rounded
// totals, one addition each.
PlsvEngine::EStep PlsvEngine::e_step_exact(const std::vector<double>& phi, double alpha, ExactSum& sums) {
  if (sums.size() != 2) internal_error("PlsvEngine::e_step_exact: expected 2 sums");
  const EStep e = e_step(phi, alpha);
  sums.add(0, e.log_likelihood);
  sums.add(1, e.docs_sq);
  return e;
}

PeSweep PlsvEngine::solve_docs_exact(const std::vector<double>& phi, double gamma, const PeNewtonOptions& opt,
                                     ExactSum& sums) {
  std::vector<double> grad;
  const PeSweep s = solve_docs(phi, gamma, opt, &grad);
  if (grad.size() + 1 != sums.size()) internal_error("PlsvEngine::solve_docs_exact: expected Z x D + 1 sums");
  for (size_t i = 0; i < grad.size(); ++i) sums.add(i, grad[i]);
  sums.add(grad.size(), s.objective);
  return s;
}

const std::vector<Field<PlsvParams>>& plsv_fields() {
  static const std::vector<Field<PlsvParams>> fields = {
      {"dim", &PlsvParams::dim, "Output dimension D of the map.", 2, 3},
      {"topics", &PlsvParams::topics, "Number of topics Z. Paper: 50.", 2, 100000},
      {"alpha", &PlsvParams::alpha,
       "Dirichlet smoothing of the topics' word distributions: theta_zw = (S_zw + alpha) / (sum_w S_zw + alpha W). "
       "Paper: 0.01.",
       0, 1e6, true},
      {"beta_per_document", &PlsvParams::beta_per_document,
       "Prior precision of topic coordinates, beta = beta_per_document * N; larger draws the topics together. "
       "Paper: 0.1.",
       0, 1e6},
      {"gamma_per_topic", &PlsvParams::gamma_per_topic,
       "Prior precision of document coordinates, gamma = gamma_per_topic * Z; larger draws documents to the centre. "
       "Paper: 0.1.",
       0, 1e6},
      {"tol", &PlsvParams::tol,
       "EM stops when an EM iteration raises the log posterior by less than tol * |log posterior| (a jump's rise does "
       "not count).",
       0, 1},
      {"max_iter", &PlsvParams::max_iter, "Cap on EM iterations.", 0, 1e9},
      {"coord_iter", &PlsvParams::coord_iter,
       "L-BFGS iterations on the topic coordinates per EM iteration (each solves every document by Newton).", 1,
       1000},
      {"eps_x", &PlsvParams::eps_x,
       "A document's Newton solve stops when |dQ_n/dx_n|^2 / M_n^2 < eps_x (M_n: its number of words).", 0, 1e6,
       true},
      {"newton_max_iter", &PlsvParams::newton_max_iter, "Cap on Newton iterations per document per solve.", 1, 1e6},
      {"lbfgs_memory", &PlsvParams::lbfgs_memory, "Curvature pairs kept by L-BFGS on the topic coordinates.", 1, 1000},
      {"relocate_every", &PlsvParams::relocate_every,
       "Every this many EM iterations each document jumps to the best of its coordinate, the centre and the topic "
       "positions when that raises its log posterior (EM alone climbs only to the nearest maximum); 0 never.",
       0, 1e9},
      {"init", &PlsvParams::init,
       "Start: documents (each topic's words from a distinct seed document chosen k-means++ style, then documents "
       "and topics placed by PE on the documents' posteriors over those topics; avoids the collapsed map) or "
       "random (coordinates N(0, 0.01^2), near-uniform theta: the textbook start, which collapses on short "
       "documents). Both seeded.",
       },
      {"init_scale", &PlsvParams::init_scale, "RMS radius of the topics' start in PE's own initialisation (init documents).",
       0, 1e3, true},
      {"extrapolation", &PlsvParams::extrapolation,
       "squarem: every two EM iterations the map jumps along their path (SQUAREM; the coordinates linearly, the "
       "topics' word distributions by their logarithms) and keeps the jump when its log posterior is no lower "
       "than the second iteration's; several times fewer iterations to the tol stop. none: plain EM. Fold-in is "
       "plain EM either way."},
  };
  return fields;
}

namespace {

// SQUAREM's jump over theta, which holds Z x W values (a few hundred thousand): the logarithms and
// exponentials run in the machine's vectors (ORRERY_CLONES), not one value at a time.

// out[i] = log t[i] for n positive values.
ORRERY_CLONES void logs_into(const double* __restrict t, std::ptrdiff_t n, double* __restrict out) {
  ORRERY_SIMD()
  for (std::ptrdiff_t i = 0; i < n; ++i) out[i] = math::log_positive(t[i]);
}

// One topic's W word probabilities from its logarithms at x0, x1, x2 and the jump's a: each
// logarithm extrapolated (x0 - 2 a r + a^2 v), then exponentiated and normalised. No word's
// probability falls below e^-60 of the topic's top word's over W: float's normal range for any W
// below 10^10 (the CUDA engine holds theta in float, where a smaller one would be 0 and its
// logarithm -inf), and far below anything an M-step gives (alpha / (total + alpha W)).
ORRERY_CLONES void extrapolated_topic(const double* __restrict l0, const double* __restrict l1,
                                      const double* __restrict l2, double a, std::ptrdiff_t W,
                                      double* __restrict row) {
  double top = -std::numeric_limits<double>::infinity();
  ORRERY_SIMD(reduction(max : top))
  for (std::ptrdiff_t w = 0; w < W; ++w) {
    const double r = l1[w] - l0[w], v = (l2[w] - l1[w]) - r;
    row[w] = l0[w] - 2.0 * a * r + a * a * v;
    top = row[w] > top ? row[w] : top;
  }
  double sum = 0.0;
  ORRERY_SIMD(reduction(+ : sum))
  for (std::ptrdiff_t w = 0; w < W; ++w) {
    const double e = row[w] - top;
    row[w] = math::exp_nonpositive(e > -60.0 ? e : -60.0);
    sum += row[w];
  }
  ORRERY_SIMD()
  for (std::ptrdiff_t w = 0; w < W; ++w) row[w] /= sum;
}


// Corpus word frequencies f_w = sum_n c_nw / sum c.
std::vector<double> word_frequencies(const Corpus& c) {
  std::vector<double> f(static_cast<size_t>(c.num_words), 0.0);
  double total = 0.0;
  for (size_t i = 0; i < c.word.size(); ++i) {
    f[static_cast<size_t>(c.word[i])] += c.count[i];
    total += c.count[i];
  }
  for (double& v : f) v /= total;
  return f;
}

// k-means++ seeding on unit-length count vectors (cosine distance): Z distinct documents, the
// first uniformly, each next with probability proportional to its squared distance from the
// nearest seed chosen so far. Deterministic for a seed.
std::vector<index_t> seed_documents(const Corpus& c, int Z, std::mt19937_64& rng) {
  const index_t N = c.num_docs();
  std::vector<double> inv_norm(static_cast<size_t>(N));
  for (index_t n = 0; n < N; ++n) {
    double s = 0.0;
    for (index_t i = c.row_ptr[static_cast<size_t>(n)]; i < c.row_ptr[static_cast<size_t>(n) + 1]; ++i)
      s += c.count[static_cast<size_t>(i)] * c.count[static_cast<size_t>(i)];
    inv_norm[static_cast<size_t>(n)] = 1.0 / std::sqrt(s);
  }
  std::vector<double> dist(static_cast<size_t>(N), 4.0), dense(static_cast<size_t>(c.num_words), 0.0);
  std::vector<index_t> seeds;
  index_t next = std::min<index_t>(N - 1, static_cast<index_t>(uniform01(rng) * static_cast<double>(N)));
  for (int z = 0; z < Z; ++z) {
    seeds.push_back(next);
    const index_t s = next;
    for (index_t i = c.row_ptr[static_cast<size_t>(s)]; i < c.row_ptr[static_cast<size_t>(s) + 1]; ++i)
      dense[static_cast<size_t>(c.word[static_cast<size_t>(i)])] =
          c.count[static_cast<size_t>(i)] * inv_norm[static_cast<size_t>(s)];
#pragma omp parallel for schedule(static)
    for (index_t n = 0; n < N; ++n) {
      double dot = 0.0;
      for (index_t i = c.row_ptr[static_cast<size_t>(n)]; i < c.row_ptr[static_cast<size_t>(n) + 1]; ++i)
        dot += dense[static_cast<size_t>(c.word[static_cast<size_t>(i)])] * c.count[static_cast<size_t>(i)];
      const double d = std::max(0.0, 1.0 - dot * inv_norm[static_cast<size_t>(n)]);
      dist[static_cast<size_t>(n)] = std::min(dist[static_cast<size_t>(n)], d * d);
    }
    for (index_t i = c.row_ptr[static_cast<size_t>(s)]; i < c.row_ptr[static_cast<size_t>(s) + 1]; ++i)
      dense[static_cast<size_t>(c.word[static_cast<size_t>(i)])] = 0.0;
    double total = 0.0;
    for (double d : dist) total += d;
    if (!(total > 0)) {  // fewer distinct documents than topics: reuse in order
      next = seeds[static_cast<size_t>(z) % seeds.size()];
      continue;
    }
    double target = uniform01(rng) * total;
    next = N - 1;
    for (index_t n = 0; n < N; ++n) {
      target -= dist[static_cast<size_t>(n)];
      if (target <= 0 && dist[static_cast<size_t>(n)] > 0) {
        next = n;
        break;
      }
    }
  }
  return seeds;
}

// Every rank's documents' rows (plsv_rank_block's, in rank order) as one N-row matrix on every rank.
MatrixD gather_docs(Comm& comm, const MatrixD& mine, index_t N) {
  return gather_rows(comm, mine, N, [&](int r) { return plsv_rank_block(N, r, comm.size()); });
}

struct Start {
  MatrixD X, theta;
  std::vector<double> phi;
};

// Every rank reads the whole corpus and computes the same start; the PE fit inside it shards like the
// EM (each rank computes the posteriors of its block of documents).
Start initial_state(Backend& backend, const Corpus& c, const PlsvParams& prm, unsigned long long seed, Comm& comm) {
  const index_t N = c.num_docs(), W = c.num_words;
  const int Z = prm.topics, D = prm.dim;
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ULL);
  const std::vector<double> f = word_frequencies(c);
  Start s;
  s.theta = MatrixD(Z, W);
  if (prm.init == PlsvInit::random) {
    s.phi = seeded_gaussian(static_cast<size_t>(Z * D), seed, 0.01);
    s.X.rows = N;
    s.X.cols = D;
    s.X.data = seeded_gaussian(static_cast<size_t>(N * D), seed + 1, 0.01);
    for (int z = 0; z < Z; ++z) {
      double t = 0.0;
      for (index_t w = 0; w < W; ++w) t += (s.theta(z, w) = (f[static_cast<size_t>(w)] + 1e-3 / W) * (1 + 0.1 * uniform01(rng)));
      for (index_t w = 0; w < W; ++w) s.theta(z, w) /= t;
    }
    return s;
  }
  // "documents": topic z starts as its seed document's words mixed half and half with the corpus
  // frequencies (plus a trace of uniform so no word has probability 0).
  const std::vector<index_t> seeds = seed_documents(c, Z, rng);
  for (int z = 0; z < Z; ++z) {
    const index_t sd = seeds[static_cast<size_t>(z)];
    const double M = c.length(sd);
    for (index_t w = 0; w < W; ++w) s.theta(z, w) = 0.5 * f[static_cast<size_t>(w)] + 1e-3 / W;
    for (index_t i = c.row_ptr[static_cast<size_t>(sd)]; i < c.row_ptr[static_cast<size_t>(sd) + 1]; ++i)
      s.theta(z, c.word[static_cast<size_t>(i)]) += 0.5 * c.count[static_cast<size_t>(i)] / M;
    double t = 0.0;
    for (index_t w = 0; w < W; ++w) t += s.theta(z, w);
    for (index_t w = 0; w < W; ++w) s.theta(z, w) /= t;
  }
  // Each document's posterior over the seeded topics, tempered to one word's worth of evidence
  // (log-likelihood / M_n), as PE's input: PE places documents and topics so that the proportions
  // softmax(-|x_n - phi_z|^2 / 2), the very form PLSV uses, reproduce it. Topics that share
  // documents start close together, which a random layout of the topics does not give.
  MatrixD logt(Z, W);
  for (size_t i = 0; i < logt.data.size(); ++i) logt.data[i] = std::log(s.theta.data[i]);
  const PlsvBlock block = plsv_rank_block(N, comm.rank(), comm.size());
  MatrixD mine(block.end - block.begin, Z, 0.0);
#pragma omp parallel for schedule(static)
  for (index_t n = block.begin; n < block.end; ++n) {
    double* l = mine.row(n - block.begin);
    const double M = c.length(n);
    for (index_t i = c.row_ptr[static_cast<size_t>(n)]; i < c.row_ptr[static_cast<size_t>(n) + 1]; ++i)
      for (int z = 0; z < Z; ++z) l[z] += c.count[static_cast<size_t>(i)] * logt(z, c.word[static_cast<size_t>(i)]);
    double lmax = l[0];
    for (int z = 1; z < Z; ++z) lmax = std::max(lmax, l[z]);
    double t = 0.0;
    for (int z = 0; z < Z; ++z) t += (l[z] = std::exp((l[z] - lmax) / M));
    for (int z = 0; z < Z; ++z) l[z] /= t;
  }
  PeInput pin;
  pin.posteriors = gather_docs(comm, mine, N);
  double mean_len = 0.0;
  for (double v : c.count) mean_len += v;
  mean_len /= static_cast<double>(N);
  PeParams pp;
  pp.dim = D;
  pp.eta_r = std::max(1e-6, 0.5 * prm.gamma_per_topic * Z / mean_len);
  pp.eta_phi = std::max(1e-6, 0.5 * prm.beta_per_document * static_cast<double>(N) / (mean_len * static_cast<double>(N)));
  pp.max_iter = 200;
  pp.init_scale = prm.init_scale;
  const PeResult pe = fit_pe(backend, pin, pp, seed, {}, nullptr, &comm);
  s.phi = pe.class_coords.data;
  s.X = pe.object_coords;
  return s;
}

double mean_topic_information(const MatrixD& X, const MatrixD& Phi) {
  const MatrixD P = plsv_topic_proportions(X, Phi);
  double s = 0.0;
  for (index_t n = 0; n < P.rows; ++n) s += math::plsv_topic_information(P.row(n), static_cast<int>(P.cols));
  return P.rows ? s / static_cast<double>(P.rows) : 0.0;
}

double sum_sq(const std::vector<double>& v) {
  double s = 0.0;
  for (double x : v) s += x * x;
  return s;
}

// The EM iterations shared by fitting and fold-in (fit_model false: theta and Phi stay fixed). `c` is
// the whole corpus, the engine holds this rank's block of it (plsv_rank_block); every rank issues the
// same collectives in the same order.
PlsvResult run_em(PlsvEngine& eng, const Corpus& c, Comm& comm, const PlsvParams& prm, std::vector<double> phi,
                  bool fit_model, const PlsvProgress& progress, Clock::time_point t0, RunControl* control) {
  const index_t N = c.num_docs();
  const int Z = prm.topics, D = prm.dim;
  const size_t zd = static_cast<size_t>(Z) * static_cast<size_t>(D);
  const double beta = prm.beta_per_document * static_cast<double>(N);
  const double gamma = prm.gamma_per_topic * static_cast<double>(Z);
  PlsvResult res;
  res.seconds_init = seconds_since(t0);
  const auto t1 = Clock::now();
  PeNewtonOptions nopt;
  nopt.eps_r = prm.eps_x;
  nopt.max_iter = prm.newton_max_iter;
  double prev = 0.0;
  int newton = 0;
  int first = 0;
  double seconds_before = 0.0;  // fit time of the interrupted run this one continues
  // Exact totals over every rank's documents (the same bits for any number of ranks); a non-finite
  // value anywhere fails on every rank alike.
  const auto reduce_exact = [&](ExactSum& sums, const char* what) {
    sums.allreduce(comm);
    std::vector<double> total(sums.size());
    try {
      sums.results(total.data());
    } catch (const Error&) {
      internal_error(std::string("PLSV ") + what + " became non-finite");
    }
    return total;
  };
  const auto count_all = [&](index_t local) {
    std::int64_t v = local;
    comm.allreduce(&v, 1, ReduceOp::sum);
    return static_cast<index_t>(v);
  };
  // Newton on every rank's documents; with grad, -dQ/dPhi over all of them (the objective is only
  // needed then).
  const auto solve = [&](const std::vector<double>& x, std::vector<double>* grad) {
    if (!grad) {
      newton += static_cast<int>(count_all(eng.solve_docs(x, gamma, nopt, nullptr).newton_steps));
      return 0.0;
    }
    ExactSum sums(zd + 1);
    newton += static_cast<int>(count_all(eng.solve_docs_exact(x, gamma, nopt, sums).newton_steps));
    const std::vector<double> total = reduce_exact(sums, "objective or topic gradient");
    grad->assign(total.begin(), total.begin() + static_cast<std::ptrdiff_t>(zd));
    return total[zd];
  };
  // A safe point ends an EM iteration: the next one starts from X, theta and Phi alone (its E-step
  // recomputes the rest), so those, the counters and the trace are the whole state.
  constexpr size_t kTraceColumns = 6;  // a PlsvTraceEntry's fields, in order
  // SQUAREM's cycle (PlsvParams::extrapolation): two EM steps from x0 through x1 to x2, then the
  // jump x' = x0 - 2a r + a^2 v (r = x1 - x0, v = x2 - 2 x1 + x0, a = -|r| / |v| clamped to
  // [-step_max, -1]), the coordinates as they are and theta by its logarithms. The E-step at x' is
  // the next iteration's; when its log posterior is below x2's, the map goes back to x2 (the
  // fallback) and step_max shrinks. A cycle whose steps relocated documents (jumps, not a path) is
  // not extrapolated. A point is this rank's documents, theta and Phi.
  const bool squarem = fit_model && prm.extrapolation == PlsvExtrapolation::squarem;
  struct Point {
    MatrixD docs, theta;
    std::vector<double> phi;
  };
  const auto here = [&] { return Point{eng.docs(), eng.theta(), phi}; };
  const auto go_to = [&](const Point& x) {
    eng.set_docs(x.docs);
    eng.set_theta(x.theta);
    phi = x.phi;
  };
  // Sets the map to the jump from x0 through x1 to x2 and returns true, or returns false (the map
  // stays at x2) where the steps give none beyond x2 (a >= -1, or |v| zero or not finite). The
  // squared lengths of r and v: the documents' parts summed exactly over the ranks, theta's and
  // Phi's (the same on every rank) in order after them.
  const auto jump = [&](const Point& a0, const Point& a1, const Point& a2, double& smax) {
    ExactSum doc_sums(2);
    for (size_t i = 0; i < a0.docs.data.size(); ++i) {
      const double r = a1.docs.data[i] - a0.docs.data[i], v = (a2.docs.data[i] - a1.docs.data[i]) - r;
      doc_sums.add(0, r * r);
      doc_sums.add(1, v * v);
    }
    doc_sums.allreduce(comm);
    double sr = doc_sums.result(0), sv = doc_sums.result(1);
    const auto add_sq = [&](const std::vector<double>& l0, const std::vector<double>& l1,
                            const std::vector<double>& l2) {
      for (size_t i = 0; i < l0.size(); ++i) {
        const double r = l1[i] - l0[i], v = (l2[i] - l1[i]) - r;
        sr += r * r;
        sv += v * v;
      }
    };
    const auto logs = [](const MatrixD& theta) {  // theta > 0 (alpha > 0 in every M-step; jumps keep it)
      std::vector<double> l(theta.data.size());
      logs_into(theta.data.data(), static_cast<std::ptrdiff_t>(l.size()), l.data());
      return l;
    };
    const std::vector<double> l0 = logs(a0.theta), l1 = logs(a1.theta), l2 = logs(a2.theta);
    add_sq(l0, l1, l2);
    add_sq(a0.phi, a1.phi, a2.phi);
    if (!(sv > 0.0) || !std::isfinite(sr) || !std::isfinite(sv)) return false;
    double a = -std::sqrt(sr / sv);
    if (a <= -smax) {
      a = -smax;
      smax *= 4.0;
    }
    if (a >= -1.0) return false;
    const auto extrapolate = [a](double v0, double v1, double v2) {
      const double r = v1 - v0, v = (v2 - v1) - r;
      return v0 - 2.0 * a * r + a * a * v;
    };
    Point x{a0.docs, a0.theta, a0.phi};
    for (size_t i = 0; i < x.docs.data.size(); ++i)
      x.docs.data[i] = extrapolate(a0.docs.data[i], a1.docs.data[i], a2.docs.data[i]);
    for (size_t i = 0; i < x.phi.size(); ++i) x.phi[i] = extrapolate(a0.phi[i], a1.phi[i], a2.phi[i]);
    const index_t W = x.theta.cols;
    for (index_t z = 0; z < Z; ++z) {  // each topic's logarithms extrapolated, then normalised
      const size_t at = static_cast<size_t>(z * W);
      extrapolated_topic(l0.data() + at, l1.data() + at, l2.data() + at, a, W, x.theta.row(z));
    }
    go_to(x);
    return true;
  };
  int phase = 0;  // EM steps taken in this cycle
  Point x0, x1, fallback;
  bool has_fallback = false, cycle_relocated = false, after_em = false;
  double step_max = 1.0, fallback_lp = 0.0;
  // A checkpoint holds every rank's documents (gathered; every rank captures), so it resumes under
  // any number of ranks: each takes its block back.
  const PlsvBlock block = plsv_rank_block(N, comm.rank(), comm.size());
  const auto whole_docs = [&](const MatrixD& mine) { return gather_docs(comm, mine, N); };
  const auto my_docs = [&](const RunState& st, const std::string& key) { return rows_of(st.matrix(key, N, D), block); };
  const auto put_point = [&](RunState& st, const std::string& key, const Point& x) {
    st.put(key + ".docs", whole_docs(x.docs));
    st.put(key + ".theta", x.theta);
    st.put(key + ".phi", x.phi);
  };
  const auto get_point = [&](const RunState& st, const std::string& key) {
    Point x{my_docs(st, key + ".docs"), st.matrix(key + ".theta", Z, c.num_words), st.get(key + ".phi")};
    if (x.phi.size() != zd) internal_error("checkpoint: PLSV's topic coordinates are not Z x D");
    return x;
  };
  if (const RunState* saved = resume_state(control)) {
    eng.set_docs(my_docs(*saved, "plsv.docs"));
    eng.set_theta(saved->matrix("plsv.theta", Z, c.num_words));
    phi = saved->get("plsv.phi");
    if (phi.size() != zd) internal_error("checkpoint: PLSV's topic coordinates are not Z x D");
    after_em = saved->values().count("plsv.after_em") ? saved->count("plsv.after_em") != 0
                                                      : saved->count("plsv.iteration") > 0;
    if (squarem) {
      phase = saved->count("plsv.squarem.phase");
      step_max = saved->scalar("plsv.squarem.step_max");
      res.jumps = saved->count("plsv.squarem.jumps");
      res.jumps_kept = saved->count("plsv.squarem.kept");
      cycle_relocated = saved->count("plsv.squarem.relocated") != 0;
      if (phase >= 1) x0 = get_point(*saved, "plsv.squarem.x0");
      if (phase >= 2) x1 = get_point(*saved, "plsv.squarem.x1");
      has_fallback = saved->values().count("plsv.squarem.fallback.phi") != 0;
      if (has_fallback) {
        fallback = get_point(*saved, "plsv.squarem.fallback");
        fallback_lp = saved->scalar("plsv.squarem.fallback_lp");
      }
    }
    prev = saved->scalar("plsv.prev");
    newton = saved->count("plsv.newton");
    first = saved->count("plsv.iteration");
    const auto& trace = saved->get("plsv.trace");
    for (size_t q = 0; q + kTraceColumns <= trace.size(); q += kTraceColumns) {
      const double* r = trace.data() + q;
      res.trace.push_back({static_cast<int>(r[0]), r[1], r[2], static_cast<int>(r[3]), static_cast<index_t>(r[4]), r[5]});
    }
    if (!res.trace.empty()) seconds_before = res.trace.back().seconds;
  }
  const auto capture = [&](int next) {
    RunState s;
    s.put("plsv.docs", whole_docs(eng.docs()));
    s.put("plsv.theta", eng.theta());
    s.put("plsv.phi", phi);
    s.put("plsv.prev", prev);
    s.put("plsv.newton", newton);
    s.put("plsv.iteration", next);
    s.put("plsv.after_em", after_em ? 1.0 : 0.0);
    if (squarem) {
      s.put("plsv.squarem.phase", phase);
      s.put("plsv.squarem.step_max", step_max);
      s.put("plsv.squarem.jumps", res.jumps);
      s.put("plsv.squarem.kept", res.jumps_kept);
      s.put("plsv.squarem.relocated", cycle_relocated ? 1.0 : 0.0);
      if (phase >= 1) put_point(s, "plsv.squarem.x0", x0);
      if (phase >= 2) put_point(s, "plsv.squarem.x1", x1);
      if (has_fallback) {
        put_point(s, "plsv.squarem.fallback", fallback);
        s.put("plsv.squarem.fallback_lp", fallback_lp);
      }
    }
    std::vector<double> trace;
    for (const auto& e : res.trace)
      trace.insert(trace.end(), {static_cast<double>(e.iteration), e.log_posterior, e.log_likelihood,
                                 static_cast<double>(e.newton_steps), static_cast<double>(e.relocated), e.seconds});
    s.put("plsv.trace", trace);
    return s;
  };
  for (int it = first;; ++it) {
    ExactSum e_sums(2);
    const auto es = eng.e_step_exact(phi, prm.alpha, e_sums);  // theta_log_prior: theta is every rank's
    const std::vector<double> e_total = reduce_exact(e_sums, "log-likelihood");
    const double lp = e_total[0] + es.theta_log_prior - 0.5 * gamma * e_total[1] - 0.5 * beta * sum_sq(phi);
    if (!std::isfinite(lp)) internal_error("PLSV log posterior became non-finite (" + std::to_string(lp) + ")");
    PlsvTraceEntry e;
    e.iteration = it;
    e.log_posterior = lp;
    e.log_likelihood = e_total[0];
    e.newton_steps = newton;
    e.seconds = seconds_before + seconds_since(t1);
    if (squarem && has_fallback) {  // this E-step was at a jump: kept, or back to the point before it
      has_fallback = false;
      ++res.jumps;
      if (!(lp >= fallback_lp)) {
        go_to(fallback);
        step_max = std::max(1.0, step_max / 4.0);
        after_em = false;
        res.log_posterior = fallback_lp;  // the map's (its entry is the trace's last)
        res.iterations = it;
        if (it >= prm.max_iter) {
          res.stop_reason = "max_iter";
          break;
        }
        safe_point(control, it + 1, [&] { return capture(it + 1); });
        continue;
      }
      ++res.jumps_kept;
    }
    res.trace.push_back(e);  // the trace holds the maps the fit kept
    if (progress) progress(e);
    res.log_posterior = lp;
    res.iterations = it;
    // tol reads the rise of an EM step, not that of a jump or of a return to the fallback
    if (after_em && lp - prev < prm.tol * std::abs(lp)) {
      res.stop_reason = "tol";
      break;
    }
    if (it >= prm.max_iter) {
      res.stop_reason = "max_iter";
      break;
    }
    if (squarem) {
      if (phase == 0) {
        x0 = here();
        cycle_relocated = false;
      } else if (phase == 1) {
        x1 = here();
      } else {
        phase = 0;
        Point x2 = here();
        if (!cycle_relocated) {
          if (jump(x0, x1, x2, step_max)) {
            fallback = std::move(x2);
            fallback_lp = lp;
            has_fallback = true;
            after_em = false;
            safe_point(control, it + 1, [&] { return capture(it + 1); });
            continue;
          }
        }
        x0 = std::move(x2);
        cycle_relocated = false;
      }
    }
    prev = lp;
    newton = 0;
    const bool relocate = prm.relocate_every > 0 && (it + 1) % prm.relocate_every == 0;
    if (!fit_model) {
      solve(phi, nullptr);
      if (relocate) res.trace.back().relocated = count_all(eng.relocate_docs(phi, gamma));
      after_em = true;
      safe_point(control, it + 1, [&] { return capture(it + 1); });
      continue;
    }
    // theta from the statistics of every rank's documents: integer sums, the same for any split.
    if (std::vector<std::int64_t>* stats = eng.word_topic_sums()) {
      if (comm.size() > 1) comm.allreduce(stats->data(), stats->size(), ReduceOp::sum);
    } else if (comm.size() > 1) {
      internal_error("plsv: this engine's word-topic statistics cannot be summed over ranks");
    }
    eng.m_step_theta(prm.alpha);
    int evaluations = 0, accepted_at = -1;
    auto reduced = [&](const std::vector<double>& x, std::vector<double>& grad) {
      const double objective = solve(x, &grad);
      ++evaluations;
      for (size_t i = 0; i < x.size(); ++i) grad[i] += beta * x[i];
      return objective + 0.5 * beta * sum_sq(x);
    };
    optim::LbfgsOptions lo;
    lo.memory = prm.lbfgs_memory;
    lo.max_iter = prm.coord_iter;
    lo.grad_sq_tol = 0.0;
    lo.ftol = 0.0;
    optim::lbfgs_minimize(reduced, phi, lo, [&](const optim::LbfgsState&) { accepted_at = evaluations; });
    // A rejected trial may have left X solved for another Phi: solve once more for the accepted one.
    if (accepted_at != evaluations) solve(phi, nullptr);
    if (relocate) res.trace.back().relocated = count_all(eng.relocate_docs(phi, gamma));
    if (res.trace.back().relocated > 0) cycle_relocated = true;
    if (squarem) ++phase;
    after_em = true;
    safe_point(control, it + 1, [&] { return capture(it + 1); });
  }
  res.seconds_fit = seconds_since(t1);
  // Every rank gets the whole map (and every rank's share and time, for the report).
  res.doc_coords = gather_docs(comm, eng.docs(), N);
  res.model.topic_coords = MatrixD(Z, D);
  res.model.topic_coords.data = phi;
  res.model.theta = eng.theta();
  res.topic_information = mean_topic_information(res.doc_coords, res.model.topic_coords);
  res.collapsed = res.topic_information < kPlsvCollapseInformation;
  const auto ranks = static_cast<size_t>(comm.size());
  res.rank_documents.resize(ranks);
  for (int r = 0; r < comm.size(); ++r) {
    const PlsvBlock b = plsv_rank_block(N, r, comm.size());
    res.rank_documents[static_cast<size_t>(r)] = b.end - b.begin;
  }
  res.rank_seconds_fit.resize(ranks);
  comm.allgatherv(&res.seconds_fit, 1, res.rank_seconds_fit.data(), std::vector<std::size_t>(ranks, 1));
  for (double v : res.doc_coords.data)
    if (!std::isfinite(v)) internal_error("PLSV produced non-finite document coordinates");
  return res;
}

// The documents of c in block b, with the counts only (what an engine reads).
Corpus block_corpus(const Corpus& c, PlsvBlock b) {
  Corpus out;
  out.num_words = c.num_words;
  const index_t first = c.row_ptr[static_cast<size_t>(b.begin)], last = c.row_ptr[static_cast<size_t>(b.end)];
  out.row_ptr.resize(static_cast<size_t>(b.end - b.begin) + 1);
  for (index_t n = b.begin; n <= b.end; ++n)
    out.row_ptr[static_cast<size_t>(n - b.begin)] = c.row_ptr[static_cast<size_t>(n)] - first;
  out.word.assign(c.word.begin() + first, c.word.begin() + last);
  out.count.assign(c.count.begin() + first, c.count.begin() + last);
  return out;
}

// A fit's communicator (one process when none is given) and this rank's block of the corpus,
// resident on the backend after the checks every fit needs.
struct Sharded {
  std::unique_ptr<Comm> own_comm;
  Comm* comm = nullptr;
  PlsvBlock block;
  Corpus local;  // the block's documents when there are several ranks; one process reads the caller's
  std::unique_ptr<PlsvEngine> engine;

  Sharded(Backend& backend, const Corpus& corpus, int topics, int dim, Comm* given) {
    own_comm = given ? nullptr : make_single_comm();
    comm = given ? given : own_comm.get();
    if (topics < 2) input_error("params.topics: PLSV needs at least 2 topics, found " + std::to_string(topics));
    if (dim != 2 && dim != 3) internal_error("plsv: dim must be 2 or 3");
    if (corpus.num_docs() < 1 || corpus.num_words < 1) input_error("corpus: no documents or no words to fit");
    block = plsv_rank_block(corpus.num_docs(), comm->rank(), comm->size());
    if (comm->size() > 1) local = block_corpus(corpus, block);
    engine = backend.make_plsv(comm->size() > 1 ? local : corpus, topics, dim);
  }
};

}  // namespace

PlsvBlock plsv_rank_block(index_t documents, int rank, int ranks) {
  if (ranks < 1 || rank < 0 || rank >= ranks)
    internal_error("plsv_rank_block: rank " + std::to_string(rank) + " of " + std::to_string(ranks));
  const index_t chunks = (documents + kPlsvChunk - 1) / kPlsvChunk;
  const auto edge = [&](int r) { return std::min(documents, chunks * r / ranks * kPlsvChunk); };
  return {edge(rank), edge(rank + 1)};
}

PlsvResult fit_plsv(Backend& backend, const Corpus& c, const PlsvParams& prm, unsigned long long seed,
                    const PlsvProgress& progress, RunControl* control, Comm* comm) {
  const auto t0 = Clock::now();
  Sharded s(backend, c, prm.topics, prm.dim, comm);
  // A resumed fit takes X, theta and Phi from the checkpoint: its start (a PE fit) is not redone.
  if (resume_state(control)) return run_em(*s.engine, c, *s.comm, prm, {}, true, progress, t0, control);
  const Start start = initial_state(backend, c, prm, seed, *s.comm);
  s.engine->set_docs(s.comm->size() > 1 ? rows_of(start.X, s.block) : start.X);
  s.engine->set_theta(start.theta);
  return run_em(*s.engine, c, *s.comm, prm, start.phi, true, progress, t0, control);
}

PlsvResult fold_in_plsv(Backend& backend, const Corpus& c, const PlsvModel& model, const PlsvParams& params,
                        const PlsvProgress& progress, RunControl* control, Comm* comm) {
  const auto t0 = Clock::now();
  PlsvParams prm = params;
  prm.topics = static_cast<int>(model.topic_coords.rows);
  prm.dim = static_cast<int>(model.topic_coords.cols);
  if (model.theta.rows != prm.topics || model.theta.cols != c.num_words)
    input_error("model: theta is " + std::to_string(model.theta.rows) + " x " + std::to_string(model.theta.cols) +
                ", expected " + std::to_string(prm.topics) + " topics x " + std::to_string(c.num_words) + " words");
  Sharded s(backend, c, prm.topics, prm.dim, comm);
  s.engine->set_docs(MatrixD(s.block.end - s.block.begin, prm.dim, 0.0));
  s.engine->set_theta(model.theta);
  s.engine->relocate_docs(model.topic_coords.data, prm.gamma_per_topic * prm.topics);
  PlsvResult r = run_em(*s.engine, c, *s.comm, prm, model.topic_coords.data, false, progress, t0, control);
  r.model = model;
  return r;
}

MatrixD plsv_topic_proportions(const MatrixD& X, const MatrixD& Phi) {
  const int Z = static_cast<int>(Phi.rows), D = static_cast<int>(Phi.cols);
  MatrixD P(X.rows, Z);
#pragma omp parallel for schedule(static)
  for (index_t n = 0; n < X.rows; ++n) {
    if (D == 2)
      math::plsv_topic_proportions<double, 2>(X.row(n), Phi.data.data(), Z, P.row(n));
    else
      math::plsv_topic_proportions<double, 3>(X.row(n), Phi.data.data(), Z, P.row(n));
  }
  return P;
}

double plsv_log_posterior(const Corpus& c, const MatrixD& X, const PlsvModel& m, double alpha, double beta,
                          double gamma) {
  const MatrixD P = plsv_topic_proportions(X, m.topic_coords);
  const int Z = static_cast<int>(m.topic_coords.rows);
  double ll = 0.0;
  for (index_t n = 0; n < c.num_docs(); ++n)
    for (index_t i = c.row_ptr[static_cast<size_t>(n)]; i < c.row_ptr[static_cast<size_t>(n) + 1]; ++i) {
      double mix = 0.0;
      for (int z = 0; z < Z; ++z) mix += P(n, z) * m.theta(z, c.word[static_cast<size_t>(i)]);
      ll += c.count[static_cast<size_t>(i)] * std::log(mix);
    }
  double lt = 0.0;
  for (double t : m.theta.data) lt += std::log(t);
  return ll + alpha * lt - 0.5 * gamma * sum_sq(X.data) - 0.5 * beta * sum_sq(m.topic_coords.data);
}

double plsv_coordinate_q(const MatrixD& R, const MatrixD& X, const MatrixD& Phi, double beta, double gamma,
                         MatrixD* grad_x, MatrixD* grad_phi) {
  const index_t N = X.rows;
  const int Z = static_cast<int>(Phi.rows), D = static_cast<int>(Phi.cols);
  const MatrixD P = plsv_topic_proportions(X, Phi);
  if (grad_x) *grad_x = MatrixD(N, D, 0.0);
  if (grad_phi) *grad_phi = MatrixD(Z, D, 0.0);
  double q = 0.0;
  for (index_t n = 0; n < N; ++n) {
    double M = 0.0;
    for (int z = 0; z < Z; ++z) M += R(n, z);
    for (int z = 0; z < Z; ++z) {
      q += R(n, z) * std::log(P(n, z));
      const double w = R(n, z) - M * P(n, z);
      for (int d = 0; d < D; ++d) {
        const double diff = Phi(z, d) - X(n, d);
        if (grad_x) (*grad_x)(n, d) += w * diff;
        if (grad_phi) (*grad_phi)(z, d) -= w * diff;
      }
    }
    for (int d = 0; d < D; ++d) {
      q -= 0.5 * gamma * X(n, d) * X(n, d);
      if (grad_x) (*grad_x)(n, d) -= gamma * X(n, d);
    }
  }
  for (int z = 0; z < Z; ++z)
    for (int d = 0; d < D; ++d) {
      q -= 0.5 * beta * Phi(z, d) * Phi(z, d);
      if (grad_phi) (*grad_phi)(z, d) -= beta * Phi(z, d);
    }
  return q;
}

std::vector<std::vector<int>> plsv_top_words(const MatrixD& theta, int count) {
  std::vector<std::vector<int>> out(static_cast<size_t>(theta.rows));
  const int k = static_cast<int>(std::min<index_t>(count, theta.cols));
  for (index_t z = 0; z < theta.rows; ++z) {
    std::vector<int> ids(static_cast<size_t>(theta.cols));
    std::iota(ids.begin(), ids.end(), 0);
    const double* t = theta.row(z);
    std::partial_sort(ids.begin(), ids.begin() + k, ids.end(),
                      [&](int a, int b) { return t[a] > t[b] || (t[a] == t[b] && a < b); });
    ids.resize(static_cast<size_t>(k));
    out[static_cast<size_t>(z)] = ids;
  }
  return out;
}

}  // namespace orrery
