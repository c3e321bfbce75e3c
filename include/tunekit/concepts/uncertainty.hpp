#pragma once
/// \file
/// Combinations of parts: a part that scores or explores with the predictive standard deviation
/// needs a surrogate that gives one (checked by Tuner).
/// (tunekit/concepts.hpp includes every role's concept.)

#include "tunekit/concepts/surrogate.hpp"

#include <concepts>

namespace tunekit {

/// Whether a part (an acquisition, an exploration or pick policy, an optimizer) needs the
/// surrogate's predictive standard deviation: it declares `static constexpr bool
/// needs_uncertainty = true` (ExpectedImprovement, UpperConfidenceBound,
/// ProbabilityOfImprovement, ContextualEpsilon; ModelBased when one of its policies does).
template <class T>
inline constexpr bool needs_uncertainty_v = requires { requires T::needs_uncertainty; };

/// Refuses, at compile time, a surrogate without uncertainty (not an UncertainSurrogate, such as
/// GradientBoostedTrees) with an acquisition or optimizer that needs it: the standard deviation
/// would be 0 everywhere and the part would silently degrade (expected improvement to the
/// predicted gain, the contextual epsilon to 0). NoSurrogate fits no model and scores nothing.
template <class S, class A, class O>
constexpr bool check_uncertainty() {
  constexpr bool has = std::same_as<S, NoSurrogate> || UncertainSurrogate<S>;
  static_assert(has || !needs_uncertainty_v<A>,
                "tunekit::Tuner: the acquisition needs the predictive standard deviation, and the "
                "surrogate gives none (it is not a tunekit::UncertainSurrogate): use one that is "
                "(RandomForest) or an acquisition of the mean (PredictedMean)");
  static_assert(has || !needs_uncertainty_v<O>,
                "tunekit::Tuner: the optimizer's exploration or pick policy needs the predictive "
                "standard deviation, and the surrogate gives none (it is not a "
                "tunekit::UncertainSurrogate): use one that is (RandomForest) or FixedEpsilon");
  return has || (!needs_uncertainty_v<A> && !needs_uncertainty_v<O>);
}

}  // namespace tunekit
