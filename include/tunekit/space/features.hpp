#pragma once
/// \file
/// Feature vectors of configurations, the input of surrogate models.
///
/// Two encodings:
/// - `feature_matrix` (AutoTVM's knob features): per knob, ordinal -> its value; power-of-two ->
///   its value and log2 of it; boolean -> 0/1; categorical -> one-hot over its labels; split ->
///   each factor and log2 of each factor.
/// - `position_features` (tunekit's own search): per knob of more than one value, the value's
///   position over the knob's range in [0, 1] (ordered knobs) or one-hot scaled by 1/sqrt 2 (the
///   others), so every feature has the same scale whatever the knob's values.

#include "tunekit/space/search_space.hpp"

#include <Eigen/Core>

#include <cmath>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace tunekit {

/// Number of features of a config of this space.
inline std::size_t feature_count(const SearchSpace& space) {
  std::size_t n = 0;
  for (const auto& k : space.knobs()) {
    switch (k.kind()) {
      case KnobKind::ordinal:
      case KnobKind::boolean: n += 1; break;
      case KnobKind::power_of_two: n += 2; break;
      case KnobKind::categorical: n += k.size(); break;
      case KnobKind::split: n += 2 * k.parts(); break;
    }
  }
  return n;
}

/// Names of the features, in order (e.g. "MWG", "log2(MWG)", "layout=nchwc", "tile_x[1]").
inline std::vector<std::string> feature_names(const SearchSpace& space) {
  std::vector<std::string> names;
  for (const auto& k : space.knobs()) {
    switch (k.kind()) {
      case KnobKind::ordinal:
      case KnobKind::boolean: names.push_back(k.name()); break;
      case KnobKind::power_of_two:
        names.push_back(k.name());
        names.push_back("log2(" + k.name() + ")");
        break;
      case KnobKind::categorical:
        for (std::size_t i = 0; i < k.size(); ++i) names.push_back(k.name() + "=" + k.label(i));
        break;
      case KnobKind::split:
        for (std::size_t j = 0; j < k.parts(); ++j)
          names.push_back(k.name() + "[" + std::to_string(j) + "]");
        for (std::size_t j = 0; j < k.parts(); ++j)
          names.push_back("log2(" + k.name() + "[" + std::to_string(j) + "])");
        break;
    }
  }
  return names;
}

/// Writes the features of `c` into `out` (size feature_count(space)).
inline void write_features(const SearchSpace& space, const Config& c, std::span<double> out) {
  if (out.size() != feature_count(space))
    throw std::invalid_argument("feature buffer of " + std::to_string(out.size()) +
                                " for " + std::to_string(feature_count(space)) + " features");
  std::size_t f = 0;
  const auto& knobs = space.knobs();
  for (std::size_t i = 0; i < knobs.size(); ++i) {
    const Knob& k = knobs[i];
    switch (k.kind()) {
      case KnobKind::ordinal:
      case KnobKind::boolean: out[f++] = static_cast<double>(k.value(c[i])); break;
      case KnobKind::power_of_two:
        out[f++] = static_cast<double>(k.value(c[i]));
        out[f++] = std::log2(static_cast<double>(k.value(c[i])));
        break;
      case KnobKind::categorical:
        for (std::size_t v = 0; v < k.size(); ++v) out[f++] = v == c[i] ? 1.0 : 0.0;
        break;
      case KnobKind::split: {
        const auto& factors = k.factors(c[i]);
        for (auto x : factors) out[f++] = static_cast<double>(x);
        for (auto x : factors) out[f++] = std::log2(static_cast<double>(x));
        break;
      }
    }
  }
}

/// The feature matrix of a set of configs, one row per config.
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
Eigen::MatrixXd feature_matrix(const SearchSpace& space, std::span<const Config> configs) {
  const auto nf = feature_count(space);
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> x(configs.size(), nf);
  for (std::size_t r = 0; r < configs.size(); ++r)
    write_features(space, configs[r], std::span<double>(x.row(static_cast<Eigen::Index>(r)).data(), nf));
  return x;
}

/// Number of position features of a config of this space (position_features' columns).
inline std::size_t position_feature_count(const SearchSpace& space) {
  std::size_t columns = 0;
  for (const Knob& knob : space.knobs())
    if (knob.size() > 1) columns += knob.ordered() ? 1 : knob.size();
  return columns;
}

/// The position features of a set of configs, one row per config: per knob of more than one
/// value, its value's position i / (m - 1) over the knob's m values (ordered knobs: ordinal,
/// power-of-two, split), or one-hot scaled by 1/sqrt 2 (boolean, categorical), so that changing an
/// unordered knob moves a config as far as an end-to-end move of an ordered one. Knobs of one
/// value take no column.
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
Eigen::MatrixXd position_features(const SearchSpace& space, std::span<const Config> configs) {
  Eigen::MatrixXd X = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(configs.size()),
                                            static_cast<Eigen::Index>(position_feature_count(space)));
  const double one_hot = std::sqrt(0.5);
  for (std::size_t r = 0; r < configs.size(); ++r) {
    const auto row = static_cast<Eigen::Index>(r);
    Eigen::Index col = 0;
    for (std::size_t k = 0; k < space.dimensions(); ++k) {
      const Knob& knob = space.knob(k);
      if (knob.size() < 2) continue;
      if (knob.ordered()) {
        X(row, col++) = static_cast<double>(configs[r][k]) / static_cast<double>(knob.size() - 1);
      } else {
        X(row, col + static_cast<Eigen::Index>(configs[r][k])) = one_hot;
        col += static_cast<Eigen::Index>(knob.size());
      }
    }
  }
  return X;
}

}  // namespace tunekit
