#pragma once
/// \file
/// ContextualAnnealing: AdaTune's contextual simulated annealing (section 4.2.2).

#include "tunekit/optimizer/exploration/contextual_epsilon.hpp"
#include "tunekit/optimizer/simulated_annealing.hpp"

namespace tunekit {

/// AutoTVM's annealing search with AdaTune's contextual epsilon: each round, epsilon_t = mean
/// predicted std over K random unvisited configs / best measured value (clamped to [0, 1]);
/// (1 - epsilon_t) of the batch comes from the annealing's top list and epsilon_t is random.
using ContextualAnnealing = Annealing<ContextualEpsilon, TopPick>;

static_assert(Optimizer<ContextualAnnealing>);

}  // namespace tunekit
