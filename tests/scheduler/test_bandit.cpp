// DynaTune's bandit scheduler and its curve belief model on synthetic tuning curves.
#include <tunekit/scheduler/bandit.hpp>
#include <tunekit/scheduler/curve_belief.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <vector>

using namespace tunekit;

TEST_CASE("the curve belief predicts the next point of a saturating curve") {
  // y(n) = 0.6 (1 - exp(-n / 8)), n = 1..20: the next value is 0.5507; tolerance 0.02 on the mean
  // (the fit extrapolates one step of a noiseless curve), a std below 0.02.
  std::vector<double> y;
  for (int n = 1; n <= 20; ++n) y.push_back(0.6 * (1 - std::exp(-n / 8.0)));
  Rng rng(3);
  const auto p = predict_next_slot(y, {}, rng);
  CHECK(p.model != "last_step");
  CHECK(p.samples.size() == 2000);  // 10 walkers x (500 - 300) steps
  CHECK(p.mean == doctest::Approx(0.6 * (1 - std::exp(-21 / 8.0))).epsilon(0.02 / 0.55));
  CHECK(p.std < 0.02);
  // A jump of more than 20% starts a new segment; two points after it are too few for a curve.
  y.push_back(0.9);
  y.push_back(0.91);
  const auto after_jump = predict_next_slot(y, {}, rng);
  CHECK(after_jump.model == "last_step");
  CHECK(after_jump.mean == doctest::Approx(0.92).epsilon(0.01));
  CHECK_THROWS_AS(predict_next_slot(std::vector<double>{}, {}, rng), std::invalid_argument);
  CHECK_THROWS_AS(predict_next_slot(y, {.min_points = 2}, rng), std::invalid_argument);
}

namespace {
// Three tasks whose normalised throughput after their n-th slot follows a known curve; the
// latency is FLOP / (y peak). Returns the slots each task got.
template <class S>
std::vector<std::size_t> run_synthetic(S scheduler, std::size_t potential, std::size_t slots, std::uint64_t seed) {
  const double flop = 1e10, peak = 1e11;
  std::vector<std::function<double(int)>> curve(3, [](int n) { return 0.5 * (1 - std::exp(-n / 1.0)); });
  curve[potential] = [](int n) { return 0.8 * (1 - std::exp(-n / 15.0)); };
  std::vector<TaskProgress> tasks(3, TaskProgress{.weight = 1, .flop = flop, .peak_flops = peak});
  Rng rng(seed);
  for (std::size_t s = 0; s < slots; ++s) {
    const std::size_t k = scheduler.next_task(std::span<const TaskProgress>(tasks), rng);
    REQUIRE(k < 3);
    tasks[k].slots++;
    tasks[k].best_latency.push_back(flop / (curve[k](static_cast<int>(tasks[k].slots)) * peak));
  }
  return {tasks[0].slots, tasks[1].slots, tasks[2].slots};
}
}  // namespace

TEST_CASE("the bandit scheduler spends most slots on the task with the most potential") {
  // Two tasks saturate within ~3 slots (y = 0.5 (1 - e^-n)); the third climbs slowly
  // (y = 0.8 (1 - e^(-n/15))) and after 40 slots of its own would still gain 5% latency per slot.
  // Latency reductions are hundreds of ms, so UCB's bonus (c = 2 ms) matters only for the
  // saturated tasks' first slots (and the belief extrapolates their last step until a segment
  // has 3 points, after their 20% jumps). Measured (seeds 1-3): the climbing task gets 28 of 40
  // slots with UCB, 28-33 with epsilon-greedy (epsilon 0.1), 38 with softmax; asserted: at least
  // 26 (65%; each other task gets 6 or fewer), whichever index it has.
  for (std::size_t potential = 0; potential < 3; ++potential) {
    CAPTURE(potential);
    CHECK(run_synthetic(DynaTuneScheduler{}, potential, 40, 1)[potential] >= 26);
    CHECK(run_synthetic(EpsilonGreedyBanditScheduler{}, potential, 40, 1)[potential] >= 26);
    CHECK(run_synthetic(SoftmaxBanditScheduler{}, potential, 40, 1)[potential] >= 26);
  }
}

TEST_CASE("the bandit scheduler tries unvisited tasks first and skips finished ones") {
  std::vector<TaskProgress> tasks(3, TaskProgress{.weight = 1, .flop = 1e9});
  tasks[0].slots = 1;
  tasks[0].best_latency = {1e-3};
  tasks[1].finished = true;
  DynaTuneScheduler s;
  Rng rng(1);
  CHECK(s.next_task(std::span<const TaskProgress>(tasks), rng) == 2);
  tasks[2].finished = tasks[0].finished = true;
  CHECK(s.next_task(std::span<const TaskProgress>(tasks), rng) == 3);
  CHECK_THROWS_AS(BanditScheduler<UcbSelection>({}, UcbSelection{.c = -1}), std::invalid_argument);
  CHECK_THROWS_AS(EpsilonGreedyBanditScheduler({}, EpsilonGreedySelection{.epsilon = 2}), std::invalid_argument);
  CHECK_THROWS_AS(SoftmaxBanditScheduler({}, SoftmaxSelection{.temperature = 0}), std::invalid_argument);
  CHECK_THROWS_AS(DynaTuneScheduler({.belief = {.jump = 0}}), std::invalid_argument);
}
