#pragma once
/// \file
/// GoodDensityDraws: TPE's own candidates, draws from the density of the good configs.

#include "tunekit/concepts/tree_parzen.hpp"
#include "tunekit/optimizer/tpe/round.hpp"

#include <stdexcept>
#include <utility>

namespace tunekit {

/// A candidate source (global moves toward where the good configs are): `samples` valid draws
/// from l(x), the density of the good group, each settled (SearchSpace::settle) and kept when
/// valid and new, within 32 * samples attempts.
class GoodDensityDraws {
 public:
  static constexpr SourceStage stage = SourceStage::global;

  GoodDensityDraws() = default;
  /// `samples` candidates a round (at least 1).
  explicit GoodDensityDraws(std::size_t samples) : samples_(samples) {
    if (samples == 0) throw std::invalid_argument("GoodDensityDraws: samples must be at least 1");
  }

  std::size_t samples() const noexcept { return samples_; }

  void add(const TpeRound& round, CandidatePool& pool, Rng& rng) const {
    std::size_t drawn = 0;
    for (std::size_t attempt = 0; drawn < samples_ && attempt < 32 * samples_; ++attempt) {
      Config c = round.good_density.sample(rng);
      round.ctx.space.settle(c);
      if (round.ctx.space.is_valid(c)) drawn += pool.add(std::move(c));
    }
  }

 private:
  std::size_t samples_ = 64;
};

static_assert(CandidateSource<GoodDensityDraws>);

}  // namespace tunekit
