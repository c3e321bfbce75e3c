#pragma once
/// \file
/// TimeLimit: stop after a wall-clock duration.

#include "tunekit/concepts/callback.hpp"

#include <cmath>
#include <stdexcept>

namespace tunekit {

/// Stops the tuning once `seconds` of wall-clock time have passed since tune() began, checked
/// after each measurement. (Budget::seconds limits the tuning clock instead, which is simulated
/// for replay.)
class TimeLimit {
 public:
  explicit TimeLimit(double seconds) : seconds_(seconds) {
    if (!(seconds > 0) || !std::isfinite(seconds))
      throw std::invalid_argument("TimeLimit: seconds must be positive and finite");
  }
  bool on_measured(const TuningState& s, const Trial&) const { return s.wall_seconds >= seconds_; }

 private:
  double seconds_;
};

static_assert(Callback<TimeLimit>);

}  // namespace tunekit
