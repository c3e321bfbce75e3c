#pragma once
/// \file
/// Batch selection for model-based optimizers: how much of a batch explores at random
/// (ExplorationPolicy: FixedEpsilon, ContextualEpsilon), how the rest is picked from the
/// search's candidates (PickPolicy: TopPick, DiversePick; KMeansSampler in kmeans_sampler.hpp),
/// and model_based_batch, which puts the two together for Annealing and Ppo.

#include "tunekit/concepts.hpp"
#include "tunekit/optimizer/random_search.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <unordered_set>
#include <utility>
#include <vector>

namespace tunekit {

/// floor(x) plus one with probability frac(x): an integer whose expectation is x >= 0. Used for
/// epsilon * batch so that any batch size explores epsilon of its configs on average (AutoTVM
/// takes int(0.05 * 64) = 3 of its 64-config plans; this gives 3 or 4, 3.2 on average).
inline std::size_t stochastic_round(double x, Rng& rng) {
  const double f = std::floor(x);
  return static_cast<std::size_t>(f) + (uniform_real(rng) < x - f ? 1 : 0);
}

/// AutoTVM's epsilon-greedy: a fixed fraction of each batch is random unvisited configs.
struct FixedEpsilon {
  double epsilon_value = 0.05;

  double epsilon(const SearchContext& /*ctx*/, Rng& /*rng*/) const {
    if (!(epsilon_value >= 0 && epsilon_value <= 1))
      throw std::invalid_argument("FixedEpsilon: epsilon must be in [0, 1]");
    return epsilon_value;
  }
};

/// AdaTune's contextual epsilon (section 4.2.2): the model's mean predictive standard deviation
/// over `samples` random unvisited configs, divided by the best measured value (both in the
/// surrogate's units), clamped to [0, 1] and recomputed every round. An uncertain model explores
/// more; a confident one exploits. With a surrogate without uncertainty it is 0; before any
/// success (best 0) it is 1.
struct ContextualEpsilon {
  /// K, the random unvisited configs the uncertainty is averaged over.
  std::size_t samples = 500;
  /// The last epsilon computed (for callbacks and tests).
  double last = std::numeric_limits<double>::quiet_NaN();

  double epsilon(const SearchContext& ctx, Rng& rng) {
    if (samples == 0) throw std::invalid_argument("ContextualEpsilon: samples must be >= 1");
    last = compute(ctx, rng);
    return last;
  }

 private:
  double compute(const SearchContext& ctx, Rng& rng) const {
    if (!ctx.predict || !(ctx.best_target > 0)) return 1.0;
    std::vector<Config> probe;
    std::unordered_set<std::uint64_t> taken;
    draw_unvisited(ctx, samples, rng, taken, probe);
    if (probe.empty()) return 0.0;
    Eigen::VectorXd mean, sd;
    ctx.predict(probe, mean, sd);
    return std::clamp(sd.mean() / ctx.best_target, 0.0, 1.0);
  }
};

/// Picks the n best-scored candidates.
struct TopPick {
  std::size_t candidates(std::size_t n) const noexcept { return n; }
  std::vector<std::size_t> select(const SearchSpace& /*space*/, std::span<const Candidate> best_first,
                                  std::size_t n, Rng& /*rng*/) const {
    std::vector<std::size_t> out(std::min(n, best_first.size()));
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = i;
    return out;
  }
};

/// AutoTVM's greedy submodular pick (tuner/model_based_tuner.py, submodular_pick): repeatedly
/// takes the candidate with the largest gain = score_weight * score + knob_weight * (number of
/// knobs whose value no picked candidate has yet); the first (best-scored) candidate wins a
/// tie. Returns positions into `cands`.
inline std::vector<std::size_t> submodular_pick(const SearchSpace& space, std::span<const Candidate> cands,
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
/// there (score_weight 0): the picks are the most diverse among the top candidates.
struct DiversePick {
  double filter_ratio = 2.0;
  double knob_weight = 1.0;
  double score_weight = 0.0;

  std::size_t candidates(std::size_t n) const {
    if (!(filter_ratio >= 1)) throw std::invalid_argument("DiversePick: filter_ratio must be >= 1");
    return static_cast<std::size_t>(std::ceil(filter_ratio * static_cast<double>(n)));
  }
  std::vector<std::size_t> select(const SearchSpace& space, std::span<const Candidate> best_first,
                                  std::size_t n, Rng& /*rng*/) const {
    return submodular_pick(space, best_first, n, knob_weight, score_weight);
  }
};

/// The batch of a model-based optimizer (Annealing, Ppo): round(epsilon * n) configs
/// (Exploration; stochastic rounding) are random unvisited ones and the rest come from the
/// search's candidates (`find(num)`: up to num unvisited candidates, best first) through Pick.
/// Without a fitted model (no success yet) the whole batch is random.
/// - A SelectingPickPolicy chooses among the candidates; short of them, random configs fill the
///   batch to n.
/// - A SamplingPickPolicy makes its own configs and may return fewer on purpose: the batch is
///   then its configs plus the random share (all random when it returned none).
/// `last_random` is set to the random share the exploration policy asked for.
template <ExplorationPolicy Exploration, PickPolicy Pick, class FindCandidates>
std::vector<Config> model_based_batch(const SearchContext& ctx, std::size_t n, Rng& rng, Exploration& exploration,
                                      Pick& pick, FindCandidates&& find, std::size_t& last_random) {
  std::vector<Config> out;
  std::unordered_set<std::uint64_t> taken;
  std::size_t random = n;
  if (ctx.has_model() && n > 0) {
    const double eps = exploration.epsilon(ctx, rng);
    if (!(eps >= 0 && eps <= 1)) throw std::logic_error("model-based optimizer: epsilon outside [0, 1]");
    last_random = std::min(n, stochastic_round(eps * static_cast<double>(n), rng));
    const std::size_t exploit = n - last_random;
    if (exploit > 0) {
      const std::vector<Candidate> cands = find(pick.candidates(exploit));
      if constexpr (SelectingPickPolicy<Pick>) {
        for (std::size_t i : pick.select(ctx.space, cands, exploit, rng)) {
          if (out.size() == exploit) break;
          if (!taken.insert(cands.at(i).index).second) continue;
          out.push_back(cands[i].config);
        }
      } else {
        for (Config& c : pick.sample(ctx, cands, exploit, rng)) {
          if (out.size() == exploit) break;
          if (!ctx.space.is_valid(c)) throw std::logic_error("pick policy sampled an invalid config");
          const auto idx = ctx.space.to_index(c);
          if (ctx.visited.contains(idx)) throw std::logic_error("pick policy sampled a visited config");
          if (!taken.insert(idx).second) continue;
          out.push_back(std::move(c));
        }
      }
    }
    if constexpr (SelectingPickPolicy<Pick>)
      random = n - out.size();
    else
      random = out.empty() ? n : last_random;
  }
  draw_unvisited(ctx, random, rng, taken, out);
  return out;
}

static_assert(ExplorationPolicy<FixedEpsilon>);
static_assert(ExplorationPolicy<ContextualEpsilon>);
static_assert(PickPolicy<TopPick>);
static_assert(PickPolicy<DiversePick>);

}  // namespace tunekit
