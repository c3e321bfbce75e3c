// AdaTune's contextual epsilon is the mean predictive standard deviation over the best value,
// which boosted trees do not give (GradientBoostedTrees is not an UncertainSurrogate): Tuner
// refuses the combination with check_uncertainty's message instead of exploring with epsilon 0.
// expect: tunekit::Tuner: the optimizer's exploration or pick policy needs the predictive standard deviation
#include <tunekit/acquisition/predicted_mean.hpp>
#include <tunekit/optimizer/contextual_annealing.hpp>
#include <tunekit/surrogate/gradient_boosted_trees.hpp>
#include <tunekit/surrogate/random_forest.hpp>
#include <tunekit/tuner.hpp>

#ifdef TUNEKIT_COMPILE_FAIL_OK
using Model = tunekit::RandomForest;
#else
using Model = tunekit::GradientBoostedTrees;
#endif

using T = tunekit::Tuner<Model, tunekit::PredictedMean, tunekit::ContextualAnnealing>;
T make(tunekit::SearchSpace s) { return T(std::move(s)); }
