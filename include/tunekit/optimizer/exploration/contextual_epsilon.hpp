#pragma once
/// \file
/// ContextualEpsilon: AdaTune's contextual exploration policy (section 4.2.2).

#include "tunekit/concepts/optimizer.hpp"
#include "tunekit/optimizer/draw_unvisited.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <unordered_set>
#include <vector>

namespace tunekit {

/// What ContextualEpsilon computed for the last batch.
struct ContextualEpsilonReport {
  /// The epsilon it returned, in [0, 1]; NaN before the first call.
  double epsilon = std::numeric_limits<double>::quiet_NaN();
  /// The mean predicted standard deviation over the probed configs (surrogate units); NaN when
  /// it probed none (no model, no success yet, or no unvisited config left).
  double mean_std = std::numeric_limits<double>::quiet_NaN();
  /// Random unvisited configs the mean was taken over.
  std::size_t probed = 0;
};

/// AdaTune's contextual epsilon (section 4.2.2): the model's mean predictive standard deviation
/// over `samples` random unvisited configs, divided by the best measured value (both in the
/// surrogate's units), clamped to [0, 1] and recomputed every round:
///     epsilon_t = clamp(mean_{x in K random unvisited} sigma(x) / best, 0, 1).
/// An uncertain model explores more; a confident one exploits. Before any success (best 0) it is
/// 1. It needs a surrogate with uncertainty (Tuner refuses one without: the std would be 0).
struct ContextualEpsilon {
  static constexpr bool needs_uncertainty = true;

  /// K, the random unvisited configs the uncertainty is averaged over.
  std::size_t samples = 500;

  double epsilon(const SearchContext& ctx, Rng& rng) {
    if (samples == 0) throw std::invalid_argument("ContextualEpsilon: samples must be >= 1");
    last_ = {};
    last_.epsilon = compute(ctx, rng);
    return last_.epsilon;
  }

  /// What the last call computed.
  const ContextualEpsilonReport& last_epsilon() const noexcept { return last_; }

 private:
  double compute(const SearchContext& ctx, Rng& rng) {
    if (!ctx.predict || !(ctx.best_target > 0)) return 1.0;
    std::vector<Config> probe;
    std::unordered_set<std::uint64_t> taken;
    draw_unvisited(ctx, samples, rng, taken, probe);
    if (probe.empty()) return 0.0;
    Eigen::VectorXd mean, sd;
    ctx.predict(probe, mean, sd);
    last_.probed = probe.size();
    last_.mean_std = sd.mean();
    return std::clamp(last_.mean_std / ctx.best_target, 0.0, 1.0);
  }

  ContextualEpsilonReport last_{};
};

static_assert(ExplorationPolicy<ContextualEpsilon>);

}  // namespace tunekit
