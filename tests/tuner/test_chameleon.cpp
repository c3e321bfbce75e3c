// Chameleon's pipeline (PPO agent + adaptive sampling over AutoTVM's boosted trees) end to end on
// the recorded spaces of shared/datasets, against the exact score distribution of random search.

#include <tunekit/replay/replay_kernel.hpp>
#include <tunekit/replay_score.hpp>
#include <tunekit/presets.hpp>

#include "support/replay_medians.hpp"
#include "support/files.hpp"

#include <doctest/doctest.h>
#include <omp.h>

#include <algorithm>
#include <string>
#include <vector>

namespace {

using tunekit::test::datasets;

struct ChameleonMedians {
  double random, chameleon;
  // Chameleon's score of each seed.
  std::vector<double> chameleon_scores;
};

ChameleonMedians chameleon_medians(const std::string& name) {
  auto k = tunekit::ReplayKernel::from_csv(datasets + "/" + name + ".csv");
  // One thread: the runs do not depend on the thread count, and ctest runs tests side by side.
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  // Median over seeds 0..6 of the score after 200 measured configs (plan_size 32). Seven seeds,
  // not test_model_based's fifteen: a Chameleon run makes about twice as many (smaller) rounds,
  // each with a PPO search, and costs about 1.3 s here.
  const auto s = tunekit_test::scores<tunekit::ChameleonTuner>(k, 200, 7);
  const ChameleonMedians m{tunekit_test::random_median(k, 200), tunekit::quantile(s, 0.5), s};
  omp_set_num_threads(threads);
  MESSAGE(name << ": median score at 200: random " << m.random << ", chameleon " << m.chameleon);
  return m;
}

}  // namespace

// Measured (7 seeds, plan_size 32; each trial measured with its own stream, Tuner::measurement_rng):
//   dataset            random  chameleon
//   gemm_RTX_3090      0.871   1.000
//   gemm_RTX_2080_Ti   0.892   0.968   (15 seeds: 0.986)
//   convolution_A100   0.766   1.000
//   convolution_A4000  0.870   0.809   (15 seeds: 0.809; 5 of 15 seeds reach 0.95)
// The bounds are a little below these margins. Before the per-trial streams (the evaluator drew
// from the search's generator) the 7-seed medians were 1.000, 0.995, 1.000 and 0.965: the same
// pipeline, other noise draws. On gemm_RTX_2080_Ti the median moved from 0.995 to 0.968 (15
// seeds: 0.995 to 0.986). On convolution_A4000 the scores are bimodal: a run escapes AutoTVM's
// trap (about 0.98-1.0) or stays in it (about 0.78-0.81); 4 of the first 7 seeds escaped before,
// 3 now, and over 15 seeds the median was 0.866 before and 0.809 now, against random search's
// 0.870 (which reaches 0.95 with probability 0.40 at 200). Chameleon does not beat random search's
// median there; what holds is that it escapes the trap on some seeds and is not far below.

TEST_CASE("Chameleon beats random search on gemm_RTX_3090") {
  const auto m = chameleon_medians("gemm_RTX_3090");
  CHECK(m.chameleon >= m.random + 0.10);
}

TEST_CASE("Chameleon beats random search on gemm_RTX_2080_Ti") {
  const auto m = chameleon_medians("gemm_RTX_2080_Ti");
  CHECK(m.chameleon >= m.random + 0.06);
}

TEST_CASE("Chameleon beats random search on convolution_A100") {
  const auto m = chameleon_medians("convolution_A100");
  CHECK(m.chameleon >= m.random + 0.15);
}

TEST_CASE("on convolution_A4000 Chameleon escapes the trap on some seeds, its median near random search's") {
  const auto m = chameleon_medians("convolution_A4000");
  const auto escaped = std::count_if(m.chameleon_scores.begin(), m.chameleon_scores.end(),
                                     [](double s) { return s >= 0.95; });
  CAPTURE(escaped);
  CHECK(escaped >= 2);
  CHECK(m.chameleon >= m.random - 0.10);
}
