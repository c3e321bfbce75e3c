#pragma once
/// \file
/// TuningState: what callbacks see of a running tuning loop.

#include "tunekit/core/history.hpp"
#include "tunekit/space/search_space.hpp"

#include <cstddef>
#include <string>

namespace tunekit {

/// A read-only view of a tuning run, handed to every callback hook. Refers to the tuner's data:
/// valid during the hook's call.
struct TuningState {
  const SearchSpace& space;
  const History& history;
  const std::string& task;
  const std::string& device;
  /// FLOP per kernel run; 0 when unknown (then throughputs are runs per second).
  double flop = 0.0;
  /// The trial budget and the tuning-clock budget in seconds.
  std::size_t budget_trials = 0;
  double budget_seconds = 0.0;
  /// The tuning clock (measurement costs plus search time) and the wall clock since tune()
  /// began, in seconds.
  double tuning_seconds = 0.0;
  double wall_seconds = 0.0;
  /// Rounds (batches asked and measured) completed.
  std::size_t round = 0;
  /// In on_measured: the trial was not measured now but taken from the records of the run
  /// being resumed (exact resume, Tuner::set_recorded); a log writer skips it.
  bool replayed = false;

  /// GFLOPS of a measurement (runs per second / 1e9 when the FLOP count is unknown).
  double gflops(const Measurement& m) const noexcept {
    return m.throughput(flop > 0 ? flop : 1.0) / 1e9;
  }
  /// GFLOPS of the best trial so far, 0 when none succeeded.
  double best_gflops() const noexcept {
    return history.best() ? gflops(history.best()->measurement) : 0.0;
  }
};

}  // namespace tunekit
