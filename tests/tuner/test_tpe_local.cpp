// tpe-local (TpeLocalTuner: TreeParzen) end to end on the recorded spaces of shared/datasets,
// against the papers' presets (AutoTVM, AdaTune, Chameleon) at 50 and 100 measured configs.

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
// measured configs, plan_size 32, each preset with its own evaluator.
template <class TunerT>
AtBudgets medians_at_budgets(tunekit::ReplayKernel& k) {
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

struct Table {
  AtBudgets tpe, autotvm, adatune, chameleon;
};

Table table(const std::string& name) {
  auto k = tunekit::ReplayKernel::from_csv(datasets + "/" + name + ".csv");
  // One thread: the runs do not depend on the thread count, and ctest runs tests side by side.
  const tunekit::test::OmpThreads one(1);
  const Table t{medians_at_budgets<tunekit::TpeLocalTuner>(k), medians_at_budgets<tunekit::AutoTvmTuner>(k),
                medians_at_budgets<tunekit::AdaTuneTuner>(k), medians_at_budgets<tunekit::ChameleonTuner>(k)};
  MESSAGE(name << ": median score at 50 / 100: tpe-local " << t.tpe.at50 << " / " << t.tpe.at100 << ", autotvm "
               << t.autotvm.at50 << " / " << t.autotvm.at100 << ", adatune " << t.adatune.at50 << " / "
               << t.adatune.at100 << ", chameleon " << t.chameleon.at50 << " / " << t.chameleon.at100);
  return t;
}

void check_ahead(const Table& t, double margin50, double margin100) {
  for (const AtBudgets& p : {t.autotvm, t.adatune, t.chameleon}) {
    CHECK(t.tpe.at50 >= p.at50 + margin50);
    CHECK(t.tpe.at100 >= p.at100 + margin100);
  }
}

}  // namespace

// Measured (15 seeds, plan_size 32; median score at 50 / 100):
//   dataset            tpe-local      autotvm        adatune        chameleon
//   convolution_A4000  0.980 / 0.987  0.789 / 0.809  0.780 / 0.803  0.792 / 0.804
//   convolution_A100   0.825 / 0.931  0.650 / 0.863  0.709 / 0.828  0.661 / 0.931
// The margins asserted are a little below these. At 100 on convolution_A100 tpe-local and
// Chameleon hold the same config (the second best of the space) in the median run.

TEST_CASE("tpe-local beats the presets at 50 and 100 on convolution_A4000") {
  check_ahead(table("convolution_A4000"), 0.15, 0.15);
}

TEST_CASE("tpe-local beats the presets at 50 on convolution_A100, and is level at 100") {
  check_ahead(table("convolution_A100"), 0.10, 0.0);
}
