#pragma once
/// \file
/// Acquisition: how a prediction is scored.
/// (tunekit/concepts.hpp includes every role's concept.)

#include <concepts>

namespace tunekit {

/// Scores one candidate from the model's mean and standard deviation and the best value seen:
/// `double score(double mean, double std, double best) const` (higher is better).
template <class A>
concept Acquisition = requires(const A& a, double mean, double sd, double best) {
  { a.score(mean, sd, best) } -> std::convertible_to<double>;
};

template <class A>
constexpr bool check_acquisition() {
  static_assert(Acquisition<A>, "tunekit::Acquisition: the acquisition needs `double "
                                "score(double mean, double std, double best) const`");
  return Acquisition<A>;
}

}  // namespace tunekit
