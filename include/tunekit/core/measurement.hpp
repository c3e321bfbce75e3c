#pragma once
/// \file
/// Measurement: what an evaluator returns for one configuration.

#include "tunekit/core/status.hpp"

#include <cmath>
#include <limits>
#include <numeric>
#include <span>
#include <string>
#include <vector>

namespace tunekit {

/// The result of measuring one configuration.
struct Measurement {
  Status status = Status::ok;
  /// Seconds of each timed run (each repeat, for an evaluator that averages `number` runs).
  std::vector<double> samples;
  /// Mean and standard deviation (sample, n - 1) of the samples the evaluator kept, in seconds;
  /// infinity for a failure.
  double mean = std::numeric_limits<double>::infinity();
  double std = 0.0;
  /// Seconds spent measuring this configuration, preparation included (simulated for replay).
  double cost = 0.0;
  /// Why it failed.
  std::string error;

  bool ok() const noexcept { return status == Status::ok; }

  /// FLOP per second of the mean run, 0 for a failure.
  double throughput(double flop) const noexcept {
    return ok() && mean > 0 ? flop / mean : 0.0;
  }
};

namespace stats {

inline double mean(std::span<const double> x) {
  if (x.empty()) return std::numeric_limits<double>::quiet_NaN();
  return std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(x.size());
}

/// Sample standard deviation (n - 1 in the denominator); 0 for fewer than two values.
inline double stddev(std::span<const double> x) {
  if (x.size() < 2) return 0.0;
  const double m = mean(x);
  double ss = 0.0;
  for (double v : x) ss += (v - m) * (v - m);
  return std::sqrt(ss / static_cast<double>(x.size() - 1));
}

}  // namespace stats
}  // namespace tunekit
