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

#include "tunekit/concepts.hpp"
#include "tunekit/replay/replay_kernel.hpp"
#include "tunekit/tuner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
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

}  // namespace tunekit
