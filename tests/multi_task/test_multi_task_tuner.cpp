// MultiTaskTuner on synthetic kernels: slots, budget, objective history, per-task logs, resume.
#include <tunekit/callbacks/log_to_file.hpp>
#include <tunekit/multi_task_tuner.hpp>
#include <tunekit/presets.hpp>
#include <tunekit/scheduler/round_robin.hpp>
#include <tunekit/scheduler/sequential.hpp>

#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

using namespace tunekit;

namespace {
// A kernel whose time is base x (1 + ((x - 37) / 20)^2) for the knob x in 0..n-1 (noiseless);
// each run costs its time, plus 0.01 s of set-up per config.
struct Bowl {
  SearchSpace space_;
  double base;
  std::string name_;
  Bowl(std::string name, double base_seconds, std::int64_t n) : base(base_seconds), name_(std::move(name)) {
    space_.add(Knob::range("x", 0, n - 1));
  }
  const SearchSpace& space() const { return space_; }
  double flop() const { return 1e9; }
  std::string name() const { return name_; }
  std::string device() const { return "synthetic"; }
  RunResult run(const Config& c, std::size_t runs, Rng&) {
    const double x = static_cast<double>(space_.knob(0).value(c[0]));
    const double t = base * (1 + std::pow((x - 37) / 20, 2));
    RunResult r{Status::ok, std::vector<double>(runs, t), {}, 0.01 + static_cast<double>(runs) * t};
    return r;
  }
};
}  // namespace

TEST_CASE("MultiTaskTuner runs slots of trials and records the weighted objective") {
  std::vector<Bowl> kernels{{"a", 1e-3, 200}, {"b", 2e-3, 200}, {"c", 5e-4, 200}};
  MultiTaskTuner<RoundRobin, RandomSearchTuner> mt({}, {.budget = {.trials = 100}, .slot_trials = 8, .plan_size = 4});
  mt.add_task(kernels[0], {.weight = 2});
  mt.add_task(kernels[1], {});
  mt.add_task(kernels[2], {.name = "c-renamed", .weight = 3, .tag = "bowl"});
  CHECK(mt.task(0).name == "a");
  CHECK(mt.task(2).name == "c-renamed");
  CHECK(mt.task(1).flop == 1e9);
  Rng rng(1);
  std::size_t on_slot_calls = 0;
  struct SlotCounter {
    std::size_t* n;
    void on_slot(const MultiTaskState& s) { *n += s.slot == *n; }
  };
  const auto r = mt.tune(std::span<Bowl>(kernels), rng, SlotCounter{&on_slot_calls});
  CHECK(r.reason == MultiTaskStop::trial_budget);
  CHECK(r.trials == 100);
  CHECK(r.slots == 13);  // 12 slots of 8 and one of 4
  CHECK(on_slot_calls == 13);
  CHECK(mt.slot_tasks() == std::vector<std::size_t>{0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0});
  CHECK(mt.tuner(0).history().size() == 36);
  CHECK(mt.tuner(2).history().size() == 32);
  const auto& h = mt.objective_history();
  REQUIRE(h.size() == 100);
  // Infinite until every task succeeded (the first trial of task c is trial 17), then
  // non-increasing, and its final value is the weighted sum of the best latencies.
  CHECK(std::isinf(h[15].objective));
  CHECK(std::isfinite(h[16].objective));
  for (std::size_t i = 17; i < h.size(); ++i) CHECK(h[i].objective <= h[i - 1].objective);
  CHECK(h.back().objective == doctest::Approx(2 * mt.best_latency(0) + mt.best_latency(1) + 3 * mt.best_latency(2)));
  CHECK(h.back().measure_seconds == doctest::Approx(mt.measure_seconds()));
  CHECK(h.back().seconds >= h.back().measure_seconds);
  CHECK(mt.progress()[0].best_latency.size() == 5);
  CHECK(first_reaching(h, h.back().objective) != nullptr);
  CHECK(first_reaching(h, 0.0) == nullptr);
}

TEST_CASE("MultiTaskTuner: slots of seconds, exhausted spaces, logs and resume") {
  test::TempDir dir;
  const auto log = dir.path / "mt.jsonl";
  std::vector<Bowl> kernels{{"small", 1e-3, 10}, {"big", 1e-3, 300}};
  {
    // Each trial costs 0.01 s + 3 runs of >= 1 ms, so a slot of 0.05 s holds 4 trials.
    MultiTaskTuner<RoundRobin, RandomSearchTuner> mt({}, {.budget = {.trials = 40}, .slot_seconds = 0.05, .plan_size = 8});
    for (auto& k : kernels) mt.add_task(k, {});
    Rng rng(2);
    const auto r = mt.tune(std::span<Bowl>(kernels), rng, LogToFile(log));
    CHECK(r.trials == 40);
    CHECK(mt.tuner(0).history().size() == 10);  // the small space ran out
    CHECK(mt.progress()[0].finished);
    CHECK(mt.tuner(1).history().size() == 30);
    CHECK(mt.slot_tasks()[1] == 1);
    CHECK(mt.tuner(1).history().size() % 4 == 2);  // slots of 4 trials and one final slot of 2
    // Every measurement is in the log, under its task's name.
    CHECK(read_records(log, kernels[0].space(), "small").size() == 10);
    CHECK(read_records(log, kernels[1].space(), "big").size() == 30);
  }
  // A new tuner resumes both tasks from the one log and continues without re-measuring.
  MultiTaskTuner<Sequential, RandomSearchTuner> again(Sequential({.slots_per_task = 3}), {.budget = {.trials = 50}, .slot_trials = 5});
  for (auto& k : kernels) again.add_task(k, {});
  CHECK(again.resume(log) == 40);
  Rng rng(3);
  const auto r = again.tune(std::span<Bowl>(kernels), rng);
  CHECK(r.trials == 50);
  CHECK(again.tuner(1).history().size() == 40);
  // A task of exhausted space is not given slots; when all are done the tuning stops.
  MultiTaskTuner<RoundRobin, RandomSearchTuner> tiny({}, {.budget = {.trials = 1000}, .slot_trials = 4});
  std::vector<Bowl> small{{"s1", 1e-3, 5}, {"s2", 1e-3, 6}};
  for (auto& k : small) tiny.add_task(k, {});
  Rng r2(1);
  CHECK(tiny.tune(std::span<Bowl>(small), r2).reason == MultiTaskStop::tasks_done);
  CHECK(tiny.trials() == 11);
}

TEST_CASE("MultiTaskTuner rejects bad parameters with the parameter's name") {
  using MT = MultiTaskTuner<RoundRobin, RandomSearchTuner>;
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(message([] { MT({}, {.slot_trials = 0}); }).find("slot_trials") != std::string::npos);
  CHECK(message([] { MT({}, {.slot_seconds = -1}); }).find("slot_seconds") != std::string::npos);
  CHECK(message([] { MT({}, {.plan_size = 0}); }).find("plan_size") != std::string::npos);
  MT mt;
  Bowl k("a", 1e-3, 10);
  CHECK(message([&] { mt.add_task(k, {.weight = 0}); }).find("weight") != std::string::npos);
  CHECK(message([&] { mt.add_task(k.space(), {.name = ""}); }).find("name") != std::string::npos);
  mt.add_task(k, {});
  CHECK(message([&] { mt.add_task(k, {}); }).find("'a'") != std::string::npos);
  std::vector<Bowl> two{k, k};
  Rng rng(1);
  CHECK(message([&] { mt.tune(std::span<Bowl>(two), rng); }).find("kernels") != std::string::npos);
}
