#pragma once
/// \file
/// UpperConfidenceBound: optimism in the face of uncertainty (Srinivas et al. 2010).

#include "tunekit/concepts/acquisition.hpp"

#include <stdexcept>

namespace tunekit {

/// UCB = mu + kappa * sigma; kappa = 0 is PredictedMean.
struct UpperConfidenceBound {
  /// It scores with the predictive standard deviation: Tuner refuses a surrogate without one.
  static constexpr bool needs_uncertainty = true;

  double kappa = 2.0;

  double score(double mean, double std, double /*best*/) const {
    if (!(std >= 0)) throw std::invalid_argument("UpperConfidenceBound: std must be >= 0");
    return mean + kappa * std;
  }
};

static_assert(Acquisition<UpperConfidenceBound>);

}  // namespace tunekit
