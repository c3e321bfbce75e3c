#pragma once
/// \file
/// Multi-task replay: recorded datasets as the operators of one model, so that schedulers can be
/// compared offline. The timeline is the simulated measurement seconds (the replayed run times
/// plus the per-config overhead, summed over tasks), which a seed reproduces on any machine;
/// search and scheduling time are left out of it and reported separately.
///
/// The objective the schedulers see is made of measured latencies: each task's best is the lowest
/// mean of a few draws among every config it measured, so a task measured many times holds a
/// config whose draws came out low (on gemm_RTX_2080_Ti the lowest recorded sample is 10% below
/// the optimum's mean). On recorded kernels the trace also carries the recorded objective: the
/// same sum with each held config at its recorded mean time, what the model would really run.
/// Schedulers are compared on that one (docs/benchmarks.md, "Multi-task scheduling").

#include "tunekit/replay/replay_kernel.hpp"
#include "tunekit/multi_task_tuner.hpp"

#include <chrono>
#include <cmath>
#include <cstddef>
#include <iterator>
#include <limits>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace tunekit {

/// One multi-task run replayed on recorded datasets.
struct MultiTaskTrace {
  std::vector<ObjectivePoint> objective{};
  /// On recorded kernels (ReplayKernel): after each point of `objective`, the weighted sum of the
  /// recorded mean times (seconds) of the configs the tasks hold as best; infinity until every
  /// task has succeeded. Empty on live kernels.
  std::vector<double> recorded_objective{};
  /// The task of each slot.
  std::vector<std::size_t> slot_tasks{};
  /// Each task's best latency in seconds at the end.
  std::vector<double> best_latency{};
  /// With a confirmation (trace_multi_task's `confirm`): each task's config after confirm_tasks
  /// (the first confirmed candidate; the held one when none could be confirmed), the weighted sum of
  /// their recorded mean times in seconds (recorded kernels; infinity on live ones or when a task
  /// never succeeded), and the seconds the confirmation's measurements took, all tasks together.
  /// Empty, infinity and 0 without one.
  std::vector<Config> confirmed{};
  double confirmed_recorded_objective = std::numeric_limits<double>::infinity();
  double confirm_seconds = 0.0;
  /// The wall-clock seconds of the run, and the part the scheduler took.
  double wall_seconds = 0.0;
  double scheduler_seconds = 0.0;

  /// The objective at the end (infinity when a task never succeeded).
  double final_objective() const {
    return objective.empty() ? std::numeric_limits<double>::infinity() : objective.back().objective;
  }
  /// Simulated measurement seconds until the objective was first within `factor` of `reference`
  /// (objective <= factor x reference); infinity when it never was.
  double seconds_to(double factor, double reference) const {
    const ObjectivePoint* p = first_reaching(objective, factor * reference);
    return p ? p->measure_seconds : std::numeric_limits<double>::infinity();
  }
  /// seconds_to(factor, the run's own final objective).
  double seconds_to(double factor) const { return seconds_to(factor, final_objective()); }

  /// The recorded objective at the end (infinity when a task never succeeded or on live kernels).
  double final_recorded_objective() const {
    return recorded_objective.empty() ? std::numeric_limits<double>::infinity() : recorded_objective.back();
  }
  /// Simulated measurement seconds until the recorded objective was first within `factor` of
  /// `reference`; infinity when it never was.
  double recorded_seconds_to(double factor, double reference) const {
    for (std::size_t i = 0; i < recorded_objective.size(); ++i)
      if (recorded_objective[i] <= factor * reference) return objective[i].measure_seconds;
    return std::numeric_limits<double>::infinity();
  }
};

namespace detail {

/// MultiTaskTrace::recorded_objective of a finished run: its objective history walked point by
/// point, each point one trial of its task in the task's history order, each task's best (lowest
/// measured mean; the first wins a tie, as History::best) priced at its recorded mean.
template <class MT, class Kernels>
std::vector<double> recorded_objective(const MT& mt, Kernels& kernels) {
  const std::size_t n = mt.task_count();
  std::vector<std::size_t> next(n, 0);
  std::vector<const Trial*> best(n, nullptr);
  std::vector<double> out;
  out.reserve(mt.objective_history().size());
  for (const ObjectivePoint& p : mt.objective_history()) {
    const History& h = mt.tuner(p.task).history();
    if (next[p.task] >= h.size())
      throw std::logic_error("recorded_objective: task " + std::to_string(p.task) + " has more points than trials");
    const Trial& t = h[next[p.task]++];
    if (t.measurement.ok() && (!best[p.task] || t.measurement.mean < best[p.task]->measurement.mean)) best[p.task] = &t;
    double recorded = 0.0, measured = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      const double w = mt.task(i).weight;
      recorded += best[i] ? w * kernel_of(kernels, i).recorded_ms(best[i]->config) * 1e-3
                          : std::numeric_limits<double>::infinity();
      measured += w * (best[i] ? best[i]->measurement.mean : std::numeric_limits<double>::infinity());
    }
    // The walk must see the best the tuner saw at this point (MultiTaskTuner::objective).
    if (measured != p.objective)
      throw std::logic_error("recorded_objective: the objective history does not follow the tasks' histories");
    out.push_back(recorded);
  }
  return out;
}

}  // namespace detail

/// Runs a MultiTaskTuner<SchedulerT, TunerT> to its budget on `kernels` (task i: kernels[i] with
/// tasks[i]; a range of kernels or of pointers to kernels, as MultiTaskTuner::tune takes) and
/// returns the trace. On live kernels its measurement seconds are the real ones. With `confirm`,
/// each task's fastest trials are measured again after the run (confirm_tasks, on this process;
/// its measurements draw from `rng` after the run's, so the run's trace is the same without).
template <class TunerT, class SchedulerT, class Kernels>
MultiTaskTrace trace_multi_task(Kernels& kernels, std::span<const TaskOptions> tasks, SchedulerT scheduler,
                                const MultiTaskOptions& options, Rng& rng, const typename TunerT::Parts& parts = {},
                                std::optional<ConfirmParams> confirm = std::nullopt) {
  detail::NoFarm serial;
  return trace_multi_task<TunerT>(kernels, tasks, std::move(scheduler), options, serial, rng, parts, confirm);
}

/// trace_multi_task with the batches measured on a measurement farm (MultiTaskTuner::tune with a
/// farm; `farm` detail::NoFarm: serially): the same trace as the serial run. On a process that
/// only measures for the farm (an MPI rank other than 0) the trace is empty.
template <class TunerT, class SchedulerT, class Kernels, class F>
MultiTaskTrace trace_multi_task(Kernels& kernels, std::span<const TaskOptions> tasks, SchedulerT scheduler,
                                const MultiTaskOptions& options, F& farm, Rng& rng,
                                const typename TunerT::Parts& parts = {},
                                std::optional<ConfirmParams> confirm = std::nullopt) {
  if (confirm) confirm->validate();
  if (std::size(kernels) != tasks.size())
    throw std::invalid_argument("trace_multi_task: " + std::to_string(std::size(kernels)) + " kernels for " +
                                std::to_string(tasks.size()) + " tasks");
  MultiTaskTuner<SchedulerT, TunerT> mt(std::move(scheduler), options);
  for (std::size_t i = 0; i < tasks.size(); ++i) mt.add_task(detail::kernel_of(kernels, i), tasks[i], parts);
  const auto t0 = std::chrono::steady_clock::now();
  if constexpr (std::is_same_v<F, detail::NoFarm>)
    mt.tune(kernels, rng);
  else
    mt.tune(kernels, farm, rng);
  MultiTaskTrace trace;
  trace.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  trace.objective = mt.objective_history();
  // Recorded kernels (ReplayKernel) price configs at their recorded means; live ones cannot.
  constexpr bool recorded_kernels = requires(const Config& c) { detail::kernel_of(kernels, 0).recorded_ms(c); };
  if constexpr (recorded_kernels)
    trace.recorded_objective = detail::recorded_objective(mt, kernels);
  trace.slot_tasks = mt.slot_tasks();
  for (std::size_t i = 0; i < tasks.size(); ++i) trace.best_latency.push_back(mt.best_latency(i));
  trace.scheduler_seconds = mt.scheduler_seconds();
  // A process that only measured for the farm (an MPI rank other than 0) has no run to confirm.
  if (confirm && !trace.objective.empty()) {
    const auto confirmed = confirm_tasks(mt, kernels, rng, *confirm);
    double recorded = 0.0;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      for (const Confirmed& c : confirmed[i]) trace.confirm_seconds += c.cost;
      const Confirmed* kept = first_confirmed(confirmed[i]);
      const Trial* pick = kept ? &kept->trial : mt.tuner(i).history().best();
      trace.confirmed.push_back(pick ? pick->config : Config{});
      if constexpr (recorded_kernels)
        recorded += pick ? tasks[i].weight * detail::kernel_of(kernels, i).recorded_ms(pick->config) * 1e-3
                         : std::numeric_limits<double>::infinity();
    }
    if constexpr (recorded_kernels) trace.confirmed_recorded_objective = recorded;
  }
  return trace;
}

/// trace_multi_task on replay kernels: the timeline is simulated and a seed reproduces it.
template <class TunerT, class SchedulerT>
MultiTaskTrace replay_multi_task(std::span<ReplayKernel> kernels, std::span<const TaskOptions> tasks,
                                 SchedulerT scheduler, const MultiTaskOptions& options, Rng& rng,
                                 const typename TunerT::Parts& parts = {},
                                 std::optional<ConfirmParams> confirm = std::nullopt) {
  return trace_multi_task<TunerT>(kernels, tasks, std::move(scheduler), options, rng, parts, confirm);
}

/// replay_multi_task with the batches measured on a measurement farm: the same trace.
template <class TunerT, class SchedulerT, class F>
  requires MeasurementFarm<F>
MultiTaskTrace replay_multi_task(std::span<ReplayKernel> kernels, std::span<const TaskOptions> tasks,
                                 SchedulerT scheduler, const MultiTaskOptions& options, F& farm, Rng& rng,
                                 const typename TunerT::Parts& parts = {},
                                 std::optional<ConfirmParams> confirm = std::nullopt) {
  return trace_multi_task<TunerT>(kernels, tasks, std::move(scheduler), options, farm, rng, parts, confirm);
}

}  // namespace tunekit
