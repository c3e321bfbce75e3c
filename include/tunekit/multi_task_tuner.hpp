#pragma once
/// \file
/// MultiTaskTuner: many tasks (a network's operators) tuned in time slots given out by a
/// Scheduler (DynaTune's Algorithm 1, Ansor's task scheduler), minimising the weighted sum of the
/// tasks' best latencies.

#include "tunekit/concepts.hpp"
#include "tunekit/confirm.hpp"
#include "tunekit/tuner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <iterator>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace tunekit {

/// Options of a MultiTaskTuner; fill with designated initialisers.
struct MultiTaskOptions {
  /// The budget of all tasks together: trials measured, and seconds on the multi-task clock
  /// (the tasks' tuning clocks summed, plus the scheduler's own time).
  Budget budget{};
  /// A slot: this many trials of one task ...
  std::size_t slot_trials = 64;
  /// ... or, when > 0, as many trials as fit in this many seconds of the task's tuning clock
  /// (the trial that crosses the mark is the slot's last).
  double slot_seconds = 0.0;
  /// Configs asked of a task's tuner at once within a slot.
  std::size_t plan_size = 64;

  void validate() const {
    budget.validate();
    if (slot_trials == 0) throw std::invalid_argument("MultiTaskOptions: slot_trials must be at least 1");
    if (!(slot_seconds >= 0) || !std::isfinite(slot_seconds))
      throw std::invalid_argument("MultiTaskOptions: slot_seconds must be finite and >= 0");
    if (plan_size == 0) throw std::invalid_argument("MultiTaskOptions: plan_size must be at least 1");
  }
};

/// One task of a MultiTaskTuner; fill with designated initialisers.
struct TaskOptions {
  /// Task name (records), device name (records).
  std::string name{};
  std::string device{};
  /// How often the operator appears in the network.
  double weight = 1.0;
  /// FLOP per run (0: unknown).
  double flop = 0.0;
  /// Operator kind for Ansor's similarity groups ("" for none).
  std::string tag{};
  /// The device's peak FLOP/s for DynaTune's normalisation (0: unknown).
  double peak_flops = 0.0;

  void validate() const {
    if (name.empty()) throw std::invalid_argument("TaskOptions: name must not be empty");
    if (!(weight > 0) || !std::isfinite(weight)) throw std::invalid_argument("TaskOptions: weight must be positive");
    if (!(flop >= 0) || !std::isfinite(flop)) throw std::invalid_argument("TaskOptions: flop must be finite and >= 0");
    if (!(peak_flops >= 0) || !std::isfinite(peak_flops))
      throw std::invalid_argument("TaskOptions: peak_flops must be finite and >= 0");
  }
};

/// The objective after one measurement.
struct ObjectivePoint {
  /// Trials measured so far (all tasks), the slot (0-based) and the task it was measured on.
  std::size_t trial = 0;
  std::size_t slot = 0;
  std::size_t task = 0;
  /// The multi-task clock (tasks' tuning clocks plus the scheduler's time), and the measurement
  /// seconds alone (simulated on replay, so reproducible), summed over tasks.
  double seconds = 0.0;
  double measure_seconds = 0.0;
  /// sum_i weight_i x best latency_i in seconds; infinity until every task has succeeded.
  double objective = std::numeric_limits<double>::infinity();
};

/// The first point of an objective history at or below `target`; nullptr when there is none.
inline const ObjectivePoint* first_reaching(const std::vector<ObjectivePoint>& history, double target) {
  for (const auto& p : history)
    if (p.objective <= target) return &p;
  return nullptr;
}

/// Why MultiTaskTuner::tune returned.
enum class MultiTaskStop { trial_budget, time_budget, tasks_done, callback };

inline constexpr const char* to_string(MultiTaskStop r) noexcept {
  switch (r) {
    case MultiTaskStop::trial_budget: return "trial budget reached";
    case MultiTaskStop::time_budget: return "time budget reached";
    case MultiTaskStop::tasks_done: return "no task takes another slot";
    case MultiTaskStop::callback: return "stopped by a callback";
  }
  return "unknown";
}

/// What multi-task callbacks see after each slot; refers to the tuner's data during the call.
struct MultiTaskState {
  std::span<const TaskProgress> tasks;
  const std::vector<ObjectivePoint>& objective;
  /// The slot just run (0-based) and its task.
  std::size_t slot = 0;
  std::size_t task = 0;
};

/// What tune returns.
struct MultiTaskResult {
  std::size_t trials = 0;
  std::size_t slots = 0;
  double objective = std::numeric_limits<double>::infinity();
  MultiTaskStop reason = MultiTaskStop::trial_budget;
};

namespace detail {
template <class C>
concept HasOnSlot = requires(C& c, const MultiTaskState& s) { c.on_slot(s); };
template <class C>
bool call_on_slot(C& c, const MultiTaskState& s) {
  if constexpr (HasOnSlot<C>) {
    if constexpr (std::is_convertible_v<decltype(c.on_slot(s)), bool>)
      return c.on_slot(s);
    else
      c.on_slot(s);
  }
  return false;
}
/// kernels[i], or *kernels[i] for a range of pointers to kernels.
template <class Kernels>
auto& kernel_of(Kernels& kernels, std::size_t i) {
  using Element = std::remove_cvref_t<decltype(kernels[std::size_t{0}])>;
  if constexpr (Kernel<Element>)
    return kernels[i];
  else
    return *kernels[i];
}
}  // namespace detail

/// A multi-task callback: the single-task hooks on_begin, on_measured and on_end (called as
/// Tuner::tune calls them, with the TuningState of the task measured and the run's budget,
/// clock and trial count; LogToFile, ProgressBar and the other single-task callbacks work
/// unchanged) and/or `on_slot(const MultiTaskState&)` after every slot; on_measured and on_slot
/// may return bool: true stops. (on_round is not called: a slot is the multi-task round.)
template <class C>
concept MultiTaskCallback =
    detail::HasOnBegin<C> || detail::HasOnMeasured<C> || detail::HasOnEnd<C> || detail::HasOnSlot<C>;

template <class C>
constexpr bool check_multi_task_callback() {
  static_assert(MultiTaskCallback<C>, "tunekit::MultiTaskCallback: a callback needs on_begin(const TuningState&), "
                                      "on_measured(const TuningState&, const Trial&), on_end(const "
                                      "TuningState&) or on_slot(const MultiTaskState&)");
  return MultiTaskCallback<C>;
}

/// Tunes a set of weighted tasks, each with its own `TunerT` (model, optimizer and history kept
/// between its slots: the tuner is driven by ask and Tuner::trial, the step of Tuner::tune), in
/// slots chosen by `SchedulerT`. The objective, sum_i weight_i x best latency_i, is recorded
/// after every measurement.
///
/// Measurement noise: `tune` draws one measurement seed from the caller's generator before
/// anything else; task k measures its trial i with Tuner::measurement_rng(task_measurement_seed(
/// seed, k), i). A trial's noise so depends on the seed, its task and its position in that task's
/// history only, and a run resumed by re-execution (`resume_exact(multi_task_tuner, log)` in
/// records/log.hpp) takes the same path as an uninterrupted one: same trials, same order, same
/// objective (for a trial budget and slots of trials; seconds also depend on search time).
template <class SchedulerT, class TunerT>
class MultiTaskTuner {
  static_assert(check_scheduler<SchedulerT>());

 public:
  explicit MultiTaskTuner(SchedulerT scheduler = {}, MultiTaskOptions options = {})
      : scheduler_(std::move(scheduler)), options_(std::move(options)) {
    options_.validate();
  }

  /// Adds a task with its space and its tuner's policy objects; returns its index.
  std::size_t add_task(const SearchSpace& space, TaskOptions task, typename TunerT::Parts parts = {}) {
    task.validate();
    for (const auto& t : tasks_)
      if (t.options.name == task.name)
        throw std::invalid_argument("MultiTaskTuner::add_task: a task named '" + task.name + "' exists");
    TunerOptions to{.budget = {.trials = std::numeric_limits<std::size_t>::max()},
                    .plan_size = options_.plan_size,
                    .task = task.name,
                    .device = task.device,
                    .flop = task.flop};
    progress_.push_back(TaskProgress{.weight = task.weight, .flop = task.flop, .tag = task.tag,
                                     .peak_flops = task.peak_flops});
    tasks_.push_back(Task{std::move(task), TunerT(space, std::move(to), std::move(parts))});
    return tasks_.size() - 1;
  }

  /// Adds a task for a kernel: name, device and FLOP from the kernel where `task` leaves them
  /// empty (name()/device() when it has them).
  template <class K>
  std::size_t add_task(const K& kernel, TaskOptions task, typename TunerT::Parts parts = {}) {
    static_assert(check_kernel<K>());
    if constexpr (requires { kernel.name(); })
      if (task.name.empty()) task.name = kernel.name();
    if constexpr (requires { kernel.device(); })
      if (task.device.empty()) task.device = kernel.device();
    if (task.flop == 0.0) task.flop = static_cast<double>(kernel.flop());
    return add_task(kernel.space(), std::move(task), std::move(parts));
  }

  /// Tunes until the budget is spent, no task takes another slot, or a callback returns true.
  /// kernels[i] is task i's kernel: any random-access range of kernels (a vector, a span) or of
  /// pointers to kernels (raw or smart, for kernels that cannot be moved). Continues from the
  /// current state.
  template <class Kernels, class... Callbacks>
    requires requires(Kernels& ks) { ks[std::size_t{0}]; std::size(ks); }
  MultiTaskResult tune(Kernels&& kernels, Rng& rng, Callbacks&&... callbacks) {
    detail::NoFarm serial;
    return tune_loop(kernels, serial, rng, callbacks...);
  }

  /// `tune`, each batch of a slot measured on a measurement farm's workers in parallel
  /// (farm/local.hpp, farm/mpi.hpp) with the task's evaluator and kernel, told in trial order
  /// with the streams `tune` measures with: the same trials, order and objective as the serial
  /// run whenever a measurement depends on its config and stream only (replay). See
  /// Tuner::tune with a farm. On a process that only measures (an MPI rank other than 0) it
  /// serves the run's jobs and returns no trials.
  template <class Kernels, class F, class... Callbacks>
    requires(MeasurementFarm<F> && requires(Kernels& ks) { ks[std::size_t{0}]; std::size(ks); })
  MultiTaskResult tune(Kernels&& kernels, F& farm, Rng& rng, Callbacks&&... callbacks) {
    FarmWork work = [this, &kernels](const FarmJob& job) {
      if (job.task >= tasks_.size() || job.task >= std::size(kernels))
        throw std::invalid_argument("farm job of task " + std::to_string(job.task) + " of " +
                                    std::to_string(tasks_.size()));
      return detail::measure_farm_job(tasks_[job.task].tuner.evaluator(), detail::kernel_of(kernels, job.task), job);
    };
    return detail::with_farm(
        farm, work, [&] { return tune_loop(kernels, farm, rng, callbacks...); },
        [] { return MultiTaskResult{}; });
  }

 private:
  template <class Kernels, class F, class... Callbacks>
  MultiTaskResult tune_loop(Kernels& kernels, F& farm, Rng& rng, Callbacks&... callbacks) {
    auto kernel_at = [&](std::size_t i) -> auto& { return detail::kernel_of(kernels, i); };
    using K = std::remove_cvref_t<decltype(kernel_at(0))>;
    static_assert(check_kernel<K>());
    static_assert((check_multi_task_callback<std::remove_cvref_t<Callbacks>>() && ...));
    if (std::size(kernels) != tasks_.size())
      throw std::invalid_argument("MultiTaskTuner::tune: " + std::to_string(std::size(kernels)) + " kernels for " +
                                  std::to_string(tasks_.size()) + " tasks");
    if (tasks_.empty()) throw std::invalid_argument("MultiTaskTuner::tune: no tasks");
    for (std::size_t i = 0; i < tasks_.size(); ++i)
      if (const std::string d = tasks_[i].tuner.space().difference(kernel_at(i).space()); !d.empty())
        throw std::invalid_argument("MultiTaskTuner::tune: kernel " + std::to_string(i) + "'s space differs from task '" +
                                    tasks_[i].options.name + "'s: " + d);
    const std::uint64_t measurement_seed = rng();
    const auto wall0 = std::chrono::steady_clock::now();
    (detail::call_on_begin(callbacks, tasks_[0].tuner.state(loop(0, measurement_seed, wall0))), ...);
    if constexpr (detail::HasSchedulerBegin<SchedulerT>) {
      std::size_t slots = std::numeric_limits<std::size_t>::max();
      if (options_.slot_seconds > 0) {
        if (std::isfinite(options_.budget.seconds))
          slots = static_cast<std::size_t>(std::ceil(options_.budget.seconds / options_.slot_seconds));
      } else {
        slots = (options_.budget.trials - std::min(options_.budget.trials, trials()) + options_.slot_trials - 1) /
                options_.slot_trials;
      }
      scheduler_.begin(std::span<const TaskProgress>(progress_), slots);
    }
    if (objective_.empty() && trials() > 0) record(0, 0);

    MultiTaskResult result;
    for (;;) {
      if (trials() >= options_.budget.trials) {
        result.reason = MultiTaskStop::trial_budget;
        break;
      }
      if (seconds() >= options_.budget.seconds) {
        result.reason = MultiTaskStop::time_budget;
        break;
      }
      const auto s0 = std::chrono::steady_clock::now();
      const std::size_t k = scheduler_.next_task(std::span<const TaskProgress>(progress_), rng);
      scheduler_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - s0).count();
      if (k >= tasks_.size()) {
        result.reason = MultiTaskStop::tasks_done;
        break;
      }
      if (progress_[k].finished)
        throw std::logic_error("scheduler chose finished task '" + tasks_[k].options.name + "'");
      bool stop = run_slot(k, kernel_at(k), farm, rng, loop(k, measurement_seed, wall0), callbacks...);
      const MultiTaskState state{std::span<const TaskProgress>(progress_), objective_, slots_ - 1, k};
      // Every callback's on_slot is called (no short-circuit), then any of them stops the run.
      ((stop = detail::call_on_slot(callbacks, state) || stop), ...);
      if (stop) {
        result.reason = MultiTaskStop::callback;
        break;
      }
    }
    for (auto& t : tasks_)
      t.tuner.take_unused_recorded(std::string("the run stopped (") + to_string(result.reason) + ")");
    [[maybe_unused]] const std::size_t last = slot_tasks_.empty() ? 0 : slot_tasks_.back();
    (detail::call_on_end(callbacks, tasks_[last].tuner.state(loop(last, measurement_seed, wall0))), ...);
    result.trials = trials();
    result.slots = slots_;
    result.objective = objective();
    return result;
  }

 public:

  /// The seed of task `task`'s measurement streams under the run's `measurement_seed` (tune's
  /// first draw): its trial i is measured with Tuner::measurement_rng(this, i).
  static std::uint64_t task_measurement_seed(std::uint64_t measurement_seed, std::size_t task) {
    Rng stream = derive_stream(measurement_seed, task);
    return stream();
  }

  std::size_t task_count() const noexcept { return tasks_.size(); }
  TunerT& tuner(std::size_t i) { return tasks_.at(i).tuner; }
  const TunerT& tuner(std::size_t i) const { return tasks_.at(i).tuner; }
  const TaskOptions& task(std::size_t i) const { return tasks_.at(i).options; }
  std::span<const TaskProgress> progress() const noexcept { return progress_; }
  const std::vector<ObjectivePoint>& objective_history() const noexcept { return objective_; }
  /// The slot order: the task of each slot.
  const std::vector<std::size_t>& slot_tasks() const noexcept { return slot_tasks_; }
  SchedulerT& scheduler() noexcept { return scheduler_; }
  const MultiTaskOptions& options() const noexcept { return options_; }

  /// Best latency of task i in seconds (infinity before a success).
  double best_latency(std::size_t i) const {
    const Trial* b = tasks_.at(i).tuner.history().best();
    return b ? b->measurement.mean : std::numeric_limits<double>::infinity();
  }
  /// sum_i weight_i x best latency_i in seconds; infinity until every task has succeeded.
  double objective() const {
    double f = 0.0;
    for (std::size_t i = 0; i < tasks_.size(); ++i) f += tasks_[i].options.weight * best_latency(i);
    return f;
  }
  /// Trials of all tasks.
  std::size_t trials() const noexcept {
    std::size_t n = 0;
    for (const auto& t : tasks_) n += t.tuner.history().size();
    return n;
  }
  /// The multi-task clock: the tasks' tuning clocks summed, plus the scheduler's time.
  double seconds() const noexcept {
    double s = scheduler_seconds_;
    for (const auto& t : tasks_) s += t.tuner.tuning_seconds();
    return s;
  }
  double measure_seconds() const noexcept {
    double s = 0.0;
    for (const auto& t : tasks_) s += t.tuner.measurement_seconds();
    return s;
  }
  double scheduler_seconds() const noexcept { return scheduler_seconds_; }

 private:
  struct Task {
    TaskOptions options;
    TunerT tuner;
  };

  void record(std::size_t slot, std::size_t task) {
    objective_.push_back(ObjectivePoint{trials(), slot, task, seconds(), measure_seconds(), objective()});
  }

  // Task k's part in the run: its measurement seed, the budget, and the rest of the run.
  TrialLoop loop(std::size_t k, std::uint64_t measurement_seed, std::chrono::steady_clock::time_point wall0) const {
    const TunerT& tuner = tasks_[k].tuner;
    return TrialLoop{.measurement_seed = task_measurement_seed(measurement_seed, k),
                     .budget_trials = options_.budget.trials,
                     .budget_seconds = options_.budget.seconds,
                     .wall0 = wall0,
                     .round = slots_,
                     .other_trials = trials() - tuner.history().size(),
                     .other_seconds = seconds() - tuner.tuning_seconds(),
                     .tasks = tasks_.size()};
  }

  // One slot of task k: trials (Tuner::trial) until the slot, the budget or a callback ends it.
  template <class K, class F, class... Callbacks>
  bool run_slot(std::size_t k, K& kernel, F& farm, Rng& rng, const TrialLoop& loop, Callbacks&... callbacks) {
    TunerT& tuner = tasks_[k].tuner;
    const std::size_t slot = slots_;
    const std::size_t trials0 = tuner.history().size();
    const double clock0 = tuner.tuning_seconds();
    bool stop = false, slot_over = false;
    while (!stop && !slot_over) {
      std::size_t n = options_.plan_size;
      if (options_.slot_seconds == 0)
        n = std::min(n, options_.slot_trials - (tuner.history().size() - trials0));
      n = std::min(n, options_.budget.trials - std::min(options_.budget.trials, trials()));
      if (n == 0) break;
      const auto batch = tuner.ask(n, rng, detail::farm_workers(farm));
      if (batch.empty()) {
        progress_[k].finished = true;
        break;
      }
      tuner.run_batch(kernel, farm, std::span<const Config>(batch), loop, k, [&](TrialResult r) {
        record(slot, k);
        stop = r == TrialResult::stop;
        const std::size_t done = tuner.history().size() - trials0;
        slot_over = options_.slot_seconds > 0 ? tuner.tuning_seconds() - clock0 >= options_.slot_seconds
                                              : done >= options_.slot_trials;
        if (stop || slot_over || trials() >= options_.budget.trials || seconds() >= options_.budget.seconds)
          slot_over = true;
        return slot_over;
      }, callbacks...);
    }
    tuner.forget_pending();
    ++slots_;
    slot_tasks_.push_back(k);
    progress_[k].slots += 1;
    progress_[k].best_latency.push_back(best_latency(k));
    return stop;
  }

  SchedulerT scheduler_;
  MultiTaskOptions options_;
  std::vector<Task> tasks_;
  std::vector<TaskProgress> progress_;
  std::vector<ObjectivePoint> objective_;
  std::vector<std::size_t> slot_tasks_;
  std::size_t slots_ = 0;
  double scheduler_seconds_ = 0.0;
};

/// confirm_best for every task of a finished MultiTaskTuner: task i's `p.top` fastest trials
/// measured again on its kernel (kernels[i], or *kernels[i], as MultiTaskTuner::tune takes them)
/// with its tuner's evaluator, `p.turns` turns each, tasks one after the other. Returns per task
/// the candidates fastest first (confirm_best; empty for a task with no successful trial). Each
/// task's held config, History::best, is the lowest of many noisy means, so it is biased low (the
/// winner's curse); the first confirmed candidate is the one to run (docs/benchmarks.md,
/// "Multi-task scheduling"). Nothing is added to the histories.
template <class MT, class Kernels>
std::vector<std::vector<Confirmed>> confirm_tasks(MT& mt, Kernels& kernels, Rng& rng, ConfirmParams p = {}) {
  p.validate();
  if (std::size(kernels) != mt.task_count())
    throw std::invalid_argument("confirm_tasks: " + std::to_string(std::size(kernels)) + " kernels for " +
                                std::to_string(mt.task_count()) + " tasks");
  std::vector<std::vector<Confirmed>> out;
  out.reserve(mt.task_count());
  for (std::size_t i = 0; i < mt.task_count(); ++i)
    out.push_back(confirm_best(detail::kernel_of(kernels, i), mt.tuner(i).history(), mt.tuner(i).evaluator(), rng, p));
  return out;
}

}  // namespace tunekit
