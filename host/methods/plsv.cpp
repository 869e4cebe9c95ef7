// PLSV's algorithm (paper section 2.2, MATH.md §2), written once for every backend: a generalised
// EM whose E-step and coordinate solves run on the engine (CPU or CUDA), with L-BFGS on the topic
// coordinates on the host (Z x D values per evaluation cross). See orrery/plsv.hpp for the
// M-step's design.
#include "orrery/plsv.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>

#include "methods/random.hpp"
#include "optim/lbfgs.hpp"
#include "orrery/clock.hpp"
#include "orrery/error.hpp"
#include "orrery/math/plsv.hpp"
#include "orrery/pe.hpp"

namespace orrery {

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
       "EM stops when an iteration raises the log posterior by less than tol * |log posterior|.", 0, 1},
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
  };
  return fields;
}

namespace {


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

struct Start {
  MatrixD X, theta;
  std::vector<double> phi;
};

Start initial_state(Backend& backend, const Corpus& c, const PlsvParams& prm, unsigned long long seed) {
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
  PeInput pin;
  pin.posteriors = MatrixD(N, Z, 0.0);
#pragma omp parallel for schedule(static)
  for (index_t n = 0; n < N; ++n) {
    double* l = pin.posteriors.row(n);
    const double M = c.length(n);
    for (index_t i = c.row_ptr[static_cast<size_t>(n)]; i < c.row_ptr[static_cast<size_t>(n) + 1]; ++i)
      for (int z = 0; z < Z; ++z) l[z] += c.count[static_cast<size_t>(i)] * logt(z, c.word[static_cast<size_t>(i)]);
    double lmax = l[0];
    for (int z = 1; z < Z; ++z) lmax = std::max(lmax, l[z]);
    double t = 0.0;
    for (int z = 0; z < Z; ++z) t += (l[z] = std::exp((l[z] - lmax) / M));
    for (int z = 0; z < Z; ++z) l[z] /= t;
  }
  double mean_len = 0.0;
  for (double v : c.count) mean_len += v;
  mean_len /= static_cast<double>(N);
  PeParams pp;
  pp.dim = D;
  pp.eta_r = std::max(1e-6, 0.5 * prm.gamma_per_topic * Z / mean_len);
  pp.eta_phi = std::max(1e-6, 0.5 * prm.beta_per_document * static_cast<double>(N) / (mean_len * static_cast<double>(N)));
  pp.max_iter = 200;
  pp.init_scale = prm.init_scale;
  const PeResult pe = fit_pe(backend, pin, pp, seed);
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

// The EM iterations shared by fitting and fold-in (fit_model false: theta and Phi stay fixed).
PlsvResult run_em(PlsvEngine& eng, const Corpus& c, const PlsvParams& prm, std::vector<double> phi, bool fit_model,
                  const PlsvProgress& progress, Clock::time_point t0, RunControl* control) {
  const index_t N = c.num_docs();
  const int Z = prm.topics, D = prm.dim;
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
  // A safe point ends an EM iteration: the next one starts from X, theta and Phi alone (its E-step
  // recomputes the rest), so those, the counters and the trace are the whole state.
  constexpr size_t kTraceColumns = 6;  // a PlsvTraceEntry's fields, in order
  if (const RunState* saved = resume_state(control)) {
    eng.set_docs(saved->matrix("plsv.docs", N, D));
    eng.set_theta(saved->matrix("plsv.theta", Z, c.num_words));
    phi = saved->get("plsv.phi");
    if (phi.size() != static_cast<size_t>(Z) * D) internal_error("checkpoint: PLSV's topic coordinates are not Z x D");
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
    s.put("plsv.docs", eng.docs());
    s.put("plsv.theta", eng.theta());
    s.put("plsv.phi", phi);
    s.put("plsv.prev", prev);
    s.put("plsv.newton", newton);
    s.put("plsv.iteration", next);
    std::vector<double> trace;
    for (const auto& e : res.trace)
      trace.insert(trace.end(), {static_cast<double>(e.iteration), e.log_posterior, e.log_likelihood,
                                 static_cast<double>(e.newton_steps), static_cast<double>(e.relocated), e.seconds});
    s.put("plsv.trace", trace);
    return s;
  };
  for (int it = first;; ++it) {
    const auto es = eng.e_step(phi, prm.alpha);
    const double lp = es.log_likelihood + es.theta_log_prior - 0.5 * gamma * es.docs_sq - 0.5 * beta * sum_sq(phi);
    if (!std::isfinite(lp)) internal_error("PLSV log posterior became non-finite (" + std::to_string(lp) + ")");
    PlsvTraceEntry e;
    e.iteration = it;
    e.log_posterior = lp;
    e.log_likelihood = es.log_likelihood;
    e.newton_steps = newton;
    e.seconds = seconds_before + seconds_since(t1);
    res.trace.push_back(e);
    if (progress) progress(e);
    res.log_posterior = lp;
    res.iterations = it;
    if (it > 0 && lp - prev < prm.tol * std::abs(lp)) {
      res.stop_reason = "tol";
      break;
    }
    if (it >= prm.max_iter) {
      res.stop_reason = "max_iter";
      break;
    }
    prev = lp;
    newton = 0;
    const bool relocate = prm.relocate_every > 0 && (it + 1) % prm.relocate_every == 0;
    if (!fit_model) {
      newton += static_cast<int>(eng.solve_docs(phi, gamma, nopt, nullptr).newton_steps);
      if (relocate) res.trace.back().relocated = eng.relocate_docs(phi, gamma);
      safe_point(control, it + 1, [&] { return capture(it + 1); });
      continue;
    }
    eng.m_step_theta(prm.alpha);
    int evaluations = 0, accepted_at = -1;
    auto reduced = [&](const std::vector<double>& x, std::vector<double>& grad) {
      const PeSweep sw = eng.solve_docs(x, gamma, nopt, &grad);
      newton += static_cast<int>(sw.newton_steps);
      ++evaluations;
      for (size_t i = 0; i < x.size(); ++i) grad[i] += beta * x[i];
      return sw.objective + 0.5 * beta * sum_sq(x);
    };
    optim::LbfgsOptions lo;
    lo.memory = prm.lbfgs_memory;
    lo.max_iter = prm.coord_iter;
    lo.grad_sq_tol = 0.0;
    lo.ftol = 0.0;
    optim::lbfgs_minimize(reduced, phi, lo, [&](const optim::LbfgsState&) { accepted_at = evaluations; });
    // A rejected trial may have left X solved for another Phi: solve once more for the accepted one.
    if (accepted_at != evaluations) newton += static_cast<int>(eng.solve_docs(phi, gamma, nopt, nullptr).newton_steps);
    if (relocate) res.trace.back().relocated = eng.relocate_docs(phi, gamma);
    safe_point(control, it + 1, [&] { return capture(it + 1); });
  }
  res.doc_coords = eng.docs();
  res.model.topic_coords = MatrixD(Z, D);
  res.model.topic_coords.data = phi;
  res.model.theta = eng.theta();
  res.topic_information = mean_topic_information(res.doc_coords, res.model.topic_coords);
  res.collapsed = res.topic_information < kPlsvCollapseInformation;
  res.seconds_fit = seconds_since(t1);
  for (double v : res.doc_coords.data)
    if (!std::isfinite(v)) internal_error("PLSV produced non-finite document coordinates");
  return res;
}

}  // namespace

namespace {

// The corpus resident on the backend, after the checks every fit needs.
std::unique_ptr<PlsvEngine> make_engine(Backend& backend, const Corpus& corpus, int topics, int dim) {
  if (topics < 2) input_error("params.topics: PLSV needs at least 2 topics, found " + std::to_string(topics));
  if (dim != 2 && dim != 3) internal_error("plsv: dim must be 2 or 3");
  if (corpus.num_docs() < 1 || corpus.num_words < 1) input_error("corpus: no documents or no words to fit");
  return backend.make_plsv(corpus, topics, dim);
}

}  // namespace

PlsvResult fit_plsv(Backend& backend, const Corpus& c, const PlsvParams& prm, unsigned long long seed,
                    const PlsvProgress& progress, RunControl* control) {
  const auto t0 = Clock::now();
  if (prm.topics < 2) input_error("params.topics: PLSV needs at least 2 topics, found " + std::to_string(prm.topics));
  if (c.num_docs() < 1) input_error("corpus: no documents to fit");
  auto eng = make_engine(backend, c, prm.topics, prm.dim);
  // A resumed fit takes X, theta and Phi from the checkpoint: its start (a PE fit) is not redone.
  if (resume_state(control)) return run_em(*eng, c, prm, {}, true, progress, t0, control);
  const Start s = initial_state(backend, c, prm, seed);
  eng->set_docs(s.X);
  eng->set_theta(s.theta);
  return run_em(*eng, c, prm, s.phi, true, progress, t0, control);
}

PlsvResult fold_in_plsv(Backend& backend, const Corpus& c, const PlsvModel& model, const PlsvParams& params,
                        const PlsvProgress& progress, RunControl* control) {
  const auto t0 = Clock::now();
  PlsvParams prm = params;
  prm.topics = static_cast<int>(model.topic_coords.rows);
  prm.dim = static_cast<int>(model.topic_coords.cols);
  if (model.theta.rows != prm.topics || model.theta.cols != c.num_words)
    input_error("model: theta is " + std::to_string(model.theta.rows) + " x " + std::to_string(model.theta.cols) +
                ", expected " + std::to_string(prm.topics) + " topics x " + std::to_string(c.num_words) + " words");
  auto eng = make_engine(backend, c, prm.topics, prm.dim);
  eng->set_docs(MatrixD(c.num_docs(), prm.dim, 0.0));
  eng->set_theta(model.theta);
  eng->relocate_docs(model.topic_coords.data, prm.gamma_per_topic * prm.topics);
  PlsvResult r = run_em(*eng, c, prm, model.topic_coords.data, false, progress, t0, control);
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
