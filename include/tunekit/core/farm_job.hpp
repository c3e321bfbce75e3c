#pragma once
/// \file
/// FarmJob: one measurement handed to a measurement farm (include/tunekit/farm/), and the calls
/// that pass jobs and results between a tuner and a farm.

#include "tunekit/core/measurement.hpp"
#include "tunekit/core/random.hpp"
#include "tunekit/space/config.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace tunekit {

/// One configuration to measure: which task's kernel and evaluator, the config, and its
/// measurement stream (`derive_stream(measurement_seed, trial)`, Tuner::measurement_rng), so that
/// any worker measures it exactly as the serial loop would have.
struct FarmJob {
  /// The task's index (0 for a single-task Tuner; the MultiTaskTuner's task otherwise).
  std::size_t task = 0;
  Config config{};
  /// The seed of the task's measurement streams and the trial's position in its history.
  std::uint64_t measurement_seed = 0;
  std::uint64_t trial = 0;
  /// Compilation ahead in the worker (TunerOptions::compile_ahead): up to this many of the
  /// batch's later jobs of the same task are handed to the worker that measures this job, to
  /// compile while it measures (0: none; the tuner sets it for a PrefetchingKernel).
  std::size_t compile_ahead = 0;
  /// Filled by the farm when it hands the job to a worker: the configs of the jobs it will hand
  /// that worker next, which the worker starts compiling (kernel.prefetch) before it measures
  /// this one. Empty: nothing to compile ahead.
  std::vector<Config> prefetch{};

  /// The generator the job is measured with: Tuner::measurement_rng(measurement_seed, trial).
  Rng rng() const { return derive_stream(measurement_seed, trial); }
};

/// What a farm's worker does with a job: measure it (the task's evaluator on the task's kernel,
/// with job.rng()). Exceptions become a runtime_error measurement.
using FarmWork = std::function<Measurement(const FarmJob&)>;

/// Takes the measurement of jobs[i]; called in job order. Returns false to stop the batch: the
/// jobs after i are then not handed out, and results that come back for them are dropped.
using FarmSink = std::function<bool(std::size_t i, Measurement&&)>;

/// The jobs a streaming measure appends to its batch after each result it hands to the sink (in
/// job order): none, and the batch ends once its jobs are measured (StreamingFarm).
using FarmMore = std::function<std::vector<FarmJob>()>;

}  // namespace tunekit
