#pragma once
/// \file
/// ModelStart: the first rounds of a phase after its start, each picked by a model.

#include "tunekit/acquisition/expected_improvement.hpp"
#include "tunekit/concepts/tree_parzen.hpp"
#include "tunekit/optimizer/draw_unvisited.hpp"
#include "tunekit/optimizer/tpe/model_fit.hpp"

#include <cmath>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <unordered_set>
#include <utility>
#include <vector>

namespace tunekit {

/// Options of ModelStart.
struct ModelStartParams {
  /// The model start lasts while the phase has fewer than `trials` measured configs.
  std::size_t trials = 60;
  /// Random unvisited valid configs that join the sources' candidates each round.
  std::size_t pool = 256;
};

/// The model start: while the phase has fewer than `trials` measured configs, each round measures
/// the configs (one, or one per worker: TreeParzenParams::fill_parallel) picked among the
/// candidates (the local and global sources', and `pool` random ones) of largest
/// acquisition times P(ok | x) of a surrogate fitted on the log times of the phase's successful
/// configs. A smooth model learns from every measured config where TPE's good group is one or two
/// configs so early. By default a RandomForest and a GaussianProcess pick in turns (InTurns, turn
/// = the phase's trials): the trees model the interactions of a few knobs that rough spaces'
/// fastest configs need, the Gaussian process a smooth trend.
template <class SurrogateT = InTurns<RandomForest, GaussianProcess>, class AcquisitionT = ExpectedImprovement>
class ModelStart {
  static_assert(detail::check_tpe_model<SurrogateT, AcquisitionT>());

 public:
  ModelStart() = default;
  explicit ModelStart(ModelStartParams params, SurrogateT model = TpeModel<SurrogateT>::make(),
                      AcquisitionT acquisition = {})
      : params_(params), model_(std::move(model)), acquisition_(std::move(acquisition)) {}

  const ModelStartParams& params() const noexcept { return params_; }
  const SurrogateT& model() const noexcept { return model_; }

  bool active(const TpeRound& round) const noexcept { return round.phase_trials < params_.trials; }

  void add(const TpeRound& round, CandidatePool& pool, Rng& rng) const {
    std::vector<Config> extra;
    std::unordered_set<std::uint64_t> taken = pool.indices();
    draw_unvisited(round.ctx, params_.pool, rng, taken, extra);
    for (Config& c : extra) pool.add(std::move(c));
  }

  /// `count` distinct candidates, best first: the model is fitted on the phase's successful
  /// configs and `lies` (configs handed out, not measured yet) at the mean of their log times,
  /// and each pick after the first on those and the picks before it (a constant liar), so that a
  /// batch spreads out.
  std::vector<std::size_t> pick(const TpeRound& round, const CandidatePool& pool, std::size_t count,
                                std::span<const Config> lies, Rng& rng) {
    std::vector<std::size_t> picks;
    std::vector<Config> told(lies.begin(), lies.end());
    while (picks.size() < std::min(count, pool.size())) {
      if constexpr (requires { model_.turn(std::size_t{}); }) model_.turn(round.phase_trials);
      detail::WarmStart none;
      detail::fit_log_times(model_, round.ctx.space, detail::log_times(round.ok, told), round.phase_start, none, 0,
                            rng);
      const std::size_t i = detail::best_by_acquisition(model_, acquisition_, std::log(round.ok[0]->measurement.mean),
                                                        round.ctx.space, pool, picks);
      picks.push_back(i);
      told.push_back(pool[i]);
    }
    return picks;
  }

 private:
  ModelStartParams params_{};
  SurrogateT model_ = TpeModel<SurrogateT>::make();
  AcquisitionT acquisition_{};
};

/// No model start: TPE's densities pick from the end of the start on.
struct NoModelStart {
  bool active(const TpeRound&) const noexcept { return false; }
  void add(const TpeRound&, CandidatePool&, Rng&) const noexcept {}
  std::vector<std::size_t> pick(const TpeRound&, const CandidatePool&, std::size_t, std::span<const Config>,
                                Rng&) const noexcept {
    return {};
  }
};

static_assert(ModelStartPolicy<ModelStart<>>);
static_assert(ModelStartPolicy<NoModelStart>);

}  // namespace tunekit
