// PLSV (Iwata, Yamada, Ueda 2008; MATH.md §2): a topic model whose documents x_n and topics phi_z
// have coordinates in the map; topic proportions are P(z|x_n) = softmax_z(-|x_n - phi_z|^2 / 2) and
// words are drawn from the topics' word distributions theta_z. Fitted by MAP-EM.
//
// The coordinate M-step. Q's document part, -Q_n = -sum_z R_nz log P(z|x_n) + gamma/2 |x_n|^2 with
// R_nz = sum_w c_nw r_nwz, is PE's per-object objective (math/pe.hpp) with posteriors R_nz / M_n,
// eta_r = gamma / (2 M_n), scaled by M_n: convex in x_n with Hessian M_n Cov_P(phi) + gamma I. So, as
// in PE, every document is solved exactly by a D x D Newton iteration for the current topic
// coordinates, and L-BFGS runs on the topic coordinates alone over the reduced objective
// min_X (-Q)(X, Phi) + beta/2 |Phi|^2, whose gradient is dQ/dPhi at the solved X (envelope theorem).
// Against one joint L-BFGS over all (N + Z) D coordinates this keeps L-BFGS's problem small
// (Z D variables), converges each document in 1-3 Newton steps instead of hundreds of badly scaled
// joint steps (documents of 5 and of 5,000 words differ 1000x in curvature), and runs the
// documents independently, a thread per document on the GPU. A few L-BFGS iterations per EM
// iteration (coord_iter) make it a generalised EM: Q never decreases, so the log posterior
// never does either.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "orrery/backend.hpp"
#include "orrery/comm.hpp"
#include "orrery/config.hpp"
#include "orrery/corpus.hpp"
#include "orrery/engines.hpp"
#include "orrery/run_control.hpp"
#include "orrery/types.hpp"

namespace orrery {

// PlsvParams::init.
enum class PlsvInit { documents, random };
template <>
struct EnumNames<PlsvInit> {
  static constexpr std::array<const char*, 2> names = {"documents", "random"};
};

// PlsvParams::extrapolation.
enum class PlsvExtrapolation { squarem, none };
template <>
struct EnumNames<PlsvExtrapolation> {
  static constexpr std::array<const char*, 2> names = {"squarem", "none"};
};

struct PlsvParams {
  // Output dimension D (2 or 3).
  int dim = 2;
  // Z: number of topics. Paper: 50.
  int topics = 50;
  // alpha: Dirichlet smoothing of the word distributions theta_z; the M-step is
  // theta_zw = (S_zw + alpha) / (sum_w S_zw + alpha W). Paper: 0.01.
  double alpha = 0.01;
  // beta = beta_per_document * N: precision of the Gaussian prior on topic coordinates. Paper: 0.1 N.
  double beta_per_document = 0.1;
  // gamma = gamma_per_topic * Z: precision of the Gaussian prior on document coordinates. Paper: 0.1 Z.
  double gamma_per_topic = 0.1;
  // EM stops when the log posterior rises by less than tol * |log posterior| in one EM iteration (a
  // jump's rise does not count). 3e-6 with SQUAREM: on the Debian corpus (5 seeds) a higher mean
  // 5-NN accuracy than plain EM to 1e-6, in 2.5x less time (docs/plsv.md).
  double tol = 3e-6;
  // Cap on EM iterations.
  int max_iter = 1000;
  // L-BFGS iterations on the topic coordinates per EM iteration (each solves every document).
  int coord_iter = 3;
  // Newton: a document is converged when |dQ_n/dx_n|^2 / M_n^2 < eps_x; cap per solve.
  double eps_x = 1e-10;
  int newton_max_iter = 50;
  int lbfgs_memory = 5;
  // Every relocate_every EM iterations each document jumps to the best of its coordinate, the centre
  // and the Z topic positions when that raises its log posterior (EM alone only climbs to the
  // nearest of a document's maxima); 0 never. Fold-in also relocates once before its first E-step.
  int relocate_every = 10;
  // Start: "documents" or "random", both seeded. "random" is the textbook start: coordinates
  // N(0, 0.01^2), theta the corpus frequencies with 10% seeded noise. On short documents with the
  // paper's priors it falls into the collapsed stationary point (every coordinate at the origin,
  // all proportions equal): the priors pull harder than the weak topic signal of near-equal topics
  // pushes. "documents" avoids it: topic z's words start as those of a distinct seed document
  // (k-means++ seeding on cosine distance) mixed with the corpus frequencies, and documents and
  // topics start where PE (PLSV's own proportions, softmax(-|x - phi|^2 / 2)) places them for each
  // document's posterior over these topics, tempered to one word of evidence (log-likelihood / M_n).
  // Topics that share documents thus start close together; on planted corpora this reaches a higher
  // log posterior than random layouts of the same topics.
  PlsvInit init = PlsvInit::documents;
  // RMS radius of the topics' start in PE's own initialisation ("documents").
  double init_scale = 2.0;
  // "squarem": every two EM iterations the map jumps along their path (SQUAREM, Varadhan and Roland
  // 2008, scheme S3: x0 - 2a r + a^2 v from the two steps r and v = second - first, a = -|r|/|v|,
  // the coordinates as they are and theta by its logarithms), kept only when its log posterior is
  // at least the second step's; EM's slow linear climb needs several times fewer iterations.
  // "none": plain EM. Fold-in is plain EM either way.
  PlsvExtrapolation extrapolation = PlsvExtrapolation::squarem;
};

const std::vector<Field<PlsvParams>>& plsv_fields();

// A fitted model: enough to fold in new documents.
struct PlsvModel {
  MatrixD topic_coords;  // Z x D
  MatrixD theta;         // Z x W, rows sum to 1
};

struct PlsvTraceEntry {
  int iteration = 0;
  double log_posterior = 0.0;
  double log_likelihood = 0.0;  // sum_nw c_nw log sum_z P(z|x_n) theta_zw
  int newton_steps = 0;         // summed over documents in this iteration's M-step
  index_t relocated = 0;        // documents moved by the relocation step of this iteration's M-step
  double seconds = 0.0;
};

struct PlsvResult {
  MatrixD doc_coords;  // N x D
  PlsvModel model;
  double log_posterior = 0.0;
  std::vector<PlsvTraceEntry> trace;
  int iterations = 0;
  std::string stop_reason;  // "tol", "max_iter"
  // SQUAREM's jumps (PlsvParams::extrapolation) tried and kept. A jump that is not kept leaves no
  // entry in the trace (the map returns to the point before it), so the trace never falls.
  int jumps = 0, jumps_kept = 0;
  // Mean over documents of log Z - H(P(.|x_n)): how much the map says about each document's
  // topics (0 when every document has uniform proportions, as at the collapsed stationary point).
  double topic_information = 0.0;
  bool collapsed = false;  // topic_information < kPlsvCollapseInformation
  double seconds_init = 0.0, seconds_fit = 0.0;
  // Per rank of the fit's communicator (one entry in a single process): the documents it owned and
  // its fit seconds.
  std::vector<index_t> rank_documents;
  std::vector<double> rank_seconds_fit;
};

// Below this mean information (nats) the map is reported as collapsed.
inline constexpr double kPlsvCollapseInformation = 0.05;

using PlsvProgress = std::function<void(const PlsvTraceEntry&)>;

// Engines come from Backend::make_plsv (the corpus must outlive the engine; Z >= 2, dim 2 or 3).

// The documents [begin, end) that rank `rank` of `ranks` owns in a fit over `documents` documents:
// contiguous blocks of whole kPlsvChunk chunks (orrery/engines.hpp), as even in chunks as they can
// be; a rank may own none (fewer chunks than ranks) and the last block ends at `documents`.
struct PlsvBlock {
  index_t begin = 0, end = 0;
};
PlsvBlock plsv_rank_block(index_t documents, int rank, int ranks);

// MAP-EM from the chosen start. Same corpus, params, seed and backend: same result. With a control
// (orrery/run_control.hpp) the fit (or fold-in) can stop at the end of an EM iteration and continue
// from the saved state with the same bits.
// With a communicator of several ranks (null: one process), every rank passes the same corpus and
// parameters and its engine holds only its block of documents (plsv_rank_block): the E-step and the
// document solves run on each rank's documents, and the sums over documents that the topic steps
// need are exact (orrery/exact_sum.hpp; the word-topic statistics in fixed point), so on the CPU
// the result equals the one-process result bit for bit, whatever the number of ranks, and every rank
// returns all of it. Every rank takes a control or none; its captured state holds every rank's
// documents (gathered at the safe point), so a run stopped under G ranks resumes under any number.
PlsvResult fit_plsv(Backend& backend, const Corpus& corpus, const PlsvParams& params, unsigned long long seed,
                    const PlsvProgress& progress = {}, RunControl* control = nullptr, Comm* comm = nullptr);

// Places the documents of `corpus` (whose word ids index the model's theta columns) with the model
// fixed: EM over their coordinates only. The result's model is the given one. Shards over `comm`
// as fit_plsv does.
PlsvResult fold_in_plsv(Backend& backend, const Corpus& corpus, const PlsvModel& model, const PlsvParams& params,
                        const PlsvProgress& progress = {}, RunControl* control = nullptr, Comm* comm = nullptr);

// --- by the definitions, for tests and reports ---

// P(z|x_n) for every document (N x Z).
MatrixD plsv_topic_proportions(const MatrixD& X, const MatrixD& Phi);

// Log posterior of MATH.md §2: sum_nw c_nw log sum_z P(z|x_n) theta_zw + alpha sum_zw log theta_zw
// - gamma/2 sum_n |x_n|^2 - beta/2 sum_z |phi_z|^2 (the Dirichlet term is the one whose MAP update
// is the M-step above; constants dropped).
double plsv_log_posterior(const Corpus& corpus, const MatrixD& X, const PlsvModel& model, double alpha, double beta,
                          double gamma);

// Q's coordinate part sum_nz R_nz log P(z|x_n) - gamma/2 sum |x_n|^2 - beta/2 sum |phi_z|^2 and its
// gradients (N x D, Z x D) when the pointers are non-null.
double plsv_coordinate_q(const MatrixD& R, const MatrixD& X, const MatrixD& Phi, double beta, double gamma,
                         MatrixD* grad_x, MatrixD* grad_phi);

// The `count` most probable words of every topic (Z lists of word ids, most probable first; ties
// by lower id).
std::vector<std::vector<int>> plsv_top_words(const MatrixD& theta, int count);

// A corpus drawn from PLSV's generative process with planted coordinates and topics: topics
// phi_z ~ N(0, topic_sd^2 I), documents x_n ~ N(0, doc_sd^2 I), theta_z ~
// Dirichlet(theta_concentration) over W words, M_n ~ 1 + Poisson(mean_length - 1) words.
struct PlantedPlsv {
  Corpus corpus;
  MatrixD doc_coords;
  PlsvModel model;
};
PlantedPlsv sample_plsv_corpus(index_t num_docs, index_t num_words, int topics, int dim, double mean_length,
                               unsigned long long seed, double topic_sd = 2.0, double doc_sd = 2.0,
                               double theta_concentration = 0.05);

}  // namespace orrery
