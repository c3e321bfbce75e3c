// The multi-task replay: the four recorded datasets as four operators of one model, tuned by
// random search per task in slots given out by the schedulers.
#include <tunekit/multi_task_replay.hpp>
#include <tunekit/replay_score.hpp>
#include <tunekit/presets.hpp>
#include <tunekit/scheduler/by_name.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

using namespace tunekit;

TEST_CASE("multi-task replay: the schedulers against sequential, and where the bandit and gradient put their slots") {
  // Tasks in file order (conv A100, conv A4000, gemm 2080 Ti, gemm 3090), weight 1, the FLOP of
  // shared/datasets/README.md; random search per task; slots of 16 trials, 800 trials in all;
  // seeds 0-8. The reference is common to all runs: the median final objective over the 36 runs
  // (the final objectives differ by luck; a run's own final would reward a scheduler that
  // stops improving early). Measured (simulated measurement seconds to 1.05x, median over seeds,
  // with each task's own measurement streams; Intel Xeon build): sequential 671, round-robin 316,
  // bandit 316, gradient 246, reference 21.21 ms. Each run's spread is wide (about 60-740 s:
  // random search finds the good configurations of these spaces by luck), and the bandit against
  // round-robin is within it (over 31 seeds 359 against 364 s; with the measurement streams of an
  // earlier version 217 against 365 on 9 seeds, and 324 against 390 on 31), as is the gradient
  // against round-robin on other builds. Asserted: every scheduler below sequential (which
  // reaches a finite objective only when it starts the last task), and the mechanism of the two
  // that move slots: the gradient and the bandit give the two GEMM tasks, which carry about 90%
  // of the objective, more slots than round-robin's 24 of 50 (measured: gradient 44, bandit 33).
  const std::vector<std::string> names{"convolution_A100", "convolution_A4000", "gemm_RTX_2080_Ti", "gemm_RTX_3090"};
  const std::vector<double> flops{7549747200, 7549747200, 137472507904, 137472507904};
  std::vector<ReplayKernel> kernels;
  std::vector<TaskOptions> tasks;
  for (std::size_t i = 0; i < names.size(); ++i) {
    kernels.push_back(ReplayKernel::from_csv(std::string(TUNEKIT_DATASETS) + "/" + names[i] + ".csv", {.flop = flops[i]}));
    tasks.push_back({.name = names[i], .flop = flops[i], .tag = names[i].substr(0, names[i].find('_'))});
  }
  const MultiTaskOptions options{.budget = {.trials = 800}, .slot_trials = 16, .plan_size = 16};
  std::map<std::string, std::vector<MultiTaskTrace>> runs;
  std::vector<double> finals;
  for (const char* scheduler : {"sequential", "round-robin", "bandit", "gradient"})
    for (std::uint64_t seed = 0; seed < 9; ++seed) {
      Rng rng(seed);
      runs[scheduler].push_back(replay_multi_task<RandomSearchTuner>(kernels, tasks, make_scheduler(scheduler), options, rng));
      const auto& t = runs[scheduler].back();
      CHECK(t.objective.size() == 800);
      CHECK(t.slot_tasks.size() == 50);
      finals.push_back(t.final_objective());
    }
  const double reference = quantile(finals, 0.5);
  std::map<std::string, double> to105;
  for (const auto& [name, traces] : runs) {
    std::vector<double> t;
    for (const auto& tr : traces) t.push_back(tr.seconds_to(1.05, reference));
    to105[name] = quantile(t, 0.5);
    MESSAGE(name << ": median simulated seconds to 1.05x of " << reference * 1e3 << " ms: " << to105[name]);
  }
  CHECK(to105["bandit"] < to105["sequential"]);
  CHECK(to105["round-robin"] < to105["sequential"]);
  CHECK(to105["gradient"] < to105["sequential"]);
  // Slots given to tasks 2 and 3 (the GEMMs), median over seeds.
  auto gemm_slots = [&](const std::string& scheduler) {
    std::vector<double> slots;
    for (const auto& tr : runs[scheduler])
      slots.push_back(static_cast<double>(std::count_if(tr.slot_tasks.begin(), tr.slot_tasks.end(),
                                                        [](std::size_t task) { return task >= 2; })));
    const double median = quantile(slots, 0.5);
    MESSAGE(scheduler << ": median slots of the two GEMM tasks: " << median << " of 50");
    return median;
  };
  CHECK(gemm_slots("gradient") >= 35);
  CHECK(gemm_slots("bandit") >= 30);
  CHECK(gemm_slots("round-robin") == 24);
  // Sequential gives the tasks 13, 13, 12 and 12 of the 50 slots, in order: the objective is
  // infinite until the last task's first trial (after 38 x 16 trials; gemm_RTX_3090 has no failed
  // configuration).
  for (const auto& tr : runs["sequential"]) {
    CHECK(std::isinf(tr.objective[38 * 16 - 1].objective));
    CHECK(std::isfinite(tr.objective[38 * 16].objective));
  }
}
