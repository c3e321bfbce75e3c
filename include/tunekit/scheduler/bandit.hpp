#pragma once
/// \file
/// BanditScheduler: DynaTune's task scheduler (Zhang et al., "DynaTune: Dynamic Tensor Program
/// Optimization in Deep Neural Network Compilation", ICLR 2021, Algorithm 1): a multi-armed bandit over tasks whose reward is the
/// reduction of the network's weighted latency a slot brings.
///
/// Unvisited tasks get a slot first. Then, for every task k, the belief model
/// (scheduler/curve_belief.hpp) predicts the distribution of its normalised throughput y after
/// the next slot, and the expected improvement of the latency reduction,
///   R_k = w_k E[max(0, g_k - C_k / (y peak_k))]   (milliseconds; g_k its best latency now),
/// is the arm's value. The selection policy picks the arm: UCB (DynaTune's; the default)
///   u_k = R_k + c sqrt(ln(sum_j slots_j) / slots_k),  c = 2 (0.2 when the task's first latency
/// was below 1 ms), epsilon-greedy or softmax over R_k.

#include "tunekit/concepts/scheduler.hpp"
#include "tunekit/scheduler/curve_belief.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <span>
#include <stdexcept>
#include <vector>

namespace tunekit {

/// DynaTune's UCB: the arm with the largest R_k + c_k sqrt(ln N / slots_k).
struct UcbSelection {
  double c = 2.0;
  /// c for tasks whose first latency was below small_latency_seconds.
  double c_small = 0.2;
  double small_latency_seconds = 1e-3;

  void validate() const {
    if (!(c >= 0) || !std::isfinite(c)) throw std::invalid_argument("UcbSelection: c must be finite and >= 0");
    if (!(c_small >= 0) || !std::isfinite(c_small))
      throw std::invalid_argument("UcbSelection: c_small must be finite and >= 0");
    if (!(small_latency_seconds >= 0))
      throw std::invalid_argument("UcbSelection: small_latency_seconds must be >= 0");
  }

  std::size_t select(std::span<const double> gain_ms, std::span<const TaskProgress> tasks,
                     std::span<const std::size_t> open, Rng&) const {
    double total = 0.0;
    for (const auto& t : tasks) total += static_cast<double>(t.slots);
    std::size_t pick = open.front();
    double best = -std::numeric_limits<double>::infinity();
    for (std::size_t i : open) {
      double first = std::numeric_limits<double>::infinity();
      for (double g : tasks[i].best_latency)
        if (std::isfinite(g)) {
          first = g;
          break;
        }
      const double ci = first < small_latency_seconds ? c_small : c;
      const double u = gain_ms[i] + ci * std::sqrt(std::log(std::max(total, 1.0)) /
                                                   static_cast<double>(std::max<std::size_t>(tasks[i].slots, 1)));
      if (u > best) {
        best = u;
        pick = i;
      }
    }
    return pick;
  }
};

/// Epsilon-greedy: a uniformly random arm with probability epsilon, else the largest R_k.
struct EpsilonGreedySelection {
  double epsilon = 0.1;

  void validate() const {
    if (!(epsilon >= 0 && epsilon <= 1)) throw std::invalid_argument("EpsilonGreedySelection: epsilon must be in [0, 1]");
  }

  std::size_t select(std::span<const double> gain_ms, std::span<const TaskProgress>,
                     std::span<const std::size_t> open, Rng& rng) const {
    if (uniform_real(rng) < epsilon) return open[uniform_index(rng, open.size())];
    std::size_t pick = open.front();
    for (std::size_t i : open)
      if (gain_ms[i] > gain_ms[pick]) pick = i;
    return pick;
  }
};

/// Softmax (Boltzmann) selection: arm k with probability proportional to
/// exp(R_k / (temperature max_j R_j)), so the temperature is relative to the largest gain;
/// uniform when no arm promises a gain.
struct SoftmaxSelection {
  double temperature = 0.1;

  void validate() const {
    if (!(temperature > 0) || !std::isfinite(temperature))
      throw std::invalid_argument("SoftmaxSelection: temperature must be finite and positive");
  }

  std::size_t select(std::span<const double> gain_ms, std::span<const TaskProgress>,
                     std::span<const std::size_t> open, Rng& rng) const {
    double top = 0.0;
    for (std::size_t i : open) {
      if (std::isinf(gain_ms[i])) return i;
      top = std::max(top, gain_ms[i]);
    }
    if (!(top > 0)) return open[uniform_index(rng, open.size())];
    std::vector<double> w;
    double sum = 0.0;
    for (std::size_t i : open) {
      w.push_back(std::exp((gain_ms[i] / top - 1.0) / temperature));
      sum += w.back();
    }
    double u = uniform_real(rng) * sum;
    for (std::size_t j = 0; j < open.size(); ++j) {
      u -= w[j];
      if (u < 0) return open[j];
    }
    return open.back();
  }
};

/// Parameters of BanditScheduler; fill with designated initialisers.
struct BanditParams {
  CurveBeliefParams belief{};
  /// Slots a task that has not succeeded yet is retried before its gain counts as 0.
  std::size_t failure_retries = 2;

  void validate() const { belief.validate(); }
};

/// DynaTune's bandit scheduler (see the file comment) with a selection policy:
/// UcbSelection (DynaTune), EpsilonGreedySelection or SoftmaxSelection.
template <class Selection = UcbSelection>
class BanditScheduler {
 public:
  explicit BanditScheduler(BanditParams params = {}, Selection selection = {})
      : params_(std::move(params)), selection_(std::move(selection)) {
    params_.validate();
    selection_.validate();
  }

  std::size_t next_task(std::span<const TaskProgress> tasks, Rng& rng) {
    std::vector<std::size_t> open;
    for (std::size_t i = 0; i < tasks.size(); ++i)
      if (!tasks[i].finished) open.push_back(i);
    if (open.empty()) return tasks.size();
    for (std::size_t i : open)
      if (tasks[i].slots == 0) return i;
    if (cached_slots_.size() != tasks.size()) {
      cached_slots_.assign(tasks.size(), std::numeric_limits<std::size_t>::max());
      gain_ms_.assign(tasks.size(), 0.0);
      predictions_.assign(tasks.size(), {});
    }
    for (std::size_t i : open)
      if (cached_slots_[i] != tasks[i].slots) {
        gain_ms_[i] = expected_gain_ms(tasks[i], predictions_[i], rng);
        cached_slots_[i] = tasks[i].slots;
      }
    return selection_.select(gain_ms_, tasks, open, rng);
  }

  /// R_k of each task as last computed (milliseconds of weighted latency).
  const std::vector<double>& expected_gain_ms() const noexcept { return gain_ms_; }
  /// The belief of each task as last computed.
  const std::vector<CurvePrediction>& predictions() const noexcept { return predictions_; }
  const BanditParams& params() const noexcept { return params_; }

 private:
  double expected_gain_ms(const TaskProgress& t, CurvePrediction& prediction, Rng& rng) const {
    const double g = t.best_latency.empty() ? std::numeric_limits<double>::infinity() : t.best_latency.back();
    if (!std::isfinite(g))
      return t.slots <= params_.failure_retries ? std::numeric_limits<double>::infinity() : 0.0;
    const double work = t.flop > 0 ? t.flop : 1.0;
    std::vector<double> y;
    double top = 0.0;
    for (double l : t.best_latency) {
      y.push_back(std::isfinite(l) && l > 0 ? work / l : 0.0);
      top = std::max(top, y.back());
    }
    // Normalised by the device's peak; when it is unknown, by twice the best seen so far.
    const double peak = t.flop > 0 && t.peak_flops > top ? t.peak_flops : 2.0 * top;
    for (double& v : y) v /= peak;
    prediction = predict_next_slot(y, params_.belief, rng);
    double gain = 0.0;
    for (double v : prediction.samples)
      if (v > 0) gain += std::max(0.0, g - work / (v * peak));
    gain /= static_cast<double>(prediction.samples.size());
    return t.weight * gain * 1e3;
  }

  BanditParams params_;
  Selection selection_;
  std::vector<std::size_t> cached_slots_;
  std::vector<double> gain_ms_;
  std::vector<CurvePrediction> predictions_;
};

/// DynaTune's scheduler: UCB over the curve belief.
using DynaTuneScheduler = BanditScheduler<UcbSelection>;
using EpsilonGreedyBanditScheduler = BanditScheduler<EpsilonGreedySelection>;
using SoftmaxBanditScheduler = BanditScheduler<SoftmaxSelection>;

static_assert(check_scheduler<DynaTuneScheduler>());
static_assert(check_scheduler<EpsilonGreedyBanditScheduler>());
static_assert(check_scheduler<SoftmaxBanditScheduler>());

}  // namespace tunekit
