#include "run/methods.hpp"

#include "run/ne_config.hpp"
#include "run/ne_run.hpp"
#include "run/pe_config.hpp"
#include "run/pe_run.hpp"
#include "run/plsv_run.hpp"
#include "run/run_common.hpp"
#include "orrery/backend.hpp"
#include "orrery/hssne.hpp"
#include "orrery/memory_plan.hpp"
#include "orrery/nerv.hpp"
#include "orrery/pe.hpp"
#include "orrery/plsv.hpp"
#include "orrery/posterior_model.hpp"
#include "orrery/snerv.hpp"

namespace orrery::pipeline {

const std::vector<MethodEntry>& methods() {
  static const std::vector<MethodEntry> all = {
      {"pe", "Parametric Embedding: objects and classes from class posteriors p(c|x)",
       {{"pe", [] { return describe_fields(pe_fields()); }},
        {"pe_input", [] { return describe_fields(pe_input_fields()); }},
        {"posterior_model", [] { return describe_fields(posterior_model_fields()); }}},
       [](const RunConfig& run) {
         const PePrepared p = prepare_pe(run);
         return "pe, " + std::to_string(p.data.objects) + " objects, " + std::to_string(p.data.classes) + " classes" +
                (p.cfg.input.use_posterior_model() ? " (posterior model to fit on the vectors)" : "") +
                ", D = " + std::to_string(p.cfg.params.dim) + ", planned peak " + format_bytes(p.plan.host_peak()) +
                " host" + (p.plan.device_peak() > 0 ? " + " + format_bytes(p.plan.device_peak()) + " GPU" : "");
       },
       [](const RunConfig& run, bool quiet, RunControl* control) {
         PePrepared prepared;
         on_every_rank(run, [&] { prepared = prepare_pe(run); });
         return run_pe(std::move(prepared), quiet, control);
       },
       {"objects.*", "classes.*", "map.svg", "map.html", "report.json"},
       check_pe_run, pe_page,
       "posteriors with extreme ratios, or params eta_r, eta_phi or init_scale far from their defaults", true, true},
      {"hssne", "Heavy-tailed symmetric SNE (alpha: 0 Gaussian, 1 t-SNE) with the fixed-point optimiser",
       {{"hssne", [] { return describe_fields(hssne_fields()); }},
        {"hssne_input", [] { return describe_fields(ne_input_fields(NeMethod::hssne), ne_input_defaults(NeMethod::hssne)); }}},
       validate_ne, run_ne,
       {"embedding.*", "map.svg", "map.html", "report.json", "model_reference.npy", "model_map.npy", "model_pca_mean.npy",
        "model_pca_components.npy"},
       check_ne_run, ne_page,
       "input values or affinities of extreme magnitude, or params init_scale, learning_rate or exaggeration far from "
       "their defaults",
       true},
      {"nerv", "Neighbor retrieval visualisation: precision/recall trade-off lambda, conjugate gradient",
       {{"nerv", [] { return describe_fields(nerv_fields()); }},
        {"nerv_input", [] { return describe_fields(ne_input_fields(NeMethod::nerv), ne_input_defaults(NeMethod::nerv)); }}},
       validate_ne, run_ne, {"embedding.*", "map.svg", "map.html", "report.json"}, check_ne_run, ne_page,
       "input values of extreme magnitude, or params init_scale far from its default", true},
      {"snerv", "Supervised NeRV: NeRV on learning-metric distances from a class-posterior model of the labels",
       {{"nerv", [] { return describe_fields(nerv_fields()); }},
        {"snerv_input", [] { return describe_fields(ne_input_fields(NeMethod::snerv), ne_input_defaults(NeMethod::snerv)); }},
        {"metric", [] { return describe_fields(class_mixture_fields()); }}},
       validate_ne, run_ne, {"embedding.*", "map.svg", "map.html", "report.json"}, check_ne_run, ne_page,
       "input values of extreme magnitude, or params init_scale far from its default", true},
      {"plsv", "Probabilistic latent semantic visualisation: documents and topics of a corpus in one map (MAP-EM)",
       {{"plsv", [] { return describe_fields(plsv_fields()); }},
        {"plsv_input", [] { return describe_fields(plsv_input_fields()); }},
        {"text", [] { return describe_fields(text_fields()); }}},
       validate_plsv, run_plsv,
       {"documents.*", "topics.*", "theta.npy", "vocab.txt", "doc_index.npy", "map.svg", "map.html", "report.json"},
       check_plsv_run, plsv_page, "params alpha, beta_per_document, gamma_per_topic or init_scale far from their defaults",
       true},
  };
  return all;
}

namespace {

// "pe", "pe and plsv", "pe, hssne and plsv": the methods whose entry has `which`, in registry
// order, so the refusals name them all as entries change.
std::string methods_with(bool MethodEntry::*which) {
  std::vector<std::string> names;
  for (const auto& m : methods())
    if (m.*which) names.push_back(m.name);
  std::string list;
  for (size_t i = 0; i < names.size(); ++i)
    list += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return list;
}

}  // namespace

void check_run_ranks(const RunConfig& run, const MethodEntry& method) {
  const int ranks = run_comm(run).size();
  if (ranks <= 1) return;
  const std::string launched = "comm: this run has " + std::to_string(ranks) + " ranks (" + run_comm(run).name() + "), but ";
  if (!method.shards)
    input_error(launched + run.method + " runs in one process; " + methods_with(&MethodEntry::shards) +
                " shard over MPI (start one "
                "process, or set \"comm\": \"single\" and launch one)");
  const bool on_gpu = run.device == "cuda" || run.device.rfind("cuda:", 0) == 0 ||
                      (run.device == "auto" && !cuda_devices().empty());
  if (on_gpu && !method.shards_on_gpus)
    input_error(launched + "device \"" + run.device + "\": over several ranks only " +
                methods_with(&MethodEntry::shards_on_gpus) + " run on GPUs (the others' device buffers need NCCL, "
                "which is not built yet); use \"device\": \"cpu\" or one process");
}

const MethodEntry* find_method(const std::string& name) {
  for (const auto& m : methods())
    if (name == m.name) return &m;
  return nullptr;
}

}  // namespace orrery::pipeline
