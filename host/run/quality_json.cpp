#include "run/quality_json.hpp"

#include <algorithm>
#include <cmath>

namespace orrery::pipeline {
namespace {

json nan_to_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json at_k_json(const QualityAtK& q) {
  return {{"k", q.k},
          {"trustworthiness", q.trustworthiness},
          {"continuity", q.continuity},
          {"mrre_neighborhood", q.mrre_neighborhood},
          {"mrre_visual", q.mrre_visual},
          {"lcmc", q.lcmc},
          {"knn_accuracy", nan_to_null(q.knn_accuracy)}};
}

}  // namespace

json quality_json(const QualityReport& rep) {
  json j;
  j["points"] = rep.num_points;
  j["at_k"] = json::array();
  for (const auto& q : rep.at_k) j["at_k"].push_back(at_k_json(q));
  j["curve"] = json::array();
  for (const auto& q : rep.curve) j["curve"].push_back(at_k_json(q));
  j["homogeneity_1nn"] = nan_to_null(rep.homogeneity_1nn);
  j["smoothed_precision"] = nan_to_null(rep.smoothed_precision);
  j["smoothed_recall"] = nan_to_null(rep.smoothed_recall);
  j["coranking"] = {{"kmax", rep.kmax}, {"counts", rep.coranking}};
  if (rep.queries < rep.num_points) {
    // estimates from a seeded subsample of query points; ranks are still against all points
    j["sample"] = {{"queries", rep.queries},
                   {"of", rep.num_points},
                   {"seed", rep.seed},
                   {"estimates", "means over the query points of their per-point terms (ranks against all "
                                 "points in both spaces), unbiased; standard errors in at_k[].standard_error; "
                                 "co-ranking counts over the query rows"}};
    for (size_t a = 0; a < rep.at_k_se.size(); ++a) {
      json se = at_k_json(rep.at_k_se[a]);
      se.erase("k");
      j["at_k"][a]["standard_error"] = se;
    }
  }
  j["conventions"] =
      "ranks exclude the point itself; equal distances rank the lower index first; Euclidean distances; "
      "smoothed precision/recall = -mean_i KL(q_i||p_i) / -mean_i KL(p_i||q_i) with the input's perplexity-"
      "calibrated bandwidth in both spaces (0 is perfect); MRRE values are errors (0 is perfect)";
  return j;
}

double largest_standard_error(const QualityReport& rep) {
  double m = 0;
  for (const QualityAtK& e : rep.at_k_se)
    for (double v : {e.trustworthiness, e.continuity, e.mrre_neighborhood, e.mrre_visual, e.lcmc, e.knn_accuracy})
      if (std::isfinite(v)) m = std::max(m, v);
  return m;
}

}  // namespace orrery::pipeline
