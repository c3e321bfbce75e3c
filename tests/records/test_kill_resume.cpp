// The crash tests. First: a tuning run logging to a file is killed with SIGKILL mid-run; a new
// tuner resumes from the log and finishes the budget. The log must then hold every config exactly
// once, and the resume must take exactly the lines that were complete at the kill.
// Then fault injection: a run is killed at random moments (at least 20 times) and restarted with
// exact resume each time; it must end with every measurement logged exactly once, the same
// configs in the same order as an uninterrupted run with the same seed, and the same best.
// Last, a multi-task run killed mid-slot and resumed exactly: the same trials in the same order
// and the same objective as an uninterrupted one, every record logged once.
#include <tunekit/callbacks/log_to_file.hpp>
#include <tunekit/replay/replay_kernel.hpp>
#include <tunekit/multi_task_tuner.hpp>
#include <tunekit/scheduler/random_slots.hpp>
#include <tunekit/presets.hpp>
#include <tunekit/records/log.hpp>
#include <tunekit/core/history.hpp>

#include "support/temp_dir.hpp"
#include "support/files.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

// Wraps a replay kernel and sleeps 3 ms per run() call, so that a run lasts long enough to be
// killed in the middle (the Deterministic evaluator makes 4 run() calls per config).
struct SleepyReplay {
  const tunekit::ReplayKernel* inner;
  const tunekit::SearchSpace& space() const { return inner->space(); }
  double flop() const { return inner->flop(); }
  std::string name() const { return inner->name(); }
  std::string device() const { return inner->device(); }
  tunekit::RunResult prepare(const tunekit::Config& c) const { return inner->prepare(c); }
  tunekit::RunResult run(const tunekit::Config& c, std::size_t runs, tunekit::Rng& rng) {
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    return inner->run(c, runs, rng);
  }
};

using tunekit::test::slurp;

std::size_t complete_lines(const fs::path& p) {
  const std::string s = slurp(p);
  return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n'));
}

// The log after the run: exactly `budget` complete lines, read without a warning, every config
// once. Returns its records.
std::vector<tunekit::Record> read_complete_log(const fs::path& log, const tunekit::SearchSpace& space,
                                               const std::string& task, std::size_t budget) {
  const std::string content = slurp(log);
  REQUIRE_FALSE(content.empty());
  CHECK(content.back() == '\n');
  CHECK(static_cast<std::size_t>(std::count(content.begin(), content.end(), '\n')) == budget);
  std::ostringstream read_warn;
  auto records = tunekit::read_records(log, space, task, &read_warn);
  CHECK(read_warn.str().empty());
  REQUIRE(records.size() == budget);
  std::set<std::uint64_t> distinct;
  for (const auto& r : records) distinct.insert(space.to_index(r.config));
  CHECK(distinct.size() == budget);
  return records;
}

using tunekit::test::TempDir;

// Kills and reaps a child if the test leaves early.
struct ChildGuard {
  pid_t pid = -1;
  ~ChildGuard() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      int st = 0;
      ::waitpid(pid, &st, 0);
    }
  }
};

constexpr std::size_t budget = 300;
constexpr std::size_t kill_after_lines = 40;
constexpr std::uint64_t seed = 12345;
constexpr auto max_wait = std::chrono::seconds(60);

// Forks a child that runs `child_run` (a tuning run logging to `log`; returns the child's exit
// code; no doctest, no OpenMP, no atexit in the child), waits (bounded) until the log holds
// `lines` complete lines, and kills the child with SIGKILL. Returns the complete lines at the kill.
template <class ChildRun>
std::size_t run_and_kill(const fs::path& log, std::size_t lines, ChildRun child_run) {
  ChildGuard child;
  child.pid = ::fork();
  REQUIRE(child.pid >= 0);
  if (child.pid == 0) {
    int code = 3;
    try {
      code = child_run();
    } catch (...) {
    }
    ::_exit(code);
  }

  const auto t0 = std::chrono::steady_clock::now();
  bool exited_early = false;
  while (complete_lines(log) < lines) {
    int st = 0;
    if (::waitpid(child.pid, &st, WNOHANG) == child.pid) {
      child.pid = -1;
      exited_early = true;
      break;
    }
    if (std::chrono::steady_clock::now() - t0 > max_wait) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  REQUIRE_MESSAGE(!exited_early, "the child exited before it was killed");
  REQUIRE_MESSAGE(complete_lines(log) >= lines, "the child did not write ", lines, " lines within 60 s");
  REQUIRE(::kill(child.pid, SIGKILL) == 0);
  int status = 0;
  pid_t reaped = 0;
  while ((reaped = ::waitpid(child.pid, &status, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() - t0 < max_wait + std::chrono::seconds(10))
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  REQUIRE(reaped == child.pid);
  child.pid = -1;
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
  return complete_lines(log);
}

}  // namespace

TEST_CASE("kill and resume: a run killed mid-way resumes from its log with no config measured twice") {
  // Loaded once before fork: the child gets its own copy of the process.
  const auto kernel = tunekit::ReplayKernel::from_csv(
      TUNEKIT_DATASETS "/gemm_RTX_3090.csv",
      {.overhead_seconds = 1.0, .flop = 137472507904.0, .name = {}});
  const std::string task = kernel.name();
  REQUIRE(task == "gemm_RTX_3090");

  TempDir dir;
  const fs::path log = dir.path / "tuning.jsonl";

  // The child: tune slowly, logging every measurement.
  const std::size_t lines_at_kill = run_and_kill(log, kill_after_lines, [&] {
    SleepyReplay slow{&kernel};
    tunekit::RandomSearchTuner tuner(kernel.space(), {.budget = {.trials = budget}});
    tunekit::Rng rng(seed);
    std::ostringstream warnings;
    const auto res = tuner.tune(slow, rng, tunekit::LogToFile(log, &warnings));
    return res.trials == budget ? 0 : 2;
  });

  // What the killed run left: complete lines (and at most a partial last one).
  CAPTURE(lines_at_kill);
  REQUIRE(lines_at_kill >= kill_after_lines);
  REQUIRE(lines_at_kill < budget);
  std::vector<std::uint64_t> child_indices;
  {
    std::ostringstream warn;
    for (const auto& r : tunekit::read_records(log, kernel.space(), task, &warn))
      child_indices.push_back(kernel.space().to_index(r.config));
  }
  REQUIRE(child_indices.size() == lines_at_kill);

  // Resume in the parent and finish the budget, appending to the same log.
  tunekit::RandomSearchTuner tuner(kernel.space(), {.budget = {.trials = budget}});
  std::ostringstream warn;
  const std::size_t resumed = tunekit::resume(tuner, log, task, &warn);
  CHECK(resumed == lines_at_kill);
  REQUIRE(tuner.history().size() == resumed);
  tunekit::ReplayKernel fast = kernel;  // no sleeping needed any more
  tunekit::Rng rng(seed);
  const auto res = tuner.tune(fast, rng, tunekit::LogToFile(log, &warn));
  CHECK(res.trials == budget);
  CHECK(res.reason == tunekit::StopReason::trial_budget);
  CHECK(tuner.history().size() == budget);

  // The whole log: exactly the budget, every config once, the child's records first.
  const auto records = read_complete_log(log, kernel.space(), task, budget);
  for (std::size_t i = 0; i < lines_at_kill; ++i)
    CHECK(kernel.space().to_index(records[i].config) == child_indices[i]);
  for (std::size_t i = 0; i < budget; ++i)
    CHECK(kernel.space().to_index(records[i].config) == tuner.history()[i].index);

  // The killed run logged what an uninterrupted run with the same seed measures first (same
  // configs, same replayed measurements, exactly through JSON).
  // (The same budget too: the batch sizes, and so the generator's draws, must match.)
  tunekit::RandomSearchTuner reference(kernel.space(), {.budget = {.trials = budget}});
  tunekit::Rng ref_rng(seed);
  tunekit::ReplayKernel ref_kernel = kernel;
  REQUIRE(reference.tune(ref_kernel, ref_rng).trials == budget);
  for (std::size_t i = 0; i < lines_at_kill; ++i) {
    CHECK(reference.history()[i].index == child_indices[i]);
    CHECK(reference.history()[i].measurement.mean == records[i].measurement.mean);
    CHECK(reference.history()[i].measurement.samples == records[i].measurement.samples);
  }
}

namespace {

// Fault injection. Each restart of the child is killed at a moment drawn from a fixed-seed
// generator, in one of two ways:
// - after the log has grown by 1..max_lines_per_kill lines since the restart (so the run makes
//   progress), plus 0..15 ms (so the kill lands anywhere in a measurement: in the kernel's sleep,
//   in the surrogate's fit, in the annealing, or in the middle of writing a line);
// - every fifth kill, at 0..60 ms after the fork whatever the log holds (so it may land while the
//   child reads the log or replays it).
// After max_kills kills the child runs to the end. A child that finishes before it is killed ends
// the loop.
struct KillPlan {
  std::uint64_t seed = 2718;
  std::size_t max_lines_per_kill = 7;
  std::size_t max_kills = 60;
};

struct KillOutcome {
  std::size_t kills = 0;
  // Kills that found the log as the restart did: during startup, the log's reading or the replay
  // (or the first new measurement).
  std::size_t kills_without_progress = 0;
  double seconds = 0.0;
  bool finished = false;
  int exit_code = -1;
};

// The log's count of complete lines, re-read only when its size changed.
struct LineWatch {
  fs::path path;
  std::uintmax_t size = std::numeric_limits<std::uintmax_t>::max();
  std::size_t lines = 0;
  std::size_t count() {
    struct stat st{};
    const std::uintmax_t now = ::stat(path.c_str(), &st) == 0 ? static_cast<std::uintmax_t>(st.st_size) : 0;
    if (now != size) {
      size = now;
      lines = complete_lines(path);
    }
    return lines;
  }
};

// Runs `child_run` (which tunes with exact resume from the log and returns the process's exit
// code) in a forked child again and again, killing it as the plan says, until a child finishes.
template <class ChildRun>
KillOutcome kill_until_done(const fs::path& log, const KillPlan& plan, ChildRun child_run) {
  KillOutcome out;
  tunekit::Rng kill_rng(plan.seed);
  LineWatch watch{log};
  const auto t0 = std::chrono::steady_clock::now();
  const auto deadline = t0 + std::chrono::seconds(240);
  // A child that ended by itself (wait status `st`): the final run.
  auto finish = [&out](int st) {
    out.finished = true;
    out.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  };
  while (!out.finished) {
    const std::size_t lines0 = watch.count();
    const bool kill_this_one = out.kills < plan.max_kills;
    const bool by_time = out.kills % 5 == 4;
    const auto lines_to_wait = 1 + tunekit::uniform_index(kill_rng, plan.max_lines_per_kill);
    const auto extra = std::chrono::microseconds(tunekit::uniform_index(kill_rng, by_time ? 60'000 : 15'000));

    ChildGuard child;
    const auto fork_time = std::chrono::steady_clock::now();
    child.pid = ::fork();
    REQUIRE(child.pid >= 0);
    if (child.pid == 0) {
      int code = 3;
      try {
        code = child_run();
      } catch (...) {
      }
      ::_exit(code);
    }

    // Wait for the moment to kill, or for the child to finish.
    bool waited_lines = by_time;
    std::chrono::steady_clock::time_point kill_at = fork_time + extra;
    for (;;) {
      int st = 0;
      if (::waitpid(child.pid, &st, WNOHANG) == child.pid) {
        child.pid = -1;
        finish(st);
        break;
      }
      const auto now = std::chrono::steady_clock::now();
      REQUIRE_MESSAGE(now < deadline, "the killed and restarted run did not finish within 240 s");
      if (kill_this_one) {
        if (!waited_lines && watch.count() >= lines0 + lines_to_wait) {
          waited_lines = true;
          kill_at = now + extra;
        }
        if (waited_lines && now >= kill_at) break;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    if (out.finished) break;

    REQUIRE(::kill(child.pid, SIGKILL) == 0);
    int st = 0;
    REQUIRE(::waitpid(child.pid, &st, 0) == child.pid);
    child.pid = -1;
    if (WIFEXITED(st)) {
      // The child finished between the last poll and the kill (a zombie takes the signal without
      // effect): it ran to its end, so this is the final run, not a kill.
      finish(st);
      break;
    }
    REQUIRE(WIFSIGNALED(st));
    REQUIRE(WTERMSIG(st) == SIGKILL);
    ++out.kills;
    out.kills_without_progress += watch.count() == lines0;
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

// The whole check for one tuner type: `make_tuner()` gives a fresh tuner (the same each time).
template <class MakeTuner>
void check_fault_injection(const std::string& name, MakeTuner make_tuner, std::size_t budget) {
  CAPTURE(name);
  const auto kernel = tunekit::ReplayKernel::from_csv(
      TUNEKIT_DATASETS "/gemm_RTX_3090.csv",
      {.overhead_seconds = 1.0, .flop = 137472507904.0, .name = {}});
  const std::string task = kernel.name();
  constexpr std::uint64_t seed = 4242;

  TempDir dir;
  const fs::path log = dir.path / "tuning.jsonl";
  const fs::path child_warnings = dir.path / "warnings.txt";

  const KillOutcome out = kill_until_done(log, KillPlan{}, [&] {
    // The child: a fresh tuner, exact resume from the log, tune to the budget. Its warnings go
    // to a file, unbuffered, so that those of killed children are kept.
    std::ofstream warnings(child_warnings, std::ios::app);
    warnings << std::unitbuf;
    auto tuner = make_tuner();
    tunekit::resume_exact(tuner, log, task, &warnings);
    SleepyReplay slow{&kernel};
    tunekit::Rng rng(seed);
    const auto res = tuner.tune(slow, rng, tunekit::LogToFile(log, &warnings));
    return res.trials == budget && tuner.recorded_left() == 0 ? 0 : 2;
  });
  MESSAGE(name, ": ", out.kills, " kills (", out.kills_without_progress, " before a new line), ",
          out.seconds, " s");
  REQUIRE(out.finished);
  CHECK(out.exit_code == 0);
  CHECK(out.kills >= 20);

  // No restart left the recorded path (that would warn about an inexact continuation); the
  // only warnings allowed are about lines cut off by a kill.
  {
    std::istringstream warned(slurp(child_warnings));
    std::string line;
    while (std::getline(warned, line)) {
      CAPTURE(line);
      CHECK((line.find("truncated last line") != std::string::npos && line.find("warning: " + log.string()) != std::string::npos));
    }
  }

  // The log: exactly the budget, every config once, every line complete.
  const auto records = read_complete_log(log, kernel.space(), task, budget);

  // An uninterrupted run with the same seed, here (after all forks): the same configs in the
  // same order with the same measurements (exactly, through JSON), and the same best.
  auto reference = make_tuner();
  tunekit::ReplayKernel fast = kernel;
  tunekit::Rng rng(seed);
  REQUIRE(reference.tune(fast, rng).trials == budget);
  tunekit::History logged;
  for (std::size_t i = 0; i < budget; ++i) {
    CAPTURE(i);
    const auto idx = kernel.space().to_index(records[i].config);
    CHECK(idx == reference.history()[i].index);
    CHECK(records[i].measurement.samples == reference.history()[i].measurement.samples);
    logged.add(tunekit::Trial{records[i].config, idx, records[i].measurement, 0.0});
  }
  REQUIRE(logged.best() != nullptr);
  REQUIRE(reference.history().best() != nullptr);
  CHECK(logged.best()->index == reference.history().best()->index);
}

// AutoTVM's pipeline with its annealing kept on one thread: libgomp's thread pool does not
// survive fork(), and the annealing's result does not depend on the thread count.
tunekit::AutoTvmTuner fault_injection_autotvm(const tunekit::SearchSpace& space, std::size_t budget) {
  tunekit::AnnealingParams annealing{};
  annealing.parallel_min_seconds = std::numeric_limits<double>::infinity();
  return tunekit::AutoTvmTuner(space, {.budget = {.trials = budget}, .plan_size = 16},
                               {.optimizer = tunekit::SimulatedAnnealing(annealing)});
}

}  // namespace

TEST_CASE("kill and resume: AutoTVM killed at random moments 20+ times resumes exactly (same configs, same best)") {
  const auto space = tunekit::ReplayKernel::from_csv(TUNEKIT_DATASETS "/gemm_RTX_3090.csv",
                                                     {.overhead_seconds = 1.0, .flop = 137472507904.0, .name = {}})
                         .space();
  constexpr std::size_t budget = 160;
  check_fault_injection("autotvm", [&] { return fault_injection_autotvm(space, budget); }, budget);
}

TEST_CASE("kill and resume: random search killed at random moments 20+ times resumes exactly") {
  const auto space = tunekit::ReplayKernel::from_csv(TUNEKIT_DATASETS "/gemm_RTX_3090.csv",
                                                     {.overhead_seconds = 1.0, .flop = 137472507904.0, .name = {}})
                         .space();
  constexpr std::size_t budget = 150;
  check_fault_injection("random", [&] {
    return tunekit::RandomSearchTuner(space, {.budget = {.trials = budget}, .plan_size = 16});
  }, budget);
}

TEST_CASE("kill and resume: a multi-task run killed mid-way resumes exactly (same trials, same order, same objective)") {
  // Three recorded spaces as three tasks, random search each, slots of 8 trials asked 4 at a time,
  // given out by RandomSlots (which draws from the caller's generator, as the tuners' ask does).
  // The child logs slowly (3 ms per kernel run) and is killed after 45 lines, mid-slot; the
  // parent resumes exactly and finishes fast. Runtime ~1 s.
  std::vector<tunekit::ReplayKernel> kernels;
  std::vector<tunekit::TaskOptions> tasks;
  for (const char* name : {"convolution_A4000", "gemm_RTX_2080_Ti", "gemm_RTX_3090"}) {
    kernels.push_back(tunekit::ReplayKernel::from_csv(std::string(TUNEKIT_DATASETS) + "/" + name + ".csv",
                                                      {.overhead_seconds = 1.0, .flop = 0.0, .name = name}));
    tasks.push_back({.name = name});
  }
  constexpr std::size_t mt_budget = 120, mt_kill_after = 45;
  constexpr std::uint64_t mt_seed = 777;
  using MT = tunekit::MultiTaskTuner<tunekit::RandomSlots, tunekit::RandomSearchTuner>;
  auto make = [&] {
    MT mt({}, {.budget = {.trials = mt_budget}, .slot_trials = 8, .plan_size = 4});
    for (std::size_t i = 0; i < kernels.size(); ++i) mt.add_task(kernels[i], tasks[i]);
    return mt;
  };
  TempDir dir;
  const fs::path log = dir.path / "multi_task.jsonl";

  const std::size_t lines_at_kill = run_and_kill(log, mt_kill_after, [&] {
    std::vector<SleepyReplay> slow;
    for (const auto& k : kernels) slow.push_back(SleepyReplay{&k});
    MT mt = make();
    tunekit::Rng rng(mt_seed);
    std::ostringstream warnings;
    return mt.tune(slow, rng, tunekit::LogToFile(log, &warnings)).trials == mt_budget ? 0 : 2;
  });
  CAPTURE(lines_at_kill);
  REQUIRE(lines_at_kill >= mt_kill_after);
  REQUIRE(lines_at_kill < mt_budget);

  // Exact resume in the parent, appending to the same log.
  MT resumed = make();
  std::ostringstream warn;
  CHECK(tunekit::resume_exact(resumed, log, &warn) == lines_at_kill);
  tunekit::Rng rng(mt_seed);
  const auto r = resumed.tune(kernels, rng, tunekit::LogToFile(log, &warn));
  CHECK(r.trials == mt_budget);
  for (std::size_t i = 0; i < kernels.size(); ++i) CHECK(resumed.tuner(i).recorded_left() == 0);
  // No warning but, at most, the removal of a line cut off by the kill.
  {
    std::istringstream warned(warn.str());
    std::string line;
    while (std::getline(warned, line)) {
      CAPTURE(line);
      CHECK(line.find("truncated last line") != std::string::npos);
    }
  }

  // An uninterrupted run with the same seed.
  MT reference = make();
  tunekit::Rng ref_rng(mt_seed);
  REQUIRE(reference.tune(kernels, ref_rng).trials == mt_budget);
  CHECK(resumed.slot_tasks() == reference.slot_tasks());
  CHECK(resumed.objective() == reference.objective());
  REQUIRE(resumed.objective_history().size() == reference.objective_history().size());
  for (std::size_t i = 0; i < mt_budget; ++i) {
    CAPTURE(i);
    CHECK(resumed.objective_history()[i].task == reference.objective_history()[i].task);
    CHECK(resumed.objective_history()[i].objective == reference.objective_history()[i].objective);
    CHECK(resumed.objective_history()[i].measure_seconds == reference.objective_history()[i].measure_seconds);
  }

  // The log: every record once, in the reference's order of trials (task by task as the objective
  // history says, each task's trials in its history's order), with the same measurements.
  const std::string content = slurp(log);
  REQUIRE_FALSE(content.empty());
  CHECK(content.back() == '\n');
  CHECK(complete_lines(log) == mt_budget);
  std::vector<std::size_t> next(kernels.size(), 0);
  std::istringstream lines(content);
  std::string line;
  std::size_t i = 0;
  while (std::getline(lines, line)) {
    CAPTURE(i);
    REQUIRE(i < mt_budget);
    const std::size_t k = reference.objective_history()[i].task;
    const auto j = nlohmann::json::parse(line);
    CHECK(j.at("task").get<std::string>() == tasks[k].name);
    const tunekit::Record rec = tunekit::record_from_json(kernels[k].space(), j);
    const tunekit::Trial& want = reference.tuner(k).history()[next[k]++];
    CHECK(kernels[k].space().to_index(rec.config) == want.index);
    CHECK(rec.measurement.samples == want.measurement.samples);
    ++i;
  }
  CHECK(i == mt_budget);
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    CHECK(next[k] == reference.tuner(k).history().size());
    CHECK(resumed.tuner(k).history().size() == reference.tuner(k).history().size());
    for (std::size_t t = 0; t < reference.tuner(k).history().size(); ++t)
      CHECK(resumed.tuner(k).history()[t].index == reference.tuner(k).history()[t].index);
  }
}
