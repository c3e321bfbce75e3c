#pragma once
/// \file
/// RandomSearch: uniformly random valid configs, without replacement.

#include "tunekit/concepts.hpp"

#include <cstdint>
#include <unordered_set>
#include <utility>
#include <vector>

namespace tunekit {

/// Appends to `out` up to `n` uniformly random valid configs that are neither in `ctx.visited`
/// nor in `taken`, and adds their indices to `taken`. Draws by rejection; once unvisited configs
/// become rare (`max_repeats` consecutive draws of taken ones) it enumerates the rest (small
/// spaces) and draws from them, so it exhausts a space exactly. Returns how many it added.
inline std::size_t draw_unvisited(const SearchContext& ctx, std::size_t n, Rng& rng,
                                  std::unordered_set<std::uint64_t>& taken, std::vector<Config>& out,
                                  int max_repeats = 256) {
  auto fresh = [&](std::uint64_t idx) { return !ctx.visited.contains(idx) && !taken.contains(idx); };
  std::size_t added = 0;
  int repeats = 0;
  while (added < n) {
    if (repeats >= max_repeats) {
      std::vector<std::uint64_t> rest;
      for (auto idx : ctx.space.valid_indices())
        if (fresh(idx)) rest.push_back(idx);
      // Partial Fisher-Yates: a uniformly random ordered selection without replacement.
      for (std::size_t i = 0; i < rest.size() && added < n; ++i, ++added) {
        std::swap(rest[i], rest[i + uniform_index(rng, rest.size() - i)]);
        taken.insert(rest[i]);
        out.push_back(ctx.space.from_index(rest[i]));
      }
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
    ++added;
  }
  return added;
}

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
