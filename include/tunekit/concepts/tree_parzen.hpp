#pragma once
/// \file
/// The parts of TreeParzen, tunekit's own search (optimizer/tree_parzen.hpp): its start, its
/// model start, its candidate sources, the mix of the sources, and its restarts. Each shipped part
/// lives in optimizer/tpe/.
/// (tunekit/concepts.hpp includes every role's concept.)

#include "tunekit/core/history.hpp"
#include "tunekit/core/random.hpp"
#include "tunekit/core/search_context.hpp"

#include <concepts>
#include <cstddef>
#include <span>
#include <vector>

namespace tunekit {

struct TpeRound;
class CandidatePool;

/// The configs a search measures before it has a model: `std::size_t size() const` (how many
/// configs the start of a phase has) and `std::vector<Config> design(const SearchContext&,
/// std::size_t count, Rng&)`, `count` valid configs not in `ctx.visited` (fewer when the space
/// runs out) (MaximinStart, RandomStart).
template <class S>
concept StartDesign = requires(S& s, const S& cs, const SearchContext& ctx, std::size_t count, Rng& rng) {
  { cs.size() } -> std::convertible_to<std::size_t>;
  { s.design(ctx, count, rng) } -> std::same_as<std::vector<Config>>;
};

template <class S>
constexpr bool check_start_design() {
  static_assert(StartDesign<S>, "tunekit::StartDesign: the start needs `std::size_t size() const` and "
                                "`std::vector<tunekit::Config> design(const tunekit::SearchContext&, "
                                "std::size_t count, tunekit::Rng&)`");
  return StartDesign<S>;
}

/// When a candidate source runs in a round: the sources around the incumbents first, then the
/// global ones, then those that pick among the candidates of the others (a config offered by
/// two sources belongs to the first).
enum class SourceStage { local, global, pick };

/// Offers candidates for the next configs: `static constexpr SourceStage stage` and `void
/// add(const TpeRound&, CandidatePool&, Rng&)`, which adds valid configs to the pool (or, at
/// stage pick, nominates one of its candidates) (GoodDensityDraws, IncumbentNeighbours,
/// Crossovers, ModelPick).
template <class S>
concept CandidateSource = requires(S& s, const TpeRound& round, CandidatePool& pool, Rng& rng) {
  { S::stage } -> std::convertible_to<SourceStage>;
  s.add(round, pool, rng);
};

template <class S>
constexpr bool check_candidate_source() {
  static_assert(requires { { S::stage } -> std::convertible_to<SourceStage>; },
                "tunekit::CandidateSource: the source needs `static constexpr tunekit::SourceStage stage`");
  static_assert(requires(S& s, const TpeRound& r, CandidatePool& p, Rng& rng) { s.add(r, p, rng); },
                "tunekit::CandidateSource: the source needs `void add(const tunekit::TpeRound&, "
                "tunekit::CandidatePool&, tunekit::Rng&)`");
  return CandidateSource<S>;
}

/// Decides which source gives each pick of a batch: `void credit(const TpeRound&)` (at the start
/// of a round: what the configs measured since the last round say of their sources), `std::size_t
/// choose(std::span<const bool> offers, Rng&)` (a source whose offers[q] is true: it has a
/// candidate left) and `void chosen(std::uint64_t index, std::size_t source)` (a config handed out
/// for that source) (ThompsonMix, UniformMix).
template <class M>
concept SourceMix = requires(M& m, const TpeRound& round, std::span<const bool> offers, std::uint64_t index,
                             std::size_t source, Rng& rng) {
  m.credit(round);
  { m.choose(offers, rng) } -> std::convertible_to<std::size_t>;
  m.chosen(index, source);
};

template <class M>
constexpr bool check_source_mix() {
  static_assert(SourceMix<M>, "tunekit::SourceMix: the mix needs `void credit(const tunekit::TpeRound&)`, "
                              "`std::size_t choose(std::span<const bool> offers, tunekit::Rng&)` and "
                              "`void chosen(std::uint64_t index, std::size_t source)`");
  return SourceMix<M>;
}

/// Where the current phase of a search begins: `std::size_t phase_start(const History&) const`,
/// a position in the history derived from the history alone, so that a resumed run restarts
/// where the original did (RestartOnStall, NoRestarts).
template <class R>
concept RestartPolicy = requires(const R& r, const History& h) {
  { r.phase_start(h) } -> std::convertible_to<std::size_t>;
};

template <class R>
constexpr bool check_restart_policy() {
  static_assert(RestartPolicy<R>, "tunekit::RestartPolicy: the policy needs `std::size_t phase_start(const "
                                  "tunekit::History&) const`");
  return RestartPolicy<R>;
}

/// The first model-driven rounds of a phase: `bool active(const TpeRound&) const` (whether this
/// round is one), `void add(const TpeRound&, CandidatePool&, Rng&)` (candidates of its own, after
/// the sources') and `std::vector<std::size_t> pick(const TpeRound&, const CandidatePool&,
/// std::size_t count, std::span<const Config> lies, Rng&)` (up to `count` distinct candidates to
/// measure, best first; `lies`: configs handed out and not measured yet) (ModelStart,
/// NoModelStart).
template <class M>
concept ModelStartPolicy = requires(M& m, const M& cm, const TpeRound& round, CandidatePool& pool,
                                    const CandidatePool& cpool, std::size_t count, std::span<const Config> lies,
                                    Rng& rng) {
  { cm.active(round) } -> std::convertible_to<bool>;
  m.add(round, pool, rng);
  { m.pick(round, cpool, count, lies, rng) } -> std::same_as<std::vector<std::size_t>>;
};

template <class M>
constexpr bool check_model_start() {
  static_assert(ModelStartPolicy<M>, "tunekit::ModelStartPolicy: the model start needs `bool active(const "
                                     "tunekit::TpeRound&) const`, `void add(const tunekit::TpeRound&, "
                                     "tunekit::CandidatePool&, tunekit::Rng&)` and `std::vector<std::size_t> "
                                     "pick(const tunekit::TpeRound&, const tunekit::CandidatePool&, std::size_t "
                                     "count, std::span<const tunekit::Config> lies, tunekit::Rng&)`");
  return ModelStartPolicy<M>;
}

}  // namespace tunekit
