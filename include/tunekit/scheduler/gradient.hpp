#pragma once
/// \file
/// GradientScheduler: Ansor's task scheduler (Zheng et al., OSDI 2020, section 6; TVM's
/// auto_scheduler/task_scheduler.py), for the objective f = sum_i w_i g_i (g_i: task i's best
/// latency, w_i: its weight).
///
/// After a warm-up that gives every task its first slots in turn, the next slot goes to the task
/// with the most negative estimate of df/dt_i (t_i: slots given to task i):
///   grad_i = w_i (alpha backward_i + (1 - alpha) forward_i),
///   backward_i = (g_i(t_i) - g_i(t_i - window)) / window (0 until the task has window + 1 slots),
///   forward_i = min(-g_i / t_i, beta C_i / max_{j in N(i)} (C_j / g_j) - g_i),
/// where C_i is the task's FLOP and N(i) its similarity group: the tasks of the same tag whose
/// int(log_1.618(C + 1)) is the same (the second term only when the group has another member).
/// Equal gradients (nothing to tell the tasks apart) give a uniformly random task. A task whose
/// best latency has not improved for `task_patience` slots is dropped (Ansor's per-task early
/// stopping); a task that has not succeeded yet has gradient -infinity.

#include "tunekit/concepts/scheduler.hpp"

#include <cmath>
#include <cstddef>
#include <limits>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace tunekit {

/// Parameters of GradientScheduler; fill with designated initialisers. Defaults: Ansor's.
struct GradientParams {
  /// Slots of the backward difference.
  std::size_t window = 3;
  /// Weight of the backward (observed) gradient against the forward (optimistic) one.
  double alpha = 0.2;
  /// How far below the best similar task's throughput a task may be expected to get.
  double beta = 2.0;
  /// Round-robin rounds before the gradient decides (Ansor: 1).
  std::size_t warm_up = 1;
  /// Slots without improvement after which a task gets no more (0: never).
  std::size_t task_patience = 0;

  void validate() const {
    if (window == 0) throw std::invalid_argument("GradientParams: window must be at least 1");
    if (!(alpha >= 0 && alpha <= 1)) throw std::invalid_argument("GradientParams: alpha must be in [0, 1]");
    if (!(beta > 0) || !std::isfinite(beta)) throw std::invalid_argument("GradientParams: beta must be positive");
  }
};

/// Ansor's gradient-based task scheduler (see the file comment).
class GradientScheduler {
 public:
  explicit GradientScheduler(GradientParams params = {}) : params_(params) { params_.validate(); }

  std::size_t next_task(std::span<const TaskProgress> tasks, Rng& rng) {
    for (std::size_t r = 0; r < params_.warm_up; ++r)
      for (std::size_t i = 0; i < tasks.size(); ++i)
        if (!tasks[i].finished && tasks[i].slots <= r) return i;
    const std::vector<double> grad = gradients(tasks);
    std::vector<std::size_t> alive;
    for (std::size_t i = 0; i < tasks.size(); ++i)
      if (!std::isnan(grad[i])) alive.push_back(i);
    if (alive.empty()) return tasks.size();
    std::size_t pick = alive.front();
    bool all_equal = true;
    for (std::size_t i : alive) {
      all_equal = all_equal && grad[i] == grad[alive.front()];
      if (grad[i] < grad[pick]) pick = i;
    }
    return all_equal ? alive[uniform_index(rng, alive.size())] : pick;
  }

  /// df/dt_i of every task by the formula above; NaN for a task that takes no more slots
  /// (finished or stopped early), -infinity for one without a successful config yet.
  std::vector<double> gradients(std::span<const TaskProgress> tasks) const {
    std::vector<double> grad(tasks.size(), std::numeric_limits<double>::quiet_NaN());
    // Similarity groups: tag and int(log_1.618(FLOP + 1)).
    std::map<std::string, std::vector<std::size_t>> groups;
    std::vector<std::string> key(tasks.size());
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      if (tasks[i].tag.empty()) continue;
      key[i] = tasks[i].tag + "/" +
               std::to_string(static_cast<long long>(std::log(tasks[i].flop + 1.0) / std::log(1.618)));
      groups[key[i]].push_back(i);
    }
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      const TaskProgress& t = tasks[i];
      if (t.finished || stopped_early(t)) continue;
      const double g = current(t);
      if (!std::isfinite(g) || t.slots == 0) {
        grad[i] = -std::numeric_limits<double>::infinity();
        continue;
      }
      double backward = 0.0;
      const std::size_t n = t.best_latency.size();
      if (n >= params_.window + 1 && std::isfinite(t.best_latency[n - 1 - params_.window]))
        backward = (t.best_latency[n - 1] - t.best_latency[n - 1 - params_.window]) /
                   static_cast<double>(params_.window);
      double g_next = g - g / static_cast<double>(t.slots);
      if (!key[i].empty() && groups[key[i]].size() > 1) {
        double best_throughput = 0.0;
        for (std::size_t j : groups[key[i]]) {
          const double gj = current(tasks[j]);
          if (std::isfinite(gj) && gj > 0) best_throughput = std::max(best_throughput, tasks[j].flop / gj);
        }
        if (best_throughput > 0) g_next = std::min(g_next, params_.beta * t.flop / best_throughput);
      }
      const double forward = g_next - g;
      grad[i] = t.weight * (params_.alpha * backward + (1.0 - params_.alpha) * forward);
    }
    return grad;
  }

  const GradientParams& params() const noexcept { return params_; }

 private:
  static double current(const TaskProgress& t) {
    return t.best_latency.empty() ? std::numeric_limits<double>::infinity() : t.best_latency.back();
  }

  bool stopped_early(const TaskProgress& t) const {
    if (params_.task_patience == 0 || t.best_latency.size() <= params_.task_patience) return false;
    const std::size_t n = t.best_latency.size();
    return !(t.best_latency[n - 1] < t.best_latency[n - 1 - params_.task_patience]);
  }

  GradientParams params_;
};

static_assert(check_scheduler<GradientScheduler>());

}  // namespace tunekit
