#pragma once
/// \file
/// TaskProgress: what a scheduler knows of one task of a multi-task tuning run.

#include <cstddef>
#include <string>
#include <vector>

namespace tunekit {

/// What a scheduler knows of one task when it picks the next slot.
struct TaskProgress {
  /// How often the operator appears in the network, and its FLOP per run (0: unknown).
  double weight = 1.0;
  double flop = 0.0;
  /// The operator's kind ("conv2d", "dense", ...): tasks of one tag and a similar FLOP count
  /// form Ansor's similarity groups. Empty: no group.
  std::string tag{};
  /// The device's peak FLOP per second (DynaTune normalises throughput by it); 0: unknown.
  double peak_flops = 0.0;
  /// Slots given so far, and the task's best latency in seconds after each of them (infinity
  /// until a config succeeded).
  std::size_t slots = 0;
  std::vector<double> best_latency{};
  /// The task can take no more slots (its search space is exhausted).
  bool finished = false;
};

}  // namespace tunekit
