#pragma once
/// \file
/// Constraints: predicates over a configuration that say whether it is valid.

#include "tunekit/space/config.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tunekit {

/// A named predicate over a configuration; composed with &&, || and !.
///
/// The description names the constraint in error messages (e.g. "MWG % (MDIMC*VWM) == 0").
class Constraint {
 public:
  using Predicate = std::function<bool(const ConfigView&)>;

  Constraint(std::string description, Predicate predicate)
      : description_(std::move(description)), predicate_(std::move(predicate)) {
    if (!predicate_) throw std::invalid_argument("constraint '" + description_ + "' is empty");
  }

  bool operator()(const ConfigView& c) const { return predicate_(c); }
  const std::string& description() const noexcept { return description_; }

  friend Constraint operator&&(Constraint a, Constraint b) {
    std::string d = "(" + a.description_ + ") && (" + b.description_ + ")";
    return {std::move(d), [a = std::move(a.predicate_), b = std::move(b.predicate_)](
                              const ConfigView& c) { return a(c) && b(c); }};
  }
  friend Constraint operator||(Constraint a, Constraint b) {
    std::string d = "(" + a.description_ + ") || (" + b.description_ + ")";
    return {std::move(d), [a = std::move(a.predicate_), b = std::move(b.predicate_)](
                              const ConfigView& c) { return a(c) || b(c); }};
  }
  friend Constraint operator!(Constraint a) {
    std::string d = "!(" + a.description_ + ")";
    return {std::move(d), [a = std::move(a.predicate_)](const ConfigView& c) { return !a(c); }};
  }

 private:
  std::string description_;
  Predicate predicate_;
};

/// A constraint that admits exactly the configs whose flat indices are listed (a recorded set,
/// as in replay). The list is shared between copies.
inline Constraint membership(std::string description, std::vector<std::uint64_t> flat_indices) {
  std::sort(flat_indices.begin(), flat_indices.end());
  auto set = std::make_shared<const std::vector<std::uint64_t>>(std::move(flat_indices));
  return {std::move(description), [set](const ConfigView& c) {
            return std::binary_search(set->begin(), set->end(), c.flat_index());
          }};
}

}  // namespace tunekit
