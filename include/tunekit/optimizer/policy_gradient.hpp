#pragma once
/// \file
/// PolicyGradient and Ppo<Exploration, Pick>: ModelBased over PpoSearch (Chameleon's adaptive
/// exploration).

#include "tunekit/optimizer/exploration/fixed_epsilon.hpp"
#include "tunekit/optimizer/model_based.hpp"
#include "tunekit/optimizer/pick/top_pick.hpp"
#include "tunekit/optimizer/search/ppo.hpp"

namespace tunekit {

/// The PPO agent's search with any exploration and pick policy (Chameleon: Ppo<FixedEpsilon,
/// KMeansSampler>).
template <class ExplorationT = FixedEpsilon, class PickT = TopPick>
using Ppo = ModelBased<PpoSearch, ExplorationT, PickT>;

/// Chameleon's RL search with AutoTVM's epsilon-greedy batch (epsilon 0.05) and top pick: the
/// `ppo` step of Chameleon's ablation (annealing replaced by the agent, no adaptive sampling).
using PolicyGradient = Ppo<FixedEpsilon, TopPick>;

static_assert(Optimizer<PolicyGradient>);

}  // namespace tunekit
