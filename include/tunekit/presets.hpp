#pragma once
/// \file
/// Named tuners: the published pipelines, one line each.

#include "tunekit/acquisition/predicted_mean.hpp"
#include "tunekit/evaluator/deterministic.hpp"
#include "tunekit/optimizer/grid_search.hpp"
#include "tunekit/optimizer/random_search.hpp"
#include "tunekit/tuner.hpp"

namespace tunekit {

/// Uniform random search without replacement (the baseline every model must beat).
using RandomSearchTuner = Tuner<NoSurrogate, PredictedMean, RandomSearch, Deterministic>;
/// Every valid config in lexicographic order.
using GridSearchTuner = Tuner<NoSurrogate, PredictedMean, GridSearch, Deterministic>;

}  // namespace tunekit
