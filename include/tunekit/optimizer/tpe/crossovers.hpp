#pragma once
/// \file
/// Crossovers: candidates that recombine the good configs.

#include "tunekit/concepts/tree_parzen.hpp"
#include "tunekit/optimizer/tpe/round.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace tunekit {

/// A candidate source (recombinations, what a genetic algorithm does knob by knob): up to `count`
/// uniform crossovers of two distinct configs of the good group (of the two fastest while the
/// group has one), every knob's value from one parent or the other at random, kept when valid and
/// new, within 32 * count attempts. None in the model start's rounds.
class Crossovers {
 public:
  static constexpr SourceStage stage = SourceStage::global;

  Crossovers() = default;
  /// `count` candidates a round (at least 1).
  explicit Crossovers(std::size_t count) : count_(count) {
    if (count == 0) throw std::invalid_argument("Crossovers: count must be at least 1");
  }

  std::size_t count() const noexcept { return count_; }

  void add(const TpeRound& round, CandidatePool& pool, Rng& rng) const {
    if (round.model_start) return;
    const std::size_t parents = std::min(std::max<std::size_t>(round.n_good, 2), round.ok.size());
    std::size_t taken = 0;
    for (std::size_t attempt = 0; taken < count_ && attempt < 32 * count_; ++attempt) {
      const auto [a, b] = distinct_pair(rng, parents);
      Config x = round.ok[a]->config;
      for (std::size_t k = 0; k < x.size(); ++k)
        if (uniform_index(rng, 2) == 1) x[k] = round.ok[b]->config[k];
      round.ctx.space.settle(x);
      if (round.ctx.space.is_valid(x)) taken += pool.add(std::move(x));
    }
  }

 private:
  std::size_t count_ = 64;
};

static_assert(CandidateSource<Crossovers>);

}  // namespace tunekit
