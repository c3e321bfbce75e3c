// MultiTaskTuner on synthetic kernels: slots, budget, objective history, per-task logs, resume,
// exact resume, and the single-task hooks (on_begin, on_end; ProgressBar).
#include <tunekit/callbacks/log_to_file.hpp>
#include <tunekit/callbacks/progress_bar.hpp>
#include <tunekit/multi_task_tuner.hpp>
#include <tunekit/presets.hpp>
#include <tunekit/scheduler/round_robin.hpp>
#include <tunekit/scheduler/sequential.hpp>

#include "support/temp_dir.hpp"
#include "support/files.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
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
  CHECK(resume(again, log) == 40);
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

namespace {
// The lines of a text, without the newline after the last.
std::vector<std::string> text_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}
using tunekit::test::slurp;
// A log line without its timestamp (the rest is the record: task, config, measurement).
std::string without_timestamp(const std::string& line) { return line.substr(0, line.find("\"timestamp\"")); }
}  // namespace

TEST_CASE("MultiTaskTuner calls on_begin and on_end, and ProgressBar shows the run's trials") {
  std::vector<Bowl> kernels{{"a", 1e-3, 200}, {"b", 2e-3, 200}, {"c", 5e-4, 200}};
  MultiTaskTuner<RoundRobin, RandomSearchTuner> mt({}, {.budget = {.trials = 100}, .slot_trials = 8, .plan_size = 4});
  for (auto& k : kernels) mt.add_task(k, {});
  struct Hooks {
    std::vector<std::string> calls;
    void on_begin(const TuningState& s) { calls.push_back("begin " + std::to_string(s.trials) + " " + s.task); }
    void on_end(const TuningState& s) { calls.push_back("end " + std::to_string(s.trials) + " " + s.task); }
  } hooks;
  std::ostringstream out;
  Rng rng(1);
  mt.tune(std::span<Bowl>(kernels), rng, hooks, ProgressBar(out, /*in_place=*/false));
  // Slot 13 (of 4 trials) is task a's: the last slot.
  CHECK(hooks.calls == std::vector<std::string>{"begin 0 a", "end 100 a"});
  // A line at every tenth of the run's budget, counting all tasks' trials, naming the task.
  const auto lines = text_lines(out.str());
  REQUIRE(lines.size() == 10);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    CAPTURE(lines[i]);
    CHECK(lines[i].rfind("[" + std::to_string(10 * (i + 1)) + "/100] best ", 0) == 0);
    CHECK(lines[i].find(" | task ") != std::string::npos);
  }
  // Trial 10 is the second of slot 2 (task b); trial 100 the last of slot 13 (task a).
  CHECK(lines[0].substr(lines[0].size() - 9) == " | task b");
  CHECK(lines[9].substr(lines[9].size() - 9) == " | task a");
}

TEST_CASE("MultiTaskTuner: exact resume from a cut log continues as the uninterrupted run") {
  test::TempDir dir;
  const auto full = dir.path / "full.jsonl", cut = dir.path / "cut.jsonl";
  std::vector<Bowl> kernels{{"a", 1e-3, 200}, {"b", 2e-3, 300}, {"c", 5e-4, 100}};
  using MT = MultiTaskTuner<RoundRobin, AutoTvmTuner>;
  auto make = [&] {
    MT mt({}, {.budget = {.trials = 70}, .slot_trials = 10, .plan_size = 4});
    for (auto& k : kernels) mt.add_task(k, {});
    return mt;
  };
  MT reference = make();
  Rng rng(5);
  reference.tune(std::span<Bowl>(kernels), rng, LogToFile(full));
  const auto full_lines = text_lines(slurp(full));
  REQUIRE(full_lines.size() == 70);
  for (std::size_t keep : {0, 1, 23, 40, 69}) {
    CAPTURE(keep);
    {
      std::ofstream o(cut, std::ios::trunc);
      for (std::size_t i = 0; i < keep; ++i) o << full_lines[i] << '\n';
    }
    MT resumed = make();
    std::ostringstream warn;
    CHECK(resume_exact(resumed, cut, &warn) == keep);
    Rng r2(5);
    resumed.tune(std::span<Bowl>(kernels), r2, LogToFile(cut, &warn));
    CHECK(warn.str().empty());
    CHECK(resumed.slot_tasks() == reference.slot_tasks());
    CHECK(resumed.objective() == reference.objective());
    const auto lines = text_lines(slurp(cut));
    REQUIRE(lines.size() == 70);
    for (std::size_t i = 0; i < 70; ++i) CHECK(without_timestamp(lines[i]) == without_timestamp(full_lines[i]));
  }
  // A resumed multi-task tuner must be fresh, and the log must hold records of its tasks.
  MT used = make();
  Rng r3(5);
  used.tune(std::span<Bowl>(kernels), r3);
  CHECK_THROWS_AS((void)resume_exact(used, full), std::invalid_argument);
  MultiTaskTuner<RoundRobin, AutoTvmTuner> other({}, {});
  other.add_task(Bowl("z", 1e-3, 10), {});
  std::ostringstream warn;
  CHECK_THROWS_AS((void)resume_exact(other, full, &warn), RecordError);
}
