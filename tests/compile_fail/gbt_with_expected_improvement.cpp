// Expected improvement scores with the predictive standard deviation, which boosted trees do not
// give (GradientBoostedTrees is not an UncertainSurrogate): Tuner refuses the combination with
// check_uncertainty's message instead of silently scoring the predicted gain.
// expect: tunekit::Tuner: the acquisition needs the predictive standard deviation
#include <tunekit/acquisition/expected_improvement.hpp>
#include <tunekit/optimizer/simulated_annealing.hpp>
#include <tunekit/surrogate/gradient_boosted_trees.hpp>
#include <tunekit/surrogate/random_forest.hpp>
#include <tunekit/tuner.hpp>

#ifdef TUNEKIT_COMPILE_FAIL_OK
using Model = tunekit::RandomForest;
#else
using Model = tunekit::GradientBoostedTrees;
#endif

using T = tunekit::Tuner<Model, tunekit::ExpectedImprovement, tunekit::SimulatedAnnealing>;
T make(tunekit::SearchSpace s) { return T(std::move(s)); }
