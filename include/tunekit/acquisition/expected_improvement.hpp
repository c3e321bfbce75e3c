#pragma once
/// \file
/// ExpectedImprovement: AdaTune's acquisition (eq. 1-2) over a surrogate with uncertainty.

#include "tunekit/concepts/acquisition.hpp"

#include <boost/math/distributions/normal.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tunekit {

/// Expected improvement over the best value, for a normal predictive distribution N(mu, sigma^2):
///
///     Z  = (mu - best - xi) / sigma
///     EI = (mu - best - xi) Phi(Z) + sigma phi(Z)    if sigma > 0
///     EI = max(0, mu - best - xi)                    if sigma = 0
///
/// with Phi and phi the standard normal CDF and density (Boost.Math). xi = 0 (the default) is
/// AdaTune's eq. 1-2; a positive xi asks for a margin of improvement.
struct ExpectedImprovement {
  /// It scores with the predictive standard deviation: Tuner refuses a surrogate without one.
  static constexpr bool needs_uncertainty = true;

  double xi = 0.0;

  double score(double mean, double std, double best) const {
    if (!(std >= 0)) throw std::invalid_argument("ExpectedImprovement: std must be >= 0");
    const double gain = mean - best - xi;
    if (std == 0.0) return std::max(0.0, gain);
    const boost::math::normal_distribution<double> n01;
    const double z = gain / std;
    return gain * boost::math::cdf(n01, z) + std * boost::math::pdf(n01, z);
  }
};

static_assert(Acquisition<ExpectedImprovement>);

}  // namespace tunekit
