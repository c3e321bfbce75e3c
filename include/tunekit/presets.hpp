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
#include "tunekit/surrogate/gaussian_process.hpp"
#include "tunekit/surrogate/in_turns.hpp"
#include "tunekit/surrogate/random_forest.hpp"
#include "tunekit/tuner.hpp"

namespace tunekit {

/// Uniform random search without replacement (the baseline every model must beat).
using RandomSearchTuner = Tuner<NoSurrogate, PredictedMean, RandomSearch, Deterministic>;
/// Every valid config in lexicographic order.
using GridSearchTuner = Tuner<NoSurrogate, PredictedMean, GridSearch, Deterministic>;

/// An optimizer (or any part) whose default construction is `Make()`: a preset whose parts'
/// options differ from their defaults, as a type (a Tuner default-constructs its parts).
template <class T, auto Make>
struct Configured : T {
  Configured() : T(Make()) {}
};

/// tunekit's own search with its recommended parts, TreeParzen<> (docs/concepts.md describes it).
using TpeTuner = Tuner<NoSurrogate, PredictedMean, TreeParzen<>, Deterministic>;

// The tpe-* presets: TreeParzen compositions whose rounds ignore how many configs the caller
// measures at once (TreeParzenParams::fill_parallel false), as they did when their names were
// given, so that every log recorded with them resumes exactly.

/// TreeParzen without a model start, crossovers, model pick or restarts: a maximin start, then
/// TPE's draws and the incumbent's neighbours mixed by Thompson sampling.
using TpeLocalSearch =
    TreeParzen<MaximinStart, NoModelStart, CandidateSources<GoodDensityDraws, IncumbentNeighbours>, ThompsonMix,
               NoRestarts>;
inline TpeLocalSearch tpe_local_search() { return TpeLocalSearch({.fill_parallel = false}); }
using TpeLocalTuner = Tuner<NoSurrogate, PredictedMean, Configured<TpeLocalSearch, tpe_local_search>, Deterministic>;

/// tpe-local with a model start of 40 trials by a Gaussian process (one length scale).
using TpeGpSearch =
    TreeParzen<MaximinStart, ModelStart<GaussianProcess>, CandidateSources<GoodDensityDraws, IncumbentNeighbours>,
               ThompsonMix, NoRestarts>;
inline TpeGpSearch tpe_gp_search() {
  return TpeGpSearch({.fill_parallel = false},
                     {.model_start = ModelStart<GaussianProcess>({.trials = 40}, GaussianProcess())});
}
using TpeGpTuner = Tuner<NoSurrogate, PredictedMean, Configured<TpeGpSearch, tpe_gp_search>, Deterministic>;

/// tpe-gp whose model start has a random forest and the Gaussian process pick in turns.
using TpeGpRfSearch = TreeParzen<MaximinStart, ModelStart<InTurns<RandomForest, GaussianProcess>>,
                                 CandidateSources<GoodDensityDraws, IncumbentNeighbours>, ThompsonMix, NoRestarts>;
inline TpeGpRfSearch tpe_gp_rf_search() {
  using Models = InTurns<RandomForest, GaussianProcess>;
  return TpeGpRfSearch({.fill_parallel = false},
                       {.model_start = ModelStart<Models>({.trials = 40},
                                                          Models(TpeModel<RandomForest>::make(), GaussianProcess()))});
}
using TpeGpRfTuner = Tuner<NoSurrogate, PredictedMean, Configured<TpeGpRfSearch, tpe_gp_rf_search>, Deterministic>;

/// tpe-gp-rf with a 60-trial model start whose Gaussian process has a length scale per knob,
/// crossovers of the good configs and a Gaussian process's pick among the sources after it, and
/// restarts after 100 trials without improvement: TreeParzen<>'s parts and ModelPick<>.
using TpeGpRfRestartsSearch = TreeParzen<MaximinStart, ModelStart<>,
                                         CandidateSources<GoodDensityDraws, IncumbentNeighbours, Crossovers, ModelPick<>>>;
inline TpeGpRfRestartsSearch tpe_gp_rf_restarts_search() { return TpeGpRfRestartsSearch({.fill_parallel = false}); }
using TpeGpRfRestartsTuner =
    Tuner<NoSurrogate, PredictedMean, Configured<TpeGpRfRestartsSearch, tpe_gp_rf_restarts_search>, Deterministic>;

/// AutoTVM's XGBTuner with the model `Model`: ranking candidates by predicted throughput,
/// simulated annealing, epsilon-greedy 0.05, deterministic measurement. With
/// TransferMargin<GradientBoostedTrees> (transfer/transfer_margin.hpp, given in Parts) it is
/// AutoTVM's tuner with transfer learning from earlier runs.
template <class Model = GradientBoostedTrees>
using AutoTvm = Tuner<Model, PredictedMean, SimulatedAnnealing, Deterministic>;

/// AutoTVM's XGBTuner: boosted trees (squared error, AutoTVM's defaults) ranking candidates by
/// predicted throughput, simulated annealing, epsilon-greedy 0.05, deterministic measurement.
using AutoTvmTuner = AutoTvm<>;

/// AdaTune's ablation, step 1: the random forest with jackknife variance and expected improvement
/// in place of AutoTVM's model, searched by plain simulated annealing (epsilon 0.05).
using RfEiSaTuner = Tuner<RandomForest, ExpectedImprovement, SimulatedAnnealing, Deterministic>;

/// AdaTune's ablation, step 2: as RfEiSaTuner with the contextual epsilon.
using RfEiCsaTuner = Tuner<RandomForest, ExpectedImprovement, ContextualAnnealing, Deterministic>;

/// AdaTune: forest with jackknife variance, expected improvement, contextual simulated
/// annealing, and the adaptive evaluator (AdaptiveCV: micro-batches until the throughput's
/// coefficient of variation is below 0.1).
using AdaTuneTuner = Tuner<RandomForest, ExpectedImprovement, ContextualAnnealing, AdaptiveCV>;
/// AdaTune's pipeline with the model `Model` (TransferMargin<RandomForest>: with transfer).
template <class Model = RandomForest>
using AdaTune = Tuner<Model, ExpectedImprovement, ContextualAnnealing, AdaptiveCV>;

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
/// Chameleon's pipeline with the model `Model` (TransferMargin<GradientBoostedTrees>: with transfer).
template <class Model = GradientBoostedTrees>
using Chameleon = Tuner<Model, PredictedMean, Ppo<FixedEpsilon, KMeansSampler>, Deterministic>;

}  // namespace tunekit
