// DynaTune's scheduler comparison (Li et al., ICLR 2021, Fig. 7-9) by template swap, replayed on
// the recorded datasets as the four operators of one model, or run live on the CPU conv2d of
// ResNet-18's layers: the same task tuners, the scheduler swapped. The swap is
// ablation::dynatune_pipelines in ablation.hpp:
//
//   r.template run<Sequential>("sequential")
//   r.template run<RandomSlots>("random-slots")
//   r.template run<RoundRobin>("round-robin")
//   r.template run<FlopProportional>("flop-proportional")
//   r.template run<DynaTuneScheduler>("bandit")
//   r.template run<GradientScheduler>("gradient")

#include "ablation.hpp"
#include "ablation_cli.hpp"

#include <omp.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

namespace {

const char* const usage_head = R"(usage: ablation_dynatune [options]

DynaTune's scheduler comparison replayed on recorded tuning spaces as the operators of one model
(weight 1 each): the model latency (sum of the recorded mean times of the configs the operators
hold as best, ms) against the simulated seconds (replayed run times + a fixed overhead per configuration, summed over tasks);
medians over seeds with a 95% order-statistic confidence interval of the median. With --kernel,
run live on the bundled CPU conv2d instead: every configuration measured and verified, weights
the layers' occurrences in ResNet-18, seconds the real measurement seconds summed over tasks.

options:
  --dataset NAME|FILE  an operator (name in the datasets folder or a .csv path); several
                       times, in task order                                   [all four]
  --kernel SPEC        a live operator instead: resnet18.C1 .. resnet18.C12, or resnet18
                       for all 12; several times, in task order
  --tuner NAME         each task's tuner, a preset (autotvm: DynaTune's XGB
                       tuner; 2 minutes):                                     [random]
)";

const char* const usage_tail = R"(  --seeds S            seeds 0 .. S-1                                   [15; live: 3]
  --budget N           trials of all tasks together                 [800; live: 192]
  --slot N             trials per slot                                   [16; live: 8]
  --plan-size N        configurations per round of a task's tuner (replay; a slot
                       asks for at most --slot of them)                       [32]
  --overhead SECONDS   simulated seconds per configuration on top of its runs [1.0]
  --time-points N      points of the seconds axis in the CSV                  [100]
  --out FILE.csv       curves: pipeline,seed,seconds,objective_ms             [ablation_dynatune.csv]
)";


/// Runs the six schedulers live on the conv2d layers named by `specs`.
template <class TunerT>
std::vector<ablation::SchedulerRuns> live_dynatune(const std::vector<std::string>& specs,
                                                   const ablation::LiveMultiSetup& setup) {
  std::vector<std::unique_ptr<tunekit::cpu::Conv2dKernel>> kernels;
  std::vector<tunekit::TaskOptions> tasks;
  for (const auto& spec : specs) {
    auto k = ablation::make_live_kernel(spec);
    const std::size_t layer = static_cast<std::size_t>(ablation::resnet18_layer(spec) -
                                                       tunekit::cpu::resnet18_conv2d_tasks.data());
    tasks.push_back({.name = spec, .weight = tunekit::cpu::resnet18_conv2d_occurrences[layer],
                     .flop = k.conv2d->flop(), .tag = "conv2d"});
    kernels.push_back(std::move(k.conv2d));
  }
  return ablation::dynatune_pipelines(
      ablation::LiveSchedulerRunner<TunerT, decltype(kernels)>{kernels, tasks, setup});
}

}  // namespace

int main(int argc, char** argv) {
  tunekit::cli::CommandLine cl(argc, argv, "ablation_dynatune", usage_head + tunekit::preset_help(23) + usage_tail);
  const auto kernels = ablation::kernels_option(cl);
  const bool live = !kernels.empty();
  ablation::MultiSetup setup;
  if (!live) setup.datasets = ablation::datasets_option(cl);
  else if (!cl.texts("--dataset").empty()) cl.fail("--dataset and --kernel exclude each other");
  for (const auto& k : kernels)
    if (!ablation::resnet18_layer(k)) cl.fail("--kernel " + k + ": the live operators are ResNet-18's conv2d layers");
  const std::string tuner = cl.text("--tuner", "random");
  setup.seeds = cl.count("--seeds", live ? 3 : 15);
  setup.budget = cl.count("--budget", live ? 192 : 800);
  setup.slot_trials = cl.count("--slot", live ? 8 : 16);
  setup.plan_size = cl.count("--plan-size", 32);
  setup.overhead_seconds = cl.real("--overhead", 1.0);
  const std::size_t points = cl.count("--time-points", 100);
  const std::string out_path = cl.text("--out", "ablation_dynatune.csv");
  cl.reject_unknown();
  try {
    tunekit::check_preset(tuner);
  } catch (const std::invalid_argument& e) {
    cl.fail(e.what());
  }
  const std::size_t n_tasks = live ? kernels.size() : setup.datasets.size();

  try {
    if (live)
      std::printf("DynaTune ablation on live CPU conv2d (%d threads, %s vectors): %zu operators, task tuner %s, "
                  "%zu seeds, budget %zu, slots of %zu\n",
                  omp_get_max_threads(), tunekit::cpu::simd_name(), n_tasks, tuner.c_str(), setup.seeds, setup.budget,
                  setup.slot_trials);
    else
      std::printf("DynaTune ablation: %zu operators, task tuner %s, %zu seeds, budget %zu, slots of %zu, %.2f s "
                  "simulated overhead per config\n",
                  n_tasks, tuner.c_str(), setup.seeds, setup.budget, setup.slot_trials, setup.overhead_seconds);
    std::printf("cells: median over seeds [95%% CI of the median: order statistics, distribution-free]\n");
    if (!live)
      std::printf("objective: the sum of the configs the tasks hold as best at their recorded mean times (the "
                  "measured bests are biased low by the draws)\n");
    std::fflush(stdout);
    const ablation::LiveMultiSetup live_setup{.seeds = setup.seeds, .budget = setup.budget, .slot_trials = setup.slot_trials};
    const auto all = tunekit::with_preset(tuner, [&]<class TunerT>() {
      return live ? live_dynatune<TunerT>(kernels, live_setup) : ablation::dynatune_ablation<TunerT>(setup);
    });

    // The common time axis: up to the shortest run (every run is defined there); the common
    // reference: the median final objective over all runs of all schedulers.
    double horizon = std::numeric_limits<double>::infinity();
    std::vector<double> finals;
    for (const auto& r : all)
      for (std::size_t s = 0; s < r.seconds.size(); ++s) {
        if (!r.seconds[s].empty()) horizon = std::min(horizon, r.seconds[s].back());
        finals.push_back(r.objective_ms[s].empty() ? std::numeric_limits<double>::infinity() : r.objective_ms[s].back());
      }
    const double reference = ablation::median_ci(finals).median;
    const auto grid = ablation::time_grid(horizon, points);

    std::ofstream out(out_path);
    if (!out) cl.fail("cannot write " + out_path);
    out << "pipeline,seed,seconds,objective_ms\n";
    char line[160];
    for (const auto& r : all)
      for (std::size_t s = 0; s < r.seconds.size(); ++s)
        for (double x : grid) {
          std::snprintf(line, sizeof line, "%s,%zu,%.3f,%.6g\n", r.pipeline.c_str(), s, x,
                        ablation::objective_at(r, s, x));
          out << line;
        }

    std::printf("time axis: %s seconds up to the shortest run, %.1f s; reference: median final objective "
                "of all runs, %.3f ms; CI coverage %.3f\n",
                live ? "measurement" : "simulated", horizon, reference, ablation::median_ci(std::vector<double>(setup.seeds, 0.0)).coverage);
    const double at[] = {0.25 * horizon, 0.5 * horizon, horizon};
    std::printf("%-18s %-26s %-26s %-26s %-24s %-24s %s\n", "scheduler", ("ms@" + std::to_string(int(at[0])) + "s").c_str(),
                ("ms@" + std::to_string(int(at[1])) + "s").c_str(), ("ms@" + std::to_string(int(at[2])) + "s").c_str(),
                "s to 1.05x ref.", "s to 1.01x ref.", "slots per task (median)");
    for (const auto& r : all) {
      std::vector<double> v[3], t105, t101;
      std::vector<std::vector<double>> slots(n_tasks);
      for (std::size_t s = 0; s < r.seconds.size(); ++s) {
        for (int k = 0; k < 3; ++k) v[k].push_back(ablation::objective_at(r, s, at[k]));
        auto first = [&](double level) {
          for (std::size_t i = 0; i < r.seconds[s].size(); ++i)
            if (r.objective_ms[s][i] <= level) return r.seconds[s][i];
          return std::numeric_limits<double>::infinity();
        };
        t105.push_back(first(1.05 * reference));
        t101.push_back(first(1.01 * reference));
        for (std::size_t k = 0; k < slots.size(); ++k) slots[k].push_back(double(r.slots_per_task[s][k]));
      }
      std::string sl;
      for (const auto& x : slots) {
        if (!sl.empty()) sl += '/';
        sl += std::to_string(int(ablation::median_ci(x).median));
      }
      std::printf("%-18s %-26s %-26s %-26s %-24s %-24s %s\n", r.pipeline.c_str(),
                  ablation::format_ci(ablation::median_ci(v[0])).c_str(),
                  ablation::format_ci(ablation::median_ci(v[1])).c_str(),
                  ablation::format_ci(ablation::median_ci(v[2])).c_str(),
                  ablation::format_ci(ablation::median_ci(t105), 0).c_str(),
                  ablation::format_ci(ablation::median_ci(t101), 0).c_str(), sl.c_str());
    }
    std::printf("curves written to %s\n", out_path.c_str());
  } catch (const std::exception& e) {
    std::cerr << "ablation_dynatune: error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
