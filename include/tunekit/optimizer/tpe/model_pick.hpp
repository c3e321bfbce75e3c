#pragma once
/// \file
/// ModelPick: a model's pick among the other sources' candidates, as a source of the mix.

#include "tunekit/acquisition/expected_improvement.hpp"
#include "tunekit/concepts/tree_parzen.hpp"
#include "tunekit/optimizer/tpe/model_fit.hpp"

#include <algorithm>
#include <span>
#include <stdexcept>
#include <utility>

namespace tunekit {

/// Options of ModelPick.
struct ModelPickParams {
  /// The model is fitted on the log times of the phase's `fastest` fastest configs (at least 2).
  std::size_t fastest = 80;
  /// A model with a warm start (a GaussianProcess's length scales) starts each fit of a phase from
  /// its last one and takes at most this many ascent steps (0: every fit from scratch).
  std::size_t warm_steps = 5;

  void validate() const {
    if (fastest < 2) throw std::invalid_argument("ModelPickParams: fastest must be at least 2");
  }
};

/// A candidate source that adds no candidate: it nominates the candidate of largest acquisition
/// times P(ok | x) of a surrogate fitted on the log times of the phase's fastest configs, so the
/// mix decides by the run's hits how often a smooth model still picks once TPE's densities lead.
/// The model is any UncertainSurrogate (a GaussianProcess by default) and the acquisition any of
/// the improvement kind.
template <class SurrogateT = GaussianProcess, class AcquisitionT = ExpectedImprovement>
class ModelPick {
  static_assert(detail::check_tpe_model<SurrogateT, AcquisitionT>());

 public:
  static constexpr SourceStage stage = SourceStage::pick;

  ModelPick() = default;
  explicit ModelPick(ModelPickParams params, SurrogateT model = TpeModel<SurrogateT>::make(),
                     AcquisitionT acquisition = {})
      : params_(params), model_(std::move(model)), acquisition_(std::move(acquisition)) {
    params_.validate();
  }

  const ModelPickParams& params() const noexcept { return params_; }
  const SurrogateT& model() const noexcept { return model_; }

  void add(const TpeRound& round, CandidatePool& pool, Rng& rng) {
    if (pool.empty()) return;
    const auto trials = std::span(round.ok).first(std::min(params_.fastest, round.ok.size()));
    detail::fit_log_times(model_, round.ctx.space, detail::log_times(trials), round.phase_start, warm_,
                          params_.warm_steps, rng);
    pool.nominate(detail::best_by_acquisition(model_, acquisition_, std::log(trials[0]->measurement.mean),
                                              round.ctx.space, pool));
  }

 private:
  ModelPickParams params_{};
  SurrogateT model_ = TpeModel<SurrogateT>::make();
  AcquisitionT acquisition_{};
  detail::WarmStart warm_{};
};

static_assert(CandidateSource<ModelPick<>>);

}  // namespace tunekit
