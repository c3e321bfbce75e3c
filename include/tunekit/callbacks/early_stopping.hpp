#pragma once
/// \file
/// EarlyStopping: stop when the best has not improved for `patience` trials.

#include "tunekit/concepts/callback.hpp"

#include <cstddef>
#include <stdexcept>

namespace tunekit {

/// Stops the tuning after `patience` consecutive trials without a new best (AutoTVM's
/// early_stopping); also when no config succeeded within the first `patience` trials.
class EarlyStopping {
 public:
  explicit EarlyStopping(std::size_t patience) : patience_(patience) {
    if (patience == 0) throw std::invalid_argument("EarlyStopping: patience must be at least 1");
  }

  bool on_measured(const TuningState& s, const Trial&) const {
    const Trial* best = s.history.best();
    const std::size_t best_position =
        best ? static_cast<std::size_t>(best - s.history.trials().data()) + 1 : 0;
    return s.history.size() - best_position >= patience_;
  }

 private:
  std::size_t patience_;
};

static_assert(Callback<EarlyStopping>);

}  // namespace tunekit
