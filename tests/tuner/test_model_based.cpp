// The model-based pipelines end to end on the recorded spaces of shared/datasets, against the
// exact score distribution of random search.

#include <tunekit/replay/replay_kernel.hpp>
#include <tunekit/replay_score.hpp>
#include <tunekit/presets.hpp>

#include "support/omp_threads.hpp"
#include "support/replay_medians.hpp"
#include "support/files.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace {

using tunekit::test::datasets;

struct Medians {
  double random, autotvm, adatune;
};

Medians medians(const std::string& name) {
  auto k = tunekit::ReplayKernel::from_csv(datasets + "/" + name + ".csv");
  // One thread: the runs do not depend on the thread count, and ctest runs tests side by side.
  const tunekit::test::OmpThreads one(1);
  // Medians over seeds 0..14 of the score after 200 measured configs (plan_size 32).
  const Medians m{tunekit_test::random_median(k, 200),
                  tunekit_test::median_score<tunekit::AutoTvmTuner>(k, 200, 15),
                  tunekit_test::median_score<tunekit::AdaTuneTuner>(k, 200, 15)};
  MESSAGE(name << ": median score at 200: random " << m.random << ", autotvm " << m.autotvm << ", adatune "
               << m.adatune);
  return m;
}

}  // namespace

// Measured (15 seeds, plan_size 32, AdaTune with its AdaptiveCV evaluator, each trial measured
// with its own stream, Tuner::measurement_rng; docs/benchmarks.md has the 25-seed table; before
// the per-trial streams these were 1.000/1.000, 0.966/0.973, 1.000/0.931 and
// 0.866/0.996):
//   dataset            random  autotvm  adatune
//   gemm_RTX_3090      0.871   0.987    1.000
//   gemm_RTX_2080_Ti   0.892   0.986    0.991
//   convolution_A100   0.766   1.000    0.931
//   convolution_A4000  0.870   0.809    0.989
// The bounds are a little below these margins. On convolution_A4000 AutoTVM's pure exploitation
// is trapped in a broad region of good-but-not-best configs (the best ones are a narrow
// interaction of four knobs) and does no better than random search; AdaTune's uncertainty-driven
// exploration escapes it, which is the AdaTune paper's point, and that is what is asserted there.

TEST_CASE("model-based pipelines beat random search on gemm_RTX_3090") {
  const auto m = medians("gemm_RTX_3090");
  CHECK(m.autotvm >= m.random + 0.10);
  CHECK(m.adatune >= m.random + 0.10);
}

TEST_CASE("model-based pipelines beat random search on gemm_RTX_2080_Ti") {
  const auto m = medians("gemm_RTX_2080_Ti");
  CHECK(m.autotvm >= m.random + 0.05);
  CHECK(m.adatune >= m.random + 0.04);
}

TEST_CASE("model-based pipelines beat random search on convolution_A100") {
  const auto m = medians("convolution_A100");
  CHECK(m.autotvm >= m.random + 0.15);
  CHECK(m.adatune >= m.random + 0.12);
}

TEST_CASE("on convolution_A4000 AdaTune beats random search and escapes AutoTVM's trap") {
  const auto m = medians("convolution_A4000");
  CHECK(m.adatune >= m.random + 0.09);
  CHECK(m.adatune >= m.autotvm + 0.09);
}
