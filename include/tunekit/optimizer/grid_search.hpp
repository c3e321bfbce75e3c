#pragma once
/// \file
/// GridSearch: every valid config in lexicographic order.

#include "tunekit/concepts/optimizer.hpp"

#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

namespace tunekit {

/// Proposes the valid configs in flat-index (lexicographic) order, skipping visited ones.
/// Deterministic: ignores the generator. Throws std::runtime_error naming the constraints when
/// the whole product holds no valid config (as SearchSpace::sample does), rather than reporting
/// an empty space as exhausted.
class GridSearch {
 public:
  std::vector<Config> propose(const SearchContext& ctx, std::size_t n, Rng& /*rng*/) {
    std::vector<Config> out;
    const std::uint64_t size = ctx.space.product_size();
    for (; next_ < size && out.size() < n; ++next_) {
      if (ctx.visited.contains(next_)) {
        found_valid_ = true;  // the tuner holds valid configs only
        continue;
      }
      Config c = ctx.space.from_index(next_);
      if (ctx.space.is_valid(c)) {
        found_valid_ = true;
        out.push_back(std::move(c));
      }
    }
    if (n > 0 && next_ == size && !found_valid_ && ctx.visited.empty())
      throw std::runtime_error("no configuration satisfies " + ctx.space.describe_constraints());
    return out;
  }

 private:
  std::uint64_t next_ = 0;  // every index below it was proposed, visited or invalid
  bool found_valid_ = false;
};

static_assert(Optimizer<GridSearch>);

}  // namespace tunekit
