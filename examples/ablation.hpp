// The ablation studies of AdaTune, Chameleon and DynaTune as template swaps, replayed on the
// recorded datasets (shared/datasets): the cores of ablation_adatune, ablation_chameleon and
// ablation_dynatune, exposed here so that tests/examples/test_ablations.cpp can run them small.
//
// Every run is a replay: each measurement returns recorded samples, and the clock is simulated
// (the replayed run times plus a fixed per-configuration overhead, ReplayOptions), so a seed gives
// the same curves on any machine under any load. Search time is not on that clock.
#pragma once

#include <tunekit/kernel/multi_task_replay.hpp>
#include <tunekit/kernel/replay_score.hpp>
#include <tunekit/presets.hpp>
#include <tunekit/scheduler/by_name.hpp>

#include <algorithm>
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
/// best recorded time / recorded time of the config the tuner holds as best) and the simulated
/// seconds so far (measurement costs incl. the overhead).
struct SeedRun {
  std::vector<double> score;
  std::vector<double> seconds;
  double wall_seconds = 0.0;
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

/// AdaTune's ablation (Li et al., NeurIPS 2020, section 5.3, Fig. 10 and 11): from AutoTVM's
/// XGB + simulated annealing + deterministic evaluation to AdaTune, one part at a time.
inline std::vector<PipelineRuns> adatune_ablation(const ReplaySetup& s) {
  std::vector<PipelineRuns> out;
  for (const auto& d : s.datasets) {
    out.push_back(replay_pipeline<tunekit::AutoTvmTuner>("xgb-sa-de", d, s));   // AutoTVM
    out.push_back(replay_pipeline<tunekit::RfEiSaTuner>("rfei-sa-de", d, s));   // + forest, EI
    out.push_back(replay_pipeline<tunekit::RfEiCsaTuner>("rfei-csa-de", d, s)); // + contextual SA
    out.push_back(replay_pipeline<tunekit::AdaTuneTuner>("rfei-csa-ae", d, s)); // + adaptive eval.
  }
  return out;
}

/// Chameleon's ablation (Ahn et al., ICLR 2020, Table 2): simulated annealing or the PPO agent,
/// each without and with adaptive sampling, all on AutoTVM's boosted trees.
inline std::vector<PipelineRuns> chameleon_ablation(const ReplaySetup& s) {
  std::vector<PipelineRuns> out;
  for (const auto& d : s.datasets) {
    out.push_back(replay_pipeline<tunekit::AutoTvmTuner>("sa", d, s));       // AutoTVM
    out.push_back(replay_pipeline<tunekit::PpoTuner>("ppo", d, s));          // agent for annealing
    out.push_back(replay_pipeline<tunekit::SaAsTuner>("sa-as", d, s));       // + k-means sampling
    out.push_back(replay_pipeline<tunekit::ChameleonTuner>("ppo-as", d, s)); // Chameleon
  }
  return out;
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
/// trial, over the simulated measurement seconds summed over tasks.
struct SchedulerRuns {
  std::string pipeline;
  std::vector<std::vector<double>> seconds;
  std::vector<std::vector<double>> objective_ms;
  std::vector<std::vector<std::size_t>> slots_per_task;
};

/// Replays MultiTaskTuner<SchedulerT, TunerT> for every seed; the task tuners are TunerT.
template <class SchedulerT, class TunerT>
SchedulerRuns replay_scheduler(std::string name, const MultiSetup& s) {
  std::vector<tunekit::ReplayKernel> kernels;
  std::vector<tunekit::TaskOptions> tasks;
  for (const auto& d : s.datasets) {
    const std::string stem = d.stem().string();
    kernels.push_back(tunekit::ReplayKernel::from_csv(
        d, {.overhead_seconds = s.overhead_seconds, .flop = dataset_flop(d), .name = stem}));
    tasks.push_back({.name = stem, .weight = 1.0, .flop = dataset_flop(d), .tag = stem.substr(0, stem.find('_'))});
  }
  SchedulerRuns runs{.pipeline = std::move(name), .seconds = {}, .objective_ms = {}, .slots_per_task = {}};
  for (std::size_t seed = 0; seed < s.seeds; ++seed) {
    tunekit::Rng rng(seed);
    const tunekit::MultiTaskTrace t = tunekit::replay_multi_task<TunerT>(
        kernels, tasks, SchedulerT{},
        {.budget = {.trials = s.budget}, .slot_trials = s.slot_trials, .plan_size = s.plan_size}, rng);
    std::vector<double> sec, obj;
    for (const auto& p : t.objective) {
      sec.push_back(p.measure_seconds);
      obj.push_back(p.objective * 1e3);
    }
    std::vector<std::size_t> slots(kernels.size(), 0);
    for (std::size_t k : t.slot_tasks) ++slots[k];
    runs.seconds.push_back(std::move(sec));
    runs.objective_ms.push_back(std::move(obj));
    runs.slots_per_task.push_back(std::move(slots));
  }
  return runs;
}

/// DynaTune's scheduler comparison (Li et al., ICLR 2021, Fig. 7-9): the same task tuners, the
/// scheduler swapped. TunerT: each task's tuner (random search by default, see the program).
template <class TunerT = tunekit::RandomSearchTuner>
std::vector<SchedulerRuns> dynatune_ablation(const MultiSetup& s) {
  using namespace tunekit;
  return {
      replay_scheduler<Sequential, TunerT>("sequential", s),
      replay_scheduler<RandomSlots, TunerT>("random-slots", s),
      replay_scheduler<RoundRobin, TunerT>("round-robin", s),
      replay_scheduler<FlopProportional, TunerT>("flop-proportional", s),
      replay_scheduler<DynaTuneScheduler, TunerT>("bandit", s),  // DynaTune: UCB over curve beliefs
      replay_scheduler<GradientScheduler, TunerT>("gradient", s),  // Ansor
  };
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
