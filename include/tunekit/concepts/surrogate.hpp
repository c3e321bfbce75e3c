#pragma once
/// \file
/// Surrogate: the cost model.
/// (tunekit/concepts.hpp includes every role's concept.)

#include "tunekit/core/random.hpp"

#include <Eigen/Core>
#include <concepts>

namespace tunekit {

/// A regression model of throughput from features: `void fit(const Eigen::MatrixXd& X, const
/// Eigen::VectorXd& y, Rng&)` and `Eigen::VectorXd predict(const Eigen::MatrixXd& X) const`.
template <class S>
concept Surrogate = requires(S& s, const S& cs, const Eigen::MatrixXd& x,
                             const Eigen::VectorXd& y, Rng& rng) {
  s.fit(x, y, rng);
  { cs.predict(x) } -> std::convertible_to<Eigen::VectorXd>;
};

/// A surrogate that also gives a standard deviation per prediction:
/// `void predict(const Eigen::MatrixXd& X, Eigen::VectorXd& mean, Eigen::VectorXd& std) const`.
template <class S>
concept UncertainSurrogate =
    Surrogate<S> && requires(const S& s, const Eigen::MatrixXd& x, Eigen::VectorXd& m,
                             Eigen::VectorXd& sd) { s.predict(x, m, sd); };

/// A surrogate that may predict before any fit, from what it knew beforehand (a model of earlier
/// runs: TransferMargin): `bool has_prior() const`. Tuner then scores candidates with it until
/// the first success, when it fits it as any surrogate (AutoTVM picks its first configs by its
/// base model when it transfers).
template <class S>
concept PriorSurrogate = Surrogate<S> && requires(const S& s) {
  { s.has_prior() } -> std::convertible_to<bool>;
};

/// No model: the tuner fits nothing and optimizers get no score (random and grid search).
struct NoSurrogate {};

template <class S>
constexpr bool check_surrogate() {
  if constexpr (!std::same_as<S, NoSurrogate>) {
    static_assert(requires(S& s, const Eigen::MatrixXd& x, const Eigen::VectorXd& y, Rng& r) {
                    s.fit(x, y, r);
                  },
                  "tunekit::Surrogate: the model needs `void fit(const Eigen::MatrixXd& X, const "
                  "Eigen::VectorXd& y, tunekit::Rng&)`");
    static_assert(requires(const S& s, const Eigen::MatrixXd& x) {
                    { s.predict(x) } -> std::convertible_to<Eigen::VectorXd>;
                  },
                  "tunekit::Surrogate: the model needs `Eigen::VectorXd predict(const "
                  "Eigen::MatrixXd& X) const`");
  }
  return true;
}

}  // namespace tunekit
