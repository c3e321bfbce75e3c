#pragma once
/// \file
/// InTurns<Models...>: several surrogates taking turns, one per fit (tunekit's model start uses a
/// random forest and a Gaussian process in turns: the trees' knob interactions, the smooth trend).

#include "tunekit/concepts/surrogate.hpp"
#include "tunekit/core/random.hpp"

#include <Eigen/Core>

#include <cstddef>
#include <stdexcept>
#include <tuple>
#include <utility>

namespace tunekit {

/// A Surrogate made of several: each fit uses one model, model `t mod count` for turn t, and the
/// predictions come from the model fitted last. The turn is the number of fits so far unless the
/// caller names it (`turn(t)`, as the model start does with the trials of its phase, so that a
/// resumed run takes the same turns). An UncertainSurrogate when every model is one.
template <class... Models>
class InTurns {
  static_assert(sizeof...(Models) >= 1, "tunekit::InTurns: at least one model");
  static_assert((Surrogate<Models> && ...), "tunekit::InTurns: every model must be a tunekit::Surrogate");

 public:
  static constexpr std::size_t count = sizeof...(Models);

  InTurns() = default;
  explicit InTurns(Models... models) : models_(std::move(models)...) {}

  /// The next fit uses model t mod count.
  void turn(std::size_t t) noexcept { next_ = t % count; }
  /// The model the last fit used (its position in Models...); count before any fit.
  std::size_t fitted() const noexcept { return fitted_; }

  void fit(const Eigen::MatrixXd& X, const Eigen::VectorXd& y, Rng& rng) {
    visit(next_, [&](auto& m) { m.fit(X, y, rng); });
    fitted_ = next_;
    next_ = (next_ + 1) % count;
  }

  Eigen::VectorXd predict(const Eigen::MatrixXd& X) const {
    Eigen::VectorXd mean;
    visit(checked(), [&](const auto& m) { mean = m.predict(X); });
    return mean;
  }

  void predict(const Eigen::MatrixXd& X, Eigen::VectorXd& mean, Eigen::VectorXd& sd) const
    requires(UncertainSurrogate<Models> && ...)
  {
    visit(checked(), [&](const auto& m) { m.predict(X, mean, sd); });
  }

  /// Model I (its position in Models...).
  template <std::size_t I>
  auto& model() noexcept { return std::get<I>(models_); }
  template <std::size_t I>
  const auto& model() const noexcept { return std::get<I>(models_); }

 private:
  std::size_t checked() const {
    if (fitted_ == count) throw std::logic_error("InTurns::predict: not fitted");
    return fitted_;
  }
  template <class F>
  void visit(std::size_t i, F&& f) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((i == I ? (f(std::get<I>(models_)), 0) : 0), ...);
    }(std::index_sequence_for<Models...>{});
  }
  template <class F>
  void visit(std::size_t i, F&& f) const {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((i == I ? (f(std::get<I>(models_)), 0) : 0), ...);
    }(std::index_sequence_for<Models...>{});
  }

  std::tuple<Models...> models_{};
  std::size_t next_ = 0;
  std::size_t fitted_ = count;
};

}  // namespace tunekit
