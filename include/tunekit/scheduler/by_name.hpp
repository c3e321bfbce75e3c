#pragma once
/// \file
/// The shipped schedulers by name, for programs that take one on the command line.

#include "tunekit/scheduler/bandit.hpp"
#include "tunekit/scheduler/flop_proportional.hpp"
#include "tunekit/scheduler/gradient.hpp"
#include "tunekit/scheduler/random_slots.hpp"
#include "tunekit/scheduler/round_robin.hpp"
#include "tunekit/scheduler/sequential.hpp"

#include <concepts>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

namespace tunekit {

/// The names with_scheduler accepts.
inline constexpr const char* scheduler_names =
    "sequential, round-robin, random, flop, bandit, bandit-epsilon, bandit-softmax, gradient";

/// Calls `f` with a default-constructed scheduler of this name and returns its result:
/// sequential (Sequential), round-robin (RoundRobin), random (RandomSlots), flop
/// (FlopProportional), bandit (DynaTune's UCB), bandit-epsilon, bandit-softmax, gradient (Ansor).
/// Throws std::invalid_argument naming the unknown name and the known ones.
template <class F>
decltype(auto) with_scheduler(std::string_view name, F&& f) {
  if (name == "sequential") return f(Sequential{});
  if (name == "round-robin") return f(RoundRobin{});
  if (name == "random") return f(RandomSlots{});
  if (name == "flop") return f(FlopProportional{});
  if (name == "bandit") return f(DynaTuneScheduler{});
  if (name == "bandit-epsilon") return f(EpsilonGreedyBanditScheduler{});
  if (name == "bandit-softmax") return f(SoftmaxBanditScheduler{});
  if (name == "gradient") return f(GradientScheduler{});
  throw std::invalid_argument("unknown scheduler '" + std::string(name) + "' (available: " + scheduler_names + ")");
}

namespace detail {

/// A scheduler of any type behind one type (type erasure), so that a program instantiates
/// MultiTaskTuner once for all of them: `MultiTaskTuner<AnyScheduler, TunerT>`.
template <class = void>
class AnySchedulerImpl {
 public:
  AnySchedulerImpl() : AnySchedulerImpl(RoundRobin{}) {}
  template <class S>
    requires(Scheduler<S> && !std::same_as<std::remove_cvref_t<S>, AnySchedulerImpl>)
  AnySchedulerImpl(S scheduler) : impl_(std::make_shared<Model<S>>(std::move(scheduler))) {}

  void begin(std::span<const TaskProgress> tasks, std::size_t slot_budget) { impl_->begin(tasks, slot_budget); }
  std::size_t next_task(std::span<const TaskProgress> tasks, Rng& rng) { return impl_->next_task(tasks, rng); }

 private:
  struct Concept {
    virtual ~Concept() = default;
    virtual void begin(std::span<const TaskProgress>, std::size_t) = 0;
    virtual std::size_t next_task(std::span<const TaskProgress>, Rng&) = 0;
  };
  template <class S>
  struct Model final : Concept {
    explicit Model(S s) : s(std::move(s)) {}
    void begin(std::span<const TaskProgress> tasks, std::size_t n) override {
      if constexpr (detail::HasSchedulerBegin<S>) s.begin(tasks, n);
    }
    std::size_t next_task(std::span<const TaskProgress> tasks, Rng& rng) override { return s.next_task(tasks, rng); }
    S s;
  };
  // Shared: copies of an AnyScheduler are one scheduler (its state included).
  std::shared_ptr<Concept> impl_;
};
}  // namespace detail

/// detail::AnySchedulerImpl<>: a template only so that it is compiled in the files that use it
/// (docs/getting-started.md, "Compile time").
using AnyScheduler = detail::AnySchedulerImpl<>;

static_assert(check_scheduler<AnyScheduler>());

/// The scheduler of this name (see with_scheduler) behind AnyScheduler.
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
AnyScheduler make_scheduler(std::string_view name) {
  return with_scheduler(name, [](auto s) { return AnyScheduler(std::move(s)); });
}

}  // namespace tunekit
