#pragma once
/// \file
/// MeasurementFarm: measures a batch of configurations on several workers in parallel and hands
/// the results back in job order (include/tunekit/farm/ ships LocalFarm and MpiFarm).
/// (tunekit/concepts.hpp includes every role's concept.)

#include "tunekit/core/farm_job.hpp"

#include <concepts>
#include <span>

namespace tunekit {

/// A measurement farm. One run (a Tuner's or MultiTaskTuner's `tune` with the farm) is:
/// - `start(work)`: on the process that tunes, readies the workers to measure with `work` and
///   returns true; on a process that only measures (an MPI rank other than 0) serves jobs with
///   `work` until the tuning process finishes the run, then returns false (the caller then
///   tunes nothing);
/// - `measure(jobs, sink)`, any number of times: measures the jobs on the workers, calling
///   `sink(i, measurement)` for jobs[0], jobs[1], ... in order as soon as each one and all
///   before it are measured; stops early when sink returns false;
/// - `finish()`: ends the run (the workers stop serving).
/// A worker that dies or hangs must not lose a result: the farm measures the job again or
/// records it as failed, or throws (nothing told is lost: the tuner's log resumes the run).
template <class F>
concept MeasurementFarm = requires(F& f, const FarmWork& work, std::span<const FarmJob> jobs, const FarmSink& sink) {
  { f.start(work) } -> std::same_as<bool>;
  f.measure(jobs, sink);
  f.finish();
};

/// A farm whose batch can grow while it is measured: `measure(jobs, sink, more)` is measure(jobs,
/// sink), and after each result handed to the sink (in job order) `more()` returns the jobs to
/// append to the batch, so that a tuner keeps its workers busy with configs it chose knowing every
/// result before (LocalFarm).
template <class F>
concept StreamingFarm = MeasurementFarm<F> && requires(F& f, std::span<const FarmJob> jobs, const FarmSink& sink,
                                                        const FarmMore& more) { f.measure(jobs, sink, more); };

template <class F>
constexpr bool check_measurement_farm() {
  static_assert(MeasurementFarm<F>,
                "tunekit::MeasurementFarm: a farm needs `bool start(const tunekit::FarmWork&)`, "
                "`measure(std::span<const tunekit::FarmJob>, const tunekit::FarmSink&)` and `finish()`");
  return MeasurementFarm<F>;
}

}  // namespace tunekit
