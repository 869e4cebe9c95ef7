// PLSV's CPU engine: the reference path, in double, OpenMP over documents (E-step, Newton) and over
// words (theta statistics). Every sum over documents or words runs in a fixed order or through
// fixed chunks, so the result does not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <memory>

#include "cpu/engines.hpp"
#include "orrery/corpus.hpp"
#include "orrery/engines.hpp"
#include "orrery/error.hpp"
#include "orrery/math/plsv.hpp"
#include "prep/clones.hpp"

namespace orrery::cpu {
namespace {

constexpr index_t kChunk = 256;  // documents per reduction chunk

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

class CpuPlsvEngine final : public PlsvEngine {
 public:
  CpuPlsvEngine(const Corpus& c, int topics, int dim, int threads)
      : c_(c), Z_(topics), D_(dim), threads_(threads), N_(c.num_docs()), W_(c.num_words) {
    X_.assign(static_cast<size_t>(N_ * D_), 0.0);
    theta_t_.assign(static_cast<size_t>(W_ * Z_), 1.0 / static_cast<double>(W_));
    P_.assign(static_cast<size_t>(N_ * Z_), 0.0);
    R_.assign(static_cast<size_t>(N_ * Z_), 0.0);
    S_t_.assign(static_cast<size_t>(W_ * Z_), 0.0);
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
    return D_ == 2 ? e_step_impl<2>(phi, alpha) : e_step_impl<3>(phi, alpha);
  }

  void m_step_theta(double alpha) override {
    std::vector<double> total(static_cast<size_t>(Z_), 0.0);
    for (index_t w = 0; w < W_; ++w)
      for (int z = 0; z < Z_; ++z) total[static_cast<size_t>(z)] += S_t_[static_cast<size_t>(w * Z_ + z)];
    const auto Wd = static_cast<double>(W_);
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (index_t w = 0; w < W_; ++w)
      for (int z = 0; z < Z_; ++z) {
        const auto i = static_cast<size_t>(w * Z_ + z);
        theta_t_[i] = math::plsv_theta_update(S_t_[i], total[static_cast<size_t>(z)], alpha, Wd);
      }
  }

  index_t relocate_docs(const std::vector<double>& phi, double gamma) override {
    return D_ == 2 ? relocate_impl<2>(phi, gamma) : relocate_impl<3>(phi, gamma);
  }

  PeSweep solve_docs(const std::vector<double>& phi, double gamma, const PeNewtonOptions& opt,
                     std::vector<double>* topic_grad) override {
    return D_ == 2 ? solve_impl<2>(phi, gamma, opt, topic_grad) : solve_impl<3>(phi, gamma, opt, topic_grad);
  }

 private:
  index_t chunks() const { return (N_ + kChunk - 1) / kChunk; }

  template <int D>
  EStep e_step_impl(const std::vector<double>& phi, double alpha) {
    const index_t nc = chunks();
    std::vector<double> ll_part(static_cast<size_t>(nc), 0.0), sq_part(static_cast<size_t>(nc), 0.0);
#pragma omp parallel num_threads(threads_)
    {
      std::vector<double> acc(static_cast<size_t>(Z_));
#pragma omp for schedule(dynamic, 1)
      for (index_t ch = 0; ch < nc; ++ch) {
        double ll = 0.0, sq = 0.0;
        for (index_t n = ch * kChunk; n < std::min(N_, (ch + 1) * kChunk); ++n) {
          const double* x = X_.data() + n * D;
          double* p = P_.data() + n * Z_;
          math::plsv_topic_proportions<double, D>(x, phi.data(), Z_, p);
          std::fill(acc.begin(), acc.end(), 0.0);
          for (index_t i = c_.row_ptr[static_cast<size_t>(n)]; i < c_.row_ptr[static_cast<size_t>(n) + 1]; ++i) {
            const double* th = theta_t_.data() + static_cast<index_t>(c_.word[static_cast<size_t>(i)]) * Z_;
            const double cnt = c_.count[static_cast<size_t>(i)];
            const double m = math::plsv_word_mixture(p, th, Z_);
            const double u = cnt / m;
            u_[static_cast<size_t>(i)] = u;
            ll += cnt * std::log(m);
            for (int z = 0; z < Z_; ++z) acc[static_cast<size_t>(z)] += u * th[z];
          }
          double* r = R_.data() + n * Z_;
          for (int z = 0; z < Z_; ++z) r[z] = p[z] * acc[static_cast<size_t>(z)];
          for (int d = 0; d < D; ++d) sq += x[d] * x[d];
        }
        ll_part[static_cast<size_t>(ch)] = ll;
        sq_part[static_cast<size_t>(ch)] = sq;
      }
    }
    // Theta statistics by words (each word's column in document order) and alpha sum log theta.
    std::vector<double> prior_part(static_cast<size_t>(W_), 0.0);
#pragma omp parallel num_threads(threads_)
    {
      std::vector<double> s(static_cast<size_t>(Z_));
#pragma omp for schedule(dynamic, 64)
      for (index_t w = 0; w < W_; ++w) {
        std::fill(s.begin(), s.end(), 0.0);
        for (index_t j = col_ptr_[static_cast<size_t>(w)]; j < col_ptr_[static_cast<size_t>(w) + 1]; ++j) {
          const double u = u_[static_cast<size_t>(col_src_[static_cast<size_t>(j)])];
          const double* p = P_.data() + col_doc_[static_cast<size_t>(j)] * Z_;
          for (int z = 0; z < Z_; ++z) s[static_cast<size_t>(z)] += u * p[z];
        }
        const double* th = theta_t_.data() + w * Z_;
        double* st = S_t_.data() + w * Z_;
        double lp = 0.0;
        for (int z = 0; z < Z_; ++z) {
          st[z] = th[z] * s[static_cast<size_t>(z)];
          lp += std::log(th[z]);
        }
        prior_part[static_cast<size_t>(w)] = lp;
      }
    }
    EStep out;
    for (double v : ll_part) out.log_likelihood += v;
    for (double v : sq_part) out.docs_sq += v;
    for (double v : prior_part) out.theta_log_prior += v;
    out.theta_log_prior *= alpha;
    return out;
  }

  template <int D>
  index_t relocate_impl(const std::vector<double>& phi, double gamma) {
    index_t moved = 0;
#pragma omp parallel num_threads(threads_) reduction(+ : moved)
    {
      std::vector<double> p(static_cast<size_t>(Z_)), l(static_cast<size_t>(Z_));
#pragma omp for schedule(dynamic, 64)
      for (index_t n = 0; n < N_; ++n) {
        const auto b = static_cast<size_t>(c_.row_ptr[static_cast<size_t>(n)]);
        const int which = math::plsv_relocate_document<double, D>(
            X_.data() + n * D, phi.data(), Z_, c_.word.data() + b, c_.count.data() + b,
            c_.row_ptr[static_cast<size_t>(n) + 1] - c_.row_ptr[static_cast<size_t>(n)], theta_t_.data(), gamma, l.data(), p.data());
        moved += which != -2;
      }
    }
    return moved;
  }

  template <int D>
  PeSweep solve_impl(const std::vector<double>& phi, double gamma, const PeNewtonOptions& opt,
                     std::vector<double>* topic_grad) {
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
  std::vector<double> X_, theta_t_, P_, R_, S_t_, u_, len_;
  std::vector<index_t> col_ptr_, col_src_, col_doc_;
};

}  // namespace

std::unique_ptr<PlsvEngine> make_plsv_engine(const Corpus& corpus, int topics, int dim, int threads) {
  return std::make_unique<CpuPlsvEngine>(corpus, topics, dim, threads);
}

}  // namespace orrery::cpu
