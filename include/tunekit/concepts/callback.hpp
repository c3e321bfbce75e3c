#pragma once
/// \file
/// Callback: hooks into the tuning loop.
/// (tunekit/concepts.hpp includes every role's concept.)

#include "tunekit/core/tuning_state.hpp"

namespace tunekit {

namespace detail {
template <class C>
concept HasOnBegin = requires(C& c, const TuningState& s) { c.on_begin(s); };
template <class C>
concept HasOnMeasured = requires(C& c, const TuningState& s, const Trial& t) {
  c.on_measured(s, t);
};
template <class C>
concept HasOnRound = requires(C& c, const TuningState& s) { c.on_round(s); };
template <class C>
concept HasOnEnd = requires(C& c, const TuningState& s) { c.on_end(s); };
}  // namespace detail

/// A tuning callback: any of `on_begin(const TuningState&)`, `on_measured(const TuningState&,
/// const Trial&)`, `on_round(const TuningState&)` (after each batch) and `on_end(const
/// TuningState&)`. on_measured and on_round may return bool: true stops the tuning.
template <class C>
concept Callback = detail::HasOnBegin<C> || detail::HasOnMeasured<C> || detail::HasOnRound<C> ||
                   detail::HasOnEnd<C>;

template <class C>
constexpr bool check_callback() {
  static_assert(Callback<C>, "tunekit::Callback: a callback needs at least one of on_begin("
                             "const TuningState&), on_measured(const TuningState&, const Trial&), "
                             "on_round(const TuningState&), on_end(const TuningState&)");
  return Callback<C>;
}

}  // namespace tunekit
