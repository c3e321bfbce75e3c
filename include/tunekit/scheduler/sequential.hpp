#pragma once
/// \file
/// Sequential: one task after another (AutoTVM tunes a network's operators this way).

#include "tunekit/concepts/scheduler.hpp"

#include <cstddef>
#include <limits>
#include <span>
#include <stdexcept>
#include <vector>

namespace tunekit {

/// Parameters of Sequential; fill with designated initialisers.
struct SequentialParams {
  /// Slots each task gets before the next one starts; 0: the slot budget split evenly (the
  /// first tasks get one more when it does not divide).
  std::size_t slots_per_task = 0;
};

/// Gives every slot to the first task until it has its share (or is finished), then moves to the
/// next, in task order.
class Sequential {
 public:
  explicit Sequential(SequentialParams params = {}) : params_(params) {}

  /// Takes the share of each task from the slot budget when slots_per_task is 0. Throws
  /// std::invalid_argument when neither says how many slots a task gets.
  void begin(std::span<const TaskProgress> tasks, std::size_t slot_budget) {
    quota_.assign(tasks.size(), params_.slots_per_task);
    if (params_.slots_per_task > 0 || tasks.empty()) return;
    if (slot_budget == std::numeric_limits<std::size_t>::max())
      throw std::invalid_argument(
          "Sequential: SequentialParams::slots_per_task is needed when the budget does not fix the slots");
    for (std::size_t i = 0; i < tasks.size(); ++i)
      quota_[i] = slot_budget / tasks.size() + (i < slot_budget % tasks.size() ? 1 : 0);
  }

  std::size_t next_task(std::span<const TaskProgress> tasks, Rng&) {
    if (quota_.size() != tasks.size()) begin(tasks, std::numeric_limits<std::size_t>::max());
    for (std::size_t i = 0; i < tasks.size(); ++i)
      if (!tasks[i].finished && tasks[i].slots < quota_[i]) return i;
    // Every share given (a budget larger than the shares): the unfinished task with fewest slots.
    std::size_t pick = tasks.size();
    for (std::size_t i = 0; i < tasks.size(); ++i)
      if (!tasks[i].finished && (pick == tasks.size() || tasks[i].slots < tasks[pick].slots)) pick = i;
    return pick;
  }

 private:
  SequentialParams params_;
  std::vector<std::size_t> quota_;
};

static_assert(check_scheduler<Sequential>());

}  // namespace tunekit
