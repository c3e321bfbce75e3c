// The ablation studies of AdaTune, Chameleon and DynaTune as template swaps: the cores of
// ablation_adatune, ablation_chameleon and ablation_dynatune, exposed here so that
// tests/ablation/test_ablations.cpp can run them small. Each study is a list of pipelines that
// differ in template arguments only, run by a runner:
//
// - on a recorded dataset (shared/datasets, ReplayRunner): each measurement returns recorded
//   samples, and the clock is simulated (the replayed run times plus a fixed per-configuration
//   overhead, ReplayOptions), so a seed gives the same curves on any machine under any load;
//   search time is not on that clock;
// - on a live kernel (the bundled CPU kernels, LiveRunner): real measurements on this machine, on
//   the tuner's own clock (measurement plus search seconds); the score is relative to the best
//   configuration any pipeline found.
#pragma once

#include <tunekit/multi_task_replay.hpp>
#include <tunekit/replay_score.hpp>
#include <tunekit/preset_registry.hpp>
#include <tunekit/presets.hpp>
#include <tunekit/scheduler/by_name.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <filesystem>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace ablation {

// ----------------------------------------------------------------------------------------------
// Statistics over seeds.

/// A median over seeds with a distribution-free confidence interval: the order statistics
/// x_(l) and x_(n+1-l), with l the largest rank whose coverage
/// P(l <= Bin(n, 1/2) <= n - l) = 1 - 2 P(Bin(n, 1/2) <= l - 1) is at least `level`
/// (Conover, Practical Nonparametric Statistics, 3rd ed., 3.2). For n = 15 this is x_(4)..x_(12),
/// coverage 0.965. With n < 6 no pair reaches 0.95; the interval is then min..max and `coverage`
/// says what it is worth.
struct MedianCi {
  double median = std::numeric_limits<double>::quiet_NaN();
  double lo = std::numeric_limits<double>::quiet_NaN();
  double hi = std::numeric_limits<double>::quiet_NaN();
  double coverage = 0.0;
};

/// P(Bin(n, 1/2) <= k).
inline double binomial_half_cdf(std::size_t n, std::size_t k) {
  double p = 0.0, term = std::pow(0.5, static_cast<double>(n));  // C(n, 0) / 2^n
  for (std::size_t i = 0; i <= k && i <= n; ++i) {
    p += term;
    term *= static_cast<double>(n - i) / static_cast<double>(i + 1);
  }
  return std::min(p, 1.0);
}

inline MedianCi median_ci(std::vector<double> v, double level = 0.95) {
  MedianCi out;
  if (v.empty()) return out;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  out.median = tunekit::quantile(v, 0.5);
  std::size_t l = 1;
  out.coverage = n == 1 ? 0.0 : 1.0 - 2.0 * binomial_half_cdf(n, 0);
  for (std::size_t cand = 2; 2 * cand <= n; ++cand) {
    const double c = 1.0 - 2.0 * binomial_half_cdf(n, cand - 1);
    if (c < level) break;
    l = cand;
    out.coverage = c;
  }
  out.lo = v[l - 1];
  out.hi = v[n - l];
  return out;
}

/// FLOP per run of a recorded dataset (shared/datasets/README.md), from its file name.
inline double dataset_flop(const std::filesystem::path& dataset) {
  const std::string stem = dataset.stem().string();
  if (stem.rfind("gemm", 0) == 0) return 137472507904.0;        // SGEMM 4096^3
  if (stem.rfind("convolution", 0) == 0) return 7549747200.0;  // 4096^2 image, 15x15 filter
  return 0.0;
}

/// The value of a step curve (xs ascending, ys the value from that x on) at `at`; `before` when
/// at < xs.front().
inline double step_value(const std::vector<double>& xs, const std::vector<double>& ys, double at, double before) {
  const auto it = std::upper_bound(xs.begin(), xs.end(), at);
  return it == xs.begin() ? before : ys[static_cast<std::size_t>(it - xs.begin()) - 1];
}

/// `points` equally spaced times horizon/points, 2 horizon/points, ..., horizon.
inline std::vector<double> time_grid(double horizon, std::size_t points) {
  std::vector<double> g;
  for (std::size_t k = 1; k <= points; ++k) g.push_back(horizon * static_cast<double>(k) / static_cast<double>(points));
  return g;
}

// ----------------------------------------------------------------------------------------------
// Single-task ablations (AdaTune, Chameleon): one tuner preset per pipeline on one dataset.

/// What a single-task ablation replays; fill with designated initialisers.
struct ReplaySetup {
  std::vector<std::filesystem::path> datasets;
  /// Runs with seeds 0 .. seeds-1.
  std::size_t seeds = 15;
  /// Configurations measured per run, failed ones included.
  std::size_t budget = 200;
  /// Configurations per round (AutoTVM's plan_size; 32 as the tuning programs use).
  std::size_t plan_size = 32;
  /// Simulated seconds per configuration on top of its replayed run times (compilation, set-up).
  double overhead_seconds = 1.0;
};

/// One seed's run: after trial t (1-based, index t - 1) the score (shared/datasets/PEERS.md:
/// best recorded time / recorded time of the config the tuner holds as best; on a live kernel,
/// best time any pipeline found / the run's best time so far) and the seconds so far (replay:
/// simulated measurement costs incl. the overhead; live: the tuner's clock).
struct SeedRun {
  std::vector<double> score;
  std::vector<double> seconds;
  double wall_seconds = 0.0;
  /// Live runs: the best measured time so far in ms (infinity before a success).
  std::vector<double> best_ms;
};

/// One pipeline's runs on one dataset.
struct PipelineRuns {
  std::string pipeline;
  std::string dataset;
  double optimum_ms = 0.0;
  double flop = 0.0;
  std::vector<SeedRun> seeds;

  /// GFLOPS of a config with this score (0 when the FLOP are unknown).
  double gflops(double score) const { return flop > 0 ? score * flop / (optimum_ms * 1e-3) / 1e9 : 0.0; }
};

/// Replays the preset TunerT (unchanged: its own surrogate, acquisition, optimizer, evaluator)
/// on `dataset` for every seed.
template <class TunerT>
PipelineRuns replay_pipeline(std::string name, const std::filesystem::path& dataset, const ReplaySetup& setup) {
  auto kernel = tunekit::ReplayKernel::from_csv(
      dataset, {.overhead_seconds = setup.overhead_seconds, .flop = dataset_flop(dataset), .name = {}});
  PipelineRuns runs{.pipeline = std::move(name), .dataset = dataset.stem().string(),
                    .optimum_ms = kernel.optimum_ms(), .flop = kernel.flop(), .seeds = {}};
  for (std::size_t seed = 0; seed < setup.seeds; ++seed) {
    tunekit::Rng rng(seed);
    TunerT tuner(kernel.space(), {.budget = {.trials = setup.budget}, .plan_size = setup.plan_size});
    const tunekit::ReplayTrace t = tunekit::replay_trace(tuner, kernel, rng);
    SeedRun run{.score = t.score, .seconds = {}, .wall_seconds = t.wall_seconds};
    double clock = 0.0;
    for (std::size_t i = 0; i < t.score.size() && i < t.trials.size(); ++i) {
      clock += t.trials[i].measurement.cost;
      run.seconds.push_back(clock);
    }
    run.score.resize(run.seconds.size());
    runs.seeds.push_back(std::move(run));
  }
  return runs;
}

/// Runs a pipeline on a recorded dataset: replay_pipeline.
struct ReplayRunner {
  std::filesystem::path dataset;
  const ReplaySetup& setup;
  template <class TunerT>
  PipelineRuns run(std::string name) const {
    return replay_pipeline<TunerT>(std::move(name), dataset, setup);
  }
};

/// What a single-task ablation on a live kernel measures; fill with designated initialisers.
struct LiveSetup {
  std::size_t seeds = 3;
  std::size_t budget = 100;
  std::size_t plan_size = 16;
  /// The measurement of the presets with the deterministic evaluator (all but AdaTune's) ...
  tunekit::DeterministicParams evaluator{.warmup = 1, .repeat = 5, .timeout_seconds = 5.0};
  /// ... and of AdaTune's adaptive evaluator (one run of a few milliseconds per micro-batch).
  tunekit::AdaptiveCVParams adaptive{.max_runs = 10, .batch = 1, .timeout_seconds = 5.0};
};

/// Records a live run's best time and clock after every measurement.
struct LiveRecorder {
  SeedRun* run;
  void on_measured(const tunekit::TuningState& s, const tunekit::Trial&) const {
    const tunekit::Trial* best = s.history.best();
    run->best_ms.push_back(best ? best->measurement.mean * 1e3 : std::numeric_limits<double>::infinity());
    run->seconds.push_back(s.tuning_seconds);
  }
};

/// Tunes the live kernel with the preset TunerT (its evaluator with `setup`'s parameters) for
/// every seed. The scores stay empty until score_live_runs (they need every pipeline's best).
template <class TunerT, class K>
PipelineRuns live_pipeline(std::string name, K& kernel, std::string label, const LiveSetup& setup) {
  PipelineRuns runs{.pipeline = std::move(name), .dataset = std::move(label), .optimum_ms = 0.0,
                    .flop = static_cast<double>(kernel.flop()), .seeds = {}};
  for (std::size_t seed = 0; seed < setup.seeds; ++seed) {
    TunerT tuner(kernel.space(), {.budget = {.trials = setup.budget}, .plan_size = setup.plan_size},
                 {.evaluator = tunekit::preset_evaluator<TunerT>(setup.evaluator, setup.adaptive)});
    tunekit::Rng rng(seed);
    SeedRun run;
    const auto t0 = std::chrono::steady_clock::now();
    tuner.tune(kernel, rng, LiveRecorder{&run});
    run.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    runs.seeds.push_back(std::move(run));
  }
  return runs;
}

/// Runs a pipeline on a live kernel: live_pipeline.
template <class K>
struct LiveRunner {
  K& kernel;
  std::string label;
  const LiveSetup& setup;
  template <class TunerT>
  PipelineRuns run(std::string name) const {
    return live_pipeline<TunerT>(std::move(name), kernel, label, setup);
  }
};

/// Scores the live runs of each kernel against the best time any of them measured there.
inline void score_live_runs(std::vector<PipelineRuns>& all) {
  for (auto& p : all) {
    double optimum = std::numeric_limits<double>::infinity();
    for (const auto& q : all)
      if (q.dataset == p.dataset)
        for (const auto& r : q.seeds)
          if (!r.best_ms.empty()) optimum = std::min(optimum, r.best_ms.back());
    p.optimum_ms = optimum;
    for (auto& r : p.seeds) {
      r.score.clear();
      for (double b : r.best_ms) r.score.push_back(std::isfinite(b) ? optimum / b : 0.0);
    }
  }
}

/// AdaTune's ablation (Li et al., NeurIPS 2020, section 5.3, Fig. 10 and 11): from AutoTVM's
/// XGB + simulated annealing + deterministic evaluation to AdaTune, one part at a time.
template <class Runner>
std::vector<PipelineRuns> adatune_pipelines(const Runner& r) {
  return {r.template run<tunekit::AutoTvmTuner>("xgb-sa-de"),     // AutoTVM
          r.template run<tunekit::RfEiSaTuner>("rfei-sa-de"),     // + forest, EI
          r.template run<tunekit::RfEiCsaTuner>("rfei-csa-de"),   // + contextual annealing
          r.template run<tunekit::AdaTuneTuner>("rfei-csa-ae")};  // + adaptive evaluator
}

/// Chameleon's ablation (Ahn et al., ICLR 2020, Table 2): simulated annealing or the PPO agent,
/// each without and with adaptive sampling, all on AutoTVM's boosted trees.
template <class Runner>
std::vector<PipelineRuns> chameleon_pipelines(const Runner& r) {
  return {r.template run<tunekit::AutoTvmTuner>("sa"),         // AutoTVM
          r.template run<tunekit::PpoTuner>("ppo"),            // the agent instead of annealing
          r.template run<tunekit::SaAsTuner>("sa-as"),         // + k-means adaptive sampling
          r.template run<tunekit::ChameleonTuner>("ppo-as")};  // Chameleon
}

/// A study's pipelines on every recorded dataset of `s`, dataset by dataset.
template <class Pipelines>
std::vector<PipelineRuns> replay_study(Pipelines pipelines, const ReplaySetup& s) {
  std::vector<PipelineRuns> out;
  for (const auto& d : s.datasets)
    for (auto& p : pipelines(ReplayRunner{d, s})) out.push_back(std::move(p));
  return out;
}

inline std::vector<PipelineRuns> adatune_ablation(const ReplaySetup& s) {
  return replay_study([](const ReplayRunner& r) { return adatune_pipelines(r); }, s);
}
inline std::vector<PipelineRuns> chameleon_ablation(const ReplaySetup& s) {
  return replay_study([](const ReplayRunner& r) { return chameleon_pipelines(r); }, s);
}

/// Score after `trials` trials (the last when the run measured fewer).
inline double score_after(const SeedRun& r, std::size_t trials) {
  if (r.score.empty() || trials == 0) return 0.0;
  return r.score[std::min(trials, r.score.size()) - 1];
}

/// Score at simulated second `at` (a run that has spent its budget keeps its final score).
inline double score_at_seconds(const SeedRun& r, double at) { return step_value(r.seconds, r.score, at, 0.0); }

/// Trials and simulated seconds until the score first reached `target`; infinity if never.
inline std::pair<double, double> first_reaching(const SeedRun& r, double target) {
  for (std::size_t i = 0; i < r.score.size(); ++i)
    if (r.score[i] >= target - 1e-12) return {static_cast<double>(i + 1), r.seconds[i]};
  return {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
}

/// The largest simulated clock of any run of `dataset` (the end of the seconds axis).
inline double seconds_horizon(const std::vector<PipelineRuns>& all, const std::string& dataset) {
  double h = 0.0;
  for (const auto& p : all)
    if (p.dataset == dataset)
      for (const auto& r : p.seeds)
        if (!r.seconds.empty()) h = std::max(h, r.seconds.back());
  return h;
}

// ----------------------------------------------------------------------------------------------
// Multi-task ablation (DynaTune): schedulers over the datasets as the operators of one model.

/// What the scheduler ablation replays; fill with designated initialisers.
struct MultiSetup {
  /// The operators of the model, in task order (weight 1 each).
  std::vector<std::filesystem::path> datasets;
  std::size_t seeds = 15;
  /// Trials of all tasks together, trials per slot, configs per round.
  std::size_t budget = 800;
  std::size_t slot_trials = 16;
  std::size_t plan_size = 32;
  double overhead_seconds = 1.0;
};

/// One scheduler's runs: per seed the objective (sum of the tasks' best latencies, ms) after each
/// trial, over the simulated measurement seconds summed over tasks. On recorded kernels it is the
/// recorded objective (the held configs at their recorded means, MultiTaskTrace::recorded_objective),
/// not the measured one, which the draws bias low where a task is measured many times.
struct SchedulerRuns {
  std::string pipeline;
  std::vector<std::vector<double>> seconds;
  std::vector<std::vector<double>> objective_ms;
  std::vector<std::vector<std::size_t>> slots_per_task;
};

/// Runs MultiTaskTuner<SchedulerT, TunerT> on the kernels for seeds 0 .. seeds-1.
template <class SchedulerT, class TunerT, class Kernels>
SchedulerRuns scheduler_runs(std::string name, Kernels& kernels, const std::vector<tunekit::TaskOptions>& tasks,
                             std::size_t seeds, const tunekit::MultiTaskOptions& options,
                             const typename TunerT::Parts& parts = {}) {
  SchedulerRuns runs{.pipeline = std::move(name), .seconds = {}, .objective_ms = {}, .slots_per_task = {}};
  for (std::size_t seed = 0; seed < seeds; ++seed) {
    tunekit::Rng rng(seed);
    const tunekit::MultiTaskTrace t =
        tunekit::trace_multi_task<TunerT>(kernels, tasks, SchedulerT{}, options, rng, parts);
    std::vector<double> sec, obj;
    for (std::size_t i = 0; i < t.objective.size(); ++i) {
      sec.push_back(t.objective[i].measure_seconds);
      obj.push_back((t.recorded_objective.empty() ? t.objective[i].objective : t.recorded_objective[i]) * 1e3);
    }
    std::vector<std::size_t> slots(tasks.size(), 0);
    for (std::size_t k : t.slot_tasks) ++slots[k];
    runs.seconds.push_back(std::move(sec));
    runs.objective_ms.push_back(std::move(obj));
    runs.slots_per_task.push_back(std::move(slots));
  }
  return runs;
}

/// Runs a scheduler on the recorded datasets of `setup` as the operators of one model (weight 1
/// each), the task tuners TunerT.
template <class TunerT>
struct ReplaySchedulerRunner {
  const MultiSetup& setup;
  template <class SchedulerT>
  SchedulerRuns run(std::string name) const {
    std::vector<tunekit::ReplayKernel> kernels;
    std::vector<tunekit::TaskOptions> tasks;
    for (const auto& d : setup.datasets) {
      const std::string stem = d.stem().string();
      kernels.push_back(tunekit::ReplayKernel::from_csv(
          d, {.overhead_seconds = setup.overhead_seconds, .flop = dataset_flop(d), .name = stem}));
      tasks.push_back({.name = stem, .weight = 1.0, .flop = dataset_flop(d), .tag = stem.substr(0, stem.find('_'))});
    }
    return scheduler_runs<SchedulerT, TunerT>(
        std::move(name), kernels, tasks, setup.seeds,
        {.budget = {.trials = setup.budget}, .slot_trials = setup.slot_trials, .plan_size = setup.plan_size});
  }
};

/// What the scheduler ablation on live kernels measures.
struct LiveMultiSetup {
  std::size_t seeds = 3;
  std::size_t budget = 600;
  std::size_t slot_trials = 16;
  tunekit::DeterministicParams evaluator{.warmup = 1, .repeat = 5, .timeout_seconds = 5.0};
  /// AdaTune's adaptive evaluator (task tuner adatune), with tune_conv2d's parameters.
  tunekit::AdaptiveCVParams adaptive{.max_runs = 100, .batch = 5, .timeout_seconds = 5.0};
};

/// Runs a scheduler on live kernels (a range of kernels or of pointers to kernels) with their
/// tasks' options, the task tuners TunerT.
template <class TunerT, class Kernels>
struct LiveSchedulerRunner {
  Kernels& kernels;
  const std::vector<tunekit::TaskOptions>& tasks;
  const LiveMultiSetup& setup;
  template <class SchedulerT>
  SchedulerRuns run(std::string name) const {
    return scheduler_runs<SchedulerT, TunerT>(
        std::move(name), kernels, tasks, setup.seeds,
        {.budget = {.trials = setup.budget}, .slot_trials = setup.slot_trials, .plan_size = setup.slot_trials},
        {.evaluator = tunekit::preset_evaluator<TunerT>(setup.evaluator, setup.adaptive)});
  }
};

/// DynaTune's scheduler comparison (Li et al., ICLR 2021, Fig. 7-9): the same task tuners, the
/// scheduler swapped.
template <class Runner>
std::vector<SchedulerRuns> dynatune_pipelines(const Runner& r) {
  using namespace tunekit;
  return {
      r.template run<Sequential>("sequential"),
      r.template run<RandomSlots>("random-slots"),
      r.template run<RoundRobin>("round-robin"),
      r.template run<FlopProportional>("flop-proportional"),
      r.template run<DynaTuneScheduler>("bandit"),  // DynaTune: UCB over curve beliefs
      r.template run<GradientScheduler>("gradient"),  // Ansor
  };
}

/// The scheduler comparison replayed on recorded datasets. TunerT: each task's tuner (random
/// search by default, see the program).
template <class TunerT = tunekit::RandomSearchTuner>
std::vector<SchedulerRuns> dynatune_ablation(const MultiSetup& s) {
  return dynatune_pipelines(ReplaySchedulerRunner<TunerT>{s});
}

/// Objective (ms) of a run at simulated second `at`; infinity before every task has succeeded.
inline double objective_at(const SchedulerRuns& r, std::size_t seed, double at) {
  return step_value(r.seconds[seed], r.objective_ms[seed], at, std::numeric_limits<double>::infinity());
}

}  // namespace ablation

#include <cstdio>

namespace ablation {

/// "median [lo, hi]" with `digits` decimals; ">run" for infinity (not reached by the run).
inline std::string format_ci(const MedianCi& c, int digits = 3) {
  auto one = [&](double x) {
    if (std::isinf(x)) return std::string("never");
    char b[32];
    std::snprintf(b, sizeof b, "%.*f", digits, x);
    return std::string(b);
  };
  return one(c.median) + " [" + one(c.lo) + ", " + one(c.hi) + "]";
}

/// The four recorded datasets under `dir`, in the order of shared/datasets/README.md.
inline std::vector<std::filesystem::path> recorded_datasets(const std::filesystem::path& dir) {
  return {dir / "gemm_RTX_3090.csv", dir / "gemm_RTX_2080_Ti.csv", dir / "convolution_A100.csv",
          dir / "convolution_A4000.csv"};
}

}  // namespace ablation
