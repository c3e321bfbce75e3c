// Chameleon's ablation (Ahn et al., ICLR 2020, Table 2) by template swap, replayed on the recorded
// datasets or run on the live CPU kernels: simulated annealing (AutoTVM) or Chameleon's PPO agent,
// each without and with adaptive sampling (k-means over the candidates), all on AutoTVM's boosted
// trees. The four pipelines are four presets of tunekit::Tuner; the swap is
// ablation::chameleon_pipelines in ablation.hpp:
//
//   r.template run<tunekit::AutoTvmTuner>("sa")
//   r.template run<tunekit::PpoTuner>("ppo")
//   r.template run<tunekit::SaAsTuner>("sa-as")
//   r.template run<tunekit::ChameleonTuner>("ppo-as")

#include "ablation.hpp"
#include "ablation_cli.hpp"

#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace {

const char* const usage = R"(usage: ablation_chameleon [options]

Chameleon's ablation replayed on recorded tuning spaces: the measurements and the simulated
tuning time (replayed run times + a fixed overhead per configuration) to reach the same quality
(SA's median final score), and the final quality; medians over seeds with a 95% order-statistic
confidence interval of the median. The search's own (wall-clock) time is not on the simulated
clock; its median per run is printed apart. With --kernel, run on live CPU kernels instead: real
measurements, every configuration verified, time on the tuner's clock (measuring + searching),
scores relative to the best time any pipeline found.

options:
  --dataset NAME|FILE  a recorded space (name in the datasets folder or a .csv path); may be
                       given several times                                    [all four]
  --kernel SPEC        a live kernel instead: gemm:N (SGEMM N^3) or resnet18.C1 ..
                       resnet18.C12 (conv2d); may be given several times
  --seeds S            seeds 0 .. S-1                                   [15; live: 3]
  --budget N           configurations measured per run               [200; live: 100]
  --plan-size N        configurations per round                       [32; live: 16]
  --overhead SECONDS   simulated seconds per configuration on top of its runs [1.0]
  --time-points N      points of the seconds axis in the CSV                  [100]
  --out FILE.csv       curves: dataset,pipeline,seed,axis,x,score,gflops      [ablation_chameleon.csv]
)";

// Table 2's reductions: measurements and time (simulated on replay) to SA's quality, without / with
// adaptive sampling (median over seeds of each, then their ratio; above 1: sampling saves).
void print_reductions(const std::vector<ablation::PipelineRuns>& all, const ablation::SingleTaskRequest& request) {
  const std::size_t budget = request.setup.budget;
  std::printf("\nreduction by adaptive sampling to SA's median final score (ratio of medians, \"-\": one never reached it; search wall s per run)\n");
  std::printf("%-20s %-12s %-12s %-12s %-12s %s\n", "dataset", "SA meas.", "SA time", "PPO meas.", "PPO time",
              "wall s/run sa ppo sa-as ppo-as");
  for (const auto& name : ablation::dataset_names(all)) {
    std::map<std::string, std::pair<double, double>> to;
    std::map<std::string, double> wall;
    double target = 0.0;
    for (const auto& p : all)
      if (p.dataset == name && p.pipeline == "sa") {
        std::vector<double> f;
        for (const auto& r : p.seeds) f.push_back(ablation::score_after(r, budget));
        target = ablation::median_ci(f).median;
      }
    for (const auto& p : all) {
      if (p.dataset != name) continue;
      std::vector<double> tr, ts, w;
      for (const auto& r : p.seeds) {
        const auto [a, b] = ablation::first_reaching(r, target);
        tr.push_back(a);
        ts.push_back(b);
        w.push_back(r.wall_seconds);
      }
      to[p.pipeline] = {ablation::median_ci(tr).median, ablation::median_ci(ts).median};
      wall[p.pipeline] = ablation::median_ci(w).median;
    }
    auto ratio = [](double a, double b) {
      char buf[32];
      if (std::isinf(a) || std::isinf(b)) return std::string("-");
      std::snprintf(buf, sizeof buf, "%.2fx", a / b);
      return std::string(buf);
    };
    std::printf("%-20s %-12s %-12s %-12s %-12s %.2f %.2f %.2f %.2f\n", name.c_str(),
                ratio(to["sa"].first, to["sa-as"].first).c_str(), ratio(to["sa"].second, to["sa-as"].second).c_str(),
                ratio(to["ppo"].first, to["ppo-as"].first).c_str(), ratio(to["ppo"].second, to["ppo-as"].second).c_str(), wall["sa"],
                wall["ppo"], wall["sa-as"], wall["ppo-as"]);
  }
}

}  // namespace

int main(int argc, char** argv) {
  return ablation::single_task_main(
      argc, argv, "ablation_chameleon", usage, "Chameleon",
      [](const auto& runner) { return ablation::chameleon_pipelines(runner); }, "sa", print_reductions);
}
