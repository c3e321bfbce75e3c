// LocalFarm: a replayed run on 3 and 5 worker processes makes the same trials, in the same
// order, with the same measurements as the serial run (single- and multi-task); a worker killed
// mid-run loses no record and the run completes (or, with no restart left, stops with a
// FarmError and resumes exactly from its log); a worker whose kernel hangs is timed out and the
// run goes on.
#include <tunekit/callbacks/log_to_file.hpp>
#include <tunekit/farm/local.hpp>
#include <tunekit/multi_task_tuner.hpp>
#include <tunekit/presets.hpp>
#include <tunekit/records/log.hpp>
#include <tunekit/replay/replay_kernel.hpp>
#include <tunekit/scheduler/round_robin.hpp>

#include "support/same_trials.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

tunekit::ReplayKernel gemm(double sleep_scale = 0.0) {
  return tunekit::ReplayKernel::from_csv(TUNEKIT_DATASETS "/gemm_RTX_3090.csv",
                                         {.overhead_seconds = 0.5, .flop = 0.0, .name = {}, .sleep_scale = sleep_scale});
}

using tunekit::test::check_same_trials;  // config, status, samples, mean and cost, in order

// A replay kernel whose runs take `run_ms` of wall time, and whose runs of one config (by its
// flat index) hang for `hang_seconds`.
struct SlowReplay {
  const tunekit::ReplayKernel* inner;
  int run_ms = 2;
  std::uint64_t hang_index = ~std::uint64_t{0};
  double hang_seconds = 0.0;
  const tunekit::SearchSpace& space() const { return inner->space(); }
  double flop() const { return inner->flop(); }
  std::string name() const { return inner->name(); }
  std::string device() const { return inner->device(); }
  tunekit::RunResult prepare(const tunekit::Config& c) const { return inner->prepare(c); }
  tunekit::RunResult run(const tunekit::Config& c, std::size_t runs, tunekit::Rng& rng) const {
    if (inner->space().to_index(c) == hang_index)
      std::this_thread::sleep_for(std::chrono::duration<double>(hang_seconds));
    std::this_thread::sleep_for(std::chrono::milliseconds(run_ms));
    return inner->run(c, runs, rng);
  }
};

// Kills one farm worker (SIGKILL) when the run has told `at` trials.
struct KillWorkerAt {
  tunekit::LocalFarm* farm;
  std::size_t at;
  std::size_t killed = 0;
  std::size_t workers_to_kill = 1;
  void on_measured(const tunekit::TuningState& s, const tunekit::Trial&) {
    if (s.history.size() != at) return;
    const auto pids = farm->worker_pids();
    for (std::size_t i = 0; i < workers_to_kill && i < pids.size(); ++i) {
      ::kill(pids[i], SIGKILL);
      ++killed;
    }
  }
};

// A run of TunerT on 2 workers with no restart left, both killed once `at` trials are told: it
// stops with a FarmError; resumed from its log on a new farm, it makes `serial`'s trials exactly
// (nothing recorded is lost or taken out of order).
template <class TunerT>
void kill_then_resume(const SlowReplay& kernel, const tunekit::TunerOptions& options, std::uint64_t seed,
                      std::size_t at, const tunekit::History& serial) {
  tunekit::test::TempDir dir;
  const auto log = dir.path / "farm.jsonl";
  std::ostringstream warnings;
  {
    tunekit::LocalFarm farm({.devices = tunekit::cpu_workers(2), .restarts = 0}, &warnings);
    TunerT parallel(kernel.space(), options);
    tunekit::Rng prng(seed);
    KillWorkerAt killer{&farm, at, 0, 2};
    CHECK_THROWS_AS(parallel.tune(kernel, farm, prng, tunekit::LogToFile(log, &warnings), killer), tunekit::FarmError);
    CHECK(killer.killed == 2);
    CHECK(parallel.history().size() >= at);
    CHECK(parallel.history().size() < serial.size());
  }
  TunerT resumed(kernel.space(), options);
  CHECK(tunekit::resume_exact(resumed, log, kernel.name(), &warnings) >= at);
  tunekit::LocalFarm farm({.devices = tunekit::cpu_workers(2)}, &warnings);
  tunekit::Rng rrng(seed);
  CHECK(resumed.tune(kernel, farm, rrng, tunekit::LogToFile(log, &warnings)).trials == serial.size());
  check_same_trials(serial, resumed.history());
  CHECK(warnings.str().find("not an exact continuation") == std::string::npos);
  CHECK(tunekit::read_records(log, kernel.space(), "").size() == serial.size());
}

}  // namespace

TEST_CASE("local farm: 3 and 5 workers make the serial run's trials (AutoTVM, replayed)") {
  auto kernel = gemm();
  const tunekit::TunerOptions options{.budget = {.trials = 96}, .plan_size = 16};
  tunekit::AutoTvmTuner serial(kernel.space(), options);
  tunekit::Rng rng(7);
  serial.tune(kernel, rng);
  REQUIRE(serial.history().size() == 96);

  for (std::size_t workers : {3u, 5u}) {
    INFO(workers << " workers");
    tunekit::LocalFarm farm({.devices = tunekit::cpu_workers(workers)});
    tunekit::AutoTvmTuner parallel(kernel.space(), options);
    tunekit::Rng prng(7);
    const auto result = parallel.tune(kernel, farm, prng);
    CHECK(result.trials == 96);
    CHECK(result.reason == tunekit::StopReason::trial_budget);
    check_same_trials(serial.history(), parallel.history());
    std::set<std::string> devices;
    for (const auto& t : parallel.history()) {
      CHECK(!t.measurement.host.empty());
      devices.insert(t.measurement.device);
    }
    CHECK(devices.size() == workers);  // every worker measured some
    CHECK(farm.worker_pids().empty());  // finished: the workers are reaped
  }
}

TEST_CASE("local farm: a multi-task run on 3 workers makes the serial run's trials and objective") {
  auto a = gemm();
  auto b = tunekit::ReplayKernel::from_csv(TUNEKIT_DATASETS "/convolution_A100.csv", {.overhead_seconds = 0.5});
  std::vector<tunekit::ReplayKernel*> kernels{&a, &b};
  auto make = [&] {
    tunekit::MultiTaskTuner<tunekit::RoundRobin, tunekit::RandomSearchTuner> mt(
        {}, {.budget = {.trials = 80}, .slot_trials = 12, .plan_size = 8});
    mt.add_task(a, {.name = "gemm"});
    mt.add_task(b, {.name = "conv"});
    return mt;
  };
  auto serial = make();
  tunekit::Rng rng(3);
  serial.tune(kernels, rng);
  auto parallel = make();
  tunekit::LocalFarm farm({.devices = tunekit::cpu_workers(3)});
  tunekit::Rng prng(3);
  const auto result = parallel.tune(kernels, farm, prng);
  CHECK(result.trials == 80);
  CHECK(parallel.slot_tasks() == serial.slot_tasks());
  CHECK(parallel.objective() == serial.objective());
  for (std::size_t k = 0; k < 2; ++k) check_same_trials(serial.tuner(k).history(), parallel.tuner(k).history());
}

TEST_CASE("local farm: a worker killed mid-run loses no record and the run completes as the serial one") {
  tunekit::test::TempDir dir;
  const auto log = dir.path / "farm.jsonl";
  const auto replay = gemm();
  SlowReplay kernel{&replay};
  const tunekit::TunerOptions options{.budget = {.trials = 60}, .plan_size = 12};
  tunekit::RandomSearchTuner serial(kernel.space(), options);
  tunekit::Rng rng(11);
  serial.tune(kernel, rng);

  std::ostringstream warnings;
  tunekit::LocalFarm farm({.devices = tunekit::cpu_workers(3)}, &warnings);
  tunekit::RandomSearchTuner parallel(kernel.space(), options);
  tunekit::Rng prng(11);
  KillWorkerAt killer{&farm, 20};
  const auto result = parallel.tune(kernel, farm, prng, tunekit::LogToFile(log), killer);
  CHECK(killer.killed == 1);
  CHECK(farm.restarts() >= 1);
  CHECK(result.trials == 60);
  check_same_trials(serial.history(), parallel.history());
  CHECK(warnings.str().find("farm worker") != std::string::npos);
  // The log: every trial once, in trial order, with the host and device that measured it.
  const auto records = tunekit::read_records(log, kernel.space(), "");
  REQUIRE(records.size() == 60);
  for (std::size_t i = 0; i < records.size(); ++i) {
    CHECK(records[i].config == serial.history()[i].config);
    CHECK(records[i].measurement.device.rfind("cpu-worker:", 0) == 0);
    CHECK(!records[i].measurement.host.empty());
  }
}

TEST_CASE("local farm: with no restart left a dead farm stops with a FarmError, and the run resumes exactly") {
  const auto replay = gemm();
  SlowReplay kernel{&replay};
  const tunekit::TunerOptions options{.budget = {.trials = 50}, .plan_size = 10};
  tunekit::RandomSearchTuner serial(kernel.space(), options);
  tunekit::Rng rng(5);
  serial.tune(kernel, rng);
  // Resumed on a farm (serially alike): the uninterrupted run's trials.
  kill_then_resume<tunekit::RandomSearchTuner>(kernel, options, 5, 15, serial.history());
}

TEST_CASE("local farm: tunekit's search keeps its configs in flight, the serial window's trials, and resumes exactly") {
  // TreeParzen<> fills the workers (fills_parallel): on a StreamingFarm of 2 workers, tune keeps
  // detail::in_flight(2) = 3 configs in flight, told in trial order, each told result followed by
  // one more ask; serially, TunerOptions::parallel 3 makes the same window and the same trials.
  // Killed (both workers, no restart left), the run resumes exactly from its log on a new farm.
  const auto replay = gemm();
  SlowReplay kernel{&replay};
  CHECK(tunekit::detail::in_flight(2) == 3);
  CHECK(tunekit::detail::in_flight(4) == 6);
  tunekit::TpeTuner serial(kernel.space(), {.budget = {.trials = 45}, .parallel = 3});
  tunekit::Rng rng(7);
  serial.tune(kernel, rng);
  REQUIRE(serial.history().size() == 45);
  const tunekit::TunerOptions options{.budget = {.trials = 45}};
  {
    tunekit::LocalFarm farm({.devices = tunekit::cpu_workers(2)});
    tunekit::TpeTuner parallel(kernel.space(), options);
    tunekit::Rng prng(7);
    const auto result = parallel.tune(kernel, farm, prng);
    CHECK(result.trials == 45);
    CHECK(result.reason == tunekit::StopReason::trial_budget);
    check_same_trials(serial.history(), parallel.history());
  }
  kill_then_resume<tunekit::TpeTuner>(kernel, options, 7, 20, serial.history());
  // The tpe-* presets measure rounds, as when their names were given: the serial run's trials.
  tunekit::TpeGpRfRestartsTuner legacy_serial(kernel.space(), options), legacy_farm(kernel.space(), options);
  tunekit::Rng ls(2), lf(2);
  legacy_serial.tune(kernel, ls);
  tunekit::LocalFarm farm2({.devices = tunekit::cpu_workers(2)});
  legacy_farm.tune(kernel, farm2, lf);
  check_same_trials(legacy_serial.history(), legacy_farm.history());
}

TEST_CASE("local farm: a worker whose kernel hangs is timed out and the run goes on") {
  const auto replay = gemm();
  // The config the serial run measures fifth hangs for 60 s in the farm's run.
  const tunekit::TunerOptions options{.budget = {.trials = 30}, .plan_size = 10};
  SlowReplay probe{&replay};
  tunekit::RandomSearchTuner serial(probe.space(), options);
  tunekit::Rng rng(2);
  serial.tune(probe, rng);
  SlowReplay kernel{&replay, 2, serial.history()[4].index, 60.0};

  std::ostringstream warnings;
  tunekit::LocalFarm farm({.devices = tunekit::cpu_workers(3), .timeout_seconds = 1.0}, &warnings);
  tunekit::RandomSearchTuner parallel(kernel.space(), options);
  tunekit::Rng prng(2);
  const auto t0 = std::chrono::steady_clock::now();
  const auto result = parallel.tune(kernel, farm, prng);
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 20.0);
  CHECK(result.trials == 30);
  REQUIRE(parallel.history().size() == 30);
  for (std::size_t i = 0; i < 30; ++i) {
    INFO("trial " << i);
    CHECK(parallel.history()[i].config == serial.history()[i].config);
    if (i == 4) {
      CHECK(parallel.history()[i].measurement.status == tunekit::Status::timeout);
      CHECK(parallel.history()[i].measurement.error.find("killed after") != std::string::npos);
    } else {
      CHECK(parallel.history()[i].measurement.samples == serial.history()[i].measurement.samples);
    }
  }
  CHECK(farm.restarts() == 1);
}

namespace {
// A replay kernel whose runs of one config crash the process (abort) and of another hang.
struct FaultyReplay {
  const tunekit::ReplayKernel* inner;
  std::uint64_t crash_index, hang_index;
  const tunekit::SearchSpace& space() const { return inner->space(); }
  double flop() const { return inner->flop(); }
  std::string name() const { return inner->name(); }
  tunekit::RunResult prepare(const tunekit::Config& c) const { return inner->prepare(c); }
  tunekit::RunResult run(const tunekit::Config& c, std::size_t runs, tunekit::Rng& rng) const {
    const auto i = inner->space().to_index(c);
    if (i == crash_index) std::abort();
    if (i == hang_index) std::this_thread::sleep_for(std::chrono::seconds(60));
    return inner->run(c, runs, rng);
  }
};
}  // namespace

TEST_CASE("local farm: with Isolated in the workers a crashing and a hanging config are recorded, no worker dies") {
  const auto replay = gemm();
  using IsolatedRandom = tunekit::WithEvaluator<tunekit::RandomSearchTuner, tunekit::Isolated<tunekit::Deterministic>>;
  const tunekit::TunerOptions options{.budget = {.trials = 24}, .plan_size = 8};
  const IsolatedRandom::Parts parts{.evaluator = tunekit::Isolated<tunekit::Deterministic>(tunekit::Deterministic(), {.timeout_seconds = 1.0})};
  IsolatedRandom serial(replay.space(), options, parts);
  tunekit::Rng rng(9);
  tunekit::ReplayKernel plain = replay;
  serial.tune(plain, rng);
  FaultyReplay kernel{&replay, serial.history()[3].index, serial.history()[10].index};

  std::ostringstream warnings;
  tunekit::LocalFarm farm({.devices = tunekit::cpu_workers(3)}, &warnings);
  IsolatedRandom parallel(replay.space(), options, parts);
  tunekit::Rng prng(9);
  const auto result = parallel.tune(kernel, farm, prng);
  CHECK(result.trials == 24);
  REQUIRE(parallel.history().size() == 24);
  CHECK(parallel.history()[3].measurement.status == tunekit::Status::runtime_error);
  CHECK(parallel.history()[3].measurement.error.find("signal") != std::string::npos);
  CHECK(parallel.history()[10].measurement.status == tunekit::Status::timeout);
  for (std::size_t i = 0; i < 24; ++i) {
    CHECK(parallel.history()[i].config == serial.history()[i].config);
    if (i != 3 && i != 10) CHECK(parallel.history()[i].measurement.samples == serial.history()[i].measurement.samples);
  }
  CHECK(farm.restarts() == 0);
  CHECK(warnings.str().empty());
}

TEST_CASE("local farm: an ask/tell loop that drives the farm itself makes tune's trials (docs/farm.md)") {
  auto kernel = gemm();
  const tunekit::TunerOptions options{.budget = {.trials = 48}, .plan_size = 16};
  tunekit::AutoTvmTuner serial(kernel.space(), options);
  tunekit::Rng srng(4);
  serial.tune(kernel, srng);

  tunekit::AutoTvmTuner tuner(kernel.space(), options);
  tunekit::Deterministic evaluator;
  tunekit::LocalFarm farm({.devices = tunekit::cpu_workers(3)});
  tunekit::Rng rng(4);
  const std::uint64_t seed = rng();  // the measurement seed, as tune draws it
  farm.start([&](const tunekit::FarmJob& job) {
    tunekit::Rng m = job.rng();  // = Tuner::measurement_rng(job.measurement_seed, job.trial)
    return evaluator.measure(kernel, job.config, m);
  });
  while (!tuner.budget_spent()) {
    const auto batch = tuner.ask(16, rng);
    if (batch.empty()) break;
    std::vector<tunekit::FarmJob> jobs;
    for (std::size_t i = 0; i < batch.size(); ++i)
      jobs.push_back({.task = 0, .config = batch[i], .measurement_seed = seed, .trial = tuner.history().size() + i});
    farm.measure(jobs, [&](std::size_t i, tunekit::Measurement&& m) {
      tuner.tell(jobs[i].config, std::move(m));
      return true;
    });
  }
  farm.finish();
  check_same_trials(serial.history(), tuner.history());
}

TEST_CASE("local farm: bad options are refused with a message") {
  CHECK_THROWS_WITH_AS(tunekit::LocalFarm({}), doctest::Contains("no devices"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(tunekit::LocalFarm({.devices = tunekit::cpu_workers(2), .timeout_seconds = 0}),
                       doctest::Contains("timeout_seconds"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(tunekit::LocalFarm({.devices = {{}}}), doctest::Contains("no name"), std::invalid_argument);
  const auto pinned = tunekit::cpu_workers(2, 3);
  REQUIRE(pinned.size() == 2);
  CHECK(pinned[1].name == "cpu:3-5");
  CHECK(pinned[1].cpus == std::vector<int>{3, 4, 5});
  CHECK(tunekit::cuda_workers({0, 2})[1].environment[0].second == "2");
}
