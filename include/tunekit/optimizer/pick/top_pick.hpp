#pragma once
/// \file
/// TopPick: the pick policy that takes the search's best candidates.

#include "tunekit/concepts/optimizer.hpp"

#include <algorithm>
#include <span>
#include <vector>

namespace tunekit {

/// Picks the n best-scored candidates (AutoTVM's model-based tuner without a diversity filter).
/// Short of candidates, the batch is filled with random configs.
struct TopPick {
  static constexpr Shortfall shortfall = Shortfall::fill_random;

  std::size_t candidates(std::size_t n) const noexcept { return n; }

  std::vector<Config> pick(const SearchContext& /*ctx*/, std::span<const Candidate> best_first, std::size_t n,
                           Rng& /*rng*/) const {
    std::vector<Config> out;
    out.reserve(std::min(n, best_first.size()));
    for (std::size_t i = 0; i < best_first.size() && out.size() < n; ++i) out.push_back(best_first[i].config);
    return out;
  }
};

static_assert(PickPolicy<TopPick>);

}  // namespace tunekit
