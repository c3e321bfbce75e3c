// tunekit-replay: replays a tuner on a recorded tuning space (shared/datasets/*.csv) over many
// seeds and reports its search efficiency (the score of shared/datasets/PEERS.md).

#include <tunekit/tunekit.hpp>
#include <tunekit/replay/kernel_tuner_cache.hpp>
#include <tunekit/multi_task_replay.hpp>
#include <tunekit/replay_score.hpp>
#include <tunekit/preset_registry.hpp>
#include <tunekit/scheduler/by_name.hpp>
#include <tunekit/farm/local.hpp>
#include <tunekit/transfer/presets.hpp>
#if defined(TUNEKIT_REPLAY_MPI)
#include <tunekit/farm/mpi.hpp>
#endif

#include "cli.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <algorithm>
#include <cmath>
#include <functional>
#include <span>
#include <sstream>
#include <iostream>
#include <limits>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <string>
#include <vector>

namespace {

const char* const usage_head = R"(usage: tunekit-replay --dataset FILE.csv [options]

Replays a tuner on a recorded, brute-force-measured tuning space: every measurement is answered
with the dataset's recorded samples, so the search sees real noise and real failures.
Under mpirun (built with MPI) rank 0 tunes and the other ranks measure (MpiFarm); every rank
runs the same command line, e.g. mpirun -np 5 tunekit-replay --dataset FILE.csv.

options:
  --dataset FILE.csv     recorded space (format: shared/datasets/README.md), or a
                         Kernel Tuner cache file or T4 results file FILE.json
                         (docs/getting-started.md), either one gzipped or not
                         (FILE.csv.gz, FILE.json.gz) (required)
)";

// The --tuner line, whose default is the library's (default_preset).
const std::string tuner_line = "  --tuner NAME           tuner preset (docs/concepts.md):                      [" +
                               std::string(tunekit::default_preset) + "]\n";

const char* const usage_tail = R"(  --plan-size N          configs per round (AutoTVM's plan_size)                  [64]
  --budget N             distinct configs measured per run, failed ones included  [400]
  --seeds S              runs with seeds 0 .. S-1                                 [25]
  --flop F               FLOP per kernel run, to print GFLOPS                     [unknown]
  --evaluator NAME       measurement policy: preset (the tuner's own), deterministic
                         (warm-up 1, --repeat runs) or adaptive (AdaTune's AdaptiveCV:
                         warm-up 1, micro-batches of --batch runs, at most --max-runs,
                         until the throughput's CV < --cv-threshold)              [preset]
  --repeat N             runs per config of deterministic                         [3]
  --max-runs N           adaptive: most runs per config (AdaTune's n)             [500]
  --batch N              adaptive: runs per micro-batch (AdaTune's B)             [50]
  --cv-threshold X       adaptive: stopping threshold                             [0.1]
  --overhead SECONDS     simulated cost per config on top of its run times        [1.0]
  --objective NAME       what a Kernel Tuner cache or T4 file is replayed by: time or
                         another of its per-config values (GFLOP/s, energy, GFLOPS/W,
                         ...), better higher replayed as 1 / it, so that the scores
                         are ratios of its values; the clock is charged the recorded
                         times (docs/getting-started.md)     [the file's objective]
  --higher-is-better yes|no
                         the objective's direction    [Kernel Tuner's default for it]
  --out trials.csv       one row per (seed, trial): its status and time (the objective's
                         replayed value), the best so far, the tuning clock, the
                         measurement seconds so far, the score
  --summary-json FILE    the summary as JSON (score per budget: median, quartiles and
                         mean over the seeds; evals to 0.95/0.99)
  --workers W            measure each batch on W local worker processes in parallel
                         (LocalFarm): the same trials and results as serially   [0: serial]
  --sleep X              make each config's simulated time take X times that in wall
                         time (sleep), e.g. for the farm's throughput              [0]
  --worker-timeout S     a farm worker that takes S s for one config is killed and
                         restarted (under mpirun: the rank measures each config in a
                         child process killed after S s); the config is recorded as
                         timeout                                                 [none]
  --log FILE             tuning log, one JSON line per measurement (LogToFile); with
                         --seeds 1 only                                          [none]
  --resume               continue a killed run from --log exactly (resume_exact): the
                         same trials and results as the uninterrupted run
  --transfer FILE        an earlier run's records to start from (repeatable): a tunekit log
                         (.jsonl, every task of it) or a recorded space (dataset CSV,
                         Kernel Tuner cache, T4 file; gzipped or not), matched to the
                         dataset's knobs by name and value (docs/concepts.md, "Transfer")
  --transfer-method M    how --transfer is used: tunekit (TreeParzen's transfer parts, with
                         --tuner tpe), autotvm (AutoTVM's TransferMargin on the autotvm
                         preset), top-first (the sources' fastest configs in order, then
                         random ones; no --tuner)                              [tunekit]
  --quiet                no per-seed lines
  --help                 this text

Time score P (Willemsen et al., FGCS 2024; include/tunekit/replay_score.hpp): c_bar = mean
simulated seconds to measure one config of the space with the run's evaluator, T = budget * c_bar.
f_rand(t) = expected best recorded time of random search after t / c_bar configs; f_s(t) =
recorded time of the config the tuner holds as best at tuning clock t (measurement costs plus
search time). P = mean over t = T/100, 2T/100, ..., T of (f_rand - f_s) / (f_rand - optimum),
clipped to [-1, 1]: about 0 for random search, 1 for the optimum from the start.

Multi-task replay (several --dataset, or --scheduler): the datasets are the operators of one
model, tuned in slots given out by a scheduler; the objective is the weighted sum of the tasks'
best latencies, reported over simulated measurement seconds (summed over tasks). The recorded
objective is the same sum with each task's best config at its recorded mean time (the measured
best of many noisy configs lies below it): what the tuned model would run.
  --dataset FILE.csv     once per task, in task order
  --scheduler NAME       sequential, round-robin, random, flop, bandit, bandit-epsilon,
                         bandit-softmax, gradient (docs/concepts.md)              [round-robin]
  --weights W1,W2,...    how often each operator appears                         [1 each]
  --flops F1,F2,...      FLOP per run of each task (FlopProportional, Ansor's groups;
                         0: unknown)                                              [0 each]
  --slot N               trials per slot                                          [16]
  --budget N             trials of all tasks together                  [400 x tasks]
  --out objective.csv    one row per (seed, trial): slot, task, simulated seconds, objective,
                         recorded objective
  --summary-json FILE    the summary as JSON: per seed the final objective and the simulated
                         seconds to reach 1.05x and 1.01x of it, the final recorded objective
                         and the seconds to 1.05x and 1.01x of the optimum by it; their medians
  --confirm K            after each run, measure each task's K fastest configs again, 3 turns,
                         in turns, and keep the fastest by them (tunekit::confirm_tasks, as
                         the tuning programs' --confirm); the summary adds the recorded
                         objective of the confirmed configs and the seconds the confirmation
                         took; 0: none                                            [0]
)";
// The --confirm text above states ConfirmParams' turns as a number.
static_assert(tunekit::ConfirmParams{}.turns == 3, "the --confirm help text says 3 turns");

struct Args {
  std::string dataset, tuner, evaluator, out, summary_json, log, objective;
  // Transfer: the sources and how they are used (empty: none).
  std::vector<std::string> transfer;
  std::string transfer_method;
  std::optional<bool> higher_is_better;
  std::size_t budget, seeds, plan_size, repeat, max_runs, batch;
  double flop, overhead, cv_threshold, sleep, worker_timeout;
  bool quiet, resume;
  std::size_t workers;
  // Multi-task replay.
  std::vector<std::string> datasets;
  std::string scheduler;
  std::vector<double> weights, flops;
  std::size_t slot, confirm;
  bool multi;
};

std::vector<double> number_list(tunekit::cli::CommandLine& cl, const std::string& name, std::size_t n,
                                 double fallback) {
  const std::string text = cl.text(name, "");
  if (text.empty()) return std::vector<double>(n, fallback);
  std::vector<double> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    std::size_t pos = 0;
    double x = -1;
    try {
      x = std::stod(item, &pos);
    } catch (...) {
      pos = 0;
    }
    if (pos != item.size() || !(x >= 0) || !std::isfinite(x))
      cl.fail(name + ": not a non-negative number: '" + item + "'");
    out.push_back(x);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (out.size() != n)
    cl.fail(name + " has " + std::to_string(out.size()) + " values for " + std::to_string(n) + " datasets");
  return out;
}

// Whether this process is a rank of an MPI job of several (built with MPI).
bool under_mpi() {
#if defined(TUNEKIT_REPLAY_MPI)
  return tunekit::MpiEnvironment::active();
#else
  return false;
#endif
}

Args parse(tunekit::cli::CommandLine& cl) {
  Args a;
  a.datasets = cl.texts("--dataset");
  a.dataset = a.datasets.empty() ? "" : a.datasets.front();
  a.scheduler = cl.text("--scheduler", "");
  a.multi = a.datasets.size() > 1 || !a.scheduler.empty();
  if (a.scheduler.empty()) a.scheduler = "round-robin";
  a.slot = cl.count("--slot", 16);
  a.confirm = cl.natural("--confirm", 0);
  a.weights = number_list(cl, "--weights", a.datasets.size(), 1.0);
  a.flops = number_list(cl, "--flops", a.datasets.size(), 0.0);
  a.tuner = cl.text("--tuner", std::string(tunekit::default_preset));
  a.transfer = cl.texts("--transfer");
  a.transfer_method = cl.text("--transfer-method", "tunekit");
  if (cl.given("--transfer-method") && a.transfer.empty()) cl.fail("--transfer-method needs --transfer FILE");
  if (!a.transfer.empty()) {
    const bool named = cl.given("--tuner");
    if (a.transfer_method == "tunekit") {
      if (named && a.tuner != "tpe")
        cl.fail("--transfer-method tunekit is TreeParzen's transfer and applies to --tuner tpe, not '" + a.tuner +
                "' (AutoTVM's transfer: --transfer-method autotvm)");
    } else if (a.transfer_method == "autotvm") {
      if (named && a.tuner != "autotvm")
        cl.fail("--transfer-method autotvm is AutoTVM's transfer (TransferMargin on the autotvm preset) and applies "
                "to --tuner autotvm, not '" + a.tuner + "'");
      a.tuner = "autotvm";
    } else if (a.transfer_method == "top-first") {
      if (named) cl.fail("--transfer-method top-first is a tuner of its own: leave out --tuner");
      a.tuner = "top-first";
    } else {
      cl.fail("unknown --transfer-method '" + a.transfer_method + "' (available: tunekit, autotvm, top-first)");
    }
    if (a.datasets.size() > 1 || cl.given("--scheduler")) cl.fail("--transfer is for a single-task replay");
  }
  a.evaluator = cl.text("--evaluator", "preset");
  a.repeat = cl.count("--repeat", 3);
  a.max_runs = cl.count("--max-runs", 500);
  a.batch = cl.count("--batch", 50);
  a.cv_threshold = cl.real("--cv-threshold", 0.1);
  a.out = cl.text("--out", "");
  a.summary_json = cl.text("--summary-json", "");
  a.budget = cl.count("--budget", 400 * (a.multi ? std::max<std::size_t>(a.datasets.size(), 1) : 1));
  a.seeds = cl.count("--seeds", 25);
  a.plan_size = cl.count("--plan-size", 64);
  a.flop = cl.real("--flop", 0.0);
  a.overhead = cl.real("--overhead", 1.0);
  a.objective = cl.text("--objective", "");
  if (const auto h = cl.text("--higher-is-better", ""); h == "yes" || h == "no") a.higher_is_better = h == "yes";
  else if (cl.given("--higher-is-better")) cl.fail("--higher-is-better takes yes or no, not '" + h + "'");
  a.quiet = cl.flag("--quiet");
  a.log = cl.text("--log", "");
  a.resume = cl.flag("--resume");
  a.workers = cl.natural("--workers", 0);
  a.sleep = cl.real("--sleep", 0.0);
  a.worker_timeout = cl.real("--worker-timeout", std::numeric_limits<double>::infinity());
  cl.reject_unknown();
  if (!(a.sleep >= 0) || !std::isfinite(a.sleep)) cl.fail("--sleep must be finite and >= 0");
  if (!(a.worker_timeout > 0)) cl.fail("--worker-timeout must be positive");
  if (cl.given("--worker-timeout") && a.workers == 0 && !under_mpi())
    cl.fail("--worker-timeout is for a farm (--workers W, or under mpirun)");
  if (a.dataset.empty()) cl.fail("--dataset is required");
  if (!a.log.empty() && (a.seeds != 1 || a.multi)) cl.fail("--log is for a single-task replay with --seeds 1");
  if (a.resume && a.log.empty()) cl.fail("--resume needs --log FILE");
  if (!a.multi && (cl.given("--weights") || cl.given("--flops") || cl.given("--slot") || cl.given("--confirm")))
    cl.fail("--weights, --flops, --slot and --confirm are for a multi-task replay (several --dataset or --scheduler)");
  for (double w : a.weights)
    if (!(w > 0)) cl.fail("--weights must be positive");
  if (a.multi) {
    try {
      tunekit::make_scheduler(a.scheduler);
    } catch (const std::invalid_argument& e) {
      cl.fail(e.what());
    }
  }
  if (a.evaluator != "preset" && a.evaluator != "deterministic" && a.evaluator != "adaptive")
    cl.fail("unknown evaluator '" + a.evaluator + "' (available: preset, deterministic, adaptive)");
  return a;
}

// The ReplayOptions of a dataset of the command line.
tunekit::ReplayOptions replay_options(const Args& a, double flop, std::string name, double sleep) {
  return {.overhead_seconds = a.overhead, .flop = flop, .name = std::move(name), .sleep_scale = sleep,
          .objective = a.objective, .higher_is_better = a.higher_is_better};
}

// "optimum 1.5 ms", or for another objective its name, direction and optimum value.
std::string optimum_text(const tunekit::ReplayKernel& k) {
  std::ostringstream o;
  const auto& opt = k.options();
  if (opt.objective == "time") {
    o << "optimum " << k.optimum_ms() << " ms";
  } else if (opt.higher_is_better.value_or(false)) {
    o << "objective " << opt.objective << " (better higher, replayed as 1 / it), optimum " << 1.0 / k.optimum_ms();
  } else {
    o << "objective " << opt.objective << " (better lower), optimum " << k.optimum_ms();
  }
  return o.str();
}

// This process only measures for an MPI farm (a rank other than 0 under mpirun).
bool mpi_worker = false;

// Calls run(farm) with the measurement farm the command line asks for: the MPI ranks under
// mpirun, --workers local processes, or tunekit::detail::NoFarm (serial).
template <class Run>
auto on_farm(const Args& a, Run&& run) {
#if defined(TUNEKIT_REPLAY_MPI)
  if (tunekit::MpiEnvironment::active()) {
    tunekit::MpiFarm farm({.timeout_seconds = a.worker_timeout});
    return run(farm);
  }
#endif
  if (a.workers > 0) {
    tunekit::LocalFarm farm({.devices = tunekit::cpu_workers(a.workers), .timeout_seconds = a.worker_timeout});
    return run(farm);
  }
  tunekit::detail::NoFarm serial;
  return run(serial);
}

using RunFn = std::function<tunekit::ReplayTrace(tunekit::ReplayKernel&, const Args&, tunekit::Rng&)>;

template <class TunerT>
tunekit::ReplayTrace run_one(tunekit::ReplayKernel& kernel, const Args& a, tunekit::Rng& rng,
                             typename TunerT::Parts parts) {
  TunerT tuner(kernel.space(), {.budget = {.trials = a.budget}, .plan_size = a.plan_size}, std::move(parts));
  // The log is rank 0's (the tuning process's) alone.
  const bool log = !a.log.empty() && !mpi_worker;
  if (log) {
    if (!a.resume) std::filesystem::remove(a.log);
    const auto resumed = tunekit::resume_exact(tuner, a.log, kernel.name());
    if (resumed) std::cerr << "tunekit-replay: resuming: " << resumed << " measurements from " << a.log << "\n";
  }
  return on_farm(a, [&]<class F>(F& farm) {
    auto callback = log ? tunekit::LogToFile(a.log) : tunekit::LogToFile::none();
    if constexpr (std::is_same_v<F, tunekit::detail::NoFarm>)
      return tunekit::replay_trace(tuner, kernel, rng, callback);
    else
      return tunekit::replay_trace(tuner, kernel, farm, rng, callback);
  });
}

// c_bar of the time score, measured with the evaluator the runs use.
using SecondsPerConfigFn = std::function<double(tunekit::ReplayKernel&, const Args&)>;

using MultiRunFn = std::function<tunekit::MultiTaskTrace(std::span<tunekit::ReplayKernel>,
                                                          std::span<const tunekit::TaskOptions>, const Args&,
                                                          tunekit::Rng&)>;

template <class TunerT>
tunekit::MultiTaskTrace run_multi_one(std::span<tunekit::ReplayKernel> kernels,
                                      std::span<const tunekit::TaskOptions> tasks, const Args& a, tunekit::Rng& rng,
                                      typename TunerT::Evaluator evaluator) {
  return on_farm(a, [&](auto& farm) {
    return tunekit::trace_multi_task<TunerT>(
        kernels, tasks, tunekit::make_scheduler(a.scheduler),
        {.budget = {.trials = a.budget}, .slot_trials = a.slot, .plan_size = a.plan_size}, farm, rng,
        {.evaluator = std::move(evaluator)},
        a.confirm > 0 ? std::optional<tunekit::ConfirmParams>({.top = a.confirm}) : std::nullopt);
  });
}

// Calls run(TunerT-with-the-chosen-evaluator, evaluator) for --evaluator.
template <class TunerT, class Run>
auto with_evaluator(const Args& a, Run&& run) {
  if (a.evaluator == "deterministic")
    return run.template operator()<tunekit::WithEvaluator<TunerT, tunekit::Deterministic>>(
        tunekit::Deterministic({.warmup = 1, .repeat = a.repeat}));
  if (a.evaluator == "adaptive")
    return run.template operator()<tunekit::WithEvaluator<TunerT, tunekit::AdaptiveCV>>(
        tunekit::AdaptiveCV({.max_runs = a.max_runs, .batch = a.batch, .threshold = a.cv_threshold}));
  return run.template operator()<TunerT>(typename TunerT::Evaluator());
}

template <class TunerT>
RunFn runner() {
  return [](tunekit::ReplayKernel& kernel, const Args& a, tunekit::Rng& rng) {
    return with_evaluator<TunerT>(a, [&]<class T>(typename T::Evaluator e) {
      return run_one<T>(kernel, a, rng, {.evaluator = std::move(e)});
    });
  };
}

// The runner of a transfer method (--transfer-method): TunerT with the parts `make` sets (its
// model or optimizer made from the sources) and the evaluator of --evaluator.
template <class TunerT, class Make>
RunFn transfer_runner(Make make) {
  return [make](tunekit::ReplayKernel& kernel, const Args& a, tunekit::Rng& rng) {
    return with_evaluator<TunerT>(a, [&]<class T>(typename T::Evaluator e) {
      typename T::Parts parts{};
      make(parts);
      parts.evaluator = std::move(e);
      return run_one<T>(kernel, a, rng, std::move(parts));
    });
  };
}

template <class TunerT>
SecondsPerConfigFn seconds_per_config() {
  return [](tunekit::ReplayKernel& kernel, const Args& a) {
    return with_evaluator<TunerT>(a, [&]<class T>(typename T::Evaluator e) {
      return tunekit::seconds_per_config(kernel, std::move(e));
    });
  };
}

template <class TunerT>
MultiRunFn multi_runner() {
  return [](std::span<tunekit::ReplayKernel> kernels, std::span<const tunekit::TaskOptions> tasks, const Args& a,
            tunekit::Rng& rng) {
    return with_evaluator<TunerT>(a, [&]<class T>(typename T::Evaluator e) {
      return run_multi_one<T>(kernels, tasks, a, rng, std::move(e));
    });
  };
}

struct Runners {
  RunFn single;
  MultiRunFn multi;
  SecondsPerConfigFn seconds_per_config;
};

template <class TunerT>
Runners runners() {
  return {runner<TunerT>(), multi_runner<TunerT>(), seconds_per_config<TunerT>()};
}

nlohmann::json median_or_null(const std::vector<double>& v) {
  const double m = tunekit::quantile(v, 0.5);
  return std::isfinite(m) ? nlohmann::json(m) : nlohmann::json(nullptr);
}

nlohmann::json finite_or_null(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); }

// The multi-task replay: the datasets as the operators of one model.
// The summary JSON, when --summary-json asks for it.
void write_summary(const Args& args, const nlohmann::json& summary, tunekit::cli::CommandLine& cl) {
  if (args.summary_json.empty()) return;
  std::ofstream js(args.summary_json);
  if (!js) cl.fail("cannot write " + args.summary_json);
  js << summary.dump(2) << '\n';
}

int run_multi(const Args& args, const MultiRunFn& run, tunekit::cli::CommandLine& cl) {
  try {
    std::vector<tunekit::ReplayKernel> kernels;
    std::vector<tunekit::TaskOptions> tasks;
    std::vector<std::string> names;
    double optimum = 0.0;
    for (std::size_t i = 0; i < args.datasets.size(); ++i) {
      const std::filesystem::path path(args.datasets[i]);
      std::string name = tunekit::recorded_space_name(path);
      if (std::find(names.begin(), names.end(), name) != names.end()) name += "#" + std::to_string(i + 1);
      names.push_back(name);
      kernels.push_back(tunekit::replay_from_file(path, replay_options(args, args.flops[i], name, args.sleep)));
      // Ansor's operator tag: the dataset's kernel family, its file name up to the first '_'.
      tasks.push_back({.name = name, .weight = args.weights[i], .flop = args.flops[i],
                       .tag = name.substr(0, name.find('_'))});
      optimum += args.weights[i] * kernels.back().optimum_ms();
      if (!mpi_worker)
        std::cerr << "tunekit-replay: task " << i << " " << name << ": weight " << args.weights[i] << ", "
                << kernels.back().row_count() << " recorded configs, " << optimum_text(kernels.back()) << "\n";
    }
    for (const auto& k : kernels)
      if (k.options().objective != kernels.front().options().objective)
        throw tunekit::DatasetError("the datasets are replayed by different objectives (" + names.front() + ": " +
                                    kernels.front().options().objective + ", " + k.name() + ": " +
                                    k.options().objective + "); name one with --objective");
    if (!mpi_worker)
      std::cerr << "tunekit-replay: scheduler " << args.scheduler << ", tuner " << args.tuner << ", slots of "
              << args.slot << " trials, budget " << args.budget << ", " << args.seeds << " seeds\n";

    std::ofstream out;
    if (!args.out.empty() && !mpi_worker) {
      out.open(args.out);
      if (!out) cl.fail("cannot write " + args.out);
      out << "seed,trial,slot,task,simulated_seconds,objective_ms,recorded_objective_ms\n";
    }
    std::vector<tunekit::MultiTaskTrace> traces;
    std::vector<double> final_ms, to105, to101, wall, sched;
    // The same on the recorded objective (MultiTaskTrace::recorded_objective), to 1.05x and 1.01x
    // of the datasets' optimum.
    std::vector<double> final_rec_ms, rec105, rec101;
    // With --confirm: the recorded objective of the confirmed configs, and the confirmation's seconds.
    std::vector<double> confirmed_ms, confirm_seconds;
    std::vector<std::vector<double>> slots_per_task(kernels.size());
    for (std::size_t seed = 0; seed < args.seeds; ++seed) {
      tunekit::Rng rng(seed);
      traces.push_back(run(kernels, tasks, args, rng));
      if (mpi_worker) continue;  // it measured for rank 0
      const auto& t = traces.back();
      final_ms.push_back(t.final_objective() * 1e3);
      to105.push_back(t.seconds_to(1.05));
      to101.push_back(t.seconds_to(1.01));
      final_rec_ms.push_back(t.final_recorded_objective() * 1e3);
      rec105.push_back(t.recorded_seconds_to(1.05, optimum * 1e-3));
      rec101.push_back(t.recorded_seconds_to(1.01, optimum * 1e-3));
      wall.push_back(t.wall_seconds);
      sched.push_back(t.scheduler_seconds);
      confirmed_ms.push_back(t.confirmed_recorded_objective * 1e3);
      confirm_seconds.push_back(t.confirm_seconds);
      std::vector<std::size_t> slots(kernels.size(), 0);
      for (std::size_t k : t.slot_tasks) ++slots[k];
      for (std::size_t k = 0; k < slots.size(); ++k) slots_per_task[k].push_back(static_cast<double>(slots[k]));
      if (out.is_open())
        for (std::size_t i = 0; i < t.objective.size(); ++i) {
          const auto& p = t.objective[i];
          char num[128];
          std::snprintf(num, sizeof num, "%.3f,%.6g,%.6g", p.measure_seconds, p.objective * 1e3,
                        t.recorded_objective[i] * 1e3);
          out << seed << ',' << p.trial << ',' << p.slot << ',' << names[p.task] << ',' << num << '\n';
        }
      if (!args.quiet) {
        std::cerr << "  seed " << seed << ": final objective " << final_ms.back() << " ms (recorded "
                  << final_rec_ms.back() << " ms";
        if (args.confirm > 0) std::cerr << ", confirmed " << confirmed_ms.back() << " ms";
        std::cerr << "), 1.05x at " << to105.back() << " s, 1.01x at " << to101.back() << " s; slots per task";
        for (std::size_t s : slots) std::cerr << ' ' << s;
        std::cerr << " (" << t.wall_seconds << " s)\n";
      }
    }

    if (mpi_worker) return 0;
    // The objective over simulated time: its quartiles over seeds at 10 points up to the shortest
    // run, measured and recorded (MultiTaskTrace::recorded_objective; null on live kernels).
    double horizon = std::numeric_limits<double>::infinity();
    for (const auto& t : traces)
      if (!t.objective.empty()) horizon = std::min(horizon, t.objective.back().measure_seconds);
    nlohmann::json over_time = nlohmann::json::array();
    std::printf("%12s %14s %14s %14s %14s\n", "sim. seconds", "p25 obj. ms", "median obj. ms", "p75 obj. ms",
                "median rec. ms");
    if (std::isfinite(horizon))
      for (int i = 1; i <= 10; ++i) {
        const double at = horizon * i / 10.0;
        std::vector<double> v, rec;
        for (const auto& t : traces) {
          double obj = std::numeric_limits<double>::infinity(), r = obj;
          for (std::size_t k = 0; k < t.objective.size() && t.objective[k].measure_seconds <= at; ++k) {
            obj = t.objective[k].objective;
            if (!t.recorded_objective.empty()) r = t.recorded_objective[k];
          }
          v.push_back(obj * 1e3);
          rec.push_back(r * 1e3);
        }
        // p25, median, p75 of the measured (q[0]) and of the recorded (q[1]) objective.
        double q[2][3];
        nlohmann::json point{{"seconds", at}};
        for (int k = 0; k < 2; ++k) {
          const std::string prefix = k == 0 ? "" : "recorded_";
          const char* names[3] = {"p25_ms", "median_ms", "p75_ms"};
          for (int j = 0; j < 3; ++j) {
            q[k][j] = tunekit::quantile(k == 0 ? v : rec, 0.25 * (j + 1));
            point[prefix + names[j]] = finite_or_null(q[k][j]);
          }
        }
        std::printf("%12.1f %14.6g %14.6g %14.6g %14.6g\n", at, q[0][0], q[0][1], q[0][2], q[1][1]);
        over_time.push_back(point);
      }

    nlohmann::json summary;
    summary["mode"] = "multi-task";
    nlohmann::json ds = nlohmann::json::array();
    for (const auto& d : args.datasets) ds.push_back(std::filesystem::path(d).filename().string());
    summary["datasets"] = ds;
    summary["weights"] = args.weights;
    summary["flops"] = args.flops;
    summary["scheduler"] = args.scheduler;
    summary["tuner"] = args.tuner;
    summary["evaluator"] = args.evaluator;
    summary["seeds"] = args.seeds;
    summary["budget"] = args.budget;
    summary["slot_trials"] = args.slot;
    summary["optimum_objective_ms"] = optimum;
    // Per seed (null where infinite) as NAME, and the median over seeds as NAME_median.
    auto per_seed = [&](const std::string& name, const std::vector<double>& v) {
      nlohmann::json j = nlohmann::json::array();
      for (double x : v) j.push_back(finite_or_null(x));
      summary[name] = j;
      summary[name + "_median"] = median_or_null(v);
    };
    per_seed("final_objective_ms", final_ms);
    per_seed("seconds_to_1.05x", to105);
    per_seed("seconds_to_1.01x", to101);
    per_seed("final_recorded_objective_ms", final_rec_ms);
    per_seed("recorded_seconds_to_1.05x_optimum", rec105);
    per_seed("recorded_seconds_to_1.01x_optimum", rec101);
    summary["confirm"] = args.confirm;
    if (args.confirm > 0) {
      per_seed("confirmed_recorded_objective_ms", confirmed_ms);
      per_seed("confirm_seconds", confirm_seconds);
    }
    nlohmann::json spt = nlohmann::json::array();
    for (const auto& v : slots_per_task) spt.push_back(tunekit::quantile(v, 0.5));
    summary["slots_per_task_median"] = spt;
    summary["objective_over_time"] = over_time;
    summary["wall_seconds_per_run"] = tunekit::stats::mean(wall);
    summary["scheduler_seconds_per_run"] = tunekit::stats::mean(sched);
    std::printf("final objective %s ms (optimum of the datasets %.6g ms); simulated seconds to 1.05x of it: %s, "
                "to 1.01x: %s (medians over seeds; null: not reached by half)\n",
                summary["final_objective_ms_median"].dump().c_str(), optimum,
                summary["seconds_to_1.05x_median"].dump().c_str(), summary["seconds_to_1.01x_median"].dump().c_str());
    std::printf("recorded objective (the held configs at their recorded means) %s ms; simulated seconds to 1.05x "
                "of the optimum: %s, to 1.01x: %s\n",
                summary["final_recorded_objective_ms_median"].dump().c_str(),
                summary["recorded_seconds_to_1.05x_optimum_median"].dump().c_str(),
                summary["recorded_seconds_to_1.01x_optimum_median"].dump().c_str());
    if (args.confirm > 0)
      std::printf("confirmed (each task's %zu fastest measured again, %zu turns): recorded objective %s ms, "
                  "%s simulated seconds of confirmation\n",
                  args.confirm, tunekit::ConfirmParams{}.turns,
                  summary["confirmed_recorded_objective_ms_median"].dump().c_str(),
                  summary["confirm_seconds_median"].dump().c_str());
    write_summary(args, summary, cl);
  } catch (const std::exception& e) {
    std::cerr << "tunekit-replay: error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
#if defined(TUNEKIT_REPLAY_MPI)
  // Under mpirun: rank 0 tunes, the other ranks measure (MpiFarm).
  tunekit::MpiEnvironment mpi(argc, argv);
  mpi_worker = tunekit::MpiEnvironment::active() && tunekit::MpiEnvironment::rank() > 0;
#endif
  tunekit::cli::CommandLine cl(argc, argv, "tunekit-replay", usage_head + tuner_line + tunekit::preset_help(25) + usage_tail);
  const Args args = parse(cl);
#if defined(TUNEKIT_REPLAY_MPI)
  if (tunekit::MpiEnvironment::active() && args.workers > 0)
    cl.fail("--workers is for local worker processes; under mpirun the other ranks measure");
  if (tunekit::MpiEnvironment::active() && !mpi_worker) {
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    std::cerr << "tunekit-replay: measuring on " << size - 1 << " MPI ranks\n";
  }
#endif
  if (args.workers > 0) std::cerr << "tunekit-replay: measuring on " << args.workers << " local worker processes\n";
  Runners run;
  try {
    // top-first (a transfer method) measures as the random preset does.
    run = tunekit::with_preset(args.tuner == "top-first" ? "random" : args.tuner,
                               []<class TunerT>() { return runners<TunerT>(); });
  } catch (const std::invalid_argument& e) {
    cl.fail(e.what());
  }

  if (args.multi) return run_multi(args, run.multi, cl);
  try {
    auto kernel = tunekit::replay_from_file(args.dataset, replay_options(args, args.flop, {}, args.sleep));
    const std::size_t valid = kernel.row_count();
    if (!mpi_worker)
      std::cerr << "tunekit-replay: " << args.dataset << ": " << valid << " recorded configs ("
              << kernel.failed_count() << " failed) of " << kernel.space().product_size()
              << ", " << optimum_text(kernel) << "; tuner " << args.tuner << ", budget "
              << args.budget << ", " << args.seeds << " seeds\n";

    // Transfer: the sources matched to the dataset once, shared by every seed's tuner.
    std::optional<tunekit::TransferSource> source;
    if (!args.transfer.empty()) {
      std::vector<std::filesystem::path> files(args.transfer.begin(), args.transfer.end());
      source.emplace(kernel.space(), tunekit::sources_from_files(files));
      const tunekit::TransferPrior prior(kernel.space(), *source);
      if (!mpi_worker) {
        std::cerr << "tunekit-replay: transfer (" << args.transfer_method << ") from " << source->rows()
                  << " records, knobs in common:";
        for (const auto& k : source->common_knobs()) std::cerr << ' ' << k;
        std::cerr << "; " << prior.recorded_configs().size() << " of them configs of the dataset\n";
        for (const auto& s : source->sources())
          if (s.left_out > 0)
            std::cerr << "tunekit-replay: transfer: " << s.identity.file << ": " << s.left_out << " of " << s.records
                      << " records left out (values the dataset's knobs lack)\n";
      }
      if (args.transfer_method == "tunekit")
        run.single = transfer_runner<tunekit::TpeTransferTuner>([prior](auto& parts) {
          parts.optimizer = tunekit::TpeTransferSearch(
              {}, {.start = tunekit::TransferStart<>(prior), .model_start = tunekit::TransferModelStart<>(prior)});
        });
      else if (args.transfer_method == "autotvm")
        run.single = transfer_runner<tunekit::AutoTvmTransferTuner>([src = *source](auto& parts) {
          parts.surrogate = tunekit::TransferMargin<tunekit::GradientBoostedTrees>(src);
        });
      else
        run.single = transfer_runner<tunekit::TopFirstTuner>([prior, &kernel](auto& parts) {
          parts.optimizer = tunekit::TopFirst(kernel.space(), prior);
        });
    }

    std::ofstream out;
    if (!args.out.empty() && !mpi_worker) {
      out.open(args.out);
      if (!out) cl.fail("cannot write " + args.out);
      out << "seed,trial,config,status,time_ms,best_time_ms,simulated_seconds,measure_seconds,score\n";
    }

    std::vector<tunekit::ReplayTrace> traces;
    for (std::size_t seed = 0; seed < args.seeds; ++seed) {
      tunekit::Rng rng(seed);
      traces.push_back(run.single(kernel, args, rng));
      if (mpi_worker) continue;  // it measured for rank 0
      const auto& t = traces.back();
      double best_ms = std::numeric_limits<double>::infinity(), measuring = 0.0;
      for (std::size_t i = 0; i < t.trials.size(); ++i) {
        const auto& tr = t.trials[i];
        measuring += tr.measurement.cost;
        const double ms = tr.measurement.ok() ? tr.measurement.mean * 1e3
                                              : std::numeric_limits<double>::infinity();
        best_ms = std::min(best_ms, ms);
        if (out.is_open()) {
          char num[160];
          std::snprintf(num, sizeof num, "%.6g,%.6g,%.3f,%.6f,%.6g", ms, best_ms, tr.tuning_seconds, measuring,
                        t.score[i]);
          out << seed << ',' << i + 1 << ',' << kernel.space().describe(tr.config) << ','
              << tunekit::to_string(tr.measurement.status) << ',' << num << '\n';
        }
      }
      if (!args.quiet)
        std::cerr << "  seed " << seed << ": " << t.trials.size() << " trials, final score "
                  << tunekit::score_at(t, args.budget) << " (" << t.wall_seconds << " s)\n";
    }

    if (mpi_worker) return 0;
    nlohmann::json summary;
    summary["dataset"] = std::filesystem::path(args.dataset).filename().string();
    summary["tuner"] = args.tuner;
    summary["evaluator"] = args.evaluator;
    if (source) {
      summary["transfer_method"] = args.transfer_method;
      summary["transfer"] = tunekit::sources_to_json(*source);
    }
    summary["seeds"] = args.seeds;
    summary["budget"] = args.budget;
    summary["optimum_ms"] = kernel.optimum_ms();
    summary["objective"] = kernel.options().objective;
    summary["higher_is_better"] = kernel.options().higher_is_better.value_or(false);
    // Both scores (replay_score.hpp): the tuner's own pick, and the best measured (PEERS.md's).
    for (const auto kind : {tunekit::ScoreKind::held, tunekit::ScoreKind::found}) {
      const std::string prefix = kind == tunekit::ScoreKind::held ? "" : "found_";
      nlohmann::json med = nlohmann::json::object(), p25 = nlohmann::json::object(),
                     p75 = nlohmann::json::object(), mean = nlohmann::json::object();
      std::printf("%s\n%-8s %8s %8s %8s\n",
                  kind == tunekit::ScoreKind::held ? "score (the tuner's best by its own measurements):"
                                                   : "found (the best measured config, PEERS.md's score):",
                  "budget", "p25", "median", "p75");
      for (std::size_t b : tunekit::score_checkpoints(args.budget)) {
        std::vector<double> s;
        for (const auto& t : traces) s.push_back(tunekit::score_at(t, b, kind));
        const auto key = std::to_string(b);
        med[key] = tunekit::quantile(s, 0.5);
        p25[key] = tunekit::quantile(s, 0.25);
        p75[key] = tunekit::quantile(s, 0.75);
        mean[key] = std::accumulate(s.begin(), s.end(), 0.0) / static_cast<double>(s.size());
        std::printf("%-8zu %8.3f %8.3f %8.3f\n", b, p25[key].get<double>(), med[key].get<double>(),
                    p75[key].get<double>());
      }
      summary[prefix + "score_median"] = med;
      summary[prefix + "score_p25"] = p25;
      summary[prefix + "score_p75"] = p75;
      summary[prefix + "score_mean"] = mean;
      std::vector<double> e95, e99;
      for (const auto& t : traces) {
        e95.push_back(tunekit::evals_to(t, 0.95, kind));
        e99.push_back(tunekit::evals_to(t, 0.99, kind));
      }
      summary[prefix + "evals_to_95_median"] = median_or_null(e95);
      summary[prefix + "evals_to_99_median"] = median_or_null(e99);
      std::printf("evals to 0.95: %s, to 0.99: %s (median over seeds; null: not reached by half)\n",
                  summary[prefix + "evals_to_95_median"].dump().c_str(),
                  summary[prefix + "evals_to_99_median"].dump().c_str());
    }
    double wall = 0.0;
    for (const auto& t : traces) wall += t.wall_seconds;
    summary["wall_seconds_per_run"] = wall / static_cast<double>(traces.size());
    std::vector<double> t95, t_total;
    for (const auto& t : traces) {
      t95.push_back(tunekit::measure_seconds_to(t, 0.95));
      t_total.push_back(tunekit::measure_seconds(t));
    }
    // The time score P (replay_score.hpp: time_score).
    // c_bar measures every config of the space: with the kernel that does not sleep (--sleep).
    std::optional<tunekit::ReplayKernel> unslept;
    if (args.sleep > 0)
      unslept = tunekit::replay_from_file(args.dataset, replay_options(args, args.flop, {}, 0.0));
    const auto baseline = tunekit::time_score_baseline(
        kernel.recorded_times_ms(), run.seconds_per_config(unslept ? *unslept : kernel, args), args.budget);
    std::vector<double> p;
    for (const auto& t : traces) p.push_back(tunekit::time_score(t, kernel, baseline));
    summary["time_score"] = {{"mean", tunekit::stats::mean(p)},
                             {"median", tunekit::quantile(p, 0.5)},
                             {"p25", tunekit::quantile(p, 0.25)},
                             {"p75", tunekit::quantile(p, 0.75)},
                             {"budget_seconds", baseline.budget_seconds},
                             {"seconds_per_config", baseline.seconds_per_config}};
    std::printf("time score P: mean %.3f, median %.3f, p25 %.3f, p75 %.3f (over T = %.1f s = budget x %.4f s "
                "per config; 0: random search, 1: the optimum from the start)\n",
                tunekit::stats::mean(p), tunekit::quantile(p, 0.5), tunekit::quantile(p, 0.25),
                tunekit::quantile(p, 0.75), baseline.budget_seconds, baseline.seconds_per_config);
    summary["measure_seconds_to_95_median"] = median_or_null(t95);
    summary["measure_seconds_median"] = median_or_null(t_total);
    auto seconds_text = [](const nlohmann::json& s) {  // 0.1 s; null: not reached by half the seeds
      if (s.is_null()) return std::string("null");
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.1f", s.get<double>());
      return std::string(buf);
    };
    std::printf("simulated measurement seconds to 0.95: %s, in all: %s (median over seeds)\n",
                seconds_text(summary["measure_seconds_to_95_median"]).c_str(),
                seconds_text(summary["measure_seconds_median"]).c_str());

    write_summary(args, summary, cl);
  } catch (const std::exception& e) {
    std::cerr << "tunekit-replay: error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
