#pragma once
/// \file
/// Knobs: the tunable parameters of a kernel, each a finite list of values.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tunekit {

/// What a knob's values mean; decides its features and its neighbours.
enum class KnobKind {
  ordinal,       ///< ordered integers (a list or a range): neighbours are +-1 step
  power_of_two,  ///< powers of two: neighbours are +-1 step, features add log2
  boolean,       ///< 0 or 1
  categorical,   ///< unordered labels: features are one-hot, every other value is a neighbour
  split          ///< AutoTVM's split: an extent factored into n ordered parts
};

/// One tunable parameter: a name and a finite, non-empty list of values.
///
/// Numeric kinds hold integer values; a categorical knob holds labels and its numeric value is
/// the label's position (as does a ranked knob, an ordinal one over labelled positions); a split
/// knob holds factor lists, and its numeric value is its first factor's (use `factors()` for all
/// of them). Made by the named factories, which throw `std::invalid_argument` naming the knob on
/// bad input.
class Knob {
 public:
  /// Most values a knob can hold (a Config stores each knob's value index in 32 bits).
  static constexpr std::uint64_t max_values = std::numeric_limits<std::uint32_t>::max();

  /// An ordinal knob over the given distinct integers, kept in the given order.
  static Knob ordinal(std::string name, std::vector<std::int64_t> values) {
    Knob k(std::move(name), KnobKind::ordinal);
    k.values_ = std::move(values);
    k.check_values();
    return k;
  }

  /// An ordinal knob over lo, lo + step, ..., up to hi inclusive.
  static Knob range(std::string name, std::int64_t lo, std::int64_t hi, std::int64_t step = 1) {
    if (step <= 0) throw std::invalid_argument("knob '" + name + "': range step must be positive");
    if (hi < lo) throw std::invalid_argument("knob '" + name + "': empty range (hi < lo)");
    // Count first (exact in unsigned arithmetic): a range too long for a knob is an error, not
    // an allocation of gigabytes.
    const std::uint64_t steps =  // the number of values less one (which may be 2^64)
        (static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo)) /
        static_cast<std::uint64_t>(step);
    if (steps >= max_values)
      throw std::length_error(
          "knob '" + name + "': range of " +
          (steps == std::numeric_limits<std::uint64_t>::max() ? std::string("2^64")
                                                              : std::to_string(steps + 1)) +
          " values; a knob holds at most " + std::to_string(max_values));
    std::vector<std::int64_t> v;
    v.reserve(static_cast<std::size_t>(steps + 1));
    // Stop when the next step would pass hi (x + step could overflow near INT64_MAX); the
    // difference hi - x is exact in unsigned arithmetic since x <= hi.
    for (std::int64_t x = lo;; x += step) {
      v.push_back(x);
      if (static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(x) <
          static_cast<std::uint64_t>(step))
        break;
    }
    return ordinal(std::move(name), std::move(v));
  }

  /// The powers of two from lo to hi inclusive; lo and hi must be powers of two.
  static Knob power_of_two(std::string name, std::int64_t lo, std::int64_t hi) {
    auto is_pow2 = [](std::int64_t x) { return x > 0 && (x & (x - 1)) == 0; };
    if (!is_pow2(lo) || !is_pow2(hi) || hi < lo)
      throw std::invalid_argument("knob '" + name +
                                  "': power_of_two needs powers of two lo <= hi");
    Knob k(std::move(name), KnobKind::power_of_two);
    // Stop at hi before doubling: doubling 2^62 would overflow.
    for (std::int64_t x = lo;; x *= 2) {
      k.values_.push_back(x);
      if (x >= hi) break;
    }
    return k;
  }

  /// A power-of-two knob over an explicit list of powers of two.
  static Knob power_of_two(std::string name, std::vector<std::int64_t> values) {
    Knob k(std::move(name), KnobKind::power_of_two);
    k.values_ = std::move(values);
    k.check_values();
    for (auto v : k.values_)
      if (v <= 0 || (v & (v - 1)) != 0)
        throw std::invalid_argument("knob '" + k.name_ + "': " + std::to_string(v) +
                                    " is not a power of two");
    return k;
  }

  /// A boolean knob: values 0 (false) and 1 (true).
  static Knob boolean(std::string name) {
    Knob k(std::move(name), KnobKind::boolean);
    k.values_ = {0, 1};
    return k;
  }

  /// A categorical knob over distinct labels.
  static Knob categorical(std::string name, std::vector<std::string> labels) {
    return with_labels(std::move(name), KnobKind::categorical, std::move(labels));
  }

  /// An ordinal knob over ordered values that are not integers (a Kernel Tuner parameter of
  /// floats, say), given as distinct labels in their order: its values are their positions 0, 1,
  /// ... (neighbours +-1 position, features the position), and it is written, described and
  /// parsed by its labels.
  static Knob ranked(std::string name, std::vector<std::string> labels) {
    return with_labels(std::move(name), KnobKind::ordinal, std::move(labels));
  }

  /// Whether the knob's values are written by labels (categorical and ranked knobs).
  bool labelled() const noexcept { return !labels_.empty(); }

  /// AutoTVM's split knob: every ordered way to write `extent` as a product of `parts` positive
  /// factors (only power-of-two factors when `power_of_two_factors`), in lexicographic order.
  static Knob split(std::string name, std::int64_t extent, int parts,
                    bool power_of_two_factors = false) {
    if (extent <= 0)
      throw std::invalid_argument("knob '" + name + "': split of a non-positive extent " +
                                  std::to_string(extent));
    if (parts < 1)
      throw std::invalid_argument("knob '" + name + "': split into fewer than one part");
    Knob k(std::move(name), KnobKind::split);
    std::vector<std::int64_t> divisors, current;
    for (std::int64_t d = 1; d <= extent / d; ++d)  // not d * d <= extent: it overflows
      if (extent % d == 0) {
        divisors.push_back(d);
        if (d * d != extent) divisors.push_back(extent / d);
      }
    std::sort(divisors.begin(), divisors.end());
    if (power_of_two_factors)
      std::erase_if(divisors, [](std::int64_t d) { return (d & (d - 1)) != 0; });
    k.enumerate_splits(extent, parts, divisors, current);
    if (k.factors_.empty())
      throw std::invalid_argument("knob '" + k.name_ + "': no power-of-two split of " +
                                  std::to_string(extent));
    k.values_.reserve(k.factors_.size());
    for (const auto& f : k.factors_) k.values_.push_back(f.front());
    return k;
  }

  const std::string& name() const noexcept { return name_; }
  KnobKind kind() const noexcept { return kind_; }
  /// Number of values.
  std::size_t size() const noexcept { return values_.size(); }

  /// The numeric value at index i (see the class comment for categorical and split knobs).
  std::int64_t value(std::size_t i) const { return values_.at(i); }
  const std::vector<std::int64_t>& values() const noexcept { return values_; }

  /// The label at index i of a labelled (categorical or ranked) knob.
  const std::string& label(std::size_t i) const { return labels_.at(i); }
  /// The factors at index i of a split knob.
  const std::vector<std::int64_t>& factors(std::size_t i) const { return factors_.at(i); }
  /// Number of parts of a split knob (0 for other kinds).
  std::size_t parts() const noexcept { return factors_.empty() ? 0 : factors_.front().size(); }

  /// The value at index i as text: the number, the label, or the factors as "[a,b,c]".
  std::string to_string(std::size_t i) const {
    switch (kind_) {
      case KnobKind::categorical: return label(i);
      case KnobKind::split: {
        std::string s = "[";
        for (std::size_t j = 0; j < factors(i).size(); ++j) {
          if (j) s += ',';
          s += std::to_string(factors(i)[j]);
        }
        s += ']';
        return s;
      }
      default: return labelled() ? label(i) : std::to_string(value(i));
    }
  }

  /// Index of a numeric value (not for split or categorical knobs), or size() when absent.
  std::size_t index_of(std::int64_t v) const {
    return static_cast<std::size_t>(std::find(values_.begin(), values_.end(), v) -
                                    values_.begin());
  }
  /// Index of a label of a labelled knob, or size() when absent.
  std::size_t index_of_label(const std::string& l) const {
    return static_cast<std::size_t>(std::find(labels_.begin(), labels_.end(), l) -
                                    labels_.begin());
  }
  /// Index of a split's factor list, or size() when absent.
  std::size_t index_of_factors(const std::vector<std::int64_t>& f) const {
    return static_cast<std::size_t>(std::find(factors_.begin(), factors_.end(), f) -
                                    factors_.begin());
  }

  /// Whether neighbours of this knob are its +-1 steps (ordered kinds) rather than every other
  /// value (boolean, categorical).
  bool ordered() const noexcept {
    return kind_ == KnobKind::ordinal || kind_ == KnobKind::power_of_two ||
           kind_ == KnobKind::split;
  }

 private:
  Knob(std::string name, KnobKind kind) : name_(std::move(name)), kind_(kind) {
    if (name_.empty()) throw std::invalid_argument("a knob needs a non-empty name");
  }

  // A knob of `kind` over distinct labels, its values their positions.
  static Knob with_labels(std::string name, KnobKind kind, std::vector<std::string> labels) {
    Knob k(std::move(name), kind);
    if (labels.empty()) throw std::invalid_argument("knob '" + k.name_ + "' has no values");
    k.check_size(labels.size());
    std::vector<const std::string*> sorted;
    sorted.reserve(labels.size());
    for (const auto& l : labels) sorted.push_back(&l);
    std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return *a < *b; });
    const auto dup = std::adjacent_find(sorted.begin(), sorted.end(),
                                        [](auto* a, auto* b) { return *a == *b; });
    if (dup != sorted.end())
      throw std::invalid_argument("knob '" + k.name_ + "': duplicate value '" + **dup + "'");
    k.values_.resize(labels.size());
    std::iota(k.values_.begin(), k.values_.end(), std::int64_t{0});
    k.labels_ = std::move(labels);
    return k;
  }

  void check_values() const {
    if (values_.empty()) throw std::invalid_argument("knob '" + name_ + "' has no values");
    check_size(values_.size());
    // Sorted copy, O(n log n): a pairwise check takes minutes on a range of a million values.
    std::vector<std::int64_t> sorted = values_;
    std::sort(sorted.begin(), sorted.end());
    const auto dup = std::adjacent_find(sorted.begin(), sorted.end());
    if (dup != sorted.end())
      throw std::invalid_argument("knob '" + name_ + "': duplicate value " + std::to_string(*dup));
  }

  void check_size(std::size_t n) const {
    if (n > max_values)
      throw std::length_error("knob '" + name_ + "': " + std::to_string(n) +
                              " values; a knob holds at most " + std::to_string(max_values));
  }

  // Appends every factor list of `rest` into `parts` factors drawn from `divisors` (the allowed
  // divisors of the whole extent, ascending), in lexicographic order.
  void enumerate_splits(std::int64_t rest, int parts, const std::vector<std::int64_t>& divisors,
                        std::vector<std::int64_t>& current) {
    if (parts == 1) {
      if (!std::binary_search(divisors.begin(), divisors.end(), rest)) return;
      current.push_back(rest);
      factors_.push_back(current);
      current.pop_back();
      return;
    }
    for (std::int64_t f : divisors) {
      if (f > rest) break;
      if (rest % f != 0) continue;
      current.push_back(f);
      enumerate_splits(rest / f, parts - 1, divisors, current);
      current.pop_back();
    }
  }

  std::string name_;
  KnobKind kind_;
  std::vector<std::int64_t> values_;
  std::vector<std::string> labels_;
  std::vector<std::vector<std::int64_t>> factors_;
};

/// A named constant parameter: visible to constraints and kernels, no search dimension.
struct Constant {
  std::string name{};
  std::int64_t value{};
};

}  // namespace tunekit
