#pragma once
/// \file
/// When TreeParzen starts over (RestartPolicy): after its best has stalled, or never.

#include "tunekit/concepts/tree_parzen.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace tunekit {

/// Restarts once the best has stalled: the history is cut into phases; a phase ends once its
/// best time has not improved for max(patience, the trials the phase took to reach it) trials,
/// and the search then uses the trials of the new phase alone (and the failures of the whole
/// history): a new start away from every visited config, a new model start, new densities. What
/// the mix learnt of its sources carries over.
class RestartOnStall {
 public:
  RestartOnStall() = default;
  /// Trials without improvement that end a phase (at least 1).
  explicit RestartOnStall(std::size_t patience) : patience_(patience) {
    if (patience == 0) throw std::invalid_argument("RestartOnStall: patience must be at least 1");
  }

  std::size_t patience() const noexcept { return patience_; }

  std::size_t phase_start(const History& history) const {
    std::size_t start = 0, best_at = 0;
    double best = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < history.size(); ++i) {
      const Measurement& m = history[i].measurement;
      if (m.ok() && m.mean < best) {
        best = m.mean;
        best_at = i;
      } else if (i + 1 - best_at > std::max(patience_, best_at + 1 - start)) {
        start = i + 1;
        best_at = start;
        best = std::numeric_limits<double>::infinity();
      }
    }
    return start;
  }

 private:
  std::size_t patience_ = 100;
};

/// One phase: the search never starts over.
struct NoRestarts {
  std::size_t phase_start(const History&) const noexcept { return 0; }
};

static_assert(RestartPolicy<RestartOnStall>);
static_assert(RestartPolicy<NoRestarts>);

}  // namespace tunekit
