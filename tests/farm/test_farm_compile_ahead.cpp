// Compilation ahead in a farm's workers (FarmJob::compile_ahead, detail::JobQueue): which jobs
// a farm hands to which worker with which configs to compile ahead, and, on LocalFarm workers
// with a kernel that logs its prefetch and prepare calls (no compiler, no GPU), that a worker is
// asked to compile a config before it measures it, as a serial run would, while the run makes
// exactly the serial run's trials. MpiFarm: tests/farm/mpi_compile_ahead.cpp.
#include <tunekit/farm/job_queue.hpp>
#include <tunekit/farm/local.hpp>
#include <tunekit/multi_task_tuner.hpp>
#include <tunekit/presets.hpp>
#include <tunekit/replay/replay_kernel.hpp>
#include <tunekit/scheduler/round_robin.hpp>

#include "support/prefetch_log.hpp"
#include "support/same_trials.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace {

using tunekit::test::PrefetchLogKernel;

// Jobs whose configs are {0}, {1}, ... (task `task`), each compiling `ahead` ahead.
std::vector<tunekit::FarmJob> line_jobs(std::size_t n, std::size_t ahead, std::size_t task = 0) {
  std::vector<tunekit::FarmJob> jobs;
  for (std::size_t i = 0; i < n; ++i)
    jobs.push_back({.task = task, .config = {static_cast<tunekit::Config::value_type>(i)}, .compile_ahead = ahead});
  return jobs;
}

// take(w) as {job, the first knob value of each prefetched config}.
std::pair<std::optional<std::size_t>, std::vector<long>> take(tunekit::detail::JobQueue& q, std::size_t w) {
  std::vector<tunekit::Config> prefetch;
  const auto j = q.take(w, prefetch);
  std::vector<long> values;
  for (const auto& c : prefetch) values.push_back(static_cast<long>(c[0]));
  return {j, values};
}

// The flat indices of a history's configs, in trial order.
std::vector<std::uint64_t> indices(const tunekit::History& h) {
  std::vector<std::uint64_t> out;
  for (const auto& t : h) out.push_back(t.index);
  return out;
}

// The same trials but for the cost (the recording kernel's is wall-clock time).
// Random search with `options` and `seed`, serially and on a LocalFarm of `workers`: checks that
// the farm run makes the serial run's trials (all `options.budget.trials` of them) and returns
// the summary of its workers' prefetch and prepare log.
tunekit::test::PrefetchSummary farm_run(const tunekit::TunerOptions& options, std::uint64_t seed,
                                        std::size_t workers) {
  tunekit::test::TempDir dir;
  PrefetchLogKernel serial_kernel;
  tunekit::RandomSearchTuner serial(serial_kernel.space(), options);
  tunekit::Rng rng(seed);
  serial.tune(serial_kernel, rng);

  PrefetchLogKernel kernel{.path = (dir.path / "events").string()};
  tunekit::LocalFarm farm({.devices = tunekit::cpu_workers(workers)});
  tunekit::RandomSearchTuner parallel(kernel.space(), options);
  tunekit::Rng prng(seed);
  CHECK(parallel.tune(kernel, farm, prng).trials == options.budget.trials);
  tunekit::test::check_same_trials(serial.history(), parallel.history(), false);
  return tunekit::test::summarise(tunekit::test::read_prefetch_log(kernel.path), indices(parallel.history()));
}

}  // namespace

TEST_CASE("farm compile ahead: without it the queue is job order, a job put back goes first") {
  const auto jobs = line_jobs(5, 0);
  tunekit::detail::JobQueue q(jobs, 2);
  CHECK(take(q, 1) == std::pair{std::optional<std::size_t>{0}, std::vector<long>{}});
  CHECK(take(q, 0).first == 1);
  q.put_back(0);
  CHECK(take(q, 0).first == 0);
  CHECK(take(q, 1).first == 2);
  q.clear();
  CHECK(q.empty());
  CHECK_FALSE(take(q, 0).first.has_value());
}

TEST_CASE("farm compile ahead: each worker measures a lane of jobs it was handed to compile ahead") {
  const auto jobs = line_jobs(9, 2);
  tunekit::detail::JobQueue q(jobs, 2);
  // The first jobs: each worker takes the first job nobody holds and holds the next two.
  CHECK(take(q, 0) == std::pair{std::optional<std::size_t>{0}, std::vector<long>{1, 2}});
  CHECK(take(q, 1) == std::pair{std::optional<std::size_t>{3}, std::vector<long>{4, 5}});
  // Then its own first, topped up with the first job nobody holds.
  CHECK(take(q, 1) == std::pair{std::optional<std::size_t>{4}, std::vector<long>{6}});
  CHECK(take(q, 0) == std::pair{std::optional<std::size_t>{1}, std::vector<long>{7}});
  CHECK(take(q, 0) == std::pair{std::optional<std::size_t>{2}, std::vector<long>{8}});
  CHECK(take(q, 0) == std::pair{std::optional<std::size_t>{7}, std::vector<long>{}});
  CHECK(take(q, 0) == std::pair{std::optional<std::size_t>{8}, std::vector<long>{}});
  // Worker 0 holds nothing and nobody-held jobs are gone: it takes worker 1's first.
  CHECK(take(q, 0) == std::pair{std::optional<std::size_t>{5}, std::vector<long>{}});
  CHECK(take(q, 1) == std::pair{std::optional<std::size_t>{6}, std::vector<long>{}});
  CHECK(q.empty());
}

TEST_CASE("farm compile ahead: a restarted worker's jobs are free again, and only the job's task is compiled ahead") {
  const auto jobs = line_jobs(6, 2);
  tunekit::detail::JobQueue q(jobs, 2);
  CHECK(take(q, 0).second == std::vector<long>{1, 2});
  q.release(0);  // worker 0 died: what it compiled is gone
  CHECK(take(q, 1) == std::pair{std::optional<std::size_t>{1}, std::vector<long>{2, 3}});

  auto mixed = line_jobs(4, 3);
  mixed[1].task = 1;
  mixed[3].task = 1;
  tunekit::detail::JobQueue m(mixed, 1);
  CHECK(take(m, 0) == std::pair{std::optional<std::size_t>{0}, std::vector<long>{2}});

  // At most a worker's share of the batch less one: 5 jobs on 2 workers, lanes of 3 and 2.
  const auto short_batch = line_jobs(5, 4);
  tunekit::detail::JobQueue shares(short_batch, 2);
  CHECK(take(shares, 0) == std::pair{std::optional<std::size_t>{0}, std::vector<long>{1, 2}});
  CHECK(take(shares, 1) == std::pair{std::optional<std::size_t>{3}, std::vector<long>{4}});

  const auto some = line_jobs(4, 3);
  tunekit::detail::JobQueue off(some, 2, false);  // a farm that measures in a child
  CHECK(take(off, 0) == std::pair{std::optional<std::size_t>{0}, std::vector<long>{}});
  CHECK(take(off, 1).first == 1);
}

TEST_CASE("farm compile ahead: one worker is asked for each config 3 trials ahead, as a serial run") {
  const auto s = farm_run({.budget = {.trials = 20}, .plan_size = 8, .compile_ahead = 3}, 5, 1);
  CHECK(s.strangers == 0);
  CHECK(s.too_late == 0);
  for (std::size_t t = 0; t < 20; ++t) {
    INFO("trial " << t);
    CHECK(s.prepared[t] == 1);
    const std::size_t round_start = t / 8 * 8;
    if (t == round_start) {
      CHECK(s.prefetched[t] == 0);  // a round's first config: compiled when measured
    } else {
      CHECK(s.prefetched[t] == 1);
      // Asked before trial max(t - 3, round start) was prepared, as in the serial run.
      CHECK(s.prefetched_after[t] == static_cast<long>(std::max(t >= 3 ? t - 3 : 0, round_start)));
    }
  }
  CHECK(s.by_measurer == 20 - 3);
}

TEST_CASE("farm compile ahead: on 3 workers every config but each lane's first is compiled ahead, once") {
  // Rounds of 12: lanes 0-2, 3-5, 6-8 (a job and the 2 it compiles ahead); 9-11 compiled ahead
  // by whichever worker comes back first.
  const auto s = farm_run({.budget = {.trials = 36}, .plan_size = 12, .compile_ahead = 2}, 8, 3);
  CHECK(s.strangers == 0);
  CHECK(s.too_late == 0);
  for (std::size_t t = 0; t < 36; ++t) {
    INFO("trial " << t);
    CHECK(s.prepared[t] == 1);
    const std::size_t position = t % 12;
    CHECK(s.prefetched[t] == (position == 0 || position == 3 || position == 6 ? 0u : 1u));
  }
  // Which worker measures a config it compiled depends on timing (a worker with nothing left
  // takes another's); each of the 27 compiled ahead was compiled by one worker, before it
  // measured it if it did.
  MESSAGE(s.by_measurer << " of 27 configs measured by the worker that compiled them ahead");
}

TEST_CASE("farm compile ahead: not with an evaluator that measures in a child, nor with 0") {
  using IsolatedRandom = tunekit::WithEvaluator<tunekit::RandomSearchTuner, tunekit::Isolated<tunekit::Deterministic>>;
  static_assert(tunekit::detail::measures_in_child_v<tunekit::Isolated<tunekit::Deterministic>>);
  static_assert(!tunekit::detail::measures_in_child_v<tunekit::Deterministic>);
  tunekit::test::TempDir dir;
  PrefetchLogKernel kernel{.path = (dir.path / "events").string()};
  IsolatedRandom isolated(kernel.space(), {.budget = {.trials = 12}, .plan_size = 6, .compile_ahead = 3});
  CHECK(isolated.farm_compile_ahead<PrefetchLogKernel>() == 0);
  tunekit::RandomSearchTuner off(kernel.space(), {.budget = {.trials = 12}, .plan_size = 6, .compile_ahead = 0});
  tunekit::RandomSearchTuner on(kernel.space(), {.budget = {.trials = 12}, .plan_size = 6, .compile_ahead = 3});
  CHECK(on.farm_compile_ahead<PrefetchLogKernel>() == 3);
  CHECK(on.farm_compile_ahead<tunekit::ReplayKernel>() == 0);  // it does not compile
  tunekit::LocalFarm farm({.devices = tunekit::cpu_workers(2)});
  tunekit::Rng rng(1), rng2(1);
  CHECK(isolated.tune(kernel, farm, rng).trials == 12);
  CHECK(off.tune(kernel, farm, rng2).trials == 12);
  for (const auto& e : tunekit::test::read_prefetch_log(kernel.path)) CHECK(e.what == 'M');
}

TEST_CASE("farm compile ahead: a multi-task run on 2 workers makes the serial run's slots and trials") {
  tunekit::test::TempDir dir;
  PrefetchLogKernel a{.path = (dir.path / "a").string()}, b{.path = (dir.path / "b").string()};
  std::vector<PrefetchLogKernel*> kernels{&a, &b};
  auto make = [&] {
    tunekit::MultiTaskTuner<tunekit::RoundRobin, tunekit::RandomSearchTuner> mt(
        {}, {.budget = {.trials = 40}, .slot_trials = 10, .plan_size = 5});
    mt.add_task(a, {.name = "a"});
    mt.add_task(b, {.name = "b"});
    return mt;
  };
  PrefetchLogKernel sa, sb;
  std::vector<PrefetchLogKernel*> serial_kernels{&sa, &sb};
  auto serial = make();
  tunekit::Rng rng(4);
  serial.tune(serial_kernels, rng);
  auto parallel = make();
  tunekit::LocalFarm farm({.devices = tunekit::cpu_workers(2)});
  tunekit::Rng prng(4);
  CHECK(parallel.tune(kernels, farm, prng).trials == 40);
  CHECK(parallel.slot_tasks() == serial.slot_tasks());
  for (std::size_t k = 0; k < 2; ++k) {
    tunekit::test::check_same_trials(serial.tuner(k).history(), parallel.tuner(k).history(), false);
    const auto s = tunekit::test::summarise(tunekit::test::read_prefetch_log(kernels[k]->path),
                                            indices(parallel.tuner(k).history()));
    CHECK(s.strangers == 0);  // a task's kernel compiles its own configs only
    CHECK(s.too_late == 0);
    std::size_t prefetched = 0;
    for (std::size_t t = 0; t < s.prepared.size(); ++t) {
      CHECK(s.prepared[t] == 1);
      prefetched += s.prefetched[t];
    }
    // Rounds of 5 on 2 workers: lanes 0-2 and 3-4 (a lane holds at most its share, 3, less 1).
    CHECK(prefetched == 20 - 4 * 2);
  }
}
