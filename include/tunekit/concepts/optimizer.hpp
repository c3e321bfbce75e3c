#pragma once
/// \file
/// Optimizer: which configurations to measure next, and the parts of a model-based one.
/// (tunekit/concepts.hpp includes every role's concept.)

#include "tunekit/core/random.hpp"
#include "tunekit/core/search_context.hpp"

#include <concepts>
#include <cstddef>
#include <span>
#include <vector>

namespace tunekit {

/// Proposes up to n valid configs that are not in `ctx.visited`, best first:
/// `std::vector<Config> propose(const SearchContext& ctx, std::size_t n, Rng&)`. None means the
/// space is exhausted for it; fewer than n means the space is nearly exhausted, or the optimizer
/// chose to measure less this round (an adaptive sampler).
template <class O>
concept Optimizer = requires(O& o, const SearchContext& ctx, std::size_t n, Rng& rng) {
  { o.propose(ctx, n, rng) } -> std::same_as<std::vector<Config>>;
};

template <class O>
constexpr bool check_optimizer() {
  static_assert(Optimizer<O>, "tunekit::Optimizer: the optimizer needs `std::vector<"
                              "tunekit::Config> propose(const tunekit::SearchContext&, "
                              "std::size_t n, tunekit::Rng&)`");
  return Optimizer<O>;
}

// ---------------------------------------------------------------------------------------------
// The policies of a model-based optimizer (ModelBased<Search, Exploration, Pick> in
// optimizer/model_based.hpp): a Search finds candidates, an ExplorationPolicy says how much of a
// batch is random, a PickPolicy makes the rest of the batch from the candidates.

/// Finds the configs that maximise the acquisition: `std::vector<Candidate> find_maximums(const
/// SearchContext& ctx, std::size_t num, Rng&)` returns up to num valid configs that are not in
/// `ctx.visited`, no two alike, best score first (AnnealingSearch, PpoSearch). It is called only
/// when `ctx.has_model()`.
template <class S>
concept Search = requires(S& s, const SearchContext& ctx, std::size_t num, Rng& rng) {
  { s.find_maximums(ctx, num, rng) } -> std::same_as<std::vector<Candidate>>;
};

template <class S>
constexpr bool check_search() {
  static_assert(Search<S>, "tunekit::Search: the search needs `std::vector<tunekit::Candidate> "
                           "find_maximums(const tunekit::SearchContext&, std::size_t num, "
                           "tunekit::Rng&)`");
  return Search<S>;
}

/// How much of a batch a model-based optimizer gives to random exploration:
/// `double epsilon(const SearchContext&, Rng&)` returns the fraction in [0, 1] (AutoTVM's fixed
/// epsilon-greedy, AdaTune's contextual epsilon).
template <class E>
concept ExplorationPolicy = requires(E& e, const SearchContext& ctx, Rng& rng) {
  { e.epsilon(ctx, rng) } -> std::convertible_to<double>;
};

template <class E>
constexpr bool check_exploration() {
  static_assert(ExplorationPolicy<E>, "tunekit::ExplorationPolicy: the exploration policy needs "
                                      "`double epsilon(const tunekit::SearchContext&, "
                                      "tunekit::Rng&)`");
  return ExplorationPolicy<E>;
}

/// What a model-based optimizer does when a pick policy returns fewer configs than it was asked
/// for (the policy's `static constexpr Shortfall shortfall`).
enum class Shortfall {
  /// The policy is short of candidates only: random unvisited configs fill the batch to n
  /// (TopPick, DiversePick).
  fill_random,
  /// The policy measures less on purpose: the batch is its configs plus the exploration's random
  /// share, and all random when it returned none (KMeansSampler).
  measure_less,
};

/// Makes the exploiting part of a model-based optimizer's batch from the candidates its search
/// found: `std::size_t candidates(std::size_t n) const` (how many candidates to ask the search
/// for to pick n), `std::vector<Config> pick(const SearchContext&, std::span<const Candidate>
/// best_first, std::size_t n, Rng&)`, which returns at most n valid configs, none in
/// `ctx.visited` (chosen among the candidates, like TopPick and DiversePick, or made from them,
/// like KMeansSampler's centroids), and `static constexpr Shortfall shortfall`, what a batch
/// does when the pick returns fewer than n.
template <class P>
concept PickPolicy = requires(P& p, const P& cp, const SearchContext& ctx, std::span<const Candidate> cands,
                              std::size_t n, Rng& rng) {
  { cp.candidates(n) } -> std::convertible_to<std::size_t>;
  { p.pick(ctx, cands, n, rng) } -> std::same_as<std::vector<Config>>;
  { P::shortfall } -> std::convertible_to<Shortfall>;
};

template <class P>
constexpr bool check_pick() {
  static_assert(requires(const P& p, std::size_t n) { { p.candidates(n) } -> std::convertible_to<std::size_t>; },
                "tunekit::PickPolicy: the pick policy needs `std::size_t candidates(std::size_t n) "
                "const`");
  static_assert(requires(P& p, const SearchContext& ctx, std::span<const Candidate> c, std::size_t n, Rng& r) {
                  { p.pick(ctx, c, n, r) } -> std::same_as<std::vector<Config>>;
                },
                "tunekit::PickPolicy: the pick policy needs `std::vector<tunekit::Config> pick(const "
                "tunekit::SearchContext&, std::span<const tunekit::Candidate> best_first, "
                "std::size_t n, tunekit::Rng&)`");
  static_assert(requires { { P::shortfall } -> std::convertible_to<Shortfall>; },
                "tunekit::PickPolicy: the pick policy needs `static constexpr tunekit::Shortfall "
                "shortfall` (fill_random or measure_less)");
  return PickPolicy<P>;
}

}  // namespace tunekit
