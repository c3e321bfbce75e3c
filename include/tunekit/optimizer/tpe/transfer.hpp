#pragma once
/// \file
/// tunekit's own transfer for TreeParzen: a start seeded with the sources' good configs
/// (TransferStart) and a model start whose model's mean is the sources' prediction plus a
/// model of the residual (TransferModelStart), both weighed by a guard against negative transfer
/// (transfer/transfer_prior.hpp: RankAgreementGuard). Without a source both are their plain
/// parts' behaviour: MaximinStart's design, ModelStart's picks.

#include "tunekit/acquisition/expected_improvement.hpp"
#include "tunekit/concepts/tree_parzen.hpp"
#include "tunekit/optimizer/draw_unvisited.hpp"
#include "tunekit/optimizer/tpe/model_fit.hpp"
#include "tunekit/optimizer/tpe/model_start.hpp"
#include "tunekit/optimizer/tpe/start.hpp"
#include "tunekit/transfer/transfer_prior.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <span>
#include <stdexcept>
#include <unordered_set>
#include <utility>
#include <vector>

namespace tunekit {

/// Options of TransferStart.
struct TransferStartParams {
  /// Configs of the run's starts taken from the sources, at most every other start config (the
  /// others: the fallback's).
  std::size_t configs = 5;
  /// A source's config is taken only if it differs in at least this many knobs from every config
  /// visited or taken (2: never a neighbour, which the search's local moves reach anyway).
  std::size_t min_knob_difference = 2;

  void validate() const {
    if (min_knob_difference == 0)
      throw std::invalid_argument("TransferStartParams: min_knob_difference must be at least 1");
  }
};

/// A start seeded with the sources' good configs (StartDesign): every other config of the start
/// (from the first, `configs` in all over the run) is one of the sources' recorded configs,
/// fastest first by the guard-weighted sources (TransferPrior::ranked_configs), each differing in
/// at least `min_knob_difference` knobs from every visited and chosen config; the others, and
/// all once the guard gives every source weight 0 or without a source, are the fallback's design
/// (MaximinStart), so that the guard sees configs the sources rank low.
template <class FallbackT = MaximinStart, class GuardT = RankAgreementGuard>
class TransferStart {
  static_assert(check_start_design<FallbackT>());
  static_assert(TransferGuard<GuardT>);

 public:
  TransferStart() = default;
  explicit TransferStart(TransferPrior prior, TransferStartParams params = {}, FallbackT fallback = {},
                         GuardT guard = {})
      : prior_(std::move(prior)), params_(params), fallback_(std::move(fallback)), guard_(std::move(guard)) {
    params_.validate();
  }

  std::size_t size() const { return fallback_.size(); }
  const TransferPrior& prior() const noexcept { return prior_; }

  std::vector<Config> design(const SearchContext& ctx, std::size_t count, Rng& rng) const {
    std::vector<Config> top;
    if (!prior_.empty()) {
      const std::vector<double> w = guard_.weights(prior_, ctx.space, ctx.history);
      const bool trusted = std::any_of(w.begin(), w.end(), [](double x) { return x > 0; });
      // The sources' configs handed out so far (by this start, in any phase).
      const std::size_t already = taken_so_far(ctx);
      const std::size_t want =
          already < params_.configs ? std::min((count + 1) / 2, params_.configs - already) : 0;
      if (trusted && want > 0) top = diverse_top(ctx, w, want);
    }
    // The fallback sees the sources' picks as visited.
    std::unordered_set<std::uint64_t> visited = ctx.visited;
    for (const Config& c : top) visited.insert(ctx.space.to_index(c));
    const SearchContext inner{.space = ctx.space, .history = ctx.history, .visited = visited,
                              .parallel = ctx.parallel};
    std::vector<Config> rest = fallback_.design(inner, count - top.size(), rng);
    // In turns, a source's config first, so that the guard sees configs the sources rank low.
    std::vector<Config> out;
    for (std::size_t i = 0; out.size() < top.size() + rest.size(); ++i) {
      if (i < top.size()) out.push_back(std::move(top[i]));
      if (i < rest.size()) out.push_back(std::move(rest[i]));
    }
    return out;
  }

 private:
  static std::size_t differing(const Config& a, const Config& b) {
    std::size_t d = 0;
    for (std::size_t k = 0; k < a.size(); ++k) d += a[k] != b[k];
    return d;
  }

  // The configs of the sources' ranking visited so far (the start's picks of earlier rounds and
  // phases).
  std::size_t taken_so_far(const SearchContext& ctx) const {
    std::size_t n = 0;
    for (const Config& c : top_) n += ctx.visited.contains(ctx.space.to_index(c));
    return n;
  }

  std::vector<Config> diverse_top(const SearchContext& ctx, const std::vector<double>& w, std::size_t want) const {
    std::vector<Config> placed;
    for (std::uint64_t idx : ctx.visited) placed.push_back(ctx.space.from_index(idx));
    std::vector<Config> out;
    for (const Config& c : prior_.ranked_configs(ctx.space, w)) {
      if (out.size() == want) break;
      if (ctx.visited.contains(ctx.space.to_index(c))) continue;
      if (std::any_of(placed.begin(), placed.end(),
                      [&](const Config& p) { return differing(c, p) < params_.min_knob_difference; }))
        continue;
      placed.push_back(c);
      out.push_back(c);
      top_.push_back(c);
    }
    return out;
  }

  TransferPrior prior_{};
  TransferStartParams params_{};
  FallbackT fallback_{};
  GuardT guard_{};
  // The sources' configs this start handed out (to count them in later rounds).
  mutable std::vector<Config> top_{};
};

/// Options of TransferModelStart.
struct TransferModelStartParams {
  /// As ModelStartParams: the model start lasts while the phase has fewer than `trials`
  /// measured configs; `pool` random unvisited configs join the candidates each round.
  std::size_t trials = 60;
  std::size_t pool = 256;
  /// The sources' fastest unvisited recorded configs that join the candidates each round.
  std::size_t source_candidates = 64;
  /// Whether the prior guides only every other pick (the phase's odd trials are ModelStart's own
  /// picks, without the sources), so that a source that misleads in ways the guard cannot see
  /// costs at most half the model start.
  bool in_turns = true;
};

/// ModelStart with the sources as the model's prior mean (ModelStartPolicy). Each pick fits
/// the model (InTurns<RandomForest, GaussianProcess>) to the residual of the phase's measured log
/// times y from the prior mean
///     m(x) = ybar + W b (z(x) - zbar),
/// z(x) the guard-weighted mean of the sources' predicted log times (TransferPrior), b >= 0 the
/// least-squares slope of y on z over the measured configs, W the largest guard weight; it
/// picks by the acquisition of m(x) + the model's mean with the model's standard deviation. As
/// the guard's weights fall to 0, m(x) is the mean log time and the picks are ModelStart's.
/// Candidates: the sources' (TreeParzen's), `pool` random ones, and the sources' fastest
/// unvisited recorded configs.
template <class GuardT = RankAgreementGuard, class SurrogateT = InTurns<RandomForest, GaussianProcess>,
          class AcquisitionT = ExpectedImprovement>
class TransferModelStart {
  static_assert(TransferGuard<GuardT>);
  static_assert(detail::check_tpe_model<SurrogateT, AcquisitionT>());

 public:
  TransferModelStart() = default;
  explicit TransferModelStart(TransferPrior prior, TransferModelStartParams params = {},
                              SurrogateT model = TpeModel<SurrogateT>::make(), AcquisitionT acquisition = {},
                              GuardT guard = {})
      : prior_(std::move(prior)),
        params_(params),
        model_(std::move(model)),
        acquisition_(std::move(acquisition)),
        guard_(std::move(guard)) {}

  const TransferModelStartParams& params() const noexcept { return params_; }
  const TransferPrior& prior() const noexcept { return prior_; }
  /// The guard's weights at the last pick (empty before one or without a source).
  const std::vector<double>& weights() const noexcept { return weights_; }

  bool active(const TpeRound& round) const noexcept { return round.phase_trials < params_.trials; }

  /// Whether the sources guide this round's picks (TransferModelStartParams::in_turns).
  bool guided(const TpeRound& round) const noexcept {
    return !prior_.empty() && (!params_.in_turns || round.phase_trials % 2 == 0);
  }

  void add(const TpeRound& round, CandidatePool& pool, Rng& rng) const {
    std::vector<Config> extra;
    std::unordered_set<std::uint64_t> taken = pool.indices();
    draw_unvisited(round.ctx, params_.pool, rng, taken, extra);
    for (Config& c : extra) pool.add(std::move(c));
    if (!guided(round) || params_.source_candidates == 0) return;
    const std::vector<double> w = guard_.weights(prior_, round.ctx.space, round.ctx.history);
    if (std::none_of(w.begin(), w.end(), [](double x) { return x > 0; })) return;
    std::size_t added = 0;
    for (const Config& c : prior_.ranked_configs(round.ctx.space, w)) {
      if (added == params_.source_candidates) break;
      added += pool.add(c);
    }
  }

  std::vector<std::size_t> pick(const TpeRound& round, const CandidatePool& pool, std::size_t count,
                                std::span<const Config> lies, Rng& rng) {
    const SearchSpace& space = round.ctx.space;
    detail::LogTimes measured = detail::log_times(round.ok);
    const auto n = static_cast<Eigen::Index>(measured.configs.size());
    // The prior mean of the measured configs and of the candidates.
    Eigen::VectorXd prior_measured = Eigen::VectorXd::Constant(n, measured.y.mean());
    Eigen::VectorXd prior_pool = Eigen::VectorXd::Constant(static_cast<Eigen::Index>(pool.size()), measured.y.mean());
    weights_.clear();
    if (guided(round)) {
      weights_ = guard_.weights(prior_, space, round.ctx.history);
      const double top = *std::max_element(weights_.begin(), weights_.end());
      if (top > 0) {
        const Eigen::VectorXd zm = prior_.combined_log_times(space, measured.configs, weights_);
        const Eigen::VectorXd zp = prior_.combined_log_times(space, pool.configs(), weights_);
        const double zbar = zm.mean(), ybar = measured.y.mean();
        const double var = (zm.array() - zbar).square().sum();
        const double b = var > 0 ? std::max(0.0, ((zm.array() - zbar) * (measured.y.array() - ybar)).sum() / var) : 0.0;
        prior_measured = (ybar + top * b * (zm.array() - zbar)).matrix();
        prior_pool = (ybar + top * b * (zp.array() - zbar)).matrix();
      }
    }
    // Residual targets: the measured configs' residuals, each lie at the mean residual (CL-mean).
    const Eigen::VectorXd residual = measured.y - prior_measured;
    const double lie = residual.mean();
    std::vector<Config> configs = measured.configs;
    std::vector<double> y(residual.data(), residual.data() + n);
    for (std::size_t i = 0; i < lies.size(); ++i) {
      configs.push_back(lies[i]);
      y.push_back(lie);
    }
    std::vector<std::size_t> picks;
    const double best_log_time = std::log(round.ok[0]->measurement.mean);
    while (picks.size() < std::min(count, pool.size())) {
      if constexpr (requires { model_.turn(std::size_t{}); }) model_.turn(round.phase_trials);
      detail::LogTimes targets{configs, Eigen::Map<const Eigen::VectorXd>(y.data(), static_cast<Eigen::Index>(y.size()))};
      detail::WarmStart none;
      detail::fit_log_times(model_, space, targets, round.phase_start, none, 0, rng);
      const std::size_t best =
          detail::best_by_acquisition(model_, acquisition_, best_log_time, space, pool, picks, &prior_pool);
      picks.push_back(best);
      configs.push_back(pool[best]);
      y.push_back(lie);
    }
    return picks;
  }

 private:
  TransferPrior prior_{};
  TransferModelStartParams params_{};
  SurrogateT model_ = TpeModel<SurrogateT>::make();
  AcquisitionT acquisition_{};
  GuardT guard_{};
  std::vector<double> weights_{};
};

static_assert(StartDesign<TransferStart<>>);
static_assert(ModelStartPolicy<TransferModelStart<>>);

}  // namespace tunekit
