#pragma once
/// \file
/// RoundRobin: the tasks in turn, one slot each.

#include "tunekit/concepts/scheduler.hpp"

#include <cstddef>
#include <span>

namespace tunekit {

/// Gives the next slot to the next unfinished task after the last one served, cyclically.
class RoundRobin {
 public:
  std::size_t next_task(std::span<const TaskProgress> tasks, Rng&) {
    for (std::size_t step = 0; step < tasks.size(); ++step) {
      const std::size_t i = (next_ + step) % tasks.size();
      if (!tasks[i].finished) {
        next_ = i + 1;
        return i;
      }
    }
    return tasks.size();
  }

 private:
  std::size_t next_ = 0;
};

static_assert(check_scheduler<RoundRobin>());

}  // namespace tunekit
