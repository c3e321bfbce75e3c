#pragma once
/// \file
/// ModelBased<Search, Exploration, Pick>: the model-based optimizer, one template for AutoTVM's
/// simulated annealing, AdaTune's contextual annealing and Chameleon's PPO agent with adaptive
/// sampling (ensmallen's SGD<UpdatePolicy, DecayPolicy> in this role). Its policies live in
/// optimizer/search/, optimizer/exploration/ and optimizer/pick/.

#include "tunekit/concepts/optimizer.hpp"
#include "tunekit/concepts/uncertainty.hpp"
#include "tunekit/optimizer/draw_unvisited.hpp"
#include "tunekit/optimizer/exploration/fixed_epsilon.hpp"
#include "tunekit/optimizer/pick/top_pick.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

namespace tunekit {

/// What a ModelBased optimizer did in its last batch (`last_batch()`).
struct BatchReport {
  /// The exploration policy's epsilon (1 when there was no fitted model: all random).
  double epsilon = 1.0;
  /// The random share: round(epsilon * n) configs (stochastic rounding), or n without a model.
  std::size_t random = 0;
  /// Candidates the search found, and configs the pick policy took from them.
  std::size_t candidates = 0;
  std::size_t picked = 0;
};

namespace detail {
/// The parameters a search is built from: the type its `params()` returns; an empty aggregate
/// for a search without parameters (it is then default-constructed).
struct NoSearchParams {};
template <class S>
struct search_params {
  using type = NoSearchParams;
};
template <class S>
  requires requires(const S& s) { s.params(); }
struct search_params<S> {
  using type = std::remove_cvref_t<decltype(std::declval<const S&>().params())>;
};
}  // namespace detail

/// A model-based optimizer: a search over the acquisition, then a batch of n configs of which
/// round(epsilon * n) (ExplorationT's epsilon; stochastic rounding) are random unvisited ones and
/// the rest come from the search's candidates through the pick policy:
///     eps = exploration.epsilon(ctx); random = stochastic_round(eps * n); exploit = n - random;
///     candidates = search.find_maximums(ctx, pick.candidates(exploit));
///     batch = pick.pick(ctx, candidates, exploit) + draw_unvisited(...)
/// The generator is drawn from in that order. Without a fitted model (no success yet) the whole
/// batch is random. What fills the batch when the pick returns fewer than `exploit` configs is
/// the pick's `shortfall`:
/// - Shortfall::fill_random (TopPick, DiversePick): random configs fill the batch to n;
/// - Shortfall::measure_less (KMeansSampler): the batch is the picked configs plus the random
///   share, and all n random when the pick returned none.
/// The published variants are aliases: SimulatedAnnealing, ContextualAnnealing, PolicyGradient,
/// Annealing<E, P>, Ppo<E, P>.
template <class SearchT, class ExplorationT = FixedEpsilon, class PickT = TopPick>
class ModelBased {
  static_assert(check_search<SearchT>());
  static_assert(check_exploration<ExplorationT>());
  static_assert(check_pick<PickT>());

 public:
  /// The search's parameters, the type its `params()` returns (AnnealingParams, PpoParams): the
  /// search is built from them. A search without `params()` is default-constructed (its
  /// SearchParams is an empty aggregate), and reached through search().
  using SearchParams = typename detail::search_params<SearchT>::type;

  /// Whether a policy needs the surrogate's predictive standard deviation (Tuner then refuses a
  /// surrogate without uncertainty).
  static constexpr bool needs_uncertainty =
      needs_uncertainty_v<SearchT> || needs_uncertainty_v<ExplorationT> || needs_uncertainty_v<PickT>;

  ModelBased() = default;
  explicit ModelBased(SearchParams params, ExplorationT exploration = {}, PickT pick = {})
      : search_(make_search(std::move(params))), exploration_(std::move(exploration)), pick_(std::move(pick)) {}

  std::vector<Config> propose(const SearchContext& ctx, std::size_t n, Rng& rng) {
    std::vector<Config> out;
    std::unordered_set<std::uint64_t> taken;
    last_ = {.epsilon = 1.0, .random = n};
    std::size_t random = n;
    if (ctx.has_model() && n > 0) {
      const double eps = exploration_.epsilon(ctx, rng);
      if (!(eps >= 0 && eps <= 1)) throw std::logic_error("ModelBased: epsilon outside [0, 1]");
      last_.epsilon = eps;
      last_.random = std::min(n, stochastic_round(eps * static_cast<double>(n), rng));
      const std::size_t exploit = n - last_.random;
      if (exploit > 0) {
        const std::vector<Candidate> cands = search_.find_maximums(ctx, pick_.candidates(exploit), rng);
        last_.candidates = cands.size();
        for (Config& c : pick_.pick(ctx, cands, exploit, rng)) {
          if (out.size() == exploit) break;
          if (!ctx.space.is_valid(c)) throw std::logic_error("ModelBased: the pick policy returned an invalid config");
          const auto idx = ctx.space.to_index(c);
          if (ctx.visited.contains(idx)) throw std::logic_error("ModelBased: the pick policy returned a visited config");
          if (!taken.insert(idx).second) continue;
          out.push_back(std::move(c));
        }
        last_.picked = out.size();
      }
      if constexpr (PickT::shortfall == Shortfall::fill_random)
        random = n - out.size();
      else
        random = out.empty() ? n : last_.random;
    }
    draw_unvisited(ctx, random, rng, taken, out);
    return out;
  }

  SearchT& search() noexcept { return search_; }
  const SearchT& search() const noexcept { return search_; }
  ExplorationT& exploration() noexcept { return exploration_; }
  const ExplorationT& exploration() const noexcept { return exploration_; }
  PickT& pick() noexcept { return pick_; }
  const PickT& pick() const noexcept { return pick_; }
  /// What the last batch was made of.
  const BatchReport& last_batch() const noexcept { return last_; }

 private:
  static SearchT make_search(SearchParams params) {
    if constexpr (std::is_same_v<SearchParams, detail::NoSearchParams>)
      return SearchT{};
    else
      return SearchT(std::move(params));
  }

  SearchT search_{};
  ExplorationT exploration_{};
  PickT pick_{};
  BatchReport last_{};
};

}  // namespace tunekit
