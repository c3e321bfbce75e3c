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

#include <vector>

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
  --seeds S            seeds 0 .. S-1 (the papers' count)              [15; live: 3]
  --budget N           configurations measured per run               [200; live: 100]
  --plan-size N        configurations per round                       [32; live: 16]
  --overhead SECONDS   simulated seconds per configuration on top of its runs [1.0]
  --time-points N      points of the seconds axis in the CSV                  [100]
  --out FILE.csv       curves: dataset,pipeline,seed,axis,x,score,gflops      [ablation_adatune.csv]
)";

}  // namespace

int main(int argc, char** argv) {
  return ablation::single_task_main(
      argc, argv, "ablation_adatune", usage, "AdaTune",
      [](const auto& runner) { return ablation::adatune_pipelines(runner); }, "xgb-sa-de",
      [](const std::vector<ablation::PipelineRuns>&, const ablation::SingleTaskRequest&) {});
}
