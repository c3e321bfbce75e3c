#pragma once
/// \file
/// TopFirst: the naive transfer baseline, the sources' fastest configs measured first.

#include "tunekit/concepts/optimizer.hpp"
#include "tunekit/optimizer/draw_unvisited.hpp"
#include "tunekit/transfer/transfer_prior.hpp"

#include <cstdint>
#include <unordered_set>
#include <utility>
#include <vector>

namespace tunekit {

/// The sources' recorded configs in the order of their recorded speed (with several sources, of
/// the mean of their predicted log times: TransferPrior::ranked_configs with equal weights), then
/// uniformly random unvisited configs once they are measured (or without a source). It needs no
/// model: the baseline every transfer method must beat.
class TopFirst {
 public:
  TopFirst() = default;
  explicit TopFirst(const SearchSpace& space, const TransferPrior& prior)
      : order_(prior.empty() ? std::vector<Config>()
                             : prior.ranked_configs(space, std::vector<double>(prior.sources(), 1.0))) {}

  std::vector<Config> propose(const SearchContext& ctx, std::size_t n, Rng& rng) {
    std::vector<Config> out;
    std::unordered_set<std::uint64_t> taken;
    while (next_ < order_.size() && out.size() < n) {
      const Config& c = order_[next_++];
      const std::uint64_t idx = ctx.space.to_index(c);
      if (ctx.visited.contains(idx) || !taken.insert(idx).second) continue;
      out.push_back(c);
    }
    if (out.size() < n) draw_unvisited(ctx, n - out.size(), rng, taken, out);
    return out;
  }

 private:
  std::vector<Config> order_{};
  std::size_t next_ = 0;
};

static_assert(Optimizer<TopFirst>);

}  // namespace tunekit
