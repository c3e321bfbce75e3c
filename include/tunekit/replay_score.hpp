#pragma once
/// \file
/// Scoring tuners on recorded spaces: the search-efficiency measure of shared/datasets/PEERS.md.
///
/// score(B) = best recorded time of the space / recorded time of the config the tuner holds as
/// best after B measured configs (chosen by its own noisy measurements); 0 before any success.
/// found(B) = best recorded time of the space / best recorded time among the configs measured
/// within B: PEERS.md's score, where the peers' simulation mode answers every config with its
/// recorded mean, so the best config found is the best measured. found >= score; they differ
/// when measurement noise ranks a slower config first (replay answers with recorded samples).
///
/// time_score: the time-based performance score P of Willemsen et al., "A methodology for
/// comparing optimization algorithms for auto-tuning" (FGCS 2024): the tuner's pick over the
/// tuning clock against the expected best of random search in the same time; about 0 for random
/// search, 1 for the optimum from the start (definition at time_score below).

#include "tunekit/concepts.hpp"
#include "tunekit/replay/replay_kernel.hpp"
#include "tunekit/tuner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace tunekit {

/// One tuning run replayed on a dataset: the history and the score after each trial.
struct ReplayTrace {
  std::vector<Trial> trials{};
  /// score after trial t is score[t - 1]; found likewise.
  std::vector<double> score{};
  std::vector<double> found{};
  double wall_seconds = 0.0;
};

namespace detail {
/// Callback that records the score and the found score after each trial.
struct ScoreRecorder {
  const ReplayKernel* kernel{};
  std::vector<double>* score{};
  std::vector<double>* found{};
  void on_measured(const TuningState& s, const Trial& t) {
    const Trial* b = s.history.best();
    score->push_back(b ? kernel->optimum_ms() / kernel->recorded_ms(b->config) : 0.0);
    const double here = t.measurement.ok() ? kernel->optimum_ms() / kernel->recorded_ms(t.config) : 0.0;
    found->push_back(std::max(here, found->empty() ? 0.0 : found->back()));
  }
};
}  // namespace detail

/// Runs `tuner` on the replay kernel to its budget and returns the trace.
template <class TunerT, class... Callbacks>
ReplayTrace replay_trace(TunerT& tuner, ReplayKernel& kernel, Rng& rng, Callbacks&&... callbacks) {
  ReplayTrace trace;
  const auto t0 = std::chrono::steady_clock::now();
  tuner.tune(kernel, rng, detail::ScoreRecorder{&kernel, &trace.score, &trace.found},
             std::forward<Callbacks>(callbacks)...);
  trace.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  trace.trials = tuner.history().trials();
  return trace;
}

/// replay_trace with the batches measured on a measurement farm (Tuner::tune with a farm): the
/// same trace as the serial run. On a process that only measures for the farm (an MPI rank
/// other than 0) the trace is empty.
template <class TunerT, class F, class... Callbacks>
  requires MeasurementFarm<F>
ReplayTrace replay_trace(TunerT& tuner, ReplayKernel& kernel, F& farm, Rng& rng, Callbacks&&... callbacks) {
  ReplayTrace trace;
  const auto t0 = std::chrono::steady_clock::now();
  tuner.tune(kernel, farm, rng, detail::ScoreRecorder{&kernel, &trace.score, &trace.found},
             std::forward<Callbacks>(callbacks)...);
  trace.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  trace.trials = tuner.history().trials();
  return trace;
}

/// The q-quantile (0..1) of values by linear interpolation between order statistics (numpy's
/// default); infinity propagates. NaN for an empty input.
inline double quantile(std::vector<double> v, double q) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = static_cast<std::size_t>(std::ceil(pos));
  if (lo == hi || v[lo] == v[hi]) return v[lo];
  if (std::isinf(v[hi])) return v[hi];
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

/// Which of a trace's scores to read: the tuner's own pick (score) or the best measured (found).
enum class ScoreKind { held, found };

/// Score of a trace after `budget` trials (its last score when it measured fewer).
inline double score_at(const ReplayTrace& t, std::size_t budget, ScoreKind kind = ScoreKind::held) {
  const auto& v = kind == ScoreKind::held ? t.score : t.found;
  if (v.empty() || budget == 0) return 0.0;
  return v[std::min(budget, v.size()) - 1];
}

/// Trials until a trace first reached `target` score; infinity when it never did.
inline double evals_to(const ReplayTrace& t, double target, ScoreKind kind = ScoreKind::held) {
  const auto& v = kind == ScoreKind::held ? t.score : t.found;
  for (std::size_t i = 0; i < v.size(); ++i)
    if (v[i] >= target) return static_cast<double>(i + 1);
  return std::numeric_limits<double>::infinity();
}

/// Seconds of measurement (the measurements' costs, simulated on replay; search time left out)
/// until a trace first reached `target` score; infinity when it never did.
inline double measure_seconds_to(const ReplayTrace& t, double target) {
  double seconds = 0.0;
  for (std::size_t i = 0; i < t.score.size() && i < t.trials.size(); ++i) {
    seconds += t.trials[i].measurement.cost;
    if (t.score[i] >= target) return seconds;
  }
  return std::numeric_limits<double>::infinity();
}

/// Seconds of measurement of the whole trace.
inline double measure_seconds(const ReplayTrace& t) {
  double seconds = 0.0;
  for (const auto& tr : t.trials) seconds += tr.measurement.cost;
  return seconds;
}

/// The budget checkpoints of PEERS.md that are <= budget.
inline std::vector<std::size_t> score_checkpoints(std::size_t budget) {
  std::vector<std::size_t> out;
  for (std::size_t b : {25, 50, 100, 200, 400})
    if (b <= budget) out.push_back(b);
  return out;
}

/// Exact distribution of uniform random search without replacement on a recorded space, with
/// noiseless selection: the probability that the best of B configs drawn from N (failed ones
/// included) has score <= each distinct score. Returns pairs (score, P(score_B <= score)),
/// ascending in score. P(best rank > r) = C(N - r, B) / C(N, B) for rank r among the finite
/// times sorted ascending.
inline std::vector<std::pair<double, double>> random_search_score_cdf(std::vector<double> times_ms,
                                                                      std::size_t budget) {
  const std::size_t n = times_ms.size();
  std::sort(times_ms.begin(), times_ms.end());
  const double best = times_ms.front();
  // log C(N - r, B) - log C(N, B): probability that none of the r best configs is drawn.
  auto p_none_of_best = [&](std::size_t r) {
    if (n - r < budget) return 0.0;
    double lp = 0.0;
    for (std::size_t i = 0; i < budget; ++i)
      lp += std::log(static_cast<double>(n - r - i)) - std::log(static_cast<double>(n - i));
    return std::exp(lp);
  };
  // score_B <= s_r (the r-th best's score, r 1-based) iff none of the r - 1 better ones is drawn.
  std::vector<std::pair<double, double>> cdf;
  for (std::size_t r = n; r >= 1; --r) {
    const double s = std::isfinite(times_ms[r - 1]) ? best / times_ms[r - 1] : 0.0;
    cdf.emplace_back(s, p_none_of_best(r - 1));
  }
  // Ties: keep the largest probability per distinct score.
  std::vector<std::pair<double, double>> out;
  for (const auto& [s, p] : cdf) {
    if (!out.empty() && out.back().first == s) out.back().second = std::max(out.back().second, p);
    else out.emplace_back(s, p);
  }
  return out;
}

/// The random baseline of the time score: the expected best recorded time (ms) of uniform random
/// search without replacement after k configs, f_rand(k) for k = 0 .. max_configs. With the N
/// recorded times (failed ones included) sorted ascending, t'_1 <= ... <= t'_N, a failed one
/// (infinity) replaced by the worst finite time w (a draw of failed configs only counts as w):
///
///   f_rand(k) = t'_1 + sum_{r=1}^{N-1} C(N - r, k) / C(N, k) (t'_{r+1} - t'_r),
///
/// C(N - r, k) / C(N, k) = P(the best of the k drawn has rank > r), as in
/// random_search_score_cdf. f_rand(0) = w; k > N counts as N (f_rand(N) = t'_1, the optimum).
/// Throws std::invalid_argument when no time is finite.
inline std::vector<double> random_search_expected_best_ms(std::vector<double> times_ms, std::size_t max_configs) {
  std::sort(times_ms.begin(), times_ms.end());
  if (times_ms.empty() || !std::isfinite(times_ms.front()))
    throw std::invalid_argument("random_search_expected_best_ms: no finite recorded time");
  const double worst = *std::prev(std::find_if(times_ms.begin(), times_ms.end(),
                                               [](double t) { return !std::isfinite(t); }));
  for (double& t : times_ms) t = std::min(t, worst);
  const double n = static_cast<double>(times_ms.size());
  std::vector<double> f(max_configs + 1);
  for (std::size_t k = 0; k <= max_configs; ++k) {
    const double kk = std::min(static_cast<double>(k), n);
    double e = times_ms[0], p = 1.0;  // p = C(N - r, k) / C(N, k), from p(0) = 1
    for (std::size_t r = 1; r < times_ms.size(); ++r) {
      const double left = n - static_cast<double>(r) + 1.0;
      p *= std::max(0.0, left - kk) / left;
      if (p == 0.0) break;
      e += p * (times_ms[r] - times_ms[r - 1]);
    }
    f[k] = e;
  }
  return f;
}

/// A curve f(0), f(1), ... at a fractional index x >= 0: linear between f(floor x) and
/// f(ceil x); the last value beyond the end.
inline double interpolate_curve(std::span<const double> f, double x) {
  if (f.empty()) return std::numeric_limits<double>::quiet_NaN();
  if (!(x > 0)) return f.front();
  const double last = static_cast<double>(f.size() - 1);
  if (x >= last) return f.back();
  const auto lo = static_cast<std::size_t>(std::floor(x));
  return f[lo] + (x - static_cast<double>(lo)) * (f[lo + 1] - f[lo]);
}

/// c_bar of the time score: the mean simulated seconds of measuring one config of the space with
/// `evaluator`, over every recorded row measured once (failed rows included, at what their
/// failure costs), row i with the generator derive_stream(0, i).
template <Evaluator EvaluatorT>
double seconds_per_config(ReplayKernel& kernel, EvaluatorT evaluator) {
  const auto configs = kernel.recorded_configs();
  double seconds = 0.0;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    Rng rng = derive_stream(0, i);
    seconds += evaluator.measure(kernel, configs[i], rng).cost;
  }
  return seconds / static_cast<double>(configs.size());
}

/// What the time score compares a trace with on one space, for one evaluator and budget.
struct TimeScoreBaseline {
  /// f_rand(k) in ms for k = 0 .. budget configs (random_search_expected_best_ms).
  std::vector<double> random_best_ms{};
  /// c_bar: mean simulated seconds per config (seconds_per_config).
  double seconds_per_config = 0.0;
  /// T = budget * c_bar: the time random search needs for `budget` configs.
  double budget_seconds = 0.0;
  /// The best recorded time of the space.
  double optimum_ms = 0.0;
  /// The worst finite recorded time: f_rand(0), and f_s while the tuner holds no success.
  double worst_ms = 0.0;
};

/// The baseline of the time score from the space's recorded times (ms; infinity for a failed
/// row), c_bar and the budget in configs. Throws std::invalid_argument when c_bar is not finite and
/// positive, the budget is 0 or no time is finite.
inline TimeScoreBaseline time_score_baseline(const std::vector<double>& times_ms, double seconds_per_config,
                                             std::size_t budget) {
  if (!(seconds_per_config > 0) || !std::isfinite(seconds_per_config))
    throw std::invalid_argument("time_score_baseline: seconds per config must be finite and positive");
  if (budget == 0) throw std::invalid_argument("time_score_baseline: the budget must be >= 1 config");
  TimeScoreBaseline b;
  b.random_best_ms = random_search_expected_best_ms(times_ms, budget);
  b.seconds_per_config = seconds_per_config;
  b.budget_seconds = static_cast<double>(budget) * seconds_per_config;
  b.optimum_ms = *std::min_element(times_ms.begin(), times_ms.end());
  b.worst_ms = b.random_best_ms.front();
  return b;
}

/// f_rand(t) = f_rand(k(t)) with k(t) = t / c_bar configs, linear between integer k
/// (interpolate_curve).
inline double random_baseline_ms(const TimeScoreBaseline& b, double seconds) {
  return interpolate_curve(b.random_best_ms, seconds / b.seconds_per_config);
}

/// P(t) = (f_rand(t) - f_s(t)) / (f_rand(t) - optimum), clipped to [-1, 1]; when
/// f_rand(t) = optimum: 1 if f_s(t) = optimum, else 0.
inline double time_score_point(double random_ms, double held_ms, double optimum_ms) {
  if (random_ms <= optimum_ms) return held_ms <= optimum_ms ? 1.0 : 0.0;
  return std::clamp((random_ms - held_ms) / (random_ms - optimum_ms), -1.0, 1.0);
}

/// The time-based score P of Willemsen et al. (FGCS 2024) of one trace:
///
///   P = (1/100) sum_{i=1}^{100} P(t_i),  t_i = T i / 100,  T = budget * c_bar,
///
/// with P(t) of time_score_point, f_rand(t) of random_baseline_ms, and f_s(t) the recorded time
/// of the config the tuner holds as best (lowest measured mean among its successes, the first
/// on a tie, as History::best) after the last trial with tuning_seconds <= t; the worst finite
/// time while it holds none. The tuning clock counts the measurements' simulated costs and the
/// search's real time. Random search scores about 0 on average, a tuner that holds the optimum
/// from t = 0 scores 1; below 0 is worse than random search.
inline double time_score(const ReplayTrace& trace, const ReplayKernel& kernel, const TimeScoreBaseline& b) {
  double sum = 0.0, held_ms = b.worst_ms, held_mean = std::numeric_limits<double>::infinity();
  std::size_t next = 0;
  for (int i = 1; i <= 100; ++i) {
    const double t = b.budget_seconds * i / 100.0;
    for (; next < trace.trials.size() && trace.trials[next].tuning_seconds <= t; ++next) {
      const auto& m = trace.trials[next].measurement;
      if (m.ok() && m.mean < held_mean) {
        held_mean = m.mean;
        held_ms = kernel.recorded_ms(trace.trials[next].config);
      }
    }
    sum += time_score_point(random_baseline_ms(b, t), held_ms, b.optimum_ms);
  }
  return sum / 100.0;
}

}  // namespace tunekit
