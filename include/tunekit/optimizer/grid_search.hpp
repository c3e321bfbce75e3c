#pragma once
/// \file
/// GridSearch: every valid config in lexicographic order.

#include "tunekit/concepts.hpp"

#include <cstdint>
#include <utility>
#include <vector>

namespace tunekit {

/// Proposes the valid configs in flat-index (lexicographic) order, skipping visited ones.
/// Deterministic: ignores the generator.
class GridSearch {
 public:
  std::vector<Config> propose(const SearchContext& ctx, std::size_t n, Rng& /*rng*/) {
    std::vector<Config> out;
    const std::uint64_t size = ctx.space.product_size();
    for (; next_ < size && out.size() < n; ++next_) {
      if (ctx.visited.contains(next_)) continue;
      Config c = ctx.space.from_index(next_);
      if (ctx.space.is_valid(c)) out.push_back(std::move(c));
    }
    return out;
  }

 private:
  std::uint64_t next_ = 0;  // every index below it was proposed, visited or invalid
};

static_assert(Optimizer<GridSearch>);

}  // namespace tunekit
