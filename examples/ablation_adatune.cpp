// AdaTune's ablation (Li et al., NeurIPS 2020, section 5.3, Fig. 10 and 11) by template swap,
// replayed on the recorded datasets or run on the live CPU kernels: XGB+SA+DE (AutoTVM) ->
// RFEI+SA+DE -> RFEI+CSA+DE -> RFEI+CSA+AE (AdaTune). The four pipelines are four presets of
// tunekit::Tuner; the swap is ablation::adatune_pipelines in ablation.hpp:
//
//   r.template run<tunekit::AutoTvmTuner>("xgb-sa-de")
//   r.template run<tunekit::RfEiSaTuner>("rfei-sa-de")
//   r.template run<tunekit::RfEiCsaTuner>("rfei-csa-de")
//   r.template run<tunekit::AdaTuneTuner>("rfei-csa-ae")

#include "ablation.hpp"
#include "ablation_cli.hpp"

#include <cstdio>
#include <fstream>
#include <iostream>

namespace {

const char* const usage = R"(usage: ablation_adatune [options]

AdaTune's ablation replayed on recorded tuning spaces: best score and GFLOPS against trials and
against simulated seconds (replayed run times + a fixed overhead per configuration), median over
seeds with a 95% order-statistic confidence interval of the median. With --kernel, run on live
CPU kernels instead: real measurements, every configuration verified, seconds on the tuner's
clock (measuring + searching), scores relative to the best time any pipeline found.

options:
  --dataset NAME|FILE  a recorded space (name in the datasets folder or a .csv path); may be
                       given several times                                    [all four]
  --kernel SPEC        a live kernel instead: gemm:N (SGEMM N^3) or resnet18.C1 ..
                       resnet18.C12 (conv2d); may be given several times
  --seeds S            seeds 0 .. S-1 (the papers use 15; the forest pipelines take
                       about 40 CPU seconds per seed and space)        [5; live: 3]
  --budget N           configurations measured per run               [200; live: 100]
  --plan-size N        configurations per round                       [32; live: 16]
  --overhead SECONDS   simulated seconds per configuration on top of its runs [1.0]
  --time-points N      points of the seconds axis in the CSV                  [100]
  --out FILE.csv       curves: dataset,pipeline,seed,axis,x,score,gflops      [ablation_adatune.csv]
)";

}  // namespace

int main(int argc, char** argv) {
  tunekit::cli::CommandLine cl(argc, argv, "ablation_adatune", usage);
  const auto kernels = ablation::kernels_option(cl);
  const bool live = !kernels.empty();
  ablation::ReplaySetup setup;
  if (!live) setup.datasets = ablation::datasets_option(cl);
  else if (!cl.texts("--dataset").empty()) cl.fail("--dataset and --kernel exclude each other");
  setup.seeds = cl.count("--seeds", live ? 3 : 5);
  setup.budget = cl.count("--budget", live ? 100 : 200);
  setup.plan_size = cl.count("--plan-size", live ? 16 : 32);
  setup.overhead_seconds = cl.real("--overhead", 1.0);
  const std::size_t points = cl.count("--time-points", 100);
  const std::string out_path = cl.text("--out", "ablation_adatune.csv");
  cl.reject_unknown();

  try {
    if (live)
      std::printf("AdaTune ablation on live CPU kernels: %zu seeds, budget %zu, plan size %zu\n", setup.seeds,
                  setup.budget, setup.plan_size);
    else
      std::printf("AdaTune ablation: %zu seeds, budget %zu, plan size %zu, %.2f s simulated overhead per config\n",
                  setup.seeds, setup.budget, setup.plan_size, setup.overhead_seconds);
    std::printf("cells: median over seeds [95%% CI of the median: order statistics, distribution-free]\n");
    std::fflush(stdout);
    const auto pipelines = [](const auto& runner) { return ablation::adatune_pipelines(runner); };
    const auto all = live ? ablation::live_study(pipelines, kernels,
                                                 {.seeds = setup.seeds, .budget = setup.budget, .plan_size = setup.plan_size})
                          : ablation::replay_study(pipelines, setup);
    std::ofstream out(out_path);
    if (!out) cl.fail("cannot write " + out_path);
    ablation::write_score_curves(out, all, setup.budget, points);
    ablation::print_score_tables(all, setup.budget, "xgb-sa-de", live);
    std::printf("curves written to %s\n", out_path.c_str());
  } catch (const std::exception& e) {
    std::cerr << "ablation_adatune: error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
