#pragma once
/// \file
/// TuningState: what callbacks see of a running tuning loop.

#include "tunekit/core/history.hpp"
#include "tunekit/space/search_space.hpp"

#include <cstddef>
#include <string>

namespace tunekit {

/// A read-only view of a tuning run, handed to every callback hook. Refers to the tuner's data:
/// valid during the hook's call. Built by Tuner::state for Tuner::tune and for MultiTaskTuner
/// alike: in a multi-task run the task fields (space, history, task, device, flop) are those of
/// the task measured (at on_begin the first task, at on_end the task of the last slot) and the
/// run fields (budgets, clocks, round, trials) are the whole run's.
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
  /// The tuning clock (measurement costs plus search time; a multi-task run's: its tasks' clocks
  /// and the scheduler's time) and the wall clock since tune() began, in seconds.
  double tuning_seconds = 0.0;
  double wall_seconds = 0.0;
  /// Rounds (batches asked and measured) completed; in a multi-task run, slots completed.
  std::size_t round = 0;
  /// In on_measured: the trial was not measured now but taken from the records of the run
  /// being resumed (exact resume, Tuner::set_recorded); a log writer skips it.
  bool replayed = false;
  /// Trials of the run so far: history.size() for a single task, all tasks' in a multi-task run.
  std::size_t trials = 0;
  /// Tasks in the run: 1 for Tuner::tune, the task count of a MultiTaskTuner.
  std::size_t tasks = 1;

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
