#pragma once
/// \file
/// Tuner: the single-task loop (AdaTune's Algorithm 1; AutoTVM's as a special case), with an
/// ask/tell interface that `tune` is written on.

#include "tunekit/acquisition/predicted_mean.hpp"
#include "tunekit/concepts.hpp"
#include "tunekit/evaluator/deterministic.hpp"
#include "tunekit/core/history.hpp"
#include "tunekit/optimizer/random_search.hpp"
#include "tunekit/core/random.hpp"
#include "tunekit/space/features.hpp"
#include "tunekit/core/tuning_state.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <cmath>
#include <limits>
#include <optional>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace tunekit {

/// How much a tuning run may spend. Trials count distinct configs measured, failed ones
/// included (and those resumed from a log); seconds are on the tuning clock (measurement costs,
/// simulated for replay, plus search time; a trial resumed from a log counts its recorded cost).
struct Budget {
  std::size_t trials = 1000;
  double seconds = std::numeric_limits<double>::infinity();

  void validate() const {
    if (trials == 0) throw std::invalid_argument("Budget: trials must be at least 1");
    if (!(seconds > 0)) throw std::invalid_argument("Budget: seconds must be positive");
  }
};

/// Options of a Tuner; fill with designated initialisers.
struct TunerOptions {
  Budget budget{};
  /// Configs asked per round by `tune` (AutoTVM's plan_size).
  std::size_t plan_size = 64;
  /// Task and device names for records; `tune` takes them from the kernel's name() and
  /// device() when these are empty.
  std::string task{};
  std::string device{};
  /// FLOP per run, for throughput; `tune` takes it from the kernel. 0: unknown (throughput is
  /// then runs per second).
  double flop = 0.0;
  /// Measuring serially a kernel that compiles ahead (PrefetchingKernel): before trial k of a
  /// round is measured, the compilation of the round's configs k+1 .. k+compile_ahead starts on
  /// other threads (each config once), so the host compiles them while the device runs config k.
  /// 0: none; compiled when measured. An evaluator that measures in a forked child (Isolated:
  /// `measures_in_child`), which could not use a compilation running on a thread of the parent,
  /// is never compiled ahead for. On a measurement farm each worker is handed, with a job, up
  /// to this many of the round's later configs that it will measure next, and starts compiling
  /// them before it measures the job (FarmJob::compile_ahead).
  std::size_t compile_ahead = 4;
  /// How many configs are measured at once, told to the optimizer (SearchContext::parallel) and, for
  /// an optimizer that fills them (TreeParzen: `fills_parallel()`), kept in flight by `tune`: each
  /// result told in trial order is followed by an ask for one more config, so that every proposal
  /// knows every result before it and the configs still in flight (the same trials on a farm and
  /// serially). 0: 1 serially; on a farm its workers, and for an optimizer that fills them on a
  /// StreamingFarm half as many again (detail::in_flight), so that a slow config does not idle
  /// the others. A loop of your own with W workers sets W and asks for W.
  std::size_t parallel = 0;

  void validate() const {
    budget.validate();
    if (plan_size == 0) throw std::invalid_argument("TunerOptions: plan_size must be at least 1");
    if (!(flop >= 0) || !std::isfinite(flop))
      throw std::invalid_argument("TunerOptions: flop must be finite and >= 0");
  }
};

/// Why `tune` returned.
enum class StopReason { trial_budget, time_budget, space_exhausted, callback, farm_worker };

inline constexpr const char* to_string(StopReason r) noexcept {
  switch (r) {
    case StopReason::trial_budget: return "trial budget reached";
    case StopReason::time_budget: return "time budget reached";
    case StopReason::space_exhausted: return "search space exhausted";
    case StopReason::callback: return "stopped by a callback";
    case StopReason::farm_worker: return "measured for the tuning process (a farm worker)";
  }
  return "unknown";
}

/// What `tune` returns; the full history stays in the tuner.
struct TuneResult {
  /// The best successful trial, if any.
  std::optional<Trial> best{};
  std::size_t trials = 0;
  StopReason reason = StopReason::trial_budget;
};

namespace detail {

template <class C>
void call_on_begin(C& c, const TuningState& s) {
  if constexpr (HasOnBegin<C>) c.on_begin(s);
}
template <class C>
bool call_on_measured(C& c, const TuningState& s, const Trial& t) {
  if constexpr (HasOnMeasured<C>) {
    if constexpr (std::is_convertible_v<decltype(c.on_measured(s, t)), bool>)
      return c.on_measured(s, t);
    else
      c.on_measured(s, t);
  }
  return false;
}
template <class C>
bool call_on_round(C& c, const TuningState& s) {
  if constexpr (HasOnRound<C>) {
    if constexpr (std::is_convertible_v<decltype(c.on_round(s)), bool>)
      return c.on_round(s);
    else
      c.on_round(s);
  }
  return false;
}
template <class C>
void call_on_end(C& c, const TuningState& s) {
  if constexpr (HasOnEnd<C>) c.on_end(s);
}

/// The farm argument of a loop that measures its trials itself, one after the other.
struct NoFarm {};

/// The configs a tuner keeps in flight on a StreamingFarm of `workers` workers: workers + half as
/// many, rounded up. Results are told in trial order, so a config slower than those after it holds
/// back the next proposals; the configs beyond the workers keep them busy meanwhile (on the
/// gemm_RTX_3090 replay's trials, 4 workers busy 67% of the time with 4 in flight, 82% with 6).
inline std::size_t in_flight(std::size_t workers) { return workers + (workers + 1) / 2; }

/// The workers of a measurement farm (its `workers()`; 1 for NoFarm or a farm that does not say).
template <class F>
std::size_t farm_workers(const F& farm) {
  if constexpr (requires { farm.workers(); })
    return static_cast<std::size_t>(std::max<decltype(farm.workers())>(farm.workers(), 1));
  else
    return 1;
}

/// Which configs of a round to start compiling before each of its trials is measured
/// (TunerOptions::compile_ahead): before trial k, those of k+1 .. k+ahead not started yet, so
/// that every config but the round's first is started once, `ahead` trials before its own.
class CompileAhead {
 public:
  CompileAhead(std::span<const Config> batch, std::size_t ahead) noexcept : batch_(batch), ahead_(ahead) {}

  /// The configs to start compiling before trial k is measured (empty when none is left).
  std::vector<Config> before(std::size_t k) {
    std::vector<Config> out;
    const std::size_t end = std::min(batch_.size(), k + 1 + ahead_);
    for (next_ = std::max(next_, k + 1); next_ < end; ++next_) out.push_back(batch_[next_]);
    return out;
  }

 private:
  std::span<const Config> batch_;
  std::size_t ahead_;
  std::size_t next_ = 0;
};

/// Whether an evaluator measures in a forked child (Isolated), where a compilation started ahead
/// on a thread of the parent is of no use.
template <class E>
inline constexpr bool measures_in_child_v = requires { requires E::measures_in_child; };

/// What a farm's worker does with a job of a task whose evaluator and kernel (the worker's copy)
/// these are: starts compiling the configs the farm handed it to compile ahead (job.prefetch,
/// a PrefetchingKernel), then measures the job's config with the job's stream.
template <class E, class K>
Measurement measure_farm_job(E& evaluator, K& kernel, const FarmJob& job) {
  if constexpr (PrefetchingKernel<K>)
    if (!job.prefetch.empty()) kernel.prefetch(job.prefetch);
  Rng rng = job.rng();
  return evaluator.measure(kernel, job.config, rng);
}

/// kernel.prefetch(the configs `ahead` gives before trial k), for a PrefetchingKernel.
template <class K>
void compile_ahead(K& kernel, CompileAhead& ahead, std::size_t k) {
  if constexpr (PrefetchingKernel<K>) {
    const std::vector<Config> configs = ahead.before(k);
    if (!configs.empty()) kernel.prefetch(configs);
  }
}

/// Runs `body` (which returns a result) between farm.start(work) and farm.finish(), finishing
/// the farm also when body throws; `on_worker()` is the result on a process that only served
/// the run's jobs (start returned false).
template <class F, class Body, class OnWorker>
auto with_farm(F& farm, const FarmWork& work, Body&& body, OnWorker&& on_worker) {
  static_assert(check_measurement_farm<F>());
  if (!farm.start(work)) return on_worker();
  try {
    auto result = body();
    farm.finish();
    return result;
  } catch (...) {
    try {
      farm.finish();
    } catch (...) {
    }
    throw;
  }
}

}  // namespace detail

/// The loop that drives a tuner's trials (`Tuner::tune`, or a MultiTaskTuner's slots): how its
/// trials are measured and what callbacks see of the run beyond the tuner's own task. Both loops
/// take their trials with `Tuner::trial` and build callback states with `Tuner::state` from it.
struct TrialLoop {
  /// Trial i of the tuner (its position in the history) is measured with
  /// `Tuner::measurement_rng(measurement_seed, i)`.
  std::uint64_t measurement_seed = 0;
  /// The run's budget (of all its tasks, in a multi-task run).
  std::size_t budget_trials = 0;
  double budget_seconds = std::numeric_limits<double>::infinity();
  /// When the run began, for TuningState::wall_seconds.
  std::chrono::steady_clock::time_point wall0 = std::chrono::steady_clock::now();
  /// Rounds (tune) or slots (MultiTaskTuner) completed.
  std::size_t round = 0;
  /// The rest of the run: trials of its other tasks, its clock outside this tuner (the other
  /// tasks' tuning clocks and the scheduler's time), and its number of tasks. 0, 0, 1 for tune.
  std::size_t other_trials = 0;
  double other_seconds = 0.0;
  std::size_t tasks = 1;
};

/// What one `Tuner::trial` did.
enum class TrialResult {
  /// The config was measured (or taken from the records of an exact resume) and told.
  told,
  /// As told, and a callback's on_measured returned true: the run stops.
  stop,
  /// Nothing told: the config is not recorded while recorded measurements (exact resume) were
  /// unused; those were told as recorded (one warning) and the configs asked but not told
  /// forgotten. The loop drops the rest of its batch and asks again.
  ask_again,
};

/// The single-task tuning loop, one policy per template argument:
/// - `SurrogateT`: the cost model fitted on the history every round (NoSurrogate: none);
/// - `AcquisitionT`: scores the model's predictions;
/// - `OptimizerT`: proposes the next configs;
/// - `EvaluatorT`: measures a config on the kernel.
///
/// Use `tune(kernel, rng, callbacks...)`, or drive it yourself with `ask(n, rng)` and
/// `tell(config, measurement)`; `tune` is exactly that loop, so both give identical runs for
/// the same seed when the loop measures as `tune` does:
///
///     const std::uint64_t seed = rng();  // tune's first draw
///     while (...) for (const auto& c : tuner.ask(n, rng)) {
///       Rng m = Tuner::measurement_rng(seed, tuner.history().size());
///       tuner.tell(c, evaluator.measure(kernel, c, m));
///     }
///
/// `trial(kernel, config, loop, callbacks...)` is that loop's body with exact resume and the
/// callbacks (tune and MultiTaskTuner take every trial with it). Measuring with a stream of its
/// own per trial keeps the evaluator from advancing the generator that `ask` draws from, so a
/// run resumed by re-execution (`set_recorded`, used by `resume_exact` in records/log.hpp) takes
/// the same path as an uninterrupted one.
template <class SurrogateT = NoSurrogate, class AcquisitionT = PredictedMean,
          class OptimizerT = RandomSearch, class EvaluatorT = Deterministic>
class Tuner {
  static_assert(check_surrogate<SurrogateT>());
  static_assert(check_acquisition<AcquisitionT>());
  static_assert(check_optimizer<OptimizerT>());
  static_assert(check_evaluator<EvaluatorT>());
  static_assert(check_uncertainty<SurrogateT, AcquisitionT, OptimizerT>());

 public:
  using Surrogate = SurrogateT;
  using Acquisition = AcquisitionT;
  using Optimizer = OptimizerT;
  using Evaluator = EvaluatorT;

  /// The policy objects, for those that take parameters.
  struct Parts {
    SurrogateT surrogate{};
    AcquisitionT acquisition{};
    OptimizerT optimizer{};
    EvaluatorT evaluator{};
  };

  explicit Tuner(SearchSpace space, TunerOptions options = {}, Parts parts = {})
      : space_(std::move(space)), options_(std::move(options)), parts_(std::move(parts)) {
    options_.validate();
    if (space_.dimensions() == 0) throw std::invalid_argument("Tuner: the search space has no knobs");
  }

  /// Up to n valid configs that were neither measured nor handed out before, within the budget:
  /// never more than the trials the budget has left once the pending configs (handed out, not
  /// yet told) are counted, and none once the trial or the time budget is spent. Fewer when the
  /// optimizer finds no more. Fits the surrogate on the history first (once a config succeeded).
  ///
  /// Pending configs stay reserved: `ask` does not hand them out again (several may be measured
  /// at once), so an empty batch means the budget is spent (`budget_spent()`) or every config
  /// left is measured or pending (`pending()`). A config that will never be told goes back with
  /// `forget_pending()`, or is told as a failure (`Measurement::failure`).
  std::vector<Config> ask(std::size_t n, Rng& rng) { return ask(n, rng, options_.parallel > 0 ? options_.parallel : 1); }
  /// As ask(n, rng), by a caller that measures `parallel` configs at once (SearchContext::parallel;
  /// TunerOptions::parallel, when set, takes precedence): `tune` on a farm passes its workers.
  std::vector<Config> ask(std::size_t n, Rng& rng, std::size_t parallel) {
    if (options_.parallel > 0) parallel = options_.parallel;
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<Config> batch;
    n = budget_spent() ? 0 : std::min(n, options_.budget.trials - std::min(options_.budget.trials, history_.size() + pending()));
    if (n > 0) {
      SearchContext ctx{space_, history_, visited_, {}, best_throughput(), {}, best_target(), std::max<std::size_t>(parallel, 1)};
      if constexpr (!std::is_same_v<SurrogateT, NoSurrogate>) {
        // Before the first success a surrogate with a prior scores unfitted (PriorSurrogate).
        bool prior = false;
        if constexpr (PriorSurrogate<SurrogateT>) prior = history_.successes() == 0 && parts_.surrogate.has_prior();
        if (history_.successes() > 0 || prior) {
          if (!prior) fit_surrogate(rng);
          ctx.score = [this](std::span<const Config> cs) { return score(cs); };
          ctx.predict = [this](std::span<const Config> cs, Eigen::VectorXd& mean, Eigen::VectorXd& sd) {
            predict(cs, mean, sd);
          };
        }
      }
      batch = parts_.optimizer.propose(ctx, n, rng);
      if (batch.size() > n)
        throw std::logic_error("optimizer proposed " + std::to_string(batch.size()) +
                               " configs when asked for " + std::to_string(n));
      for (const auto& c : batch) {
        if (!space_.is_valid(c))
          throw std::logic_error("optimizer proposed an invalid config");
        if (!visited_.insert(space_.to_index(c)).second)
          throw std::logic_error("optimizer proposed a visited config: " + space_.describe(c));
      }
    }
    search_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return batch;
  }

  /// Records the measurement of a config (asked or not). Throws std::invalid_argument for a
  /// config that is not valid in the space or was measured before, a successful measurement
  /// without a finite positive mean (build one from run times with Measurement::from_samples),
  /// and a cost that is negative or not finite.
  const Trial& tell(const Config& c, Measurement m) {
    if (!space_.is_valid(c)) {
      std::string why;
      try {
        why = space_.describe(c) + " violates the constraints";  // throws for a malformed config
      } catch (const std::invalid_argument& e) {
        why = e.what();
      }
      throw std::invalid_argument("tell: config is not valid in the search space: " + why);
    }
    const auto idx = space_.to_index(c);
    if (history_.contains(idx))
      throw std::invalid_argument("tell: config already measured: " + space_.describe(c));
    if (m.ok() && !(std::isfinite(m.mean) && m.mean > 0))
      throw std::invalid_argument("tell: the ok measurement of " + space_.describe(c) + " has mean " +
                                  std::to_string(m.mean) +
                                  " s; a success needs a finite positive mean time (Measurement::from_samples "
                                  "computes it from the run times)");
    if (!(std::isfinite(m.cost) && m.cost >= 0))
      throw std::invalid_argument("tell: the measurement of " + space_.describe(c) + " has cost " +
                                  std::to_string(m.cost) + " s; it must be finite and >= 0");
    measurement_seconds_ += m.cost;
    visited_.insert(idx);
    history_.add(Trial{c, idx, std::move(m), tuning_seconds()});
    return history_.trials().back();
  }

  /// The generator `tune` measures trial number `i` (its position in the history) with: stream
  /// `i` of `measurement_seed`, a value `tune` draws from the caller's generator before anything
  /// else. A trial's measurement noise thus depends on the seed and its position only, not on
  /// what `ask` drew, and is the same in a first run and in one resumed by re-execution.
  static Rng measurement_rng(std::uint64_t measurement_seed, std::size_t i) {
    return derive_stream(measurement_seed, i);
  }

  /// Exact resume by re-execution: the measurements of an earlier run of this tuner (same
  /// options, policies and seed), e.g. read from its log. `tune` then runs from the start, and
  /// takes the recorded measurement of every config it would measure that is recorded here
  /// (callbacks see such a trial with `TuningState::replayed` set; LogToFile skips it), so the
  /// optimizer, surrogate and generator rebuild the state they had and the run goes on exactly
  /// as if it had never stopped. A replayed trial counts its recorded cost on the tuning clock;
  /// the search time is spent again. When the run proposes a config that is not recorded while
  /// recorded ones remain unused (the records come from another seed, version or options), or
  /// stops with some unused, those are told as they are (nothing is lost) and one warning names
  /// `source` and the count. Needs a tuner that has measured nothing yet; replaces earlier
  /// recorded measurements. Throws std::invalid_argument for an invalid or repeated config.
  void set_recorded(std::vector<std::pair<Config, Measurement>> recorded, std::string source = {},
                    std::ostream* warnings = nullptr) {
    if (!history_.empty())
      throw std::invalid_argument("set_recorded: the tuner has measured " + std::to_string(history_.size()) +
                                  " configs already; exact resume re-runs tune() from the start on a fresh tuner");
    recorded_.clear();
    recorded_at_.clear();
    for (auto& [c, m] : recorded) {
      if (!space_.is_valid(c))
        throw std::invalid_argument("set_recorded: config is not valid in the search space");
      const auto idx = space_.to_index(c);
      if (!recorded_at_.emplace(idx, recorded_.size()).second)
        throw std::invalid_argument("set_recorded: config recorded twice: " + space_.describe(c));
      recorded_.push_back({std::move(c), std::move(m), false});
    }
    recorded_left_ = recorded_.size();
    recorded_source_ = std::move(source);
    recorded_warnings_ = warnings;
  }

  /// Recorded measurements (set_recorded) that `tune` has not used yet.
  std::size_t recorded_left() const noexcept { return recorded_left_; }

  /// tell, then every callback's on_measured (e.g. LogToFile): how a loop that measures by itself
  /// logs as `tune` does. Returns whether a callback asked to stop.
  template <class... Callbacks>
    requires(sizeof...(Callbacks) > 0)
  bool tell(const Config& c, Measurement m, Callbacks&... callbacks) {
    static_assert((check_callback<std::remove_cvref_t<Callbacks>>() && ...));
    const Trial& t = tell(c, std::move(m));
    [[maybe_unused]] const TuningState s = state(TrialLoop{.budget_trials = options_.budget.trials,
                                                           .budget_seconds = options_.budget.seconds,
                                                           .wall0 = created_});
    bool stop = false;  // every callback's on_measured is called, then any of them stops
    ((stop = detail::call_on_measured(callbacks, s, t) || stop), ...);
    return stop;
  }

  /// Configs handed out by `ask` and not told yet.
  std::size_t pending() const noexcept { return visited_.size() - history_.size(); }

  /// Whether the budget is spent: the trials measured reach its trials, or the tuning clock its
  /// seconds. `ask` then hands out nothing.
  bool budget_spent() const noexcept {
    return history_.size() >= options_.budget.trials || tuning_seconds() >= options_.budget.seconds;
  }

  /// Makes configs handed out by `ask` but never told proposable again (see `ask`).
  void forget_pending() {
    visited_.clear();
    for (const auto& t : history_) visited_.insert(t.index);
  }

  /// Tunes the kernel until the budget is spent, the space is exhausted, or a callback returns
  /// true. Continues from the current history (e.g. after resuming from a log).
  template <class K, class... Callbacks>
  TuneResult tune(K& kernel, Rng& rng, Callbacks&&... callbacks) {
    detail::NoFarm serial;
    return tune_loop(kernel, serial, rng, callbacks...);
  }

  /// `tune`, each batch measured on a measurement farm's workers in parallel (farm/local.hpp,
  /// farm/mpi.hpp) with this tuner's evaluator and `kernel` (copied into each worker): the
  /// results are told in trial order, and trial i is measured with `measurement_rng(seed, i)`
  /// as in `tune`, so the run makes the same trials in the same order with the same results as
  /// the serial one whenever a measurement depends on its config and stream only (replay).
  /// Parallelism is at most the batch (plan_size). On a process that only measures (an MPI
  /// rank other than 0) it serves the run's jobs and returns no trials (StopReason::farm_worker).
  template <class K, class F, class... Callbacks>
    requires MeasurementFarm<F>
  TuneResult tune(K& kernel, F& farm, Rng& rng, Callbacks&&... callbacks) {
    static_assert(check_kernel<K>());
    return detail::with_farm(
        farm, farm_work(kernel), [&] { return tune_loop(kernel, farm, rng, callbacks...); },
        [] { return TuneResult{.best = {}, .trials = 0, .reason = StopReason::farm_worker}; });
  }

  /// What a farm's worker does for this tuner: measures a job with the evaluator on `kernel`
  /// (the worker's copy) with the job's measurement stream, after it started compiling the
  /// configs the farm handed it to compile ahead (detail::measure_farm_job).
  template <class K>
  FarmWork farm_work(K& kernel) {
    return [this, &kernel](const FarmJob& job) { return detail::measure_farm_job(parts_.evaluator, kernel, job); };
  }

  /// How many later configs of its batch a farm's worker may compile ahead of each job of this
  /// tuner on `K` (FarmJob::compile_ahead): options().compile_ahead for a PrefetchingKernel,
  /// unless the evaluator measures in a forked child; 0 otherwise.
  template <class K>
  std::size_t farm_compile_ahead() const noexcept {
    if constexpr (PrefetchingKernel<K> && !detail::measures_in_child_v<EvaluatorT>)
      return options_.compile_ahead;
    else
      return 0;
  }

 private:
  template <class K, class F, class... Callbacks>
  TuneResult tune_loop(K& kernel, F& farm, Rng& rng, Callbacks&... callbacks) {
    static_assert(check_kernel<K>());
    static_assert((check_callback<std::remove_cvref_t<Callbacks>>() && ...));
    if (const std::string d = space_.difference(kernel.space()); !d.empty())
      throw std::invalid_argument("tune: the kernel's space differs from the tuner's: " + d);
    if (options_.flop == 0.0) options_.flop = static_cast<double>(kernel.flop());
    if constexpr (requires { kernel.name(); })
      if (options_.task.empty()) options_.task = kernel.name();
    if constexpr (requires { kernel.device(); })
      if (options_.device.empty()) options_.device = kernel.device();

    TrialLoop loop{.measurement_seed = rng(),
                   .budget_trials = options_.budget.trials,
                   .budget_seconds = options_.budget.seconds,
                   .wall0 = std::chrono::steady_clock::now()};
    (detail::call_on_begin(callbacks, state(loop)), ...);

    TuneResult result;
    const std::size_t in_flight = flight(farm);
    if (in_flight > 1) result.reason = stream(kernel, farm, in_flight, rng, loop, callbacks...);
    for (; in_flight <= 1;) {
      if (history_.size() >= options_.budget.trials) {
        result.reason = StopReason::trial_budget;
        break;
      }
      if (tuning_seconds() >= options_.budget.seconds) {
        result.reason = StopReason::time_budget;
        break;
      }
      const auto n = std::min(options_.plan_size, options_.budget.trials - history_.size());
      const auto batch = ask(n, rng, detail::farm_workers(farm));
      if (batch.empty()) {
        result.reason = StopReason::space_exhausted;
        break;
      }
      bool stop = false;
      run_batch(kernel, farm, std::span<const Config>(batch), loop, 0, [&](TrialResult r) {
        stop = r == TrialResult::stop;
        return stop || tuning_seconds() >= options_.budget.seconds;
      }, callbacks...);
      ++loop.round;
      [[maybe_unused]] const TuningState s = state(loop);
      // Every callback's on_round is called (no short-circuit), then any of them stops the run.
      ((stop = detail::call_on_round(callbacks, s) || stop), ...);
      if (stop) {
        result.reason = StopReason::callback;
        break;
      }
    }
    take_unused_recorded(std::string("the run stopped (") + to_string(result.reason) + ")");
    forget_pending();
    (detail::call_on_end(callbacks, state(loop)), ...);
    if (const Trial* b = history_.best()) result.best = *b;
    result.trials = history_.size();
    return result;
  }

  // The configs `tune` keeps in flight (TunerOptions::parallel): more than 1 only for an optimizer
  // that fills them, serially when the options say so, or on a StreamingFarm (another farm
  // measures rounds: TunerOptions::parallel is then what its optimizer is told).
  template <class F>
  std::size_t flight([[maybe_unused]] const F& farm) const {
    bool fills = false;
    if constexpr (requires(const OptimizerT& o) { { o.fills_parallel() } -> std::convertible_to<bool>; })
      fills = parts_.optimizer.fills_parallel();
    if constexpr (std::is_same_v<F, detail::NoFarm>)
      return fills && options_.parallel > 1 ? options_.parallel : 1;
    else if constexpr (StreamingFarm<F>)
      return !fills ? 1 : options_.parallel > 0 ? options_.parallel : detail::in_flight(detail::farm_workers(farm));
    else
      return 1;
  }

  // tune's loop with `in_flight` configs in flight: ask that many, then after each result told in
  // trial order ask one more (the others in flight are pending: the optimizer's lies). The
  // recorded trials of an exact resume are told serially in that order, then the rest is measured
  // on a StreamingFarm, or serially. Returns why it stopped.
  template <class K, class F, class... Callbacks>
  StopReason stream(K& kernel, F& farm, std::size_t in_flight, Rng& rng, TrialLoop& loop, Callbacks&... callbacks) {
    std::deque<Config> window;
    auto refill = [&] {
      for (Config& c : ask(in_flight - std::min(in_flight, pending()), rng, in_flight)) window.push_back(std::move(c));
    };
    // After a trial is told: the callbacks' on_round (each told trial ends a round here) and the
    // budget's seconds say whether to stop (nullopt: go on).
    auto after = [&](TrialResult r) -> std::optional<StopReason> {
      ++loop.round;
      [[maybe_unused]] const TuningState s = state(loop);
      bool stop = r == TrialResult::stop;
      ((stop = detail::call_on_round(callbacks, s) || stop), ...);
      if (stop) return StopReason::callback;
      if (tuning_seconds() >= options_.budget.seconds) return StopReason::time_budget;
      return std::nullopt;
    };
    refill();
    while (!window.empty() && (std::is_same_v<F, detail::NoFarm> || recorded_left_ > 0)) {
      const TrialResult r = trial(kernel, window.front(), loop, callbacks...);
      if (r == TrialResult::ask_again) {  // the exact resume ended: ask again knowing every record
        window.clear();
        refill();
        continue;
      }
      window.pop_front();
      if (const auto why = after(r)) return *why;
      refill();
    }
    if constexpr (StreamingFarm<F>) {
      if (!window.empty()) {
        const std::size_t base = history_.size();  // job j is trial base + j
        std::vector<FarmJob> jobs;
        auto add = [&](Config c) {
          jobs.push_back(FarmJob{.task = 0, .config = std::move(c), .measurement_seed = loop.measurement_seed,
                                 .trial = base + jobs.size(), .compile_ahead = farm_compile_ahead<K>()});
        };
        for (Config& c : window) add(std::move(c));
        window.clear();
        std::optional<StopReason> why;
        farm.measure(
            std::span<const FarmJob>(jobs), FarmSink([&](std::size_t i, Measurement&& m) {
              if (history_.size() != jobs[i].trial)
                throw std::logic_error("Tuner::stream: the farm handed back job " + std::to_string(i) + " out of order");
              why = after(told(jobs[i].config, std::move(m), loop, false, callbacks...));
              return !why;
            }),
            FarmMore([&] {
              const std::size_t first = jobs.size();
              for (Config& c : ask(in_flight - std::min(in_flight, pending()), rng, in_flight)) add(std::move(c));
              return std::vector<FarmJob>(jobs.begin() + static_cast<std::ptrdiff_t>(first), jobs.end());
            }));
        if (why) return *why;
      }
    }
    return history_.size() >= options_.budget.trials ? StopReason::trial_budget : StopReason::space_exhausted;
  }

 public:
  const SearchSpace& space() const noexcept { return space_; }
  const History& history() const noexcept { return history_; }
  const TunerOptions& options() const noexcept { return options_; }
  SurrogateT& surrogate() noexcept { return parts_.surrogate; }
  AcquisitionT& acquisition() noexcept { return parts_.acquisition; }
  OptimizerT& optimizer() noexcept { return parts_.optimizer; }
  EvaluatorT& evaluator() noexcept { return parts_.evaluator; }

  /// The tuning clock: measurement costs plus the time spent in `ask`.
  double tuning_seconds() const noexcept { return measurement_seconds_ + search_seconds_; }
  double measurement_seconds() const noexcept { return measurement_seconds_; }
  double search_seconds() const noexcept { return search_seconds_; }

  /// Best measured throughput (FLOP/s; runs/s when FLOP is unknown), 0 when nothing succeeded.
  double best_throughput() const noexcept {
    const Trial* b = history_.best();
    return b ? b->measurement.throughput(flop_or_one()) : 0.0;
  }

  /// One trial of a tuning loop, the step `tune` and MultiTaskTuner's slots both take: the
  /// measurement of `c` recorded for an exact resume (set_recorded) if there is one, else
  /// `c` measured by the evaluator with `measurement_rng(loop.measurement_seed, i)` (i: the
  /// trial's position in the history); then `tell`, and every callback's on_measured with
  /// `state(loop, replayed)`. A config that is not recorded while recorded measurements are
  /// unused ends the exact resume (see TrialResult::ask_again).
  template <class K, class... Callbacks>
  TrialResult trial(K& kernel, const Config& c, const TrialLoop& loop, Callbacks&... callbacks) {
    std::optional<Measurement> m;
    if (recorded_left_ > 0) {
      const auto it = recorded_at_.find(space_.to_index(c));
      if (it == recorded_at_.end()) {
        // The run left the recorded path: take the rest as recorded, ask again knowing them.
        take_unused_recorded("the run proposed " + space_.describe(c) + ", which is not recorded");
        forget_pending();
        return TrialResult::ask_again;
      }
      auto& r = recorded_[it->second];
      r.used = true;
      --recorded_left_;
      m = std::move(r.measurement);
    }
    const bool replayed = m.has_value();
    if (!replayed) {
      Rng rng = measurement_rng(loop.measurement_seed, history_.size());
      m = parts_.evaluator.measure(kernel, c, rng);
    }
    return told(c, std::move(*m), loop, replayed, callbacks...);
  }

  /// The trials of a batch from `ask`, in order, as a loop takes them: each by `trial`, or, with
  /// a measurement farm (`farm` not detail::NoFarm), those after the recorded ones of an exact
  /// resume measured on the farm as jobs of task `task` (trial i with stream i of
  /// loop.measurement_seed, as `trial` measures it; compiled ahead in the workers,
  /// farm_compile_ahead) and told in batch order. After each trial
  /// told, `after(result)` says whether the batch ends there (the rest is not told; a farm
  /// drops it). Returns the last trial's result (ask_again: the exact resume ended; see
  /// TrialResult), told when the batch ran out.
  template <class K, class F, class After, class... Callbacks>
  TrialResult run_batch(K& kernel, F& farm, std::span<const Config> batch, const TrialLoop& loop, std::size_t task,
                        After&& after, Callbacks&... callbacks) {
    std::size_t k = 0;
    detail::CompileAhead ahead(batch, options_.compile_ahead);
    for (; k < batch.size() && (std::is_same_v<F, detail::NoFarm> || recorded_left_ > 0); ++k) {
      // Serially, what is measured from here on is compiled ahead (a farm's trials are measured
      // by its workers; recorded trials are not measured).
      if constexpr (std::is_same_v<F, detail::NoFarm> && !detail::measures_in_child_v<EvaluatorT>)
        if (recorded_left_ == 0) detail::compile_ahead(kernel, ahead, k);
      const TrialResult r = trial(kernel, batch[k], loop, callbacks...);
      if (r == TrialResult::ask_again || after(r)) return r;
    }
    if constexpr (!std::is_same_v<F, detail::NoFarm>) {
      if (k == batch.size()) return TrialResult::told;
      std::vector<FarmJob> jobs;
      jobs.reserve(batch.size() - k);
      for (std::size_t j = k; j < batch.size(); ++j)
        jobs.push_back(FarmJob{.task = task, .config = batch[j], .measurement_seed = loop.measurement_seed,
                               .trial = history_.size() + (j - k), .compile_ahead = farm_compile_ahead<K>()});
      TrialResult last = TrialResult::told;
      farm.measure(std::span<const FarmJob>(jobs), FarmSink([&](std::size_t i, Measurement&& m) {
                     if (history_.size() != jobs[i].trial)
                       throw std::logic_error("run_batch: the farm handed back job " + std::to_string(i) +
                                              " out of order");
                     last = told(jobs[i].config, std::move(m), loop, false, callbacks...);
                     return !after(last);
                   }));
      return last;
    }
    return TrialResult::told;
  }

  /// What callbacks see of this tuner in the run `loop` drives; `replayed`: the trial just told
  /// came from the records of an exact resume.
  TuningState state(const TrialLoop& loop, bool replayed = false) const {
    return TuningState{
        .space = space_,
        .history = history_,
        .task = options_.task,
        .device = options_.device,
        .flop = options_.flop,
        .budget_trials = loop.budget_trials,
        .budget_seconds = loop.budget_seconds,
        .tuning_seconds = loop.other_seconds + tuning_seconds(),
        .wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - loop.wall0).count(),
        .round = loop.round,
        .replayed = replayed,
        .trials = loop.other_trials + history_.size(),
        .tasks = loop.tasks,
    };
  }

  /// Tells the recorded measurements (set_recorded) not used yet, in their recorded order, with
  /// one warning saying `why`; a loop calls it when it stops, so that nothing recorded is lost.
  /// Does nothing when none is left.
  void take_unused_recorded(const std::string& why) {
    if (recorded_left_ == 0) return;
    if (recorded_warnings_)
      *recorded_warnings_ << "tunekit: warning: " << (recorded_source_.empty() ? "exact resume" : recorded_source_)
                          << ": " << why << " while " << recorded_left_
                          << " recorded measurements were unused; taking them as recorded, the run is not an"
                             " exact continuation\n";
    for (auto& r : recorded_) {
      if (r.used) continue;
      r.used = true;
      if (!history_.contains(space_.to_index(r.config))) tell(r.config, std::move(r.measurement));
    }
    recorded_left_ = 0;
  }

 private:
  // tell, then the callbacks' on_measured: the end of every trial.
  template <class... Callbacks>
  TrialResult told(const Config& c, Measurement m, const TrialLoop& loop, bool replayed, Callbacks&... callbacks) {
    const Trial& t = tell(c, std::move(m));
    [[maybe_unused]] const TuningState s = state(loop, replayed);
    bool stop = false;  // every callback's on_measured is called, then any of them stops the run
    ((stop = detail::call_on_measured(callbacks, s, t) || stop), ...);
    return stop ? TrialResult::stop : TrialResult::told;
  }

  double flop_or_one() const noexcept { return options_.flop > 0 ? options_.flop : 1.0; }

  // The surrogate's target: throughput relative to the best measured (AutoTVM normalises its
  // model's targets by their maximum), 0 for failures. The best is then 1, and scores, standard
  // deviations and annealing temperatures mean the same on every kernel, whatever its units.
  double target(const Trial& t) const {
    const double best = best_throughput();
    return best > 0 ? t.measurement.throughput(flop_or_one()) / best : 0.0;
  }
  double best_target() const noexcept { return best_throughput() > 0 ? 1.0 : 0.0; }

  // Fits the surrogate on every trial.
  void fit_surrogate(Rng& rng) {
    std::vector<Config> configs;
    configs.reserve(history_.size());
    Eigen::VectorXd y(static_cast<Eigen::Index>(history_.size()));
    for (std::size_t i = 0; i < history_.size(); ++i) {
      configs.push_back(history_[i].config);
      y[static_cast<Eigen::Index>(i)] = target(history_[i]);
    }
    parts_.surrogate.fit(feature_matrix(space_, configs), y, rng);
  }

  void predict(std::span<const Config> cs, Eigen::VectorXd& mean, Eigen::VectorXd& sd) const {
    const Eigen::MatrixXd x = feature_matrix(space_, cs);
    if constexpr (UncertainSurrogate<SurrogateT>) {
      parts_.surrogate.predict(x, mean, sd);
    } else {
      mean = parts_.surrogate.predict(x);
      sd = Eigen::VectorXd::Zero(mean.size());
    }
  }

  std::vector<double> score(std::span<const Config> cs) const {
    Eigen::VectorXd mean, sd;
    predict(cs, mean, sd);
    const double best = best_target();
    std::vector<double> out(cs.size());
    for (std::size_t i = 0; i < cs.size(); ++i)
      out[i] = parts_.acquisition.score(mean[static_cast<Eigen::Index>(i)],
                                        sd[static_cast<Eigen::Index>(i)], best);
    return out;
  }

  SearchSpace space_;
  TunerOptions options_;
  Parts parts_;
  std::chrono::steady_clock::time_point created_ = std::chrono::steady_clock::now();
  History history_;
  std::unordered_set<std::uint64_t> visited_;
  double measurement_seconds_ = 0.0;
  double search_seconds_ = 0.0;
  // Exact resume (set_recorded): the recorded measurements in their order, where each config's
  // is, and how many are still unused.
  struct Recorded {
    Config config;
    Measurement measurement;
    bool used = false;
  };
  std::vector<Recorded> recorded_;
  std::unordered_map<std::uint64_t, std::size_t> recorded_at_;
  std::size_t recorded_left_ = 0;
  std::string recorded_source_;
  std::ostream* recorded_warnings_ = nullptr;
};

namespace detail {
template <class TunerT, class E>
struct RebindEvaluator;
template <class S, class A, class O, class Old, class E>
struct RebindEvaluator<Tuner<S, A, O, Old>, E> {
  using type = Tuner<S, A, O, E>;
};
}  // namespace detail

/// The tuner TunerT with its evaluator swapped for E, e.g. `WithEvaluator<AutoTvmTuner,
/// AdaptiveCV>` or `WithEvaluator<AdaTuneTuner, Isolated<AdaptiveCV>>`.
template <class TunerT, class E>
using WithEvaluator = typename detail::RebindEvaluator<TunerT, E>::type;

}  // namespace tunekit
