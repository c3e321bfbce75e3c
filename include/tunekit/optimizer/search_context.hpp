#pragma once
/// \file
/// SearchContext: what an optimizer sees when it proposes the next configs.

#include "tunekit/history.hpp"
#include "tunekit/space/search_space.hpp"

#include <cstdint>
#include <functional>
#include <span>
#include <unordered_set>
#include <vector>

namespace tunekit {

/// The state an Optimizer proposes from. It refers to the tuner's data: valid during one call.
struct SearchContext {
  const SearchSpace& space;
  /// Everything measured so far.
  const History& history;
  /// Flat indices of configs measured or handed out and not yet measured: never propose these.
  const std::unordered_set<std::uint64_t>& visited;
  /// Scores configs by the acquisition over the fitted surrogate (higher is better); empty when
  /// the tuner has no model, or no fitted model yet.
  std::function<std::vector<double>(std::span<const Config>)> score;
  /// Best throughput measured so far (FLOP/s, or 1/s when the FLOP count is unknown); 0 if none.
  double best_throughput = 0.0;
};

}  // namespace tunekit
