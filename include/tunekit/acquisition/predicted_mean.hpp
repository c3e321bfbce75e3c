#pragma once
/// \file
/// PredictedMean: rank candidates by the model's prediction (AutoTVM).

#include "tunekit/concepts/acquisition.hpp"

namespace tunekit {

/// Scores a candidate by the surrogate's predicted mean; ignores uncertainty (AutoTVM's
/// XGBTuner ranks candidates this way).
struct PredictedMean {
  double score(double mean, double /*std*/, double /*best*/) const noexcept { return mean; }
};

static_assert(Acquisition<PredictedMean>);

}  // namespace tunekit
