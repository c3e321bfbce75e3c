#pragma once
/// \file
/// Trial and History: what a tuning run has measured so far.

#include "tunekit/core/measurement.hpp"
#include "tunekit/space/config.hpp"

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

namespace tunekit {

/// One measured configuration.
struct Trial {
  Config config{};
  /// The config's flat index in its space.
  std::uint64_t index = 0;
  Measurement measurement{};
  /// The tuning clock when the measurement was taken in: measurement costs (simulated for
  /// replay) plus the time spent searching, since the run began.
  double tuning_seconds = 0.0;
};

/// The measured configurations of one task in measurement order, and the best of them (lowest
/// mean time among the successful ones; the first one wins a tie).
class History {
 public:
  /// Appends a trial. Throws std::invalid_argument if its config was measured before.
  void add(Trial t) {
    if (!measured_.insert(t.index).second)
      throw std::invalid_argument("config with flat index " + std::to_string(t.index) +
                                  " was already measured");
    if (t.measurement.ok() && (!best_ || t.measurement.mean < trials_[*best_].measurement.mean))
      best_ = trials_.size();
    trials_.push_back(std::move(t));
  }

  bool contains(std::uint64_t flat_index) const { return measured_.contains(flat_index); }
  std::size_t size() const noexcept { return trials_.size(); }
  bool empty() const noexcept { return trials_.empty(); }
  const Trial& operator[](std::size_t i) const { return trials_.at(i); }
  const std::vector<Trial>& trials() const noexcept { return trials_; }
  auto begin() const noexcept { return trials_.begin(); }
  auto end() const noexcept { return trials_.end(); }

  /// The best successful trial, or nullptr when none succeeded.
  const Trial* best() const noexcept { return best_ ? &trials_[*best_] : nullptr; }
  /// Number of successful trials.
  std::size_t successes() const noexcept {
    std::size_t n = 0;
    for (const auto& t : trials_) n += t.measurement.ok();
    return n;
  }

 private:
  std::vector<Trial> trials_;
  std::unordered_set<std::uint64_t> measured_;
  std::optional<std::size_t> best_;
};

}  // namespace tunekit
