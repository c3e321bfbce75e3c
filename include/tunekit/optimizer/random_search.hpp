#pragma once
/// \file
/// RandomSearch: uniformly random valid configs, without replacement.

#include "tunekit/concepts/optimizer.hpp"
#include "tunekit/optimizer/draw_unvisited.hpp"

#include <cstdint>
#include <unordered_set>
#include <utility>
#include <vector>

namespace tunekit {

/// Proposes uniformly random valid configs that were not visited, without replacement (see
/// draw_unvisited).
class RandomSearch {
 public:
  /// Consecutive draws of visited configs after which the remaining configs are enumerated.
  static constexpr int max_consecutive_repeats = 256;

  std::vector<Config> propose(const SearchContext& ctx, std::size_t n, Rng& rng) const {
    std::vector<Config> out;
    std::unordered_set<std::uint64_t> taken;
    draw_unvisited(ctx, n, rng, taken, out, max_consecutive_repeats);
    return out;
  }
};

static_assert(Optimizer<RandomSearch>);

}  // namespace tunekit
