#pragma once
/// \file
/// Measurement: what an evaluator returns for one configuration.

#include "tunekit/core/status.hpp"

#include <cmath>
#include <limits>
#include <numeric>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tunekit {

/// The result of measuring one configuration.
struct Measurement {
  Status status = Status::ok;
  /// Seconds of each timed run (each repeat, for an evaluator that averages `number` runs).
  std::vector<double> samples{};
  /// Mean and standard deviation (sample, n - 1) of the samples the evaluator kept, in seconds;
  /// infinity for a failure.
  double mean = std::numeric_limits<double>::infinity();
  double std = 0.0;
  /// Seconds spent measuring this configuration, preparation included (simulated for replay).
  double cost = 0.0;
  /// Why it failed.
  std::string error{};
  /// Where a measurement farm measured it (include/tunekit/farm/): the worker's host and device
  /// ("cpu:0-3", "cuda:1"); empty when the tuning process measured it itself.
  std::string host{};
  std::string device{};

  bool ok() const noexcept { return status == Status::ok; }

  /// FLOP per second of the mean run, 0 for a failure.
  double throughput(double flop) const noexcept {
    return ok() && mean > 0 ? flop / mean : 0.0;
  }

  /// A successful measurement from the seconds of its timed runs, for a loop that measures by
  /// itself (ask/tell): mean and std (n - 1) of the samples; `cost` is the seconds the
  /// measurement took (default: the samples' sum). Throws std::invalid_argument for no samples,
  /// or a sample or cost that is not finite and positive (>= 0 for the cost).
  static Measurement from_samples(std::vector<double> samples, double cost = -1.0);

  /// A failed measurement (any status but ok) with its error text and the seconds it cost.
  static Measurement failure(Status status, std::string error, double cost = 0.0);
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

inline Measurement Measurement::from_samples(std::vector<double> samples, double cost) {
  if (samples.empty()) throw std::invalid_argument("Measurement::from_samples: no samples");
  for (double x : samples)
    if (!(x > 0) || !std::isfinite(x))
      throw std::invalid_argument("Measurement::from_samples: a run time is not finite and positive (" +
                                  std::to_string(x) + " s)");
  if (cost < 0) cost = std::accumulate(samples.begin(), samples.end(), 0.0);
  if (!std::isfinite(cost)) throw std::invalid_argument("Measurement::from_samples: cost is not finite");
  Measurement m;
  m.mean = stats::mean(samples);
  m.std = stats::stddev(samples);
  m.cost = cost;
  m.samples = std::move(samples);
  return m;
}

inline Measurement Measurement::failure(Status status, std::string error, double cost) {
  if (status == Status::ok) throw std::invalid_argument("Measurement::failure: status is ok");
  if (!(cost >= 0) || !std::isfinite(cost))
    throw std::invalid_argument("Measurement::failure: cost must be finite and >= 0");
  Measurement m;
  m.status = status;
  m.error = std::move(error);
  m.cost = cost;
  return m;
}

}  // namespace tunekit
