#pragma once
/// \file
/// RandomSlots: each slot to a task drawn uniformly.

#include "tunekit/concepts/scheduler.hpp"

#include <cstddef>
#include <span>
#include <vector>

namespace tunekit {

/// Gives each slot to an unfinished task drawn uniformly at random.
class RandomSlots {
 public:
  std::size_t next_task(std::span<const TaskProgress> tasks, Rng& rng) {
    std::vector<std::size_t> open;
    for (std::size_t i = 0; i < tasks.size(); ++i)
      if (!tasks[i].finished) open.push_back(i);
    return open.empty() ? tasks.size() : open[uniform_index(rng, open.size())];
  }
};

static_assert(check_scheduler<RandomSlots>());

}  // namespace tunekit
