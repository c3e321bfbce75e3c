#pragma once
/// \file
/// SimulatedAnnealing and Annealing<Exploration, Pick>: ModelBased over AnnealingSearch.

#include "tunekit/optimizer/exploration/fixed_epsilon.hpp"
#include "tunekit/optimizer/model_based.hpp"
#include "tunekit/optimizer/pick/top_pick.hpp"
#include "tunekit/optimizer/search/annealing.hpp"

namespace tunekit {

/// The annealing search with any exploration and pick policy.
template <class ExplorationT = FixedEpsilon, class PickT = TopPick>
using Annealing = ModelBased<AnnealingSearch, ExplorationT, PickT>;

/// AutoTVM's model optimizer with its epsilon-greedy batch (epsilon 0.05).
using SimulatedAnnealing = Annealing<FixedEpsilon, TopPick>;

static_assert(Optimizer<SimulatedAnnealing>);

}  // namespace tunekit
