#pragma once
/// \file
/// Named tuners: the published pipelines, one line each.

#include "tunekit/acquisition/expected_improvement.hpp"
#include "tunekit/acquisition/predicted_mean.hpp"
#include "tunekit/evaluator/adaptive_cv.hpp"
#include "tunekit/evaluator/deterministic.hpp"
#include "tunekit/optimizer/contextual_annealing.hpp"
#include "tunekit/optimizer/grid_search.hpp"
#include "tunekit/optimizer/pick/kmeans_sampler.hpp"
#include "tunekit/optimizer/policy_gradient.hpp"
#include "tunekit/optimizer/random_search.hpp"
#include "tunekit/optimizer/simulated_annealing.hpp"
#include "tunekit/optimizer/tree_parzen.hpp"
#include "tunekit/surrogate/gradient_boosted_trees.hpp"
#include "tunekit/surrogate/random_forest.hpp"
#include "tunekit/tuner.hpp"

namespace tunekit {

/// Uniform random search without replacement (the baseline every model must beat).
using RandomSearchTuner = Tuner<NoSurrogate, PredictedMean, RandomSearch, Deterministic>;
/// Every valid config in lexicographic order.
using GridSearchTuner = Tuner<NoSurrogate, PredictedMean, GridSearch, Deterministic>;

/// tunekit's own search (TreeParzen): a maximin start over the constrained space, then a
/// multivariate TPE over the history whose candidates are its draws and the neighbourhoods of the
/// best configs, failures modelled as a class of their own; deterministic measurement.
using TpeLocalTuner = Tuner<NoSurrogate, PredictedMean, TreeParzen, Deterministic>;

/// The parameters of tpe-gp: TreeParzen's, with the Gaussian-process start of 40 trials
/// (TreeParzenParams::gp_trials).
inline constexpr TreeParzenParams tpe_gp_params{.gp_trials = 40};
/// The parameters of tpe-gp-rf: tpe-gp's, with the start's picks made in turns by a random forest
/// and the Gaussian process (TreeParzenParams::forest_turns).
inline constexpr TreeParzenParams tpe_gp_rf_params = [] {
  TreeParzenParams p = tpe_gp_params;
  p.forest_turns = true;
  return p;
}();
/// The parameters of tpe-gp-rf-restarts, the default: tpe-gp-rf's with a longer model start
/// (TreeParzenParams::gp_trials 60 in place of 40: the forest and the Gaussian process pick in
/// turns while a phase has fewer than 60 trials), with restarts (TreeParzenParams::restart_after
/// 100: a phase ends once its best has not improved for 100 trials, or for as many as it took to
/// reach it when that is more; TreeParzen's step 7), both measured over 400 seeds on the recorded
/// spaces and over 100 on 32 synthetic ones (docs/performance.md, "The bar over 400 seeds"), and
/// with a length scale per feature for the Gaussian process (TreeParzenParams::gp_ard_steps 50,
/// docs/performance.md, "A length scale per knob"), and after the model start 64 crossovers of
/// the good configs among the candidates, a third source of the mix (TreeParzenParams::crossovers,
/// docs/performance.md, "Crossovers of the good configs"), and a fourth, the Gaussian process
/// fitted on the phase's 80 fastest configs (TreeParzenParams::model_source, docs/performance.md,
/// "The model as a fourth source after the model start").
inline constexpr TreeParzenParams tpe_gp_rf_restarts_params = [] {
  TreeParzenParams p = tpe_gp_rf_params;
  p.gp_trials = 60;
  p.restart_after = 100;
  p.gp_ard_steps = 50;
  p.crossovers = 64;
  p.model_source = 80;
  return p;
}();

/// TreeParzen with tpe_gp_params: the optimizer of TpeGpTuner.
struct TreeParzenGpStart : TreeParzen {
  TreeParzenGpStart() : TreeParzen(tpe_gp_params) {}
};
static_assert(Optimizer<TreeParzenGpStart>);

/// tpe-local whose picks up to 40 measured configs come from a Gaussian process's expected
/// improvement (TreeParzenParams::gp_trials): sooner to the optimum of smooth spaces, later to
/// the needle optima of rough ones (docs/performance.md, "the Gaussian-process start").
using TpeGpTuner = Tuner<NoSurrogate, PredictedMean, TreeParzenGpStart, Deterministic>;

/// TreeParzen with tpe_gp_rf_params: the optimizer of TpeGpRfTuner.
struct TreeParzenGpRfStart : TreeParzen {
  TreeParzenGpRfStart() : TreeParzen(tpe_gp_rf_params) {}
};
static_assert(Optimizer<TreeParzenGpRfStart>);

/// tpe-local whose picks up to 40 measured configs come in turns from a random forest's and a
/// Gaussian process's expected improvement: the trees' knob interactions for rough spaces, the
/// smooth trend for smooth ones (docs/performance.md, "the forest and the Gaussian process in
/// turns").
using TpeGpRfTuner = Tuner<NoSurrogate, PredictedMean, TreeParzenGpRfStart, Deterministic>;

/// TreeParzen with tpe_gp_rf_restarts_params: the optimizer of TpeGpRfRestartsTuner.
struct TreeParzenGpRfRestarts : TreeParzen {
  TreeParzenGpRfRestarts() : TreeParzen(tpe_gp_rf_restarts_params) {}
};
static_assert(Optimizer<TreeParzenGpRfRestarts>);

/// tpe-gp-rf with restarts: a run whose best has stalled starts over (a new space-filling start
/// away from every config visited, a new model start, densities of the new phase's trials), so
/// that one run gets several independent chances to leave the basin it locked into, such as a
/// conv2d layout whose first tiles were slow (docs/performance.md, "Restarts"); its model start
/// is 60 trials long, in each phase, its Gaussian process weighs each knob by a length scale
/// of its own, and after the model start its candidates include crossovers of the good configs,
/// and its Gaussian process, fitted on the phase's fastest configs, goes on picking among them.
/// Identical to tpe-gp-rf for its first 10 trials (the start). The default
/// of tunekit-replay, the tuning programs and the Python bindings (default_preset).
using TpeGpRfRestartsTuner = Tuner<NoSurrogate, PredictedMean, TreeParzenGpRfRestarts, Deterministic>;

/// AutoTVM's XGBTuner: boosted trees (squared error, AutoTVM's defaults) ranking candidates by
/// predicted throughput, simulated annealing, epsilon-greedy 0.05, deterministic measurement.
using AutoTvmTuner = Tuner<GradientBoostedTrees, PredictedMean, SimulatedAnnealing, Deterministic>;

/// AdaTune's ablation, step 1: the random forest with jackknife variance and expected improvement
/// in place of AutoTVM's model, searched by plain simulated annealing (epsilon 0.05).
using RfEiSaTuner = Tuner<RandomForest, ExpectedImprovement, SimulatedAnnealing, Deterministic>;

/// AdaTune's ablation, step 2: as RfEiSaTuner with the contextual epsilon.
using RfEiCsaTuner = Tuner<RandomForest, ExpectedImprovement, ContextualAnnealing, Deterministic>;

/// AdaTune: forest with jackknife variance, expected improvement, contextual simulated
/// annealing, and the adaptive evaluator (AdaptiveCV: micro-batches until the throughput's
/// coefficient of variation is below 0.1).
using AdaTuneTuner = Tuner<RandomForest, ExpectedImprovement, ContextualAnnealing, AdaptiveCV>;

/// Chameleon's ablation, step 1 (`sa-as`): AutoTVM's pipeline with Chameleon's adaptive sampling
/// (KMeansSampler: k-means over the annealing's candidates, one measurement per cluster, sample
/// synthesis in place of already measured centroids).
using SaAsTuner = Tuner<GradientBoostedTrees, PredictedMean, Annealing<FixedEpsilon, KMeansSampler>, Deterministic>;

/// Chameleon's ablation, step 2 (`ppo`): AutoTVM's pipeline with the annealing replaced by
/// Chameleon's PPO agent (PolicyGradient), without adaptive sampling.
using PpoTuner = Tuner<GradientBoostedTrees, PredictedMean, PolicyGradient, Deterministic>;

/// Chameleon (Ahn et al., ICLR 2020): AutoTVM's boosted trees ranking candidates by predicted
/// throughput, the PPO agent's adaptive exploration, adaptive sampling (KMeansSampler) of what
/// it found, AutoTVM's epsilon-greedy 0.05 (kept in Chameleon's code), deterministic measurement.
using ChameleonTuner = Tuner<GradientBoostedTrees, PredictedMean, Ppo<FixedEpsilon, KMeansSampler>, Deterministic>;

}  // namespace tunekit
