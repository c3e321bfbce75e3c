#pragma once
/// \file
/// RandomSearch: uniformly random valid configs, without replacement.

#include "tunekit/concepts.hpp"

#include <cstdint>
#include <unordered_set>
#include <utility>
#include <vector>

namespace tunekit {

/// Proposes uniformly random valid configs that were not visited, without replacement. Draws by
/// rejection; once unvisited configs become rare it enumerates the rest (small spaces) and draws
/// from them, so it exhausts a space exactly.
class RandomSearch {
 public:
  /// Consecutive draws of visited configs after which the remaining configs are enumerated.
  static constexpr int max_consecutive_repeats = 256;

  std::vector<Config> propose(const SearchContext& ctx, std::size_t n, Rng& rng) const {
    std::vector<Config> out;
    std::unordered_set<std::uint64_t> taken;
    auto fresh = [&](std::uint64_t idx) { return !ctx.visited.contains(idx) && !taken.contains(idx); };
    int repeats = 0;
    while (out.size() < n) {
      if (repeats >= max_consecutive_repeats) {
        draw_from_remaining(ctx, n, rng, fresh, out);
        break;
      }
      Config c = ctx.space.sample(rng);
      const auto idx = ctx.space.to_index(c);
      if (!fresh(idx)) {
        ++repeats;
        continue;
      }
      repeats = 0;
      taken.insert(idx);
      out.push_back(std::move(c));
    }
    return out;
  }

 private:
  template <class Fresh>
  static void draw_from_remaining(const SearchContext& ctx, std::size_t n, Rng& rng, Fresh fresh,
                                  std::vector<Config>& out) {
    std::vector<std::uint64_t> rest;
    for (auto idx : ctx.space.valid_indices())
      if (fresh(idx)) rest.push_back(idx);
    // Partial Fisher-Yates: a uniformly random ordered selection without replacement.
    for (std::size_t i = 0; i < rest.size() && out.size() < n; ++i) {
      std::swap(rest[i], rest[i + uniform_index(rng, rest.size() - i)]);
      out.push_back(ctx.space.from_index(rest[i]));
    }
  }
};

static_assert(Optimizer<RandomSearch>);

}  // namespace tunekit
