#pragma once
/// \file
/// ProbabilityOfImprovement: the chance that a candidate beats the best value (Kushner 1964).

#include "tunekit/concepts/acquisition.hpp"

#include <boost/math/distributions/normal.hpp>

#include <stdexcept>

namespace tunekit {

/// PI = Phi((mu - best - xi) / sigma) for sigma > 0; for sigma = 0, 1 if mu > best + xi else 0.
struct ProbabilityOfImprovement {
  /// It scores with the predictive standard deviation: Tuner refuses a surrogate without one.
  static constexpr bool needs_uncertainty = true;

  double xi = 0.0;

  double score(double mean, double std, double best) const {
    if (!(std >= 0)) throw std::invalid_argument("ProbabilityOfImprovement: std must be >= 0");
    const double gain = mean - best - xi;
    if (std == 0.0) return gain > 0 ? 1.0 : 0.0;
    return boost::math::cdf(boost::math::normal_distribution<double>(), gain / std);
  }
};

static_assert(Acquisition<ProbabilityOfImprovement>);

}  // namespace tunekit
