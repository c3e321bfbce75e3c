#pragma once
/// \file
/// How TreeParzen's sources share a batch (SourceMix): Thompson sampling on their hits, or
/// uniformly.

#include "tunekit/concepts/tree_parzen.hpp"
#include "tunekit/optimizer/tpe/round.hpp"

#include <boost/random/beta_distribution.hpp>

#include <cstdint>
#include <span>
#include <stdexcept>
#include <unordered_map>
#include <vector>

namespace tunekit {

/// Thompson sampling over the sources: each pick draws from Beta(1 + hits, 1 + misses) per source
/// with a candidate left and takes the source of the largest draw, where a hit is a config of
/// that source that was measured and is in the good group at the next round. What the run has
/// seen decides how much it searches near the incumbent, how much it recombines, how often the
/// model picks. Hits and misses carry over from phase to phase.
class ThompsonMix {
 public:
  void credit(const TpeRound& round) {
    const double good_time = round.good_time();
    for (std::size_t i = round.phase_start; i < round.ctx.history.size(); ++i) {
      const Trial& t = round.ctx.history[i];
      const auto it = pending_.find(t.index);
      if (it == pending_.end()) continue;
      const bool hit = t.measurement.ok() && t.measurement.mean <= good_time;
      grow(it->second + 1);
      (hit ? hits_ : misses_)[it->second] += 1.0;
      pending_.erase(it);
    }
  }

  std::size_t choose(std::span<const bool> offers, Rng& rng) {
    grow(offers.size());
    std::size_t src = offers.size(), left = 0;
    for (std::size_t q = 0; q < offers.size(); ++q)
      if (offers[q]) src = q, ++left;
    if (left == 0) throw std::logic_error("ThompsonMix::choose: no source offers a candidate");
    if (left > 1) {
      double top = -1.0;
      for (std::size_t q = 0; q < offers.size(); ++q) {
        if (!offers[q]) continue;
        const double t = boost::random::beta_distribution<double>(1.0 + hits_[q], 1.0 + misses_[q])(rng);
        if (t > top) top = t, src = q;
      }
    }
    return src;
  }

  void chosen(std::uint64_t index, std::size_t source) { pending_[index] = source; }

  /// The hits and misses of a source so far.
  double hits(std::size_t source) const noexcept { return source < hits_.size() ? hits_[source] : 0.0; }
  double misses(std::size_t source) const noexcept { return source < misses_.size() ? misses_[source] : 0.0; }

 private:
  void grow(std::size_t sources) {
    if (hits_.size() < sources) hits_.resize(sources, 0.0), misses_.resize(sources, 0.0);
  }

  // The source of each config handed out and not credited yet.
  std::unordered_map<std::uint64_t, std::size_t> pending_{};
  std::vector<double> hits_{}, misses_{};
};

/// Each pick from a source drawn uniformly among those with a candidate left (the ablation of
/// ThompsonMix: the same sources, no learning of their shares).
struct UniformMix {
  void credit(const TpeRound&) const noexcept {}
  std::size_t choose(std::span<const bool> offers, Rng& rng) const {
    std::vector<std::size_t> open;
    for (std::size_t q = 0; q < offers.size(); ++q)
      if (offers[q]) open.push_back(q);
    if (open.empty()) throw std::logic_error("UniformMix::choose: no source offers a candidate");
    return open.size() == 1 ? open[0] : open[uniform_index(rng, open.size())];
  }
  void chosen(std::uint64_t, std::size_t) const noexcept {}
};

static_assert(SourceMix<ThompsonMix>);
static_assert(SourceMix<UniformMix>);

}  // namespace tunekit
