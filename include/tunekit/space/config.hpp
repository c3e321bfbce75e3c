#pragma once
/// \file
/// Config (a point of a search space) and ConfigView (its values by knob name).

#include "tunekit/space/knob.hpp"

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tunekit {

/// A configuration: for each knob of its space, the index of the chosen value.
using Config = std::vector<std::uint32_t>;

/// Read access to a configuration's values by knob or constant name, for constraints and
/// kernels. Holds references into the space and the config: use it while both are alive.
class ConfigView {
 public:
  ConfigView(std::span<const Knob> knobs, std::span<const Constant> constants,
             const Config& config, std::uint64_t flat_index)
      : knobs_(knobs), constants_(constants), config_(config), flat_index_(flat_index) {}

  /// The numeric value of a knob or constant (see Knob for categorical and split knobs).
  /// Throws std::out_of_range naming an unknown name.
  std::int64_t operator[](std::string_view name) const {
    for (std::size_t i = 0; i < knobs_.size(); ++i)
      if (knobs_[i].name() == name) return knobs_[i].value(config_[i]);
    for (const auto& c : constants_)
      if (c.name == name) return c.value;
    throw std::out_of_range("no knob or constant named '" + std::string(name) + "'");
  }

  /// The factors of a split knob.
  const std::vector<std::int64_t>& factors(std::string_view name) const {
    return knob(name).factors(config_[position(name)]);
  }

  /// The label of a categorical knob.
  const std::string& label(std::string_view name) const {
    return knob(name).label(config_[position(name)]);
  }

  const Config& config() const noexcept { return config_; }
  /// The config's mixed-radix index in its space's Cartesian product.
  std::uint64_t flat_index() const noexcept { return flat_index_; }

 private:
  std::size_t position(std::string_view name) const {
    for (std::size_t i = 0; i < knobs_.size(); ++i)
      if (knobs_[i].name() == name) return i;
    throw std::out_of_range("no knob named '" + std::string(name) + "'");
  }
  const Knob& knob(std::string_view name) const { return knobs_[position(name)]; }

  std::span<const Knob> knobs_;
  std::span<const Constant> constants_;
  const Config& config_;
  std::uint64_t flat_index_;
};

}  // namespace tunekit
