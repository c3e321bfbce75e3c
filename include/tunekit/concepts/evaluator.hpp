#pragma once
/// \file
/// Evaluator: how a configuration is measured.
/// (tunekit/concepts.hpp includes every role's concept.)

#include "tunekit/concepts/kernel.hpp"
#include "tunekit/core/measurement.hpp"

#include <concepts>

namespace tunekit {

/// Measures one configuration of any Kernel: `template <Kernel K> Measurement measure(K&, const
/// Config&, Rng&)`. Failures are statuses in the Measurement, never exceptions.
template <class E>
concept Evaluator = requires(E& e, detail::KernelArchetype& k, const Config& c, Rng& rng) {
  { e.measure(k, c, rng) } -> std::same_as<Measurement>;
};

template <class E>
constexpr bool check_evaluator() {
  static_assert(Evaluator<E>,
                "tunekit::Evaluator: the evaluator needs `template <tunekit::Kernel K> "
                "tunekit::Measurement measure(K&, const tunekit::Config&, tunekit::Rng&)`");
  return Evaluator<E>;
}

}  // namespace tunekit
