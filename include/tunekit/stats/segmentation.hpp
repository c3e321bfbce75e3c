#pragma once
/// \file
/// Piecewise segmentation of a tuning curve at jumps (DynaTune's belief model): a best-so-far
/// curve that leaps (the search found a new region of the space) is not one smooth saturating
/// curve, so the model is fitted to the last segment only.

#include <cmath>
#include <cstddef>
#include <span>
#include <stdexcept>
#include <vector>

namespace tunekit::stats {

/// The indices where segments of y start: 0, then every i where |y[i] - y[i-1]| > jump |y[i-1]|
/// (jump 0.2: a change of more than 20%). Empty for an empty y.
inline std::vector<std::size_t> segment_starts(std::span<const double> y, double jump = 0.2) {
  if (!(jump > 0) || !std::isfinite(jump))
    throw std::invalid_argument("segment_starts: jump must be finite and positive");
  std::vector<std::size_t> starts;
  if (y.empty()) return starts;
  starts.push_back(0);
  for (std::size_t i = 1; i < y.size(); ++i)
    if (std::abs(y[i] - y[i - 1]) > jump * std::abs(y[i - 1])) starts.push_back(i);
  return starts;
}

}  // namespace tunekit::stats
