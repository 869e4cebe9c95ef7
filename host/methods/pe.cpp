// PE's algorithm (paper section 3), written once for every backend.
//
// The paper alternates Newton steps on every r_n (Phi fixed) until all |dJ/dr_n|^2 < eps_r with
// one quasi-Newton step on Phi (R fixed). Here each L-BFGS evaluation at a trial Phi first runs
// those Newton steps (warm-started from the current R, so usually 0-2 steps per object) and then
// returns J and dJ/dPhi at the solved R. Because R*(Phi) minimises J for that Phi, dJ/dPhi at R*
// is the gradient of the reduced objective min_R J(R, Phi) (envelope theorem): L-BFGS then
// works on one fixed function, its curvature pairs stay valid across iterations, the line
// search sees the objective the paper's stopping rule refers to, and the stationary points are
// exactly those of the paper's alternation.
#include "orrery/pe.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <random>

#include "methods/random.hpp"
#include "methods/row_blocks.hpp"
#include "optim/lbfgs.hpp"
#include "orrery/clock.hpp"
#include "orrery/error.hpp"
#include "orrery/exact_sum.hpp"

namespace orrery {

// The default for engines that cannot hand over their chunk sums (orrery/engines.hpp): their rounded
// totals, one addition each.
PeSweep PeEngine::solve_objects_exact(const std::vector<double>& phi, const PeNewtonOptions& opt, ExactSum& sums) {
  std::vector<double> grad;
  const PeSweep s = solve_objects(phi, opt, &grad);
  if (grad.size() + 1 != sums.size()) internal_error("PeEngine::solve_objects_exact: expected K x D + 1 sums");
  for (size_t i = 0; i < grad.size(); ++i) sums.add(i, grad[i]);
  sums.add(grad.size(), s.objective);
  return s;
}

const std::vector<Field<PeParams>>& pe_fields() {
  static const std::vector<Field<PeParams>> fields = {
      {"dim", &PeParams::dim, "Output dimension D of the map.", 2, 3},
      {"eta_r", &PeParams::eta_r,
       "Weight of the prior eta_r |r_n|^2 on object coordinates: keeps each object's problem strictly convex "
       "and pulls ambiguous objects to the centre. Paper: 0.1.",
       0, 1e6, true},
      {"eta_phi", &PeParams::eta_phi,
       "Weight of the prior eta_phi |phi_k|^2 on class coordinates: larger values draw the classes together. "
       "Paper: 50.",
       0, 1e6, true},
      {"eps_r", &PeParams::eps_r, "An object is converged when |dJ/dr_n|^2 < eps_r (paper step 3).", 0, 1e6, true},
      {"eps_phi", &PeParams::eps_phi, "The fit stops when |dJ/dPhi|^2 < eps_phi (paper step 7).", 0, 1e6, true},
      {"ftol", &PeParams::ftol,
       "The fit also stops when an iteration lowers J by less than ftol * max(|J|, 1); reached first for "
       "large N in float arithmetic.",
       0, 1},
      {"max_iter", &PeParams::max_iter, "Cap on L-BFGS iterations on the class coordinates.", 0, 1e9},
      {"newton_max_iter", &PeParams::newton_max_iter, "Cap on Newton iterations per object per sweep.", 1, 1e6},
      {"lbfgs_memory", &PeParams::lbfgs_memory, "Number of curvature pairs kept by L-BFGS.", 1, 1000},
      {"class_init", &PeParams::class_init,
       "Initial class coordinates: mds (classical MDS of the posterior columns; deterministic), random "
       "(Gaussian, seeded) or file (input.class_coords).",
       },
      {"init_scale", &PeParams::init_scale, "RMS radius of the initial class coordinates (mds and random).", 0, 1e3,
       true},
      {"fit_classes", &PeParams::fit_classes,
       "false: keep input.class_coords fixed and place the objects only (out-of-sample mode)."},
  };
  return fields;
}

namespace {


void rescale_rms(std::vector<double>& phi, int K, int D, double radius) {
  std::vector<double> mean(static_cast<size_t>(D), 0.0);
  for (int k = 0; k < K; ++k)
    for (int d = 0; d < D; ++d) mean[d] += phi[k * D + d] / K;
  double ss = 0.0;
  for (int k = 0; k < K; ++k)
    for (int d = 0; d < D; ++d) {
      phi[k * D + d] -= mean[d];
      ss += phi[k * D + d] * phi[k * D + d];
    }
  const double rms = std::sqrt(ss / K);
  if (rms > 0) for (double& v : phi) v *= radius / rms;
}

// Classical MDS of the classes, each class represented by its posterior column over (at most
// kMdsRows evenly spaced) objects: the top-D eigenvectors of the double-centred Gram matrix by
// power iteration with deflation (K is small). Signs are fixed (largest entry positive) so the
// result is deterministic. Returns false when the columns carry no geometry (all equal).
bool mds_init(const MatrixD& P, int D, std::vector<double>& phi) {
  constexpr index_t kMdsRows = 20000;
  const int K = static_cast<int>(P.cols);
  const index_t step = std::max<index_t>(1, P.rows / kMdsRows);
  std::vector<double> G(static_cast<size_t>(K) * K, 0.0);
  for (index_t n = 0; n < P.rows; n += step) {
    const double* p = P.row(n);
    for (int a = 0; a < K; ++a)
      for (int b = 0; b <= a; ++b) G[a * K + b] += p[a] * p[b];
  }
  for (int a = 0; a < K; ++a)
    for (int b = 0; b < a; ++b) G[b * K + a] = G[a * K + b];
  // Double centring: B = J G J with J = I - 11'/K.
  std::vector<double> rmean(K, 0.0);
  double all = 0.0;
  for (int a = 0; a < K; ++a) {
    for (int b = 0; b < K; ++b) rmean[a] += G[a * K + b] / K;
    all += rmean[a] / K;
  }
  for (int a = 0; a < K; ++a)
    for (int b = 0; b < K; ++b) G[a * K + b] += all - rmean[a] - rmean[b];
  phi.assign(static_cast<size_t>(K) * D, 0.0);
  double first = 0.0;
  for (int d = 0; d < D; ++d) {
    std::vector<double> v(K), w(K);
    for (int a = 0; a < K; ++a) v[a] = 1.0 + 0.001 * ((a * 7919 + d * 104729) % 1000);  // fixed start
    double lambda = 0.0;
    for (int it = 0; it < 1000; ++it) {
      for (int a = 0; a < K; ++a) {
        double s = 0.0;
        for (int b = 0; b < K; ++b) s += G[a * K + b] * v[b];
        w[a] = s;
      }
      const double nrm = std::sqrt(std::inner_product(w.begin(), w.end(), w.begin(), 0.0));
      if (!(nrm > 0)) break;
      for (int a = 0; a < K; ++a) w[a] /= nrm;
      double diff = 0.0;
      for (int a = 0; a < K; ++a) diff += std::abs(w[a] - v[a]);
      v.swap(w);
      lambda = nrm;
      if (diff < 1e-12 * K) break;
    }
    if (d == 0) first = lambda;
    if (!(lambda > 1e-12 * std::max(first, 1e-300))) break;  // no more geometry: remaining axes stay 0
    int imax = 0;
    for (int a = 1; a < K; ++a)
      if (std::abs(v[a]) > std::abs(v[imax])) imax = a;
    const double sign = v[imax] < 0 ? -1.0 : 1.0;
    for (int a = 0; a < K; ++a) phi[a * D + d] = sign * v[a] * std::sqrt(lambda);
    for (int a = 0; a < K; ++a)
      for (int b = 0; b < K; ++b) G[a * K + b] -= lambda * v[a] * v[b];
  }
  return first > 0;
}

std::vector<double> initial_classes(const PeInput& in, const PeParams& prm, unsigned long long seed) {
  const int K = static_cast<int>(in.posteriors.cols), D = prm.dim;
  std::vector<double> phi;
  if (prm.class_init == PeClassInit::file || !prm.fit_classes) {
    if (in.class_coords.rows != K || in.class_coords.cols != D)
      input_error("input.class_coords: expected " + std::to_string(K) + " x " + std::to_string(D) +
                  " class coordinates (params.class_init = \"file\" or params.fit_classes = false), found " +
                  std::to_string(in.class_coords.rows) + " x " + std::to_string(in.class_coords.cols));
    return in.class_coords.data;
  }
  if (prm.class_init == PeClassInit::mds && mds_init(in.posteriors, D, phi)) {
    // Axes MDS could not fill (e.g. K = 2) get a small seeded spread so gradients can open them.
    const auto z = seeded_gaussian(phi.size(), seed);
    for (size_t i = 0; i < phi.size(); ++i) phi[i] += 1e-3 * z[i];
  } else {
    phi = seeded_gaussian(static_cast<size_t>(K) * D, seed);
  }
  rescale_rms(phi, K, D, prm.init_scale);
  return phi;
}

std::vector<double> log_priors_of(const PeInput& in) {
  const auto K = static_cast<size_t>(in.posteriors.cols);
  std::vector<double> lp(K, -std::log(static_cast<double>(K)));
  if (!in.priors.empty()) {
    if (in.priors.size() != K) internal_error("fit_pe: priors do not match K");
    for (size_t k = 0; k < K; ++k) lp[k] = std::log(in.priors[k]);
  }
  return lp;
}

}  // namespace

PeBlock pe_rank_block(index_t objects, int rank, int ranks) {
  if (ranks < 1 || rank < 0 || rank >= ranks) internal_error("pe_rank_block: rank " + std::to_string(rank) + " of " +
                                                              std::to_string(ranks));
  const index_t chunks = (objects + kPeChunk - 1) / kPeChunk;
  const auto edge = [&](int r) { return std::min(objects, chunks * r / ranks * kPeChunk); };
  return {edge(rank), edge(rank + 1)};
}

PeResult fit_pe(Backend& backend, const PeInput& in, const PeParams& prm, unsigned long long seed,
                const PeProgress& progress, RunControl* control, Comm* comm_given) {
  const auto t0 = Clock::now();
  const std::unique_ptr<Comm> own_comm = comm_given ? nullptr : make_single_comm();
  Comm& comm = comm_given ? *comm_given : *own_comm;
  const int K = static_cast<int>(in.posteriors.cols), D = prm.dim;
  const index_t N = in.posteriors.rows;
  if (N < 1 || K < 2) input_error("posteriors: PE needs at least 1 object and 2 classes");
  const std::vector<double> log_priors = log_priors_of(in);
  // Every rank reads the whole P, so every rank computes the same start.
  std::vector<double> phi = initial_classes(in, prm, seed);

  // This rank's objects; one process keeps the caller's P (the CPU engine reads it in place).
  const PeBlock block = pe_rank_block(N, comm.rank(), comm.size());
  const index_t n_local = block.end - block.begin;
  MatrixD P_block;
  if (comm.size() > 1) P_block = rows_of(in.posteriors, block);
  const MatrixD& P_local = comm.size() > 1 ? P_block : in.posteriors;

  // Start every object at the posterior-weighted mean of the classes: inside the convex hull
  // where its optimum usually is, so the first Newton sweep is short.
  MatrixD R0(n_local, D, 0.0);
  for (index_t n = 0; n < n_local; ++n)
    for (int k = 0; k < K; ++k)
      for (int d = 0; d < D; ++d) R0(n, d) += P_local(n, k) * phi[k * D + d];
  auto engine = backend.make_pe(P_local, log_priors, D, prm.eta_r);  // a rank may own no objects
  engine->set_objects(R0);

  PeResult res;
  res.seconds_init = seconds_since(t0);
  const auto t1 = Clock::now();
  PeNewtonOptions nopt;
  nopt.eps_r = prm.eps_r;
  nopt.max_iter = prm.newton_max_iter;
  PeSweep last;
  index_t newton_total = 0;
  int evaluations = 0;

  // One sweep over every rank's objects: the class gradient and the objective as exact sums of the
  // chunks' sums (the same bits for any number of ranks), the counters summed, the largest
  // |dJ/dr_n|^2 and Newton count the maxima (a NaN norm anywhere stays NaN: the stop test must see
  // it). Every rank issues the same four collectives in every evaluation.
  const size_t kd = static_cast<size_t>(K) * static_cast<size_t>(D);
  auto sweep = [&](const std::vector<double>& x, std::vector<double>& grad) {
    ExactSum sums(kd + 1);
    PeSweep s = engine->solve_objects_exact(x, nopt, sums);
    sums.allreduce(comm);
    std::vector<double> total(kd + 1);
    try {
      sums.results(total.data());
    } catch (const Error&) {
      internal_error("PE objective or class gradient became non-finite");
    }
    grad.assign(total.begin(), total.begin() + static_cast<std::ptrdiff_t>(kd));
    s.objective = total[kd];
    std::int64_t counts[2] = {static_cast<std::int64_t>(s.unconverged), static_cast<std::int64_t>(s.newton_steps)};
    comm.allreduce(counts, 2, ReduceOp::sum);
    std::int64_t maxima[2] = {s.max_newton_steps, std::isnan(s.max_grad_sq) ? 1 : 0};
    comm.allreduce(maxima, 2, ReduceOp::max);
    double max_grad_sq = std::isnan(s.max_grad_sq) ? 0.0 : s.max_grad_sq;
    comm.allreduce(&max_grad_sq, 1, ReduceOp::max);
    s.unconverged = static_cast<index_t>(counts[0]);
    s.newton_steps = static_cast<index_t>(counts[1]);
    s.max_newton_steps = static_cast<int>(maxima[0]);
    s.max_grad_sq = maxima[1] ? std::nan("") : max_grad_sq;
    return s;
  };

  auto reduced = [&](const std::vector<double>& x, std::vector<double>& grad) {
    last = sweep(x, grad);
    newton_total += last.newton_steps;
    ++evaluations;
    double prior = 0.0;
    for (size_t i = 0; i < x.size(); ++i) {
      prior += x[i] * x[i];
      grad[i] += 2.0 * prm.eta_phi * x[i];
    }
    const double J = last.objective + prm.eta_phi * prior;
    if (!std::isfinite(J)) internal_error("PE objective became non-finite (" + std::to_string(J) + ")");
    return J;
  };

  double seconds_before = 0.0;  // fit time of the interrupted run this one continues
  auto record = [&](int iteration, double J, double gsq) {
    PeTraceEntry e;
    e.iteration = iteration;
    e.objective = J;
    e.class_grad_sq = gsq;
    e.max_object_grad_sq = last.max_grad_sq;
    e.newton_steps = newton_total;
    e.evaluations = evaluations;
    e.seconds = seconds_before + seconds_since(t1);
    res.trace.push_back(e);
    if (progress) progress(e);
  };
  // A checkpoint holds, besides L-BFGS's state, the object coordinates its last evaluation left
  // (the next Newton solves start from them; every rank's, gathered, so that it resumes under any
  // number of ranks), the counters and the trace.
  const auto all_objects = [&] {
    return gather_rows(comm, engine->objects(), N, [&](int r) { return pe_rank_block(N, r, comm.size()); });
  };
  constexpr size_t kTraceColumns = 7;  // a PeTraceEntry's fields, in order
  const auto save = [&](RunState& s) {
    s.put("pe.objects", all_objects());
    s.put("pe.newton_total", static_cast<double>(newton_total));
    s.put("pe.evaluations", evaluations);
    s.put("pe.max_grad_sq", last.max_grad_sq);
    s.put("pe.unconverged", static_cast<double>(last.unconverged));
    std::vector<double> trace;
    for (const auto& e : res.trace)
      trace.insert(trace.end(), {static_cast<double>(e.iteration), e.objective, e.class_grad_sq, e.max_object_grad_sq,
                                 static_cast<double>(e.newton_steps), static_cast<double>(e.evaluations), e.seconds});
    s.put("pe.trace", trace);
  };
  if (const RunState* saved = resume_state(control)) {
    engine->set_objects(rows_of(saved->matrix("pe.objects", N, D), block));
    newton_total = static_cast<index_t>(saved->scalar("pe.newton_total"));
    evaluations = saved->count("pe.evaluations");
    last.max_grad_sq = saved->scalar("pe.max_grad_sq");
    last.unconverged = static_cast<index_t>(saved->scalar("pe.unconverged"));
    const auto& trace = saved->get("pe.trace");
    for (size_t q = 0; q + kTraceColumns <= trace.size(); q += kTraceColumns) {
      const double* r = trace.data() + q;
      res.trace.push_back({static_cast<int>(r[0]), r[1], r[2], r[3], static_cast<index_t>(r[4]), static_cast<int>(r[5]),
                           r[6]});
    }
    if (!res.trace.empty()) seconds_before = res.trace.back().seconds;
  }

  if (!prm.fit_classes) {
    std::vector<double> grad;
    const double J = reduced(phi, grad);
    double gsq = 0.0;
    for (double g : grad) gsq += g * g;
    record(0, J, gsq);
    res.objective = J;
    res.stop_reason = "classes_fixed";
  } else {
    optim::LbfgsOptions lo;
    lo.memory = prm.lbfgs_memory;
    lo.max_iter = prm.max_iter;
    lo.grad_sq_tol = prm.eps_phi;
    lo.ftol = prm.ftol;
    const auto rep = optim::lbfgs_minimize(
        reduced, phi, lo, [&](const optim::LbfgsState& s) { record(s.iteration, s.f, s.grad_sq); },
        {control, save});
    res.objective = rep.last.f;
    res.iterations = rep.last.iteration;
    res.stop_reason = rep.stop_reason;
    // The line search may have left R at a rejected trial Phi: solve once more at the accepted one.
    if (res.trace.empty() || evaluations != res.trace.back().evaluations) {
      std::vector<double> grad;
      res.objective = reduced(phi, grad);
    }
  }
  res.evaluations = evaluations;
  res.objects_converged = last.unconverged == 0;
  res.class_coords = MatrixD(K, D);
  res.class_coords.data = phi;
  res.seconds_fit = seconds_since(t1);
  // Every rank gets the whole map (and every rank's share and time, for the report).
  const auto ranks = static_cast<size_t>(comm.size());
  res.rank_objects.resize(ranks);
  for (int r = 0; r < comm.size(); ++r) {
    const PeBlock b = pe_rank_block(N, r, comm.size());
    res.rank_objects[static_cast<size_t>(r)] = b.end - b.begin;
  }
  res.object_coords = all_objects();
  res.rank_seconds_fit.resize(ranks);
  comm.allgatherv(&res.seconds_fit, 1, res.rank_seconds_fit.data(), std::vector<std::size_t>(ranks, 1));
  for (double v : res.object_coords.data)
    if (!std::isfinite(v)) internal_error("PE produced non-finite object coordinates");
  return res;
}

MatrixD pe_map_posteriors(const MatrixD& R, const MatrixD& Phi, const std::vector<double>& priors) {
  const index_t N = R.rows;
  const int K = static_cast<int>(Phi.rows), D = static_cast<int>(Phi.cols);
  MatrixD Q(N, K);
#pragma omp parallel for schedule(static)
  for (index_t n = 0; n < N; ++n) {
    double emax = -kInf;
    for (int k = 0; k < K; ++k) {
      double d2 = 0.0;
      for (int d = 0; d < D; ++d) d2 += (R(n, d) - Phi(k, d)) * (R(n, d) - Phi(k, d));
      const double lp = priors.empty() ? 0.0 : std::log(priors[static_cast<size_t>(k)]);
      Q(n, k) = lp - 0.5 * d2;
      emax = std::max(emax, Q(n, k));
    }
    double s = 0.0;
    for (int k = 0; k < K; ++k) s += (Q(n, k) = std::exp(Q(n, k) - emax));
    for (int k = 0; k < K; ++k) Q(n, k) /= s;
  }
  return Q;
}

double pe_precision_at(const MatrixD& P, const MatrixD& R, const MatrixD& Phi, index_t h) {
  const index_t N = P.rows;
  const int K = static_cast<int>(P.cols), D = static_cast<int>(R.cols);
  h = std::min(h, N);
  if (h < 1) return 0.0;
  double total = 0.0;
#pragma omp parallel for reduction(+ : total) schedule(static)
  for (int k = 0; k < K; ++k) {
    std::vector<index_t> by_p(static_cast<size_t>(N)), by_d(static_cast<size_t>(N));
    std::iota(by_p.begin(), by_p.end(), 0);
    std::iota(by_d.begin(), by_d.end(), 0);
    std::vector<double> dist(static_cast<size_t>(N));
    for (index_t n = 0; n < N; ++n) {
      double s = 0.0;
      for (int d = 0; d < D; ++d) s += (R(n, d) - Phi(k, d)) * (R(n, d) - Phi(k, d));
      dist[static_cast<size_t>(n)] = s;
    }
    std::partial_sort(by_p.begin(), by_p.begin() + h, by_p.end(), [&](index_t a, index_t b) {
      return P(a, k) > P(b, k) || (P(a, k) == P(b, k) && a < b);
    });
    std::partial_sort(by_d.begin(), by_d.begin() + h, by_d.end(), [&](index_t a, index_t b) {
      return dist[a] < dist[b] || (dist[a] == dist[b] && a < b);
    });
    std::vector<index_t> a(by_p.begin(), by_p.begin() + h), b(by_d.begin(), by_d.begin() + h);
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    std::vector<index_t> common;
    std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(common));
    total += static_cast<double>(common.size()) / static_cast<double>(h);
  }
  return total / K;
}

}  // namespace orrery
