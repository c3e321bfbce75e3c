#pragma once
/// \file
/// FlopProportional: slots in proportion to each task's share of the network's work (DynaTune's
/// "Linear" baseline).

#include "tunekit/concepts/scheduler.hpp"

#include <cstddef>
#include <span>

namespace tunekit {

/// Gives task k a share of the slots proportional to weight_k x FLOP_k (FLOP 0, unknown, counts
/// as 1): the next slot goes to the unfinished task furthest below its share, i.e. with the
/// smallest (slots_k + 1) / (weight_k FLOP_k) (the lowest index on a tie), which interleaves the
/// tasks instead of serving them in blocks.
class FlopProportional {
 public:
  std::size_t next_task(std::span<const TaskProgress> tasks, Rng&) {
    std::size_t pick = tasks.size();
    double best = 0.0;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      if (tasks[i].finished) continue;
      const double work = tasks[i].weight * (tasks[i].flop > 0 ? tasks[i].flop : 1.0);
      const double key = static_cast<double>(tasks[i].slots + 1) / work;
      if (pick == tasks.size() || key < best) {
        pick = i;
        best = key;
      }
    }
    return pick;
  }
};

static_assert(check_scheduler<FlopProportional>());

}  // namespace tunekit
