#pragma once
/// \file
/// The random share of a batch, for every optimizer: how many configs (stochastic_round of
/// epsilon * n) and which (draw_unvisited: uniformly random valid configs not visited yet).

#include "tunekit/core/search_context.hpp"
#include "tunekit/core/random.hpp"

#include <cmath>
#include <cstdint>
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
      ctx.space.for_each_valid([&](std::uint64_t idx) {
        if (fresh(idx)) rest.push_back(idx);
      });
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

}  // namespace tunekit
