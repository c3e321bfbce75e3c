#pragma once
/// \file
/// SearchSpace: knobs, constants and constraints; index <-> config, sampling, neighbours,
/// enumeration.

#include "tunekit/core/random.hpp"
#include "tunekit/space/config.hpp"
#include "tunekit/space/constraint.hpp"
#include "tunekit/space/knob.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tunekit {

/// The space of configurations of one kernel: the Cartesian product of its knobs' values,
/// restricted to the configs that satisfy every constraint (the valid configs).
///
/// A config's flat index is its mixed-radix number over the product, the first knob most
/// significant, so flat order is the lexicographic order of the value lists. Products up to
/// 2^64 - 1 are supported; a larger one is an error when the knob is added.
///
/// Built with `add`, `add_constant` and `add_constraint`, then used read-only: every const member
/// is safe to call from several threads.
class SearchSpace {
 public:
  /// Configs drawn by rejection before `sample` falls back to the enumerated valid set.
  static constexpr int rejections_before_enumeration = 4096;
  /// Largest product that `sample` enumerates when rejection keeps failing.
  static constexpr std::uint64_t enumeration_limit = std::uint64_t{1} << 22;
  /// Draws after which `sample` gives up on a space too large to enumerate.
  static constexpr std::uint64_t max_rejections = 10'000'000;

  SearchSpace() = default;

  /// Adds a knob. Throws on a duplicate name or when the product would exceed 2^64 - 1.
  SearchSpace& add(Knob knob) {
    check_new_name(knob.name());
    const std::uint64_t n = knob.size();
    if (product_ > std::numeric_limits<std::uint64_t>::max() / n)
      throw std::overflow_error("search space over 2^64 configs: adding knob '" + knob.name() +
                                "' (" + std::to_string(n) + " values) to a product of " +
                                std::to_string(product_));
    product_ *= n;
    knobs_.push_back(std::move(knob));
    strides_.assign(knobs_.size(), 1);
    for (std::size_t i = knobs_.size() - 1; i > 0; --i)
      strides_[i - 1] = strides_[i] * knobs_[i].size();
    reset_cache();
    return *this;
  }

  /// Adds a constant parameter (visible to constraints; no search dimension).
  SearchSpace& add_constant(std::string name, std::int64_t value) {
    check_new_name(name);
    constants_.push_back({std::move(name), value});
    return *this;
  }

  /// Adds a constraint; a valid config satisfies all of them.
  SearchSpace& add_constraint(Constraint c) {
    constraints_.push_back(std::move(c));
    reset_cache();
    return *this;
  }

  /// Adds a constraint from a description and a predicate over a ConfigView.
  template <class F>
  SearchSpace& add_constraint(std::string description, F&& predicate) {
    return add_constraint(Constraint(std::move(description), std::forward<F>(predicate)));
  }

  /// Whether the space may keep one validity bit per config (a product of at most
  /// enumeration_limit) once its constraints have been evaluated as many times as the product
  /// has configs, and then answer from the bits without evaluating them (default: yes). That
  /// assumes the constraints are pure functions of the config: turn it off for constraints with
  /// effects (the Python binding's, which record what the Python function raised and answer
  /// false, so that each call raises it again).
  SearchSpace& keep_validity_bits(bool keep) {
    validity_bits_ = keep;
    reset_cache();
    return *this;
  }

  /// Declares a knob inactive where `when` holds: a config there leaves it unused (a layout with
  /// no input-channel block, say), and its one valid value is `value` (as Knob::to_string writes
  /// it). Adds the constraint "<when> implies <knob> == <value> (inactive)", so the valid configs
  /// hold one representative of each such choice, never duplicates. `settle` sets inactive knobs to
  /// their values; the moves of the searches (neighbours, hamming_neighbours, the optimizers'
  /// random steps) settle each moved config, so that a move that makes a knob inactive lands on
  /// that representative instead of being rejected (e.g. from a blocked layout to one without
  /// blocks in one step), and a step of an inactive knob is no move. Throws std::out_of_range
  /// naming an unknown knob, std::invalid_argument a value the knob does not have.
  template <class F>
  SearchSpace& add_inactive(std::string_view knob, std::string_view value, std::string when_description, F&& when) {
    const std::size_t k = knob_index(knob);
    std::uint32_t v = 0;
    while (v < knobs_[k].size() && knobs_[k].to_string(v) != value) ++v;
    if (v == knobs_[k].size())
      throw std::invalid_argument("add_inactive: knob '" + std::string(knob) + "' has no value '" + std::string(value) + "'");
    Constraint::Predicate pred(std::forward<F>(when));
    inactive_.push_back({k, v, pred});
    return add_constraint(when_description + " implies " + std::string(knob) + " == " + std::string(value) + " (inactive)",
                          [k, v, pred](const ConfigView& c) { return c.config()[k] == v || !pred(c); });
  }

  /// Whether some knob is declared inactive somewhere (add_inactive).
  bool has_inactive() const noexcept { return !inactive_.empty(); }

  /// Sets every knob that is inactive in `c` to its inactive value (add_inactive), until none
  /// changes (a condition may read a knob that another one sets). Nothing changes in a space
  /// without inactive knobs. Throws std::invalid_argument on a malformed config.
  void settle(Config& c) const {
    if (inactive_.empty()) return;
    check_shape(c);
    for (std::size_t pass = 0; pass <= inactive_.size(); ++pass) {
      bool changed = false;
      for (const auto& rule : inactive_) {
        if (c[rule.knob] == rule.value) continue;
        if (rule.when(ConfigView(knobs_, constants_, c, to_index(c)))) {
          c[rule.knob] = rule.value;
          changed = true;
        }
      }
      if (!changed) return;
    }
  }

  const std::vector<Knob>& knobs() const noexcept { return knobs_; }
  const std::vector<Constant>& constants() const noexcept { return constants_; }
  const std::vector<Constraint>& constraints() const noexcept { return constraints_; }
  std::size_t dimensions() const noexcept { return knobs_.size(); }
  const Knob& knob(std::size_t i) const { return knobs_.at(i); }

  /// Position of the knob with this name; throws std::out_of_range naming it when absent.
  std::size_t knob_index(std::string_view name) const {
    for (std::size_t i = 0; i < knobs_.size(); ++i)
      if (knobs_[i].name() == name) return i;
    throw std::out_of_range("search space has no knob named '" + std::string(name) + "'");
  }

  /// Size of the Cartesian product of the knobs (valid or not).
  std::uint64_t product_size() const noexcept { return knobs_.empty() ? 0 : product_; }

  /// The config's flat index. Throws std::invalid_argument on a malformed config.
  std::uint64_t to_index(const Config& c) const {
    check_shape(c);
    std::uint64_t idx = 0;
    for (std::size_t i = 0; i < c.size(); ++i) idx += c[i] * strides_[i];
    return idx;
  }

  /// The config at a flat index. Throws std::out_of_range past the product.
  Config from_index(std::uint64_t idx) const {
    if (idx >= product_size())
      throw std::out_of_range("flat index " + std::to_string(idx) + " outside a product of " +
                              std::to_string(product_size()));
    Config c(knobs_.size());
    for (std::size_t i = 0; i < c.size(); ++i) {
      c[i] = static_cast<std::uint32_t>(idx / strides_[i]);
      idx %= strides_[i];
    }
    return c;
  }

  /// Read access to a config's values by name.
  ConfigView view(const Config& c) const { return ConfigView(knobs_, constants_, c, to_index(c)); }

  /// Whether the config is well formed and satisfies every constraint.
  bool is_valid(const Config& c) const {
    if (c.size() != knobs_.size()) return false;
    for (std::size_t i = 0; i < c.size(); ++i)
      if (c[i] >= knobs_[i].size()) return false;
    return satisfies(c, to_index(c));
  }

  /// A uniformly random valid config (rejection sampling over the product, exact uniformity
  /// without enumerating; a space whose constraints reject almost everything is enumerated once
  /// when small enough). Throws std::runtime_error naming the constraints when none is valid.
  Config sample(Rng& rng) const {
    if (knobs_.empty()) throw std::logic_error("cannot sample a search space without knobs");
    for (int attempt = 0; attempt < rejections_before_enumeration; ++attempt) {
      const std::uint64_t flat = uniform_index(rng, product_);
      if (satisfies(flat)) return from_index(flat);
    }
    if (product_ <= enumeration_limit) {
      const auto& valid = valid_cache();
      if (valid.empty()) throw std::runtime_error("no configuration satisfies " + describe_constraints());
      return from_index(valid[uniform_index(rng, valid.size())]);
    }
    for (std::uint64_t attempt = 0; attempt < max_rejections; ++attempt) {
      const std::uint64_t flat = uniform_index(rng, product_);
      if (satisfies(flat)) return from_index(flat);
    }
    throw std::runtime_error("no valid configuration in " + std::to_string(max_rejections) +
                             " random draws; the constraints may admit nothing: " +
                             describe_constraints());
  }

  /// The valid configs that differ from `c` in one knob: +-1 step of an ordered knob (ordinal,
  /// power-of-two, split), any other value of a boolean or categorical knob.
  std::vector<Config> neighbours(const Config& c) const {
    check_shape(c);
    std::vector<Config> out;
    Config n = c;
    auto consider = [&](std::size_t knob, std::uint32_t value) {
      n[knob] = value;
      add_move(c, n, out);
      n = c;
    };
    for (std::size_t k = 0; k < knobs_.size(); ++k) {
      const auto size = static_cast<std::uint32_t>(knobs_[k].size());
      if (knobs_[k].ordered()) {
        if (c[k] > 0) consider(k, c[k] - 1);
        if (c[k] + 1 < size) consider(k, c[k] + 1);
      } else {
        for (std::uint32_t v = 0; v < size; ++v)
          if (v != c[k]) consider(k, v);
      }
    }
    return out;
  }

  /// The valid configs that differ from `c` in exactly one knob, any other value of it (Kernel
  /// Tuner's "Hamming" neighbourhood; `neighbours` is its "adjacent" one), knob by knob, values
  /// ascending.
  std::vector<Config> hamming_neighbours(const Config& c) const {
    check_shape(c);
    std::vector<Config> out;
    Config n = c;
    for (std::size_t k = 0; k < knobs_.size(); ++k) {
      for (std::uint32_t v = 0; v < knobs_[k].size(); ++v) {
        if (v == c[k]) continue;
        n[k] = v;
        add_move(c, n, out);
        n = c;
      }
    }
    return out;
  }

  /// The flat indices of all valid configs, ascending. Throws std::length_error when the
  /// product exceeds `limit` (enumeration would be too slow).
  std::vector<std::uint64_t> valid_indices(std::uint64_t limit = std::uint64_t{1} << 28) const {
    check_enumerable(limit);
    if (product_size() <= enumeration_limit) return valid_cache();
    return enumerate_valid();
  }

  /// Calls f(index) with the flat index of every valid config, ascending: valid_indices without
  /// its copy of the cached set (spaces whose product is at most enumeration_limit). Throws as
  /// valid_indices does.
  template <class F>
  void for_each_valid(F&& f, std::uint64_t limit = std::uint64_t{1} << 28) const {
    check_enumerable(limit);
    if (product_size() > enumeration_limit) {
      for (const std::uint64_t idx : enumerate_valid()) f(idx);
      return;
    }
    for (const std::uint64_t idx : valid_cache()) f(idx);  // by reference: no copy
  }

  /// Number of valid configs (by enumeration; see valid_indices).
  std::uint64_t count_valid(std::uint64_t limit = std::uint64_t{1} << 28) const {
    check_enumerable(limit);
    return product_size() <= enumeration_limit ? valid_cache().size() : enumerate_valid().size();
  }

  /// The config as "name=value;name=value" (knobs only; values as in Knob::to_string).
  std::string describe(const Config& c) const {
    check_shape(c);
    std::string s;
    for (std::size_t i = 0; i < c.size(); ++i) {
      if (i) s += ';';
      s += knobs_[i].name();
      s += '=';
      s += knobs_[i].to_string(c[i]);
    }
    return s;
  }

  /// The config that `describe` wrote ("name=value;..."; every knob once, values as
  /// Knob::to_string gives them). Throws std::invalid_argument naming an unknown knob, a missing
  /// one, or a value the knob does not have. Validity is not checked: see is_valid.
  Config parse(std::string_view text) const {
    Config c(knobs_.size());
    std::vector<bool> seen(knobs_.size(), false);
    while (!text.empty()) {
      const auto semi = text.find(';');
      const std::string_view item = text.substr(0, semi);
      text = semi == std::string_view::npos ? std::string_view{} : text.substr(semi + 1);
      const auto eq = item.find('=');
      if (eq == std::string_view::npos)
        throw std::invalid_argument("config text: '" + std::string(item) + "' is not name=value");
      const std::size_t k = knob_index(item.substr(0, eq));
      const std::string value(item.substr(eq + 1));
      std::size_t v = 0;
      while (v < knobs_[k].size() && knobs_[k].to_string(v) != value) ++v;
      if (v == knobs_[k].size())
        throw std::invalid_argument("knob '" + knobs_[k].name() + "' has no value '" + value + "'");
      c[k] = static_cast<std::uint32_t>(v);
      seen[k] = true;
    }
    for (std::size_t k = 0; k < knobs_.size(); ++k)
      if (!seen[k]) throw std::invalid_argument("config text lacks knob '" + knobs_[k].name() + "'");
    return c;
  }

  /// How `other` differs from this space, in words naming the first difference (a knob's name,
  /// kind or values, a constant, a constraint's description); empty when they are the same space.
  /// Constraints are compared by their descriptions (their predicates cannot be compared).
  std::string difference(const SearchSpace& other) const {
    auto values_of = [](const Knob& k) {
      std::string s;
      for (std::size_t i = 0; i < k.size(); ++i) {
        if (i) s += ',';
        s += k.to_string(i);
      }
      return s;
    };
    if (knobs_.size() != other.knobs_.size())
      return std::to_string(knobs_.size()) + " knobs against " + std::to_string(other.knobs_.size());
    for (std::size_t i = 0; i < knobs_.size(); ++i) {
      const Knob &a = knobs_[i], &b = other.knobs_[i];
      if (a.name() != b.name()) return "knob " + std::to_string(i) + " is '" + a.name() + "' against '" + b.name() + "'";
      if (a.kind() != b.kind() || a.size() != b.size() || values_of(a) != values_of(b))
        return "knob '" + a.name() + "' has values {" + values_of(a) + "} against {" + values_of(b) + "}";
    }
    if (constants_.size() != other.constants_.size())
      return std::to_string(constants_.size()) + " constants against " + std::to_string(other.constants_.size());
    for (std::size_t i = 0; i < constants_.size(); ++i)
      if (constants_[i].name != other.constants_[i].name || constants_[i].value != other.constants_[i].value)
        return "constant " + constants_[i].name + "=" + std::to_string(constants_[i].value) + " against " +
               other.constants_[i].name + "=" + std::to_string(other.constants_[i].value);
    if (describe_constraints() != other.describe_constraints())
      return "constraints '" + describe_constraints() + "' against '" + other.describe_constraints() + "'";
    return {};
  }

  /// The constraints' descriptions joined with "; ".
  std::string describe_constraints() const {
    if (constraints_.empty()) return "(no constraints)";
    std::string s;
    for (std::size_t i = 0; i < constraints_.size(); ++i)
      s += (i ? "; " : "") + constraints_[i].description();
    return s;
  }

 private:
  void check_enumerable(std::uint64_t limit) const {
    if (product_size() > limit)
      throw std::length_error("refusing to enumerate a product of " + std::to_string(product_size()) +
                              " configs (limit " + std::to_string(limit) + ")");
  }
  struct ValidCache {
    std::once_flag once{};
    std::vector<std::uint64_t> valid{};
    // The validity of every flat index (spaces whose product is at most enumeration_limit), one
    // bit each. Built once the constraints have been evaluated as many times as the product has
    // configs (`checks`), or with `valid`: so it at most doubles the evaluations done, and from
    // then on a validity test is a bit. A sparse space (the CUDA conv2d: 1150 valid of 614400)
    // makes each random valid config cost hundreds of evaluations, and a search draws thousands.
    std::atomic<std::uint64_t> checks{0};
    std::once_flag bits_once{};
    std::atomic<bool> bits_ready{false};
    std::vector<std::uint64_t> bits{};

    bool bit(std::uint64_t flat) const { return (bits[flat / 64] >> (flat % 64)) & 1u; }
    void set_bits(std::uint64_t product, const std::vector<std::uint64_t>& valid_flat) {
      bits.assign(product / 64 + 1, 0);
      for (const std::uint64_t i : valid_flat) bits[i / 64] |= std::uint64_t{1} << (i % 64);
      bits_ready.store(true, std::memory_order_release);
    }
  };

  struct Inactive {
    std::size_t knob;
    std::uint32_t value;
    Constraint::Predicate when;
  };

  // Appends the move from `from` to `to` (settled) when it is valid, moves and is not there yet.
  void add_move(const Config& from, Config& to, std::vector<Config>& out) const {
    if (!inactive_.empty()) {
      settle(to);
      if (to == from || std::find(out.begin(), out.end(), to) != out.end()) return;
    }
    if (satisfies(to, to_index(to))) out.push_back(to);
  }

  bool satisfies(const Config& c, std::uint64_t flat) const {
    if (constraints_.empty()) return true;
    if (validity_bits_ && product_ <= enumeration_limit) {
      ValidCache& cache = *cache_;
      if (cache.bits_ready.load(std::memory_order_acquire)) return cache.bit(flat);
      if (cache.checks.fetch_add(1, std::memory_order_relaxed) + 1 >= product_) {
        std::call_once(cache.bits_once, [&] { cache.set_bits(product_, enumerate_valid()); });
        return cache.bit(flat);
      }
    }
    return check_constraints(c, flat);
  }

  // satisfies for a flat index, making its config only when the bits are not there yet.
  bool satisfies(std::uint64_t flat) const {
    if (cache_->bits_ready.load(std::memory_order_acquire)) return cache_->bit(flat);
    return satisfies(from_index(flat), flat);
  }

  bool check_constraints(const Config& c, std::uint64_t flat) const {
    const ConfigView v(knobs_, constants_, c, flat);
    for (const auto& con : constraints_)
      if (!con(v)) return false;
    return true;
  }

  std::vector<std::uint64_t> enumerate_valid() const {
    std::vector<std::uint64_t> valid;
    if (knobs_.empty()) return valid;
    Config c(knobs_.size(), 0);
    for (std::uint64_t idx = 0; idx < product_; ++idx) {
      if (constraints_.empty() || check_constraints(c, idx)) valid.push_back(idx);
      for (std::size_t k = c.size(); k-- > 0;) {  // odometer increment, last knob fastest
        if (++c[k] < knobs_[k].size()) break;
        c[k] = 0;
      }
    }
    return valid;
  }

  const std::vector<std::uint64_t>& valid_cache() const {
    std::call_once(cache_->once, [this] {
      ValidCache& cache = *cache_;
      if (cache.bits_ready.load(std::memory_order_acquire)) {  // read off the bits, no evaluation
        for (std::uint64_t i = 0; i < product_; ++i)
          if (cache.bit(i)) cache.valid.push_back(i);
        return;
      }
      cache.valid = enumerate_valid();
      if (validity_bits_) std::call_once(cache.bits_once, [&] { cache.set_bits(product_, cache.valid); });
    });
    return cache_->valid;
  }

  void reset_cache() { cache_ = std::make_shared<ValidCache>(); }

  void check_new_name(const std::string& name) const {
    for (const auto& k : knobs_)
      if (k.name() == name) throw std::invalid_argument("duplicate parameter name '" + name + "'");
    for (const auto& c : constants_)
      if (c.name == name) throw std::invalid_argument("duplicate parameter name '" + name + "'");
  }

  void check_shape(const Config& c) const {
    if (c.size() != knobs_.size())
      throw std::invalid_argument("config has " + std::to_string(c.size()) +
                                  " values for a space of " + std::to_string(knobs_.size()) +
                                  " knobs");
    for (std::size_t i = 0; i < c.size(); ++i)
      if (c[i] >= knobs_[i].size())
        throw std::invalid_argument("config value index " + std::to_string(c[i]) +
                                    " out of range for knob '" + knobs_[i].name() + "' (" +
                                    std::to_string(knobs_[i].size()) + " values)");
  }

  std::vector<Knob> knobs_;
  std::vector<Constant> constants_;
  std::vector<Constraint> constraints_;
  std::vector<Inactive> inactive_;
  std::vector<std::uint64_t> strides_;
  std::uint64_t product_ = 1;
  bool validity_bits_ = true;
  std::shared_ptr<ValidCache> cache_ = std::make_shared<ValidCache>();
};

}  // namespace tunekit
