#pragma once
/// \file
/// What TreeParzen's model-driven parts (ModelStart, ModelPick) share: the models they build by
/// default, the fit on the log times of measured configs, and the pick of largest acquisition.

#include "tunekit/concepts/acquisition.hpp"
#include "tunekit/concepts/surrogate.hpp"
#include "tunekit/optimizer/tpe/round.hpp"
#include "tunekit/space/features.hpp"
#include "tunekit/surrogate/gaussian_process.hpp"
#include "tunekit/surrogate/in_turns.hpp"
#include "tunekit/surrogate/random_forest.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <vector>

namespace tunekit {

/// The model a TreeParzen part builds when it is given none: `S{}`, except a RandomForest of 50
/// trees that tries every feature at each split, a GaussianProcess with a length scale per
/// feature (50 ascent steps: GaussianProcessParams::ard_steps), and InTurns of such models.
template <class S>
struct TpeModel {
  static S make() { return S{}; }
};
template <>
struct TpeModel<RandomForest> {
  static RandomForest make() { return RandomForest({.n_trees = 50, .max_features = 1.0}); }
};
template <>
struct TpeModel<GaussianProcess> {
  static GaussianProcess make() { return GaussianProcess({.ard_steps = 50}); }
};
template <class... Models>
struct TpeModel<InTurns<Models...>> {
  static InTurns<Models...> make() { return InTurns<Models...>(TpeModel<Models>::make()...); }
};

namespace detail {

// The model and acquisition of a TreeParzen part (ModelStart, ModelPick): a Surrogate with a
// predictive standard deviation, an Acquisition.
template <class S, class A>
constexpr bool check_tpe_model() {
  static_assert(check_surrogate<S>());
  static_assert(UncertainSurrogate<S>, "tunekit::TreeParzen: a model start's or model pick's surrogate needs a "
                                       "predictive standard deviation (a tunekit::UncertainSurrogate)");
  static_assert(check_acquisition<A>());
  return true;
}

// A model's last fit, where the next fit's ascent may start (a GaussianProcess's log kernel
// weights: GaussianProcess::fit_from): the phase it was in and the configs it was fitted on.
struct WarmStart {
  std::size_t phase = 0, trials = std::numeric_limits<std::size_t>::max();
  Eigen::VectorXd log_weights{};
};

template <class S>
concept WarmStartable = requires(S& s, const Eigen::MatrixXd& X, const Eigen::VectorXd& y, const Eigen::VectorXd& w) {
  s.fit_from(X, y, w, std::size_t{});
  { s.log_weights() } -> std::convertible_to<Eigen::VectorXd>;
};

// The targets of a model: the log times of measured configs, and `lies` (configs handed out and
// not measured yet) at their mean (a constant liar, CL-mean: the model expects nothing new there,
// so its next pick keeps away; on 18 recorded spaces with 4 configs in flight the mean lie reached
// 0.95 of the optimum sooner than the slowest time as the lie).
struct LogTimes {
  std::vector<Config> configs{};
  Eigen::VectorXd y{};
};
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
LogTimes log_times(std::span<const Trial* const> trials, std::span<const Config> lies = {}) {
  LogTimes t;
  t.y.resize(static_cast<Eigen::Index>(trials.size() + lies.size()));
  for (std::size_t i = 0; i < trials.size(); ++i) {
    t.configs.push_back(trials[i]->config);
    t.y(static_cast<Eigen::Index>(i)) = std::log(trials[i]->measurement.mean);
  }
  const double lie = t.y.head(static_cast<Eigen::Index>(trials.size())).mean();
  for (std::size_t i = 0; i < lies.size(); ++i) {
    t.configs.push_back(lies[i]);
    t.y(static_cast<Eigen::Index>(trials.size() + i)) = lie;
  }
  return t;
}

// Fits `model` on `targets` (position features). A model with a warm start (WarmStartable) and
// warm_steps > 0 starts from `warm`, the last fit of the same phase on no more configs, for at
// most warm_steps steps, and leaves this fit there.
template <class S>
void fit_log_times(S& model, const SearchSpace& space, const LogTimes& targets, std::size_t phase, WarmStart& warm,
                   std::size_t warm_steps, Rng& rng) {
  const Eigen::MatrixXd X = position_features(space, targets.configs);
  const std::size_t n = targets.configs.size();
  if constexpr (WarmStartable<S>) {
    if (warm_steps > 0) {
      const bool from_last = warm.phase == phase && warm.trials <= n;
      model.fit_from(X, targets.y, from_last ? warm.log_weights : Eigen::VectorXd(), warm_steps);
      warm = {phase, n, model.log_weights()};
      return;
    }
  }
  model.fit(X, targets.y, rng);
}

// The candidate of largest log a(x) + log P(ok | x): a the acquisition of the fitted model's
// log time below `best_log_time` (minimised: a.score(-mean, sd, -best)), sd floored at 1e-9 so
// that where the model is certain the acquisition stays ordered by the mean; candidates in
// `excluded` are skipped (there must be another); `prior_mean`, when given, is added to the
// model's mean (one value per candidate: TransferModelStart's prior). The acquisition is
// of the improvement kind (non-negative: ExpectedImprovement, ProbabilityOfImprovement).
template <class S, class A>
std::size_t best_by_acquisition(const S& model, const A& acquisition, double best_log_time, const SearchSpace& space,
                                const CandidatePool& pool, std::span<const std::size_t> excluded = {},
                                const Eigen::VectorXd* prior_mean = nullptr) {
  Eigen::VectorXd mean, sd;
  model.predict(position_features(space, pool.configs()), mean, sd);
  if (prior_mean) mean += *prior_mean;
  sd = sd.cwiseMax(1e-9);
  std::size_t pick = 0;
  double pick_score = -std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < pool.size(); ++i) {
    if (std::find(excluded.begin(), excluded.end(), i) != excluded.end()) continue;
    const auto r = static_cast<Eigen::Index>(i);
    const double a = acquisition.score(-mean(r), sd(r), -best_log_time);
    const double score = std::log(std::max(a, std::numeric_limits<double>::min())) + pool.log_ok()[i];
    if (score > pick_score) {
      pick_score = score;
      pick = i;
    }
  }
  return pick;
}

}  // namespace detail
}  // namespace tunekit
