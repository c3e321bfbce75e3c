#pragma once
/// \file
/// CandidateSources<Sources...>: the list of TreeParzen's candidate sources.

#include "tunekit/concepts/tree_parzen.hpp"
#include "tunekit/optimizer/tpe/round.hpp"

#include <cstddef>
#include <tuple>
#include <utility>

namespace tunekit {

/// TreeParzen's candidate sources, each a CandidateSource. A source's position in the list is its
/// identity in the pool and the mix. `add(stage, ...)` runs the sources of one stage in list order.
template <class... Sources>
class CandidateSources {
  static_assert((check_candidate_source<Sources>() && ...));

 public:
  static constexpr std::size_t count = sizeof...(Sources);

  CandidateSources() = default;
  CandidateSources(Sources... sources) : sources_(std::move(sources)...) {}

  /// Source I.
  template <std::size_t I>
  auto& get() noexcept { return std::get<I>(sources_); }
  template <std::size_t I>
  const auto& get() const noexcept { return std::get<I>(sources_); }

  void add(SourceStage stage, const TpeRound& round, CandidatePool& pool, Rng& rng) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (add_one<I>(stage, round, pool, rng), ...);
    }(std::index_sequence_for<Sources...>{});
  }

 private:
  template <std::size_t I>
  void add_one(SourceStage stage, const TpeRound& round, CandidatePool& pool, Rng& rng) {
    auto& source = std::get<I>(sources_);
    if (std::remove_cvref_t<decltype(source)>::stage != stage) return;
    pool.set_source(I);
    source.add(round, pool, rng);
  }

  std::tuple<Sources...> sources_{};
};

}  // namespace tunekit
