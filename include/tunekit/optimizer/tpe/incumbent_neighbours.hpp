#pragma once
/// \file
/// IncumbentNeighbours: local moves around the best configs.

#include "tunekit/concepts/tree_parzen.hpp"
#include "tunekit/optimizer/tpe/round.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

namespace tunekit {

/// Options of IncumbentNeighbours.
struct IncumbentNeighboursParams {
  /// The fastest configs of the phase whose neighbours are candidates.
  std::size_t incumbents = 1;
  /// Once every Hamming neighbour of an incumbent was visited: this many random valid moves of
  /// two of its knobs at once instead (0: none).
  std::size_t two_knob_moves = 64;
  /// Once every Hamming neighbour of an incumbent was visited, before any two-knob move: for each
  /// invalid one-knob move, the nearest unvisited valid config with that knob value (a local move
  /// across the constraints; spaces SearchSpace enumerates only).
  bool repair_moves = false;

  void validate() const {
    if (incumbents == 0) throw std::invalid_argument("IncumbentNeighboursParams: incumbents must be at least 1");
  }
};

/// A candidate source (local moves): the unvisited Hamming neighbours (every other value of one
/// knob, SearchSpace::hamming_neighbours) of the `incumbents` fastest configs of the phase; for
/// an incumbent whose Hamming neighbours were all visited, the repair moves (when set), else the
/// two-knob moves (as in variable neighbourhood search: a local optimum of one-knob moves need not
/// be one of two-knob moves).
class IncumbentNeighbours {
 public:
  static constexpr SourceStage stage = SourceStage::local;

  IncumbentNeighbours() = default;
  explicit IncumbentNeighbours(IncumbentNeighboursParams params) : params_(params) { params_.validate(); }

  const IncumbentNeighboursParams& params() const noexcept { return params_; }

  void add(const TpeRound& round, CandidatePool& pool, Rng& rng) const {
    for (std::size_t i = 0; i < std::min(params_.incumbents, round.ok.size()); ++i) {
      const Config& c = round.ok[i]->config;
      std::size_t found = 0;
      for (Config& x : round.ctx.space.hamming_neighbours(c)) found += pool.add(std::move(x));
      if (found == 0 && params_.repair_moves) found = repair_moves(round.ctx, c, pool, rng);
      if (found == 0) two_knob_moves(round.ctx, c, pool, rng);
    }
  }

 private:
  // Up to two_knob_moves random valid configs that differ from `c` in exactly two knobs (32
  // attempts each); returns how many the pool took.
  std::size_t two_knob_moves(const SearchContext& ctx, const Config& c, CandidatePool& pool, Rng& rng) const {
    std::vector<std::size_t> movable;
    for (std::size_t k = 0; k < ctx.space.dimensions(); ++k)
      if (ctx.space.knob(k).size() > 1) movable.push_back(k);
    if (movable.size() < 2) return 0;
    const std::size_t want = params_.two_knob_moves;
    std::size_t taken = 0;
    for (std::size_t attempt = 0; taken < want && attempt < 32 * want; ++attempt) {
      Config x = c;
      const auto [a, b] = distinct_pair(rng, movable.size());
      for (const std::size_t k : {movable[a], movable[b]}) {
        auto v = static_cast<std::uint32_t>(uniform_index(rng, ctx.space.knob(k).size() - 1));
        x[k] = v >= c[k] ? v + 1 : v;  // any value but c's
      }
      ctx.space.settle(x);
      if (x != c && ctx.space.is_valid(x)) taken += pool.add(std::move(x));
    }
    return taken;
  }

  // For each one-knob move (k, v) of `c` that is invalid, the unvisited valid configs with value
  // v at k that differ from `c` in the fewest knobs (one of them, drawn uniformly when several
  // tie); returns how many the pool took.
  std::size_t repair_moves(const SearchContext& ctx, const Config& c, CandidatePool& pool, Rng& rng) const {
    const SearchSpace& s = ctx.space;
    if (s.product_size() > SearchSpace::enumeration_limit) return 0;
    const std::size_t d = s.dimensions();
    std::vector<std::size_t> offset(d + 1, 0);  // (k, v) -> offset[k] + v
    for (std::size_t k = 0; k < d; ++k) offset[k + 1] = offset[k] + s.knob(k).size();
    std::vector<char> blocked(offset[d], 0);
    bool any = false;
    for (std::size_t k = 0; k < d; ++k)
      for (std::uint32_t v = 0; v < s.knob(k).size(); ++v) {
        if (v == c[k]) continue;
        Config x = c;
        x[k] = v;
        s.settle(x);
        if (!s.is_valid(x)) {
          blocked[offset[k] + v] = 1;
          any = true;
        }
      }
    if (!any) return 0;
    std::vector<std::size_t> best(offset[d], d + 1), ties(offset[d], 0);
    std::vector<std::uint64_t> pick(offset[d], 0);
    std::vector<std::size_t> diff;
    s.for_each_valid([&](std::uint64_t idx) {
      if (ctx.visited.contains(idx)) return;
      const Config x = s.from_index(idx);
      diff.clear();
      for (std::size_t k = 0; k < d; ++k)
        if (x[k] != c[k]) diff.push_back(k);
      for (const std::size_t k : diff) {
        const std::size_t slot = offset[k] + x[k];
        if (!blocked[slot] || diff.size() > best[slot]) continue;
        if (diff.size() < best[slot]) best[slot] = diff.size(), ties[slot] = 0;
        if (uniform_index(rng, ++ties[slot]) == 0) pick[slot] = idx;  // reservoir: uniform among ties
      }
    });
    std::size_t taken = 0;
    for (std::size_t slot = 0; slot < offset[d]; ++slot)
      if (blocked[slot] && ties[slot] > 0) taken += pool.add(s.from_index(pick[slot]));
    return taken;
  }

  IncumbentNeighboursParams params_{};
};

static_assert(CandidateSource<IncumbentNeighbours>);

}  // namespace tunekit
