#pragma once
/// \file
/// SearchContext: what an optimizer sees when it proposes the next configs.

#include "tunekit/core/history.hpp"
#include "tunekit/space/search_space.hpp"

#include <Eigen/Core>

#include <cstdint>
#include <functional>
#include <span>
#include <unordered_set>
#include <vector>

namespace tunekit {

/// A config an optimizer found, with its flat index and its acquisition score.
struct Candidate {
  Config config{};
  std::uint64_t index = 0;
  double score = 0.0;
};

/// The state an Optimizer proposes from. It refers to the tuner's data: valid during one call.
struct SearchContext {
  const SearchSpace& space;
  /// Everything measured so far.
  const History& history;
  /// Flat indices of configs measured or handed out and not yet measured: never propose these.
  const std::unordered_set<std::uint64_t>& visited;
  /// Scores configs by the acquisition over the fitted surrogate (higher is better); empty when
  /// the tuner has no model, or no fitted model yet. `score` and `predict` may be called from
  /// several threads at once (they only read the fitted model).
  std::function<std::vector<double>(std::span<const Config>)> score{};
  /// Best throughput measured so far (FLOP/s, or 1/s when the FLOP count is unknown); 0 if none.
  double best_throughput = 0.0;
  /// The fitted surrogate's predictive mean and standard deviation of configs, in the units it
  /// was fitted in (the std is 0 for a surrogate without uncertainty); empty when `score` is.
  std::function<void(std::span<const Config>, Eigen::VectorXd& mean, Eigen::VectorXd& std)> predict{};
  /// The best measured value in the surrogate's units (what `best` is for the acquisition).
  double best_target = 0.0;
  /// How many configs the caller measures at once (a farm's workers; a user's ask(n) asks for
  /// n): an optimizer that sizes its own batches may propose at least this many, so that no worker
  /// idles (TreeParzenParams::fill_parallel).
  std::size_t parallel = 1;

  /// Whether a fitted model is available (`score` and `predict` are set).
  bool has_model() const noexcept { return static_cast<bool>(score); }
};

}  // namespace tunekit
