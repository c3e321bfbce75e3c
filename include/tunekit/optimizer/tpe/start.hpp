#pragma once
/// \file
/// The start of TreeParzen's phases (StartDesign): a greedy maximin design, or random configs.

#include "tunekit/concepts/tree_parzen.hpp"
#include "tunekit/optimizer/draw_unvisited.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <unordered_set>
#include <utility>
#include <vector>

namespace tunekit {

/// Options of MaximinStart.
struct MaximinStartParams {
  /// Configs of the start.
  std::size_t configs = 10;
  /// Random valid configs each start config is chosen from.
  std::size_t pool = 64;

  void validate() const {
    if (configs == 0) throw std::invalid_argument("MaximinStartParams: configs must be at least 1");
    if (pool == 0) throw std::invalid_argument("MaximinStartParams: pool must be at least 1");
  }
};

/// A space-filling start over the constrained space: each config the farthest from every visited
/// and chosen config (mean per-knob distance: value positions over the knob's range for ordered
/// knobs, 0/1 for the others) among `pool` random unvisited valid ones (greedy maximin).
class MaximinStart {
 public:
  MaximinStart() = default;
  explicit MaximinStart(MaximinStartParams params) : params_(params) { params_.validate(); }

  const MaximinStartParams& params() const noexcept { return params_; }
  std::size_t size() const noexcept { return params_.configs; }

  std::vector<Config> design(const SearchContext& ctx, std::size_t count, Rng& rng) const {
    std::vector<Config> out;
    std::unordered_set<std::uint64_t> taken;
    std::vector<Config> placed;
    for (std::uint64_t idx : ctx.visited) placed.push_back(ctx.space.from_index(idx));
    for (std::size_t i = 0; i < count; ++i) {
      std::vector<Config> pool;
      std::unordered_set<std::uint64_t> pool_taken = taken;
      draw_unvisited(ctx, params_.pool, rng, pool_taken, pool);
      if (pool.empty()) break;
      std::size_t best = 0;
      double best_d = -1.0;
      for (std::size_t j = 0; j < pool.size(); ++j) {
        double nearest = std::numeric_limits<double>::infinity();
        for (const Config& p : placed) nearest = std::min(nearest, distance(ctx.space, pool[j], p));
        if (nearest > best_d) {
          best_d = nearest;
          best = j;
        }
      }
      taken.insert(ctx.space.to_index(pool[best]));
      placed.push_back(pool[best]);
      out.push_back(std::move(pool[best]));
    }
    return out;
  }

  /// The mean per-knob distance of two configs: |i - j| / (m - 1) for an ordered knob of m values
  /// at positions i and j, 0 or 1 for the others.
  static double distance(const SearchSpace& space, const Config& a, const Config& b) {
    const std::size_t d = space.dimensions();
    double s = 0.0;
    for (std::size_t k = 0; k < d; ++k) {
      const Knob& knob = space.knob(k);
      if (a[k] == b[k]) continue;
      if (knob.ordered() && knob.size() > 1)
        s += std::abs(static_cast<double>(a[k]) - static_cast<double>(b[k])) / static_cast<double>(knob.size() - 1);
      else
        s += 1.0;
    }
    return s / static_cast<double>(d);
  }

 private:
  MaximinStartParams params_{};
};

/// A start of uniformly random unvisited valid configs (the ablation of MaximinStart).
class RandomStart {
 public:
  RandomStart() = default;
  /// `configs` configs per start.
  explicit RandomStart(std::size_t configs) : configs_(configs) {
    if (configs == 0) throw std::invalid_argument("RandomStart: configs must be at least 1");
  }

  std::size_t size() const noexcept { return configs_; }

  std::vector<Config> design(const SearchContext& ctx, std::size_t count, Rng& rng) const {
    std::vector<Config> out;
    std::unordered_set<std::uint64_t> taken;
    draw_unvisited(ctx, count, rng, taken, out);
    return out;
  }

 private:
  std::size_t configs_ = 10;
};

static_assert(StartDesign<MaximinStart>);
static_assert(StartDesign<RandomStart>);

}  // namespace tunekit
