// tpe-local (TpeLocalTuner: TreeParzen) and its model starts and restarts (tpe-gp, tpe-gp-rf,
// tpe-gp-rf-restarts; tpe, TreeParzen<>) end to end on the recorded spaces of shared/datasets, against the papers'
// presets (AutoTVM, AdaTune, Chameleon) at 50 and 100 measured configs.

#include <tunekit/presets.hpp>
#include <tunekit/replay/replay_kernel.hpp>
#include <tunekit/replay_score.hpp>

#include <doctest/doctest.h>

#include "support/omp_threads.hpp"
#include "support/files.hpp"

#include <string>
#include <vector>

namespace {

using tunekit::test::datasets;

struct AtBudgets {
  double at50, at100;
};

// Median over seeds 0..14 of the score (the tuner's own pick, replay_score.hpp) after 50 and 100
// measured configs, plan_size 32, each preset with its own evaluator. One thread: the runs do not
// depend on the thread count, and ctest runs tests side by side.
template <class TunerT>
AtBudgets medians_at_budgets(tunekit::ReplayKernel& k) {
  const tunekit::test::OmpThreads one(1);
  std::vector<double> s50, s100;
  for (std::uint64_t seed = 0; seed < 15; ++seed) {
    TunerT t(k.space(), {.budget = {.trials = 100}, .plan_size = 32});
    tunekit::Rng rng(seed);
    const auto trace = tunekit::replay_trace(t, k, rng);
    s50.push_back(tunekit::score_at(trace, 50));
    s100.push_back(tunekit::score_at(trace, 100));
  }
  return {tunekit::quantile(s50, 0.5), tunekit::quantile(s100, 0.5)};
}

// The medians of tunekit's search (TpeT) and of the papers' presets.
struct Table {
  AtBudgets tpe, autotvm, adatune, chameleon;
};

tunekit::ReplayKernel load(const std::string& name) {
  return tunekit::ReplayKernel::from_csv(datasets + "/" + name + ".csv");
}

template <class TpeT>
Table table(tunekit::ReplayKernel& k, const std::string& name, const char* tpe_name) {
  const Table t{medians_at_budgets<TpeT>(k), medians_at_budgets<tunekit::AutoTvmTuner>(k),
                medians_at_budgets<tunekit::AdaTuneTuner>(k), medians_at_budgets<tunekit::ChameleonTuner>(k)};
  MESSAGE(name << ": median score at 50 / 100: " << std::string(tpe_name) << " " << t.tpe.at50 << " / "
               << t.tpe.at100 << ", autotvm " << t.autotvm.at50 << " / " << t.autotvm.at100 << ", adatune "
               << t.adatune.at50 << " / " << t.adatune.at100 << ", chameleon " << t.chameleon.at50 << " / "
               << t.chameleon.at100);
  return t;
}

void check_ahead(const AtBudgets& tpe, const Table& t, double margin50, double margin100) {
  for (const AtBudgets& p : {t.autotvm, t.adatune, t.chameleon}) {
    CHECK(tpe.at50 >= p.at50 + margin50);
    CHECK(tpe.at100 >= p.at100 + margin100);
  }
}

// Another of tunekit's searches (TunerT) against the papers' presets of table `t`.
template <class TunerT>
void check_also_ahead(tunekit::ReplayKernel& k, const Table& t, const std::string& name, const char* tuner_name,
                      double margin50, double margin100) {
  const AtBudgets m = medians_at_budgets<TunerT>(k);
  MESSAGE(name << ": " << std::string(tuner_name) << " " << m.at50 << " / " << m.at100);
  check_ahead(m, t, margin50, margin100);
}

}  // namespace

// Measured (15 seeds, plan_size 32; median score at 50 / 100):
//   dataset            tpe-local      autotvm        adatune        chameleon
//   convolution_A4000  0.980 / 0.987  0.789 / 0.809  0.780 / 0.803  0.792 / 0.804
//   convolution_A100   0.825 / 0.931  0.650 / 0.863  0.709 / 0.828  0.661 / 0.931
// The margins asserted are a little below these. At 100 on convolution_A100 tpe-local and
// Chameleon hold the same config (the second best of the space) in the median run.

TEST_CASE("tpe-local beats the presets at 50 and 100 on convolution_A4000, and so do tpe-gp-rf, tpe-gp-rf-restarts and tpe") {
  auto k = load("convolution_A4000");
  const Table t = table<tunekit::TpeLocalTuner>(k, "convolution_A4000", "tpe-local");
  check_ahead(t.tpe, t, 0.15, 0.15);
  check_also_ahead<tunekit::TpeGpRfTuner>(k, t, "convolution_A4000", "tpe-gp-rf", 0.15, 0.15);
  check_also_ahead<tunekit::TpeGpRfRestartsTuner>(k, t, "convolution_A4000", "tpe-gp-rf-restarts", 0.15, 0.15);
  check_also_ahead<tunekit::TpeTuner>(k, t, "convolution_A4000", "tpe", 0.15, 0.15);
}

TEST_CASE("tpe-local beats the presets at 50 on convolution_A100, and is level at 100") {
  auto k = load("convolution_A100");
  const Table t = table<tunekit::TpeLocalTuner>(k, "convolution_A100", "tpe-local");
  check_ahead(t.tpe, t, 0.10, 0.0);
}

// Measured (15 seeds, plan_size 32; median score at 50 / 100) on gemm_RTX_3090: tpe-gp-rf
// 0.982 / 1.000, tpe-gp-rf-restarts (the default before tpe) 0.905 / 1.000, autotvm 0.831 / 0.971, adatune
// 0.843 / 0.921, chameleon 0.900 / 0.987; on convolution_A4000 tpe-gp-rf 0.965 / 0.989, the
// default 0.965 / 0.989 (0.987 before its crossovers). The default's median at 50 on
// gemm_RTX_3090 was 0.953 before its Gaussian process had a length scale per knob; over 100 seeds
// its mean found score there rose (0.914 to 0.932; git show a1c316f:docs/performance.md,
// "A length scale per knob"), and a 15-seed median of a space whose runs split in two falls on
// either side, so at 50 it is only asserted level or above Chameleon. (On convolution_A100
// tpe-gp-rf's median run holds 0.679 at 100, below Chameleon's and AutoTVM's: the same file.)
TEST_CASE("tpe-gp-rf beats the presets at 50 and 100 on gemm_RTX_3090, and so does tpe-gp-rf-restarts") {
  auto k = load("gemm_RTX_3090");
  const Table t = table<tunekit::TpeGpRfTuner>(k, "gemm_RTX_3090", "tpe-gp-rf");
  check_ahead(t.tpe, t, 0.05, 0.01);
  check_also_ahead<tunekit::TpeGpRfRestartsTuner>(k, t, "gemm_RTX_3090", "tpe-gp-rf-restarts", 0.0, 0.01);
}

namespace {

struct AtSmallBudgets {
  double at25, at50;
};

// Mean over seeds 0..99 of the found score (the best recorded time among the configs measured)
// after 25 and 50 measured configs.
template <class TunerT>
AtSmallBudgets found_means_small(tunekit::ReplayKernel& k) {
  double s25 = 0.0, s50 = 0.0;
  const int seeds = 100;
  for (int seed = 0; seed < seeds; ++seed) {
    TunerT t(k.space(), {.budget = {.trials = 50}});
    tunekit::Rng rng(static_cast<std::uint64_t>(seed));
    const auto trace = tunekit::replay_trace(t, k, rng);
    s25 += tunekit::score_at(trace, 25, tunekit::ScoreKind::found) / seeds;
    s50 += tunekit::score_at(trace, 50, tunekit::ScoreKind::found) / seeds;
  }
  return {s25, s50};
}

}  // namespace

// Measured (100 seeds; mean found score at 25 / 50): gemm_RTX_2080_Ti tpe-gp 0.898 / 0.942,
// tpe-local 0.868 / 0.924, random 0.805 / 0.839; gemm_RTX_3090 tpe-gp 0.844 / 0.932, tpe-local
// 0.823 / 0.906, random 0.758 / 0.796. On the recorded convolutions tpe-local is ahead from 50 on
// (git show a1c316f:docs/performance.md, "The Gaussian-process start").
TEST_CASE("tpe-gp finds fast configs sooner than tpe-local on the GEMM spaces") {
  const tunekit::test::OmpThreads one(1);
  for (const char* name : {"gemm_RTX_2080_Ti", "gemm_RTX_3090"}) {
    CAPTURE(name);
    auto k = load(name);
    const AtSmallBudgets gp = found_means_small<tunekit::TpeGpTuner>(k);
    const AtSmallBudgets tpe = found_means_small<tunekit::TpeLocalTuner>(k);
    const AtSmallBudgets random = found_means_small<tunekit::RandomSearchTuner>(k);
    MESSAGE(std::string(name) << ": mean found score at 25 / 50: tpe-gp " << gp.at25 << " / " << gp.at50 << ", tpe-local "
                 << tpe.at25 << " / " << tpe.at50 << ", random " << random.at25 << " / " << random.at50);
    CHECK(gp.at25 >= tpe.at25 + 0.015);
    CHECK(gp.at50 >= tpe.at50 + 0.015);
    CHECK(gp.at25 >= random.at25 + 0.05);
  }
}

// tpe-gp-rf-restarts (the default before tpe) is tpe-gp-rf with a model start of 60 trials in place of 40,
// restarts after 100 trials without improvement, a length scale per feature for the Gaussian
// process and crossovers of the good configs after the model start, so its first 10 trials (the
// start) are tpe-gp-rf's; on convolution_A100, where runs lock into a basin six knobs from the
// optimum (git show a1c316f:docs/performance.md, "The bar over 400 seeds"), the restarts find
// better configs by 400 (and the longer start and the crossovers by 100-200 over 400 seeds: 0.923
// against 0.879 at 200, the same file, "Crossovers of the good configs"; over these 40 seeds it
// is 0.043 ahead at 200, and asserted level).
// Measured (seeds 0-39; mean found score at 200 / 400): tpe-gp-rf-restarts 0.949 / 0.982,
// tpe-gp-rf 0.906 / 0.936.
TEST_CASE("tpe-gp-rf-restarts: tpe-gp-rf's start, level at 200 and ahead at 400 on convolution_A100") {
  const tunekit::test::OmpThreads one(1);
  auto k = load("convolution_A100");
  double with200 = 0.0, without200 = 0.0, with400 = 0.0, without400 = 0.0;
  const int seeds = 40;
  for (int seed = 0; seed < seeds; ++seed) {
    tunekit::TpeGpRfRestartsTuner a(k.space(), {.budget = {.trials = 400}});
    tunekit::TpeGpRfTuner b(k.space(), {.budget = {.trials = 400}});
    tunekit::Rng ra(static_cast<std::uint64_t>(seed)), rb(static_cast<std::uint64_t>(seed));
    const auto ta = tunekit::replay_trace(a, k, ra);
    const auto tb = tunekit::replay_trace(b, k, rb);
    REQUIRE(ta.trials.size() == 400);
    REQUIRE(tb.trials.size() == 400);
    for (std::size_t i = 0; i < 10; ++i) REQUIRE(ta.trials[i].index == tb.trials[i].index);
    with200 += tunekit::score_at(ta, 200, tunekit::ScoreKind::found) / seeds;
    without200 += tunekit::score_at(tb, 200, tunekit::ScoreKind::found) / seeds;
    with400 += tunekit::score_at(ta, 400, tunekit::ScoreKind::found) / seeds;
    without400 += tunekit::score_at(tb, 400, tunekit::ScoreKind::found) / seeds;
  }
  MESSAGE("convolution_A100: mean found score at 200 / 400: tpe-gp-rf-restarts " << with200 << " / " << with400
          << ", tpe-gp-rf " << without200 << " / " << without400);
  CHECK(with200 >= without200 - 0.01);
  CHECK(with400 >= without400 + 0.015);
}

// The ablation the parts exist for: the default search with a random forest alone in its model
// start, one template argument (ModelStart<RandomForest>), replayed on a recorded space. Its
// picks up to 50 trials are the forest's (40 of them, after the 10-config start); they find
// faster configs than random search, and the trials differ from the default's, whose model start
// alternates the forest with a Gaussian process.
TEST_CASE("ModelStart<RandomForest>: the model start's forest alone, one template argument, on gemm_RTX_3090") {
  using ForestStart = tunekit::TreeParzen<tunekit::MaximinStart, tunekit::ModelStart<tunekit::RandomForest>>;
  using ForestStartTuner = tunekit::Tuner<tunekit::NoSurrogate, tunekit::PredictedMean, ForestStart>;
  const tunekit::test::OmpThreads one(1);
  auto k = load("gemm_RTX_3090");
  const AtSmallBudgets forest = found_means_small<ForestStartTuner>(k);
  const AtSmallBudgets random = found_means_small<tunekit::RandomSearchTuner>(k);
  MESSAGE("gemm_RTX_3090: mean found score at 25 / 50: forest model start " << forest.at25 << " / " << forest.at50
                                                                            << ", random " << random.at25 << " / "
                                                                            << random.at50);
  CHECK(forest.at25 >= random.at25 + 0.03);
  CHECK(forest.at50 >= random.at50 + 0.05);
  ForestStartTuner a(k.space(), {.budget = {.trials = 30}});
  tunekit::TpeGpRfRestartsTuner b(k.space(), {.budget = {.trials = 30}});
  tunekit::Rng ra(1), rb(1);
  const auto ta = tunekit::replay_trace(a, k, ra), tb = tunekit::replay_trace(b, k, rb);
  bool differ = false;
  for (std::size_t i = 0; i < 30; ++i) differ = differ || ta.trials[i].index != tb.trials[i].index;
  CHECK(differ);
  CHECK(a.optimizer().last_round().model_start);
}
