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

/// How much of a batch a model-based optimizer gives to random exploration:
/// `double epsilon(const SearchContext&, Rng&)` returns the fraction in [0, 1] (AutoTVM's fixed
/// epsilon-greedy, AdaTune's contextual epsilon).
template <class E>
concept ExplorationPolicy = requires(E& e, const SearchContext& ctx, Rng& rng) {
  { e.epsilon(ctx, rng) } -> std::convertible_to<double>;
};

/// A pick policy that chooses among the candidates a search found: `std::size_t
/// candidates(std::size_t n) const` (how many to ask the search for to pick n) and
/// `std::vector<std::size_t> select(const SearchSpace&, std::span<const Candidate> best_first,
/// std::size_t n, Rng&)` (positions of the picked candidates; at most n).
template <class P>
concept SelectingPickPolicy = requires(P& p, const P& cp, const SearchSpace& space,
                                       std::span<const Candidate> cands, std::size_t n, Rng& rng) {
  { cp.candidates(n) } -> std::convertible_to<std::size_t>;
  { p.select(space, cands, n, rng) } -> std::same_as<std::vector<std::size_t>>;
};

/// A pick policy that makes the configs of a batch from the candidates rather than choosing
/// among them (Chameleon's adaptive sampling: cluster centroids and synthesized samples):
/// `std::size_t candidates(std::size_t n) const` and `std::vector<Config> sample(const
/// SearchContext&, std::span<const Candidate> best_first, std::size_t n, Rng&)`, which returns
/// at most n valid configs, none in `ctx.visited` and no two alike. It may return fewer than n
/// on purpose (to measure less); the optimizer then hands out a smaller batch.
template <class P>
concept SamplingPickPolicy = requires(P& p, const P& cp, const SearchContext& ctx,
                                      std::span<const Candidate> cands, std::size_t n, Rng& rng) {
  { cp.candidates(n) } -> std::convertible_to<std::size_t>;
  { p.sample(ctx, cands, n, rng) } -> std::same_as<std::vector<Config>>;
};

/// How a model-based optimizer (Annealing, Ppo) makes the exploiting part of a batch from the
/// candidates its search found: a SelectingPickPolicy (TopPick, DiversePick) or a
/// SamplingPickPolicy (KMeansSampler).
template <class P>
concept PickPolicy = SelectingPickPolicy<P> || SamplingPickPolicy<P>;

}  // namespace tunekit
