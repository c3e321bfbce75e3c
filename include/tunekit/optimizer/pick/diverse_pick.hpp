#pragma once
/// \file
/// DiversePick: AutoTVM's diversity-aware pick policy (submodular pick over knob-value coverage).

#include "tunekit/concepts/optimizer.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <stdexcept>
#include <vector>

namespace tunekit {

/// AutoTVM's greedy submodular pick (tuner/model_based_tuner.py, submodular_pick): repeatedly
/// takes the candidate with the largest gain = score_weight * score + knob_weight * (number of
/// knobs whose value no picked candidate has yet); the first (best-scored) candidate wins a
/// tie. Returns positions into `cands`.
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
std::vector<std::size_t> submodular_pick(const SearchSpace& space, std::span<const Candidate> cands,
                                         std::size_t n, double knob_weight, double score_weight) {
  const std::size_t dims = space.dimensions();
  std::vector<std::vector<bool>> seen(dims);
  for (std::size_t k = 0; k < dims; ++k) seen[k].assign(space.knob(k).size(), false);
  std::vector<bool> taken(cands.size(), false);
  std::vector<std::size_t> out;
  n = std::min(n, cands.size());
  while (out.size() < n) {
    std::size_t best = cands.size();
    double best_gain = -std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < cands.size(); ++i) {
      if (taken[i]) continue;
      double gain = score_weight * cands[i].score;
      for (std::size_t k = 0; k < dims; ++k) gain += seen[k][cands[i].config[k]] ? 0.0 : knob_weight;
      if (gain > best_gain) {
        best_gain = gain;
        best = i;
      }
    }
    taken[best] = true;
    out.push_back(best);
    for (std::size_t k = 0; k < dims; ++k) seen[k][cands[best].config[k]] = true;
  }
  return out;
}

/// AutoTVM's diversity-aware selection (XGBTuner's diversity_filter_ratio): ask the search for
/// filter_ratio * n candidates and pick n of them by submodular_pick. AutoTVM ignores the scores
/// there (score_weight 0): the picks are the most diverse among the top candidates. Short of
/// candidates, the batch is filled with random configs.
struct DiversePick {
  static constexpr Shortfall shortfall = Shortfall::fill_random;

  double filter_ratio = 2.0;
  double knob_weight = 1.0;
  double score_weight = 0.0;

  std::size_t candidates(std::size_t n) const {
    if (!(filter_ratio >= 1)) throw std::invalid_argument("DiversePick: filter_ratio must be >= 1");
    return static_cast<std::size_t>(std::ceil(filter_ratio * static_cast<double>(n)));
  }

  std::vector<Config> pick(const SearchContext& ctx, std::span<const Candidate> best_first, std::size_t n,
                           Rng& /*rng*/) const {
    std::vector<Config> out;
    for (std::size_t i : submodular_pick(ctx.space, best_first, n, knob_weight, score_weight))
      out.push_back(best_first[i].config);
    return out;
  }
};

static_assert(PickPolicy<DiversePick>);

}  // namespace tunekit
