#pragma once
/// \file
/// The concepts every part of tunekit is written against (DESIGN.md section 2).
///
/// Each concept comes with a `check_*<T>()` function whose `static_assert`s name the member that
/// a type misses; the entry points (Tuner, tune) call them, so a type that does not fit gets a
/// message that says what to add rather than a page of template errors.

#include "tunekit/evaluator/measurement.hpp"
#include "tunekit/kernel/status.hpp"
#include "tunekit/optimizer/search_context.hpp"
#include "tunekit/random.hpp"
#include "tunekit/space/search_space.hpp"
#include "tunekit/tuning_state.hpp"

#include <Eigen/Core>

#include <concepts>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace tunekit {

// ---------------------------------------------------------------------------------------------
// Kernel: what is tuned.

/// A tunable kernel: its search space, its FLOP count per run, and a way to run a configuration
/// `runs` times and return the seconds of each run (or a failure status).
///
/// Required: `const SearchSpace& space() const`, `double flop() const`,
/// `RunResult run(const Config&, std::size_t runs, Rng&)` (the generator is for kernels that
/// simulate time, like replay; real kernels ignore it). Optional: `RunResult prepare(const
/// Config&)` (compile or set up; called once per config before any run), `std::string name()
/// const` and `std::string device() const` (for records).
template <class K>
concept Kernel = requires(K& k, const K& ck, const Config& c, std::size_t runs, Rng& rng) {
  { ck.space() } -> std::convertible_to<const SearchSpace&>;
  { ck.flop() } -> std::convertible_to<double>;
  { k.run(c, runs, rng) } -> std::same_as<RunResult>;
};

template <class K>
concept PreparableKernel = Kernel<K> && requires(K& k, const Config& c) {
  { k.prepare(c) } -> std::same_as<RunResult>;
};

/// A kernel that checks its own output: `RunResult verify(const Config&)` returns ok, or
/// `wrong_result` (with the error in the text) when the output of the last run differs from a
/// reference beyond the kernel's tolerance. Evaluators call it once per measurement, after the
/// first run request (the warm-up, or the first timed runs), so a wrong configuration costs one
/// run and is never chosen as best.
template <class K>
concept VerifiableKernel = Kernel<K> && requires(K& k, const Config& c) {
  { k.verify(c) } -> std::same_as<RunResult>;
};

template <class K>
constexpr bool check_kernel() {
  static_assert(requires(const K& k) { { k.space() } -> std::convertible_to<const SearchSpace&>; },
                "tunekit::Kernel: the kernel needs `const tunekit::SearchSpace& space() const`");
  static_assert(requires(const K& k) { { k.flop() } -> std::convertible_to<double>; },
                "tunekit::Kernel: the kernel needs `double flop() const` (FLOP per run)");
  static_assert(requires(K& k, const Config& c, std::size_t n, Rng& r) {
                  { k.run(c, n, r) } -> std::same_as<RunResult>;
                },
                "tunekit::Kernel: the kernel needs `tunekit::RunResult run(const tunekit::Config&, "
                "std::size_t runs, tunekit::Rng&)`");
  return Kernel<K>;
}

namespace detail {
/// The least kernel there is: checks that an evaluator works with any Kernel.
struct KernelArchetype {
  const SearchSpace& space() const;
  double flop() const;
  RunResult run(const Config&, std::size_t, Rng&);
};
}  // namespace detail

// ---------------------------------------------------------------------------------------------
// Evaluator: how a configuration is measured.

/// Measures one configuration of any Kernel: `template <Kernel K> Measurement measure(K&, const
/// Config&, Rng&)`. Failures are statuses in the Measurement, never exceptions.
template <class E>
concept Evaluator = requires(E& e, detail::KernelArchetype& k, const Config& c, Rng& rng) {
  { e.measure(k, c, rng) } -> std::same_as<Measurement>;
};

template <class E>
constexpr bool check_evaluator() {
  static_assert(Evaluator<E>,
                "tunekit::Evaluator: the evaluator needs `template <tunekit::Kernel K> "
                "tunekit::Measurement measure(K&, const tunekit::Config&, tunekit::Rng&)`");
  return Evaluator<E>;
}

// ---------------------------------------------------------------------------------------------
// Surrogate: the cost model.

/// A regression model of throughput from features: `void fit(const Eigen::MatrixXd& X, const
/// Eigen::VectorXd& y, Rng&)` and `Eigen::VectorXd predict(const Eigen::MatrixXd& X) const`.
template <class S>
concept Surrogate = requires(S& s, const S& cs, const Eigen::MatrixXd& x,
                             const Eigen::VectorXd& y, Rng& rng) {
  s.fit(x, y, rng);
  { cs.predict(x) } -> std::convertible_to<Eigen::VectorXd>;
};

/// A surrogate that also gives a standard deviation per prediction:
/// `void predict(const Eigen::MatrixXd& X, Eigen::VectorXd& mean, Eigen::VectorXd& std) const`.
template <class S>
concept UncertainSurrogate =
    Surrogate<S> && requires(const S& s, const Eigen::MatrixXd& x, Eigen::VectorXd& m,
                             Eigen::VectorXd& sd) { s.predict(x, m, sd); };

/// No model: the tuner fits nothing and optimizers get no score (random and grid search).
struct NoSurrogate {};

template <class S>
constexpr bool check_surrogate() {
  if constexpr (!std::same_as<S, NoSurrogate>) {
    static_assert(requires(S& s, const Eigen::MatrixXd& x, const Eigen::VectorXd& y, Rng& r) {
                    s.fit(x, y, r);
                  },
                  "tunekit::Surrogate: the model needs `void fit(const Eigen::MatrixXd& X, const "
                  "Eigen::VectorXd& y, tunekit::Rng&)`");
    static_assert(requires(const S& s, const Eigen::MatrixXd& x) {
                    { s.predict(x) } -> std::convertible_to<Eigen::VectorXd>;
                  },
                  "tunekit::Surrogate: the model needs `Eigen::VectorXd predict(const "
                  "Eigen::MatrixXd& X) const`");
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Acquisition: how a prediction is scored.

/// Scores one candidate from the model's mean and standard deviation and the best value seen:
/// `double score(double mean, double std, double best) const` (higher is better).
template <class A>
concept Acquisition = requires(const A& a, double mean, double sd, double best) {
  { a.score(mean, sd, best) } -> std::convertible_to<double>;
};

template <class A>
constexpr bool check_acquisition() {
  static_assert(Acquisition<A>, "tunekit::Acquisition: the acquisition needs `double "
                                "score(double mean, double std, double best) const`");
  return Acquisition<A>;
}

// ---------------------------------------------------------------------------------------------
// Optimizer: which configurations to measure next.

/// Proposes up to n valid configs that are not in `ctx.visited`, best first:
/// `std::vector<Config> propose(const SearchContext& ctx, std::size_t n, Rng&)`. None means the
/// space is exhausted for it; fewer than n means the space is nearly exhausted, or the optimizer
/// chose to measure less this round (an adaptive sampler).
template <class O>
concept Optimizer = requires(O& o, const SearchContext& ctx, std::size_t n, Rng& rng) {
  { o.propose(ctx, n, rng) } -> std::same_as<std::vector<Config>>;
};

template <class O>
constexpr bool check_optimizer() {
  static_assert(Optimizer<O>, "tunekit::Optimizer: the optimizer needs `std::vector<"
                              "tunekit::Config> propose(const tunekit::SearchContext&, "
                              "std::size_t n, tunekit::Rng&)`");
  return Optimizer<O>;
}

// ---------------------------------------------------------------------------------------------
// The policies of a model-based optimizer (ModelBased<Search, Exploration, Pick> in
// optimizer/model_based.hpp): a Search finds candidates, an ExplorationPolicy says how much of a
// batch is random, a PickPolicy makes the rest of the batch from the candidates.

/// Finds the configs that maximise the acquisition: `std::vector<Candidate> find_maximums(const
/// SearchContext& ctx, std::size_t num, Rng&)` returns up to num valid configs that are not in
/// `ctx.visited`, no two alike, best score first (AnnealingSearch, PpoSearch). It is called only
/// when `ctx.has_model()`.
template <class S>
concept Search = requires(S& s, const SearchContext& ctx, std::size_t num, Rng& rng) {
  { s.find_maximums(ctx, num, rng) } -> std::same_as<std::vector<Candidate>>;
};

template <class S>
constexpr bool check_search() {
  static_assert(Search<S>, "tunekit::Search: the search needs `std::vector<tunekit::Candidate> "
                           "find_maximums(const tunekit::SearchContext&, std::size_t num, "
                           "tunekit::Rng&)`");
  return Search<S>;
}

/// How much of a batch a model-based optimizer gives to random exploration:
/// `double epsilon(const SearchContext&, Rng&)` returns the fraction in [0, 1] (AutoTVM's fixed
/// epsilon-greedy, AdaTune's contextual epsilon).
template <class E>
concept ExplorationPolicy = requires(E& e, const SearchContext& ctx, Rng& rng) {
  { e.epsilon(ctx, rng) } -> std::convertible_to<double>;
};

template <class E>
constexpr bool check_exploration() {
  static_assert(ExplorationPolicy<E>, "tunekit::ExplorationPolicy: the exploration policy needs "
                                      "`double epsilon(const tunekit::SearchContext&, "
                                      "tunekit::Rng&)`");
  return ExplorationPolicy<E>;
}

/// What a model-based optimizer does when a pick policy returns fewer configs than it was asked
/// for (the policy's `static constexpr Shortfall shortfall`).
enum class Shortfall {
  /// The policy is short of candidates only: random unvisited configs fill the batch to n
  /// (TopPick, DiversePick).
  fill_random,
  /// The policy measures less on purpose: the batch is its configs plus the exploration's random
  /// share, and all random when it returned none (KMeansSampler).
  measure_less,
};

/// Makes the exploiting part of a model-based optimizer's batch from the candidates its search
/// found: `std::size_t candidates(std::size_t n) const` (how many candidates to ask the search
/// for to pick n), `std::vector<Config> pick(const SearchContext&, std::span<const Candidate>
/// best_first, std::size_t n, Rng&)`, which returns at most n valid configs, none in
/// `ctx.visited` (chosen among the candidates, like TopPick and DiversePick, or made from them,
/// like KMeansSampler's centroids), and `static constexpr Shortfall shortfall`, what a batch
/// does when the pick returns fewer than n.
template <class P>
concept PickPolicy = requires(P& p, const P& cp, const SearchContext& ctx, std::span<const Candidate> cands,
                              std::size_t n, Rng& rng) {
  { cp.candidates(n) } -> std::convertible_to<std::size_t>;
  { p.pick(ctx, cands, n, rng) } -> std::same_as<std::vector<Config>>;
  { P::shortfall } -> std::convertible_to<Shortfall>;
};

template <class P>
constexpr bool check_pick() {
  static_assert(requires(const P& p, std::size_t n) { { p.candidates(n) } -> std::convertible_to<std::size_t>; },
                "tunekit::PickPolicy: the pick policy needs `std::size_t candidates(std::size_t n) "
                "const`");
  static_assert(requires(P& p, const SearchContext& ctx, std::span<const Candidate> c, std::size_t n, Rng& r) {
                  { p.pick(ctx, c, n, r) } -> std::same_as<std::vector<Config>>;
                },
                "tunekit::PickPolicy: the pick policy needs `std::vector<tunekit::Config> pick(const "
                "tunekit::SearchContext&, std::span<const tunekit::Candidate> best_first, "
                "std::size_t n, tunekit::Rng&)`");
  static_assert(requires { { P::shortfall } -> std::convertible_to<Shortfall>; },
                "tunekit::PickPolicy: the pick policy needs `static constexpr tunekit::Shortfall "
                "shortfall` (fill_random or measure_less)");
  return PickPolicy<P>;
}

// ---------------------------------------------------------------------------------------------
// Combinations: a part that scores or explores with the predictive standard deviation needs a
// surrogate that gives one.

/// Whether a part (an acquisition, an exploration or pick policy, an optimizer) needs the
/// surrogate's predictive standard deviation: it declares `static constexpr bool
/// needs_uncertainty = true` (ExpectedImprovement, UpperConfidenceBound,
/// ProbabilityOfImprovement, ContextualEpsilon; ModelBased when one of its policies does).
template <class T>
inline constexpr bool needs_uncertainty_v = requires { requires T::needs_uncertainty; };

/// Refuses, at compile time, a surrogate without uncertainty (not an UncertainSurrogate, such as
/// GradientBoostedTrees) with an acquisition or optimizer that needs it: the standard deviation
/// would be 0 everywhere and the part would silently degrade (expected improvement to the
/// predicted gain, the contextual epsilon to 0). NoSurrogate fits no model and scores nothing.
template <class S, class A, class O>
constexpr bool check_uncertainty() {
  constexpr bool has = std::same_as<S, NoSurrogate> || UncertainSurrogate<S>;
  static_assert(has || !needs_uncertainty_v<A>,
                "tunekit::Tuner: the acquisition needs the predictive standard deviation, and the "
                "surrogate gives none (it is not a tunekit::UncertainSurrogate): use one that is "
                "(RandomForest) or an acquisition of the mean (PredictedMean)");
  static_assert(has || !needs_uncertainty_v<O>,
                "tunekit::Tuner: the optimizer's exploration or pick policy needs the predictive "
                "standard deviation, and the surrogate gives none (it is not a "
                "tunekit::UncertainSurrogate): use one that is (RandomForest) or FixedEpsilon");
  return has || (!needs_uncertainty_v<A> && !needs_uncertainty_v<O>);
}

// ---------------------------------------------------------------------------------------------
// Scheduler: which task of many gets the next time slot.

/// What a scheduler knows of one task when it picks the next slot.
struct TaskProgress {
  /// How often the operator appears in the network, and its FLOP per run (0: unknown).
  double weight = 1.0;
  double flop = 0.0;
  /// The operator's kind ("conv2d", "dense", ...): tasks of one tag and a similar FLOP count
  /// form Ansor's similarity groups. Empty: no group.
  std::string tag;
  /// The device's peak FLOP per second (DynaTune normalises throughput by it); 0: unknown.
  double peak_flops = 0.0;
  /// Slots given so far, and the task's best latency in seconds after each of them (infinity
  /// until a config succeeded).
  std::size_t slots = 0;
  std::vector<double> best_latency;
  /// The task can take no more slots (its search space is exhausted).
  bool finished = false;
};

/// Picks the task for the next slot: `std::size_t next_task(std::span<const TaskProgress>,
/// Rng&)` returns an index into the tasks, never a finished one; an index >= tasks.size() means
/// that no task is worth another slot, and the multi-task tuning stops. Optional:
/// `void begin(std::span<const TaskProgress>, std::size_t slot_budget)`, called once before the
/// first slot with the number of slots the budget allows (SIZE_MAX when it does not say).
template <class S>
concept Scheduler = requires(S& s, std::span<const TaskProgress> tasks, Rng& rng) {
  { s.next_task(tasks, rng) } -> std::convertible_to<std::size_t>;
};

namespace detail {
template <class S>
concept HasSchedulerBegin = requires(S& s, std::span<const TaskProgress> tasks, std::size_t n) {
  s.begin(tasks, n);
};
}  // namespace detail

template <class S>
constexpr bool check_scheduler() {
  static_assert(Scheduler<S>, "tunekit::Scheduler: the scheduler needs `std::size_t next_task("
                              "std::span<const tunekit::TaskProgress>, tunekit::Rng&)`");
  return Scheduler<S>;
}

// ---------------------------------------------------------------------------------------------
// Callback: hooks into the tuning loop.

namespace detail {
template <class C>
concept HasOnBegin = requires(C& c, const TuningState& s) { c.on_begin(s); };
template <class C>
concept HasOnMeasured = requires(C& c, const TuningState& s, const Trial& t) {
  c.on_measured(s, t);
};
template <class C>
concept HasOnRound = requires(C& c, const TuningState& s) { c.on_round(s); };
template <class C>
concept HasOnEnd = requires(C& c, const TuningState& s) { c.on_end(s); };
}  // namespace detail

/// A tuning callback: any of `on_begin(const TuningState&)`, `on_measured(const TuningState&,
/// const Trial&)`, `on_round(const TuningState&)` (after each batch) and `on_end(const
/// TuningState&)`. on_measured and on_round may return bool: true stops the tuning.
template <class C>
concept Callback = detail::HasOnBegin<C> || detail::HasOnMeasured<C> || detail::HasOnRound<C> ||
                   detail::HasOnEnd<C>;

template <class C>
constexpr bool check_callback() {
  static_assert(Callback<C>, "tunekit::Callback: a callback needs at least one of on_begin("
                             "const TuningState&), on_measured(const TuningState&, const Trial&), "
                             "on_round(const TuningState&), on_end(const TuningState&)");
  return Callback<C>;
}

}  // namespace tunekit
