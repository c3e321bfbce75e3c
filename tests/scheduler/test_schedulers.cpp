// The simple schedulers and Ansor's gradient scheduler against hand-computed choices.
#include <tunekit/scheduler/by_name.hpp>
#include <tunekit/scheduler/flop_proportional.hpp>
#include <tunekit/scheduler/gradient.hpp>
#include <tunekit/scheduler/random_slots.hpp>
#include <tunekit/scheduler/round_robin.hpp>
#include <tunekit/scheduler/sequential.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

using namespace tunekit;

namespace {
// Gives `slots` slots with the scheduler, each adding a constant latency to its task's curve.
template <class S>
std::vector<std::size_t> schedule(S& s, std::vector<TaskProgress>& tasks, std::size_t slots, Rng& rng) {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < slots; ++i) {
    const std::size_t k = s.next_task(std::span<const TaskProgress>(tasks), rng);
    if (k >= tasks.size()) break;
    REQUIRE(!tasks[k].finished);
    order.push_back(k);
    tasks[k].slots++;
    tasks[k].best_latency.push_back(1e-3);
  }
  return order;
}
std::vector<TaskProgress> three_tasks() {
  return {TaskProgress{.weight = 1, .flop = 1e9}, TaskProgress{.weight = 1, .flop = 2e9},
          TaskProgress{.weight = 1, .flop = 3e9}};
}
}  // namespace

TEST_CASE("RoundRobin serves the unfinished tasks in turn") {
  auto tasks = three_tasks();
  tasks[1].finished = true;
  RoundRobin s;
  Rng rng(1);
  CHECK(schedule(s, tasks, 5, rng) == std::vector<std::size_t>{0, 2, 0, 2, 0});
  tasks[0].finished = tasks[2].finished = true;
  CHECK(s.next_task(std::span<const TaskProgress>(tasks), rng) == 3);
}

TEST_CASE("Sequential gives each task its share of the slot budget, in order") {
  auto tasks = three_tasks();
  Sequential s;
  s.begin(tasks, 7);  // shares 3, 2, 2
  Rng rng(1);
  CHECK(schedule(s, tasks, 7, rng) == std::vector<std::size_t>{0, 0, 0, 1, 1, 2, 2});
  auto more = three_tasks();
  Sequential fixed({.slots_per_task = 2});
  fixed.begin(more, 100);
  more[1].finished = true;
  CHECK(schedule(fixed, more, 4, rng) == std::vector<std::size_t>{0, 0, 2, 2});
  Sequential unknown;
  CHECK_THROWS_AS(unknown.begin(more, std::numeric_limits<std::size_t>::max()), std::invalid_argument);
}

TEST_CASE("FlopProportional gives slots in proportion to weight x FLOP, interleaved") {
  auto tasks = three_tasks();
  tasks[0].weight = 3;  // work 3e9, 2e9, 3e9
  FlopProportional s;
  Rng rng(1);
  const auto order = schedule(s, tasks, 80, rng);
  CHECK(tasks[0].slots == 30);
  CHECK(tasks[1].slots == 20);
  CHECK(tasks[2].slots == 30);
  CHECK(order[0] == 0);
  CHECK(order[1] == 2);  // interleaved, not in blocks
}

TEST_CASE("RandomSlots draws among the unfinished tasks") {
  auto tasks = three_tasks();
  tasks[2].finished = true;
  RandomSlots s;
  Rng rng(4);
  schedule(s, tasks, 400, rng);
  CHECK(tasks[2].slots == 0);
  // Binomial(400, 1/2): std 10; within 5 std.
  CHECK(std::abs(static_cast<double>(tasks[0].slots) - 200.0) < 50.0);
}

TEST_CASE("GradientScheduler: Ansor's formula on a hand-computed example") {
  // Latencies in ms (stored in seconds). Tasks 0 and 1 are one similarity group ("conv",
  // int(log_1.618(1e9 + 1)) = int(log_1.618(1.1e9 + 1)) = 43); task 2 ("dense") is alone.
  // Best group throughput: max(1e9 / 6.5 ms, 1.1e9 / 4 ms) = 2.75e11 FLOP/s.
  // alpha 0.2, beta 2, window 3:
  //  task 0 (w 1, t 4): backward (6.5 - 10) / 3 = -1.16667; forward min(6.5 - 6.5/4, 2 x 1e9 / 2.75e11)
  //    - 6.5 = min(4.875, 7.27273) - 6.5 = -1.625; grad = 0.2 x -1.16667 + 0.8 x -1.625 = -1.53333
  //  task 1 (w 2, t 4): backward (4 - 5) / 3 = -0.33333; forward min(3, 8) - 4 = -1;
  //    grad = 2 (0.2 x -0.33333 + 0.8 x -1) = -1.73333
  //  task 2 (w 1, t 6, alone): backward (12 - 12.5) / 3 = -0.16667 (slot 6 against slot 3);
  //    forward -12 / 6 = -2; grad = -0.03333 - 1.6 = -1.63333
  // -> task 1. With beta 1, task 0's forward becomes 1 x 1e9 / 2.75e11 - 6.5 = 3.63636 - 6.5 =
  //    -2.86364, grad = -0.23333 - 2.29091 = -2.52424 (task 1: min(3, 4) - 4, unchanged) -> task 0.
  auto ms = [](std::vector<double> v) {
    for (double& x : v) x *= 1e-3;
    return v;
  };
  std::vector<TaskProgress> tasks{
      {.weight = 1, .flop = 1e9, .tag = "conv", .slots = 4, .best_latency = ms({10, 8, 7, 6.5})},
      {.weight = 2, .flop = 1.1e9, .tag = "conv", .slots = 4, .best_latency = ms({5, 4.5, 4.2, 4.0})},
      {.weight = 1, .flop = 5e9, .tag = "dense", .slots = 6, .best_latency = ms({20, 13, 12.5, 12.2, 12.0, 12.0})}};
  Rng rng(1);
  GradientScheduler ansor;
  const auto g = ansor.gradients(tasks);
  CHECK(g[0] * 1e3 == doctest::Approx(-1.53333).epsilon(1e-4));
  CHECK(g[1] * 1e3 == doctest::Approx(-1.73333).epsilon(1e-4));
  CHECK(g[2] * 1e3 == doctest::Approx(-1.63333).epsilon(1e-4));
  CHECK(ansor.next_task(std::span<const TaskProgress>(tasks), rng) == 1);
  GradientScheduler beta1({.beta = 1.0});
  CHECK(beta1.gradients(tasks)[0] * 1e3 == doctest::Approx(-2.52424).epsilon(1e-4));
  CHECK(beta1.next_task(std::span<const TaskProgress>(tasks), rng) == 0);

  // Warm-up: a task without a slot goes first; early stopping drops a task whose best has not
  // improved for task_patience slots (task 2: 12.0 after 12.2 two slots ago is an improvement,
  // so patience 1 drops it, patience 2 does not).
  auto fresh = tasks;
  fresh.push_back({.weight = 1, .flop = 1e9});
  CHECK(ansor.next_task(std::span<const TaskProgress>(fresh), rng) == 3);
  GradientScheduler patient1({.task_patience = 1}), patient2({.task_patience = 2});
  CHECK(std::isnan(patient1.gradients(tasks)[2]));
  CHECK(!std::isnan(patient2.gradients(tasks)[2]));
  tasks[0].finished = tasks[1].finished = true;
  CHECK(patient1.next_task(std::span<const TaskProgress>(tasks), rng) == 3);  // none left: stop
  CHECK_THROWS_AS(GradientScheduler({.window = 0}), std::invalid_argument);
  CHECK_THROWS_AS(GradientScheduler({.alpha = 1.5}), std::invalid_argument);
  CHECK_THROWS_AS(GradientScheduler({.beta = 0}), std::invalid_argument);
}

TEST_CASE("with_scheduler names every shipped scheduler") {
  for (const char* name : {"sequential", "round-robin", "random", "flop", "bandit", "bandit-epsilon",
                           "bandit-softmax", "gradient"})
    CHECK(with_scheduler(name, [](auto s) { return check_scheduler<decltype(s)>(); }));
  CHECK_THROWS_AS(with_scheduler("nope", [](auto) { return 0; }), std::invalid_argument);
}
