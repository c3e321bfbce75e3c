#pragma once
/// \file
/// Scheduler: which task of many gets the next time slot.
/// (tunekit/concepts.hpp includes every role's concept.)

#include "tunekit/core/random.hpp"
#include "tunekit/core/task_progress.hpp"

#include <concepts>
#include <cstddef>
#include <span>

namespace tunekit {

/// Picks the task for the next slot: `std::size_t next_task(std::span<const TaskProgress>,
/// Rng&)` returns an index into the tasks, never a finished one; an index >= tasks.size() means
/// that no task is worth another slot, and the multi-task tuning stops. Optional:
/// `void begin(std::span<const TaskProgress>, std::size_t slot_budget)`, called once before the
/// first slot with the number of slots the budget allows (SIZE_MAX when it does not say).
template <class S>
concept Scheduler = requires(S& s, std::span<const TaskProgress> tasks, Rng& rng) {
  { s.next_task(tasks, rng) } -> std::convertible_to<std::size_t>;
};

namespace detail {
template <class S>
concept HasSchedulerBegin = requires(S& s, std::span<const TaskProgress> tasks, std::size_t n) {
  s.begin(tasks, n);
};
}  // namespace detail

template <class S>
constexpr bool check_scheduler() {
  static_assert(Scheduler<S>, "tunekit::Scheduler: the scheduler needs `std::size_t next_task("
                              "std::span<const tunekit::TaskProgress>, tunekit::Rng&)`");
  return Scheduler<S>;
}

}  // namespace tunekit
