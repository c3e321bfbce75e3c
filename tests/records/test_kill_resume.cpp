// The crash test: a tuning run logging to a file is killed with SIGKILL mid-run; a new tuner
// resumes from the log and finishes the budget. The log must then hold every config exactly
// once, and the resume must take exactly the lines that were complete at the kill.
#include <tunekit/callbacks/log_to_file.hpp>
#include <tunekit/kernel/replay.hpp>
#include <tunekit/presets.hpp>
#include <tunekit/records/log.hpp>

#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

// Wraps a replay kernel and sleeps 3 ms per run() call, so that a run lasts long enough to be
// killed in the middle (the Deterministic evaluator makes 4 run() calls per config).
struct SlowReplay {
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

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::size_t complete_lines(const fs::path& p) {
  const std::string s = slurp(p);
  return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n'));
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

  ChildGuard child;
  child.pid = ::fork();
  REQUIRE(child.pid >= 0);
  if (child.pid == 0) {
    // The child: tune slowly, logging every measurement; no doctest, no OpenMP, no atexit.
    int code = 0;
    try {
      SlowReplay slow{&kernel};
      tunekit::RandomSearchTuner tuner(kernel.space(), {.budget = {.trials = budget}});
      tunekit::Rng rng(seed);
      std::ostringstream warnings;
      const auto res = tuner.tune(slow, rng, tunekit::LogToFile(log, &warnings));
      code = res.trials == budget ? 0 : 2;
    } catch (...) {
      code = 3;
    }
    ::_exit(code);
  }

  // The parent: wait (bounded) for enough complete lines, then kill.
  const auto t0 = std::chrono::steady_clock::now();
  bool exited_early = false;
  while (complete_lines(log) < kill_after_lines) {
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
  REQUIRE_MESSAGE(complete_lines(log) >= kill_after_lines,
                  "the child did not write ", kill_after_lines, " lines within 60 s");
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

  // What the killed run left: complete lines (and at most a partial last one).
  const std::size_t lines_at_kill = complete_lines(log);
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
  const std::string content = slurp(log);
  REQUIRE_FALSE(content.empty());
  CHECK(content.back() == '\n');
  CHECK(static_cast<std::size_t>(std::count(content.begin(), content.end(), '\n')) == budget);
  std::ostringstream read_warn;
  const auto records = tunekit::read_records(log, kernel.space(), task, &read_warn);
  CHECK(read_warn.str().empty());
  REQUIRE(records.size() == budget);
  std::set<std::uint64_t> distinct;
  for (const auto& r : records) distinct.insert(kernel.space().to_index(r.config));
  CHECK(distinct.size() == budget);
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
