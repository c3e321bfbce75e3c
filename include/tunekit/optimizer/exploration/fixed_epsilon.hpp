#pragma once
/// \file
/// FixedEpsilon: AutoTVM's epsilon-greedy exploration policy.

#include "tunekit/concepts/optimizer.hpp"

#include <stdexcept>

namespace tunekit {

/// AutoTVM's epsilon-greedy: a fixed fraction of each batch is random unvisited configs
/// (AutoTVM's model-based tuner takes the last 0.05 * plan_size picks of each plan at random).
struct FixedEpsilon {
  double epsilon_value = 0.05;

  double epsilon(const SearchContext& /*ctx*/, Rng& /*rng*/) const {
    if (!(epsilon_value >= 0 && epsilon_value <= 1))
      throw std::invalid_argument("FixedEpsilon: epsilon must be in [0, 1]");
    return epsilon_value;
  }
};

static_assert(ExplorationPolicy<FixedEpsilon>);

}  // namespace tunekit
