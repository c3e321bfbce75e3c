// The cores of the ablation programs (examples/ablation.hpp): each runs with 2 seeds and a tiny
// budget and gives curves of the right shape; the median's confidence interval.
#include "../../examples/ablation.hpp"

#include <tunekit/kernels/cpu/gemm.hpp>

#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

namespace {

const std::filesystem::path ablation_datasets = TUNEKIT_DATASETS;

void check_single_task(const std::vector<ablation::PipelineRuns>& all, const std::vector<std::string>& names,
                       std::size_t budget) {
  REQUIRE(all.size() == names.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    CHECK(all[i].pipeline == names[i]);
    CHECK(all[i].dataset == "convolution_A4000");
    REQUIRE(all[i].seeds.size() == 2);
    for (const auto& r : all[i].seeds) {
      REQUIRE(r.score.size() == budget);
      REQUIRE(r.seconds.size() == budget);
      for (std::size_t t = 0; t < budget; ++t) {
        CHECK(r.score[t] >= 0.0);
        CHECK(r.score[t] <= 1.0);
        // Every configuration costs at least the 1 s overhead.
        if (t > 0) CHECK(r.seconds[t] >= r.seconds[t - 1] + 1.0);
      }
      CHECK(ablation::score_after(r, budget) > 0.0);
    }
  }
}

}  // namespace

TEST_CASE("ablation: median_ci takes the distribution-free order statistics") {
  std::vector<double> v;
  for (int i = 15; i >= 1; --i) v.push_back(i);
  const auto c = ablation::median_ci(v);
  CHECK(c.median == 8.0);
  CHECK(c.lo == 4.0);  // x_(4) .. x_(12) for n = 15
  CHECK(c.hi == 12.0);
  CHECK(c.coverage == doctest::Approx(1.0 - 2.0 * 576.0 / 32768.0));
  const auto small = ablation::median_ci({3.0, 1.0});
  CHECK(small.lo == 1.0);
  CHECK(small.hi == 3.0);
  CHECK(small.coverage == doctest::Approx(0.5));
}

TEST_CASE("ablation: the AdaTune and Chameleon cores give one curve per pipeline and seed") {
  const ablation::ReplaySetup s{.datasets = {ablation_datasets / "convolution_A4000.csv"}, .seeds = 2, .budget = 12,
                                .plan_size = 6, .overhead_seconds = 1.0};
  check_single_task(ablation::adatune_ablation(s), {"xgb-sa-de", "rfei-sa-de", "rfei-csa-de", "rfei-csa-ae"},
                    s.budget);
  check_single_task(ablation::chameleon_ablation(s), {"sa", "ppo", "sa-as", "ppo-as"}, s.budget);
}

TEST_CASE("ablation: the DynaTune core gives one objective curve per scheduler and seed") {
  const ablation::MultiSetup s{.datasets = {ablation_datasets / "convolution_A4000.csv", ablation_datasets / "gemm_RTX_3090.csv"},
                               .seeds = 2, .budget = 64, .slot_trials = 16, .plan_size = 16, .overhead_seconds = 1.0};
  const auto all = ablation::dynatune_ablation(s);
  double optimum_ms = 0.0;
  for (const auto& d : s.datasets) optimum_ms += tunekit::ReplayKernel::from_csv(d).optimum_ms();
  const std::vector<std::string> names = {"sequential", "random-slots", "round-robin", "flop-proportional", "bandit",
                                          "gradient"};
  REQUIRE(all.size() == names.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    CHECK(all[i].pipeline == names[i]);
    REQUIRE(all[i].seconds.size() == 2);
    for (std::size_t seed = 0; seed < 2; ++seed) {
      REQUIRE(all[i].seconds[seed].size() == s.budget);
      REQUIRE(all[i].objective_ms[seed].size() == s.budget);
      std::size_t slots = 0;
      for (std::size_t k : all[i].slots_per_task[seed]) slots += k;
      CHECK(slots == s.budget / s.slot_trials);
      // The objective is the recorded one (the held configs at their recorded means): never
      // below the sum of the datasets' optima (it may rise, when a task's new measured best is
      // slower by its recorded mean). It ends finite exactly when every operator got a slot (with
      // 4 slots, flop-proportional gives all of them to the operator with more FLOP).
      for (std::size_t t = 0; t < s.budget; ++t) CHECK(all[i].objective_ms[seed][t] >= optimum_ms * (1 - 1e-12));
      CAPTURE(all[i].pipeline);
      bool every_task_tuned = true;
      for (std::size_t k : all[i].slots_per_task[seed]) every_task_tuned = every_task_tuned && k > 0;
      CHECK(std::isfinite(all[i].objective_ms[seed].back()) == every_task_tuned);
      CHECK(ablation::objective_at(all[i], seed, all[i].seconds[seed].back()) == all[i].objective_ms[seed].back());
    }
  }
}

TEST_CASE("ablation: on a live kernel the runs are scored against the best time any pipeline found") {
  tunekit::cpu::GemmKernel kernel(48, 40, 56, {.threads = 1, .seed = 3});
  const ablation::LiveSetup s{.seeds = 2, .budget = 8, .plan_size = 4};
  auto all = ablation::adatune_pipelines(ablation::LiveRunner<tunekit::cpu::GemmKernel>{kernel, "gemm:small", s});
  ablation::score_live_runs(all);
  REQUIRE(all.size() == 4);
  double best_final = 0.0;
  for (const auto& p : all) {
    CHECK(p.dataset == "gemm:small");
    REQUIRE(p.seeds.size() == 2);
    for (const auto& r : p.seeds) {
      REQUIRE(r.best_ms.size() == s.budget);
      REQUIRE(r.score.size() == s.budget);
      REQUIRE(r.seconds.size() == s.budget);
      for (std::size_t t = 1; t < s.budget; ++t) {
        CHECK(r.best_ms[t] <= r.best_ms[t - 1]);  // the best so far never gets worse
        CHECK(r.seconds[t] > r.seconds[t - 1]);   // every measurement costs time
        CHECK(r.score[t] >= r.score[t - 1]);
      }
      CHECK(r.score.back() > 0.0);
      CHECK(r.score.back() <= 1.0);
      // GFLOPS of the final score: the kernel's FLOP over the run's own best time.
      CHECK(p.gflops(r.score.back()) == doctest::Approx(kernel.flop() / (r.best_ms.back() * 1e-3) / 1e9));
      best_final = std::max(best_final, r.score.back());
    }
  }
  CHECK(best_final == 1.0);  // some run found the best time of all
}
