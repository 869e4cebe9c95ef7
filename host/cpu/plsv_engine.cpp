// PLSV's CPU engine: the reference path, in double, OpenMP over documents (E-step, Newton) and over
// words (theta statistics). Every sum over documents runs through fixed chunks of documents (64,
// kPlsvChunk for the statistics) whose sums are added exactly (ExactSum for O(Z D) values, fixed point for the W x Z
// statistics), so the result depends neither on the thread count nor on how chunk-aligned blocks of
// the corpus are spread over engines (ranks).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>

#include "cpu/engines.hpp"
#include "orrery/corpus.hpp"
#include "orrery/engines.hpp"
#include "orrery/error.hpp"
#include "orrery/exact_sum.hpp"
#include "orrery/math/exp.hpp"
#include "orrery/math/plsv.hpp"
#include "prep/clones.hpp"

namespace orrery::cpu {
namespace {

// Documents per chunk of the threads' work and of the sums other than S (the log-likelihood, the
// topic gradient, the objective): small, so that threads share small corpora evenly; a divisor of
// kPlsvChunk, so that blocks of whole kPlsvChunk chunks have these chunks too.
constexpr index_t kChunk = 64;
static_assert(kPlsvChunk % kChunk == 0, "rank blocks must hold whole thread chunks");

// S_zw in fixed point, kStatDigits int64 per value: its integer part, then two 32-bit digits of its
// fraction (the lowest worth 2^-64), each word's Z values as three planes (integer parts, high and low
// fraction digits) so that a word's update vectorises. A chunk's share th_zw sum_n u_nw p_nz (in
// [0, the chunk's count of w]) is cut into digits exactly but for its bits below 2^-64, rounded
// alike whatever the split; integer sums are associative, so every grouping of the chunks (threads,
// ranks) gives the same S. The 31 spare bits of each fraction digit absorb the carries of 2^31
// additions; carries are propagated at the end of each E-step (so a sum over fewer than 2^31 ranks
// cannot overflow) and again where S is read. Against the alpha > 0 that theta adds to every S_zw,
// an absolute 2^-64 per chunk is far below anything the fit can see.
constexpr int kStatDigits = 3;
constexpr double kTwo32 = 4294967296.0;
constexpr double kTwo52 = 4503599627370496.0;  // a share's range: whole numbers below it are exact doubles

// floor(t) for t in [0, 2^52): t + 2^52 rounds t to a whole number (the ulp there is 1), one less
// when that rounded up. Unlike std::floor and conversions to int64, which may raise floating-point
// exceptions, these vectorise under the default -ftrapping-math.
inline double floor_share(double t) {
  const double r = (t + kTwo52) - kTwo52;
  return r > t ? r - 1.0 : r;
}

// x in [0, 2^52), rounded to the nearest whole number (ties to even), as an integer: x + 2^52 has it
// in its mantissa bits.
inline std::int64_t whole_to_int(double x) {
  const double y = x + kTwo52;
  std::int64_t bits;
  std::memcpy(&bits, &y, sizeof bits);
  return bits - 0x4330000000000000;  // the bits of 2^52
}

// Adds th[z] s[z] to value z of one word's planes (whole, high, low) for every topic; returns how
// many shares were out of range (not in [0, 2^52): a NaN, say), which add nothing.
ORRERY_CLONES int add_stats(const double* __restrict th, const double* __restrict s, int Z,
                            std::int64_t* __restrict whole, std::int64_t* __restrict high,
                            std::int64_t* __restrict low) {
  int bad = 0;
  for (int z = 0; z < Z; ++z) {
    const double share = th[z] * s[z];
    const bool ok = (share >= 0.0) & (share < kTwo52);  // & rather than &&: no branch in the loop
    bad += !ok;
    const double t = ok ? share : 0.0;
    const double w = floor_share(t);
    const double f = (t - w) * kTwo32;  // exact: a power-of-two scaling of an exact difference
    const double h = floor_share(f);
    whole[z] += whole_to_int(w);
    high[z] += whole_to_int(h);
    low[z] += whole_to_int((f - h) * kTwo32);  // rounded to nearest: the bits below 2^-64 go, alike for any split
  }
  return bad;
}

// sum_z log theta_zw over one word's Z positive values, in SIMD lanes (math::log_positive, within an
// ulp of std::log): W x Z logarithms an E-step, which libm's scalar log made a tenth of PLSV's time.
ORRERY_CLONES double sum_logs(const double* __restrict th, int Z) {
  double lp = 0.0;
  ORRERY_SIMD(reduction(+ : lp))
  for (int z = 0; z < Z; ++z) lp += math::log_positive(th[z]);
  return lp;
}

// out_z = log theta_zw for one word's Z positive values, in SIMD lanes (math::log_positive).
ORRERY_CLONES void logs_of(const double* __restrict th, int Z, double* __restrict out) {
  ORRERY_SIMD()
  for (int z = 0; z < Z; ++z) out[z] = math::log_positive(th[z]);
}

// Moves the carries of one word's fraction digits up (digits are sums of non-negative parts).
inline void carry_stats(std::int64_t* whole, std::int64_t* high, std::int64_t* low, int Z) {
  for (int z = 0; z < Z; ++z) {
    high[z] += low[z] >> 32;
    low[z] &= 0xffffffff;
    whole[z] += high[z] >> 32;
    high[z] &= 0xffffffff;
  }
}

// Newton on documents [begin, end) (math::plsv_newton_document, inlined here so that its loops over
// topics get the clone's instruction set: an exp per topic per step is the cost), their sweep totals
// added to s and, with gp, their topic forces times M_n.
template <int D>
ORRERY_CLONES void solve_documents(const double* R, const double* len, double* X, const double* phi, int Z,
                                   double gamma, const PeNewtonOptions& opt, index_t begin, index_t end,
                                   const double* zeros, double* rs, double* scratch, double* force, PeSweep& s,
                                   double* gp) {
  for (index_t n = begin; n < end; ++n) {
    const double M = len[n];
    const double* r = R + n * Z;
    for (int z = 0; z < Z; ++z) rs[z] = r[z] / M;
    double* x = X + n * D;
    const auto res = math::plsv_newton_document<double, D>(rs, zeros, phi, Z, x, M, gamma, opt.eps_r, opt.max_iter,
                                                            scratch);
    add_object(s, res, M * res.objective);
    if (gp) {
      std::fill(force, force + Z * D, 0.0);
      math::pe_class_forces_from_q<double, D>(rs, res.q, phi, Z, x, force);
      for (int i = 0; i < Z * D; ++i) gp[i] += M * force[i];
    }
  }
}

// The E-step's per-document work for documents [begin, end) (MATH.md §2): proportions P_n, each word's
// mixture m = sum_z P_nz theta_zw (kept as u = c_nw / m for the statistics), R_nz = P_nz sum_w u
// theta_zw; their log-likelihood and sum |x_n|^2 added to ll and sq in document order. In the clone's
// SIMD lanes: the sums over topics run in lanes (their order fixed by the instruction set, as
// ORRERY_CLONES says), the logarithm is math::log_positive.
template <int D>
ORRERY_CLONES void e_step_documents(const Corpus& c, const double* X, const double* phi, const double* theta_t, int Z,
                                    index_t begin, index_t end, double* P, double* R, double* u_out,
                                    double* __restrict acc, double& ll, double& sq) {
  for (index_t n = begin; n < end; ++n) {
    const double* x = X + n * D;
    double* __restrict p = P + n * Z;
    math::plsv_topic_proportions<double, D>(x, phi, Z, p);
    std::fill(acc, acc + Z, 0.0);
    for (index_t i = c.row_ptr[static_cast<size_t>(n)]; i < c.row_ptr[static_cast<size_t>(n) + 1]; ++i) {
      const double* __restrict th = theta_t + static_cast<index_t>(c.word[static_cast<size_t>(i)]) * Z;
      const double cnt = c.count[static_cast<size_t>(i)];
      double m = 0.0;
      ORRERY_SIMD(reduction(+ : m))
      for (int z = 0; z < Z; ++z) m += p[z] * th[z];
      const double u = cnt / m;
      u_out[i] = u;
      ll += cnt * math::log_positive(m);
      ORRERY_SIMD()
      for (int z = 0; z < Z; ++z) acc[z] += u * th[z];
    }
    double* r = R + n * Z;
    for (int z = 0; z < Z; ++z) r[z] = p[z] * acc[z];
    for (int d = 0; d < D; ++d) sq += x[d] * x[d];
  }
}

class CpuPlsvEngine final : public PlsvEngine {
 public:
  CpuPlsvEngine(const Corpus& c, int topics, int dim, int threads)
      : c_(c), Z_(topics), D_(dim), threads_(threads), N_(c.num_docs()), W_(c.num_words) {
    X_.assign(static_cast<size_t>(N_ * D_), 0.0);
    theta_t_.assign(static_cast<size_t>(W_ * Z_), 1.0 / static_cast<double>(W_));
    P_.assign(static_cast<size_t>(N_ * Z_), 0.0);
    R_.assign(static_cast<size_t>(N_ * Z_), 0.0);
    S_fixed_.assign(static_cast<size_t>(W_ * Z_) * kStatDigits, 0);
    u_.assign(static_cast<size_t>(c.nnz()), 0.0);
    len_.resize(static_cast<size_t>(N_));
    for (index_t n = 0; n < N_; ++n) len_[static_cast<size_t>(n)] = c.length(n);
    // Columns (CSC) of the counts: for each word, the positions of its nonzeros in document order.
    col_ptr_.assign(static_cast<size_t>(W_ + 1), 0);
    for (auto w : c.word) ++col_ptr_[static_cast<size_t>(w) + 1];
    for (index_t w = 0; w < W_; ++w) col_ptr_[static_cast<size_t>(w + 1)] += col_ptr_[static_cast<size_t>(w)];
    col_src_.resize(static_cast<size_t>(c.nnz()));
    col_doc_.resize(static_cast<size_t>(c.nnz()));
    std::vector<index_t> fill(col_ptr_.begin(), col_ptr_.end() - 1);
    for (index_t n = 0; n < N_; ++n)
      for (index_t i = c.row_ptr[static_cast<size_t>(n)]; i < c.row_ptr[static_cast<size_t>(n) + 1]; ++i) {
        const auto slot = static_cast<size_t>(fill[static_cast<size_t>(c.word[static_cast<size_t>(i)])]++);
        col_src_[slot] = i;
        col_doc_[slot] = n;
      }
  }

  std::string name() const override { return "cpu (" + std::to_string(threads_) + " threads)"; }

  void set_docs(const MatrixD& X) override {
    if (X.rows != N_ || X.cols != D_) internal_error("CpuPlsvEngine::set_docs: shape mismatch");
    X_ = X.data;
  }
  MatrixD docs() const override {
    MatrixD X(N_, D_);
    X.data = X_;
    return X;
  }
  void set_theta(const MatrixD& theta) override {
    if (theta.rows != Z_ || theta.cols != W_) internal_error("CpuPlsvEngine::set_theta: shape mismatch");
    for (index_t z = 0; z < Z_; ++z)
      for (index_t w = 0; w < W_; ++w) theta_t_[static_cast<size_t>(w * Z_ + z)] = theta(z, w);
  }
  MatrixD theta() const override {
    MatrixD T(Z_, W_);
    for (index_t z = 0; z < Z_; ++z)
      for (index_t w = 0; w < W_; ++w) T(z, w) = theta_t_[static_cast<size_t>(w * Z_ + z)];
    return T;
  }
  MatrixD topic_counts() const override {
    MatrixD R(N_, Z_);
    R.data = R_;
    return R;
  }

  EStep e_step(const std::vector<double>& phi, double alpha) override {
    return D_ == 2 ? e_step_impl<2>(phi, alpha, nullptr) : e_step_impl<3>(phi, alpha, nullptr);
  }
  EStep e_step_exact(const std::vector<double>& phi, double alpha, ExactSum& sums) override {
    if (sums.size() != 2) internal_error("CpuPlsvEngine::e_step_exact: expected 2 sums");
    return D_ == 2 ? e_step_impl<2>(phi, alpha, &sums) : e_step_impl<3>(phi, alpha, &sums);
  }
  std::vector<std::int64_t>* word_topic_sums() override { return &S_fixed_; }

  void m_step_theta(double alpha) override {
    // S (rounded once from the digits) takes theta's place, then becomes theta in place: one read of
    // the digits.
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (index_t w = 0; w < W_; ++w)
      for (int z = 0; z < Z_; ++z) theta_t_[static_cast<size_t>(w * Z_ + z)] = stat(w, z);
    std::vector<double> total(static_cast<size_t>(Z_), 0.0);
    for (index_t w = 0; w < W_; ++w)
      for (int z = 0; z < Z_; ++z) total[static_cast<size_t>(z)] += theta_t_[static_cast<size_t>(w * Z_ + z)];
    const auto Wd = static_cast<double>(W_);
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (index_t w = 0; w < W_; ++w)
      for (int z = 0; z < Z_; ++z) {
        double& t = theta_t_[static_cast<size_t>(w * Z_ + z)];
        t = math::plsv_theta_update(t, total[static_cast<size_t>(z)], alpha, Wd);
      }
  }

  index_t relocate_docs(const std::vector<double>& phi, double gamma) override {
    return D_ == 2 ? relocate_impl<2>(phi, gamma) : relocate_impl<3>(phi, gamma);
  }

  PeSweep solve_docs(const std::vector<double>& phi, double gamma, const PeNewtonOptions& opt,
                     std::vector<double>* topic_grad) override {
    return D_ == 2 ? solve_impl<2>(phi, gamma, opt, topic_grad, nullptr)
                   : solve_impl<3>(phi, gamma, opt, topic_grad, nullptr);
  }
  PeSweep solve_docs_exact(const std::vector<double>& phi, double gamma, const PeNewtonOptions& opt,
                           ExactSum& sums) override {
    if (sums.size() != static_cast<size_t>(Z_ * D_) + 1) internal_error("CpuPlsvEngine::solve_docs_exact: expected Z x D + 1 sums");
    std::vector<double> grad;
    return D_ == 2 ? solve_impl<2>(phi, gamma, opt, &grad, &sums) : solve_impl<3>(phi, gamma, opt, &grad, &sums);
  }

 private:
  index_t chunks() const { return (N_ + kChunk - 1) / kChunk; }
  std::int64_t* plane(index_t w, int digit) { return S_fixed_.data() + (w * kStatDigits + digit) * Z_; }
  // S_zw, rounded from its digits carried here (they may hold other engines' sums, added since the
  // E-step carried them): the same integer value gives the same double whatever its digits were.
  double stat(index_t w, int z) const {
    const std::int64_t* d = S_fixed_.data() + w * kStatDigits * Z_ + z;
    std::int64_t whole = d[0], high = d[Z_], low = d[2 * Z_];
    carry_stats(&whole, &high, &low, 1);
    return static_cast<double>(whole) + (static_cast<double>(high) + static_cast<double>(low) / kTwo32) / kTwo32;
  }

  // With `exact`, every chunk's log-likelihood and sum |x_n|^2 are added to it as they are.
  template <int D>
  EStep e_step_impl(const std::vector<double>& phi, double alpha, ExactSum* exact) {
    const index_t nc = chunks();
    std::vector<double> ll_part(static_cast<size_t>(nc), 0.0), sq_part(static_cast<size_t>(nc), 0.0);
#pragma omp parallel num_threads(threads_)
    {
      std::vector<double> acc(static_cast<size_t>(Z_));
#pragma omp for schedule(dynamic, 1)
      for (index_t ch = 0; ch < nc; ++ch) {
        double ll = 0.0, sq = 0.0;
        e_step_documents<D>(c_, X_.data(), phi.data(), theta_t_.data(), Z_, ch * kChunk,
                            std::min(N_, (ch + 1) * kChunk), P_.data(), R_.data(), u_.data(), acc.data(), ll, sq);
        ll_part[static_cast<size_t>(ch)] = ll;
        sq_part[static_cast<size_t>(ch)] = sq;
      }
    }
    // Theta statistics by words (each word's column in document order, summed per kPlsvChunk
    // documents, those shares added in fixed point) and alpha sum log theta.
    std::vector<double> prior_part(static_cast<size_t>(W_), 0.0);
    index_t out_of_range = 0;
#pragma omp parallel num_threads(threads_) reduction(+ : out_of_range)
    {
      std::vector<double> s(static_cast<size_t>(Z_));
#pragma omp for schedule(dynamic, 64)
      for (index_t w = 0; w < W_; ++w) {
        const double* th = theta_t_.data() + w * Z_;
        std::fill(plane(w, 0), plane(w, 0) + Z_ * kStatDigits, 0);
        const auto flush = [&] { out_of_range += add_stats(th, s.data(), Z_, plane(w, 0), plane(w, 1), plane(w, 2)); };
        index_t chunk = -1;
        for (index_t j = col_ptr_[static_cast<size_t>(w)]; j < col_ptr_[static_cast<size_t>(w) + 1]; ++j) {
          const index_t n = col_doc_[static_cast<size_t>(j)];
          if (n / kPlsvChunk != chunk) {
            if (chunk >= 0) flush();
            chunk = n / kPlsvChunk;
            std::fill(s.begin(), s.end(), 0.0);
          }
          const double u = u_[static_cast<size_t>(col_src_[static_cast<size_t>(j)])];
          const double* p = P_.data() + n * Z_;
          for (int z = 0; z < Z_; ++z) s[static_cast<size_t>(z)] += u * p[z];
        }
        if (chunk >= 0) flush();
        carry_stats(plane(w, 0), plane(w, 1), plane(w, 2), Z_);
        prior_part[static_cast<size_t>(w)] = sum_logs(th, Z_);
      }
    }
    if (out_of_range)
      internal_error("PLSV word-topic statistics are not finite or exceed 2^52 (" + std::to_string(out_of_range) +
                     " values)");
    EStep out;
    for (index_t ch = 0; ch < nc; ++ch) {
      out.log_likelihood += ll_part[static_cast<size_t>(ch)];
      out.docs_sq += sq_part[static_cast<size_t>(ch)];
      if (exact) {
        exact->add(0, ll_part[static_cast<size_t>(ch)]);
        exact->add(1, sq_part[static_cast<size_t>(ch)]);
      }
    }
    for (double v : prior_part) out.theta_log_prior += v;
    out.theta_log_prior *= alpha;
    return out;
  }

  template <int D>
  index_t relocate_impl(const std::vector<double>& phi, double gamma) {
    index_t moved = 0;
    std::vector<double> log_theta_t(theta_t_.size());
#pragma omp parallel num_threads(threads_) reduction(+ : moved)
    {
      std::vector<double> p(static_cast<size_t>(Z_)), l(static_cast<size_t>(Z_));
#pragma omp for schedule(static)
      for (index_t w = 0; w < W_; ++w) logs_of(theta_t_.data() + w * Z_, Z_, log_theta_t.data() + w * Z_);
#pragma omp for schedule(dynamic, 64)
      for (index_t n = 0; n < N_; ++n) {
        const auto b = static_cast<size_t>(c_.row_ptr[static_cast<size_t>(n)]);
        const int which = math::plsv_relocate_document<double, D>(
            X_.data() + n * D, phi.data(), Z_, c_.word.data() + b, c_.count.data() + b,
            c_.row_ptr[static_cast<size_t>(n) + 1] - c_.row_ptr[static_cast<size_t>(n)], theta_t_.data(), gamma, l.data(), p.data(),
            log_theta_t.data());
        moved += which != -2;
      }
    }
    return moved;
  }

  // With `exact`, every chunk's topic gradient and objective are added to it (Z x D, then the
  // objective) as they are.
  template <int D>
  PeSweep solve_impl(const std::vector<double>& phi, double gamma, const PeNewtonOptions& opt,
                     std::vector<double>* topic_grad, ExactSum* exact) {
    const index_t nc = chunks();
    std::vector<PeSweep> part(static_cast<size_t>(nc));
    std::vector<double> grad_part(topic_grad ? static_cast<size_t>(nc * Z_ * D) : 0, 0.0);
    const std::vector<double> zeros(static_cast<size_t>(Z_), 0.0);
#pragma omp parallel num_threads(threads_)
    {
      std::vector<double> scratch(static_cast<size_t>(2 * Z_)), rs(static_cast<size_t>(Z_)),
          force(static_cast<size_t>(Z_ * D));
#pragma omp for schedule(dynamic, 1)
      for (index_t ch = 0; ch < nc; ++ch) {
        PeSweep s;
        double* gp = topic_grad ? grad_part.data() + ch * Z_ * D : nullptr;
        solve_documents<D>(R_.data(), len_.data(), X_.data(), phi.data(), Z_, gamma, opt, ch * kChunk,
                           std::min(N_, (ch + 1) * kChunk), zeros.data(), rs.data(), scratch.data(), force.data(), s,
                           gp);
        part[static_cast<size_t>(ch)] = s;
      }
    }
    const PeSweep total = combine_sweeps(part);
    if (exact) {
      for (index_t ch = 0; ch < nc; ++ch) {
        const double* g = grad_part.data() + ch * Z_ * D;
        for (int i = 0; i < Z_ * D; ++i) exact->add(static_cast<size_t>(i), g[i]);
        exact->add(static_cast<size_t>(Z_ * D), part[static_cast<size_t>(ch)].objective);
      }
    }
    if (topic_grad) {
      topic_grad->assign(static_cast<size_t>(Z_ * D), 0.0);
      for (index_t ch = 0; ch < nc; ++ch)
        for (int i = 0; i < Z_ * D; ++i) (*topic_grad)[static_cast<size_t>(i)] += grad_part[static_cast<size_t>(ch * Z_ * D + i)];
    }
    return total;
  }

  const Corpus& c_;
  int Z_, D_, threads_;
  index_t N_, W_;
  std::vector<double> X_, theta_t_, P_, R_, u_, len_;
  std::vector<std::int64_t> S_fixed_;  // W x kStatDigits x Z (plane)
  std::vector<index_t> col_ptr_, col_src_, col_doc_;
};

}  // namespace

std::unique_ptr<PlsvEngine> make_plsv_engine(const Corpus& corpus, int topics, int dim, int threads) {
  return std::make_unique<CpuPlsvEngine>(corpus, topics, dim, threads);
}

}  // namespace orrery::cpu
