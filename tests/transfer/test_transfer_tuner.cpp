// AutoTVM's tuner with transfer (AutoTvm<TransferMargin<GradientBoostedTrees>>) on a recorded
// GEMM space: its first configs picked by the model of another GPU's records, and an exact
// resume of a transferring run.

// GCC 12: false -Wmaybe-uninitialized in Eigen's AVX-512 reductions under -march=native.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <tunekit/callbacks/log_to_file.hpp>
#include <tunekit/presets.hpp>
#include <tunekit/records/log.hpp>
#include <tunekit/replay/replay_kernel.hpp>
#include <tunekit/transfer/transfer_margin.hpp>

#include "support/files.hpp"
#include "support/same_trials.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>

namespace transfer_tuner_test {

using Transfer = tunekit::TransferMargin<tunekit::GradientBoostedTrees>;
using TransferTuner = tunekit::AutoTvm<Transfer>;

static_assert(tunekit::PriorSurrogate<Transfer>);
static_assert(!tunekit::PriorSurrogate<tunekit::GradientBoostedTrees>);

// The best recorded time among a history's first n successful trials.
double best_ms_of_first(const tunekit::ReplayKernel& k, const tunekit::History& h, std::size_t n) {
  double best = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < std::min(n, h.size()); ++i)
    if (h[i].measurement.ok()) best = std::min(best, k.recorded_ms(h[i].config));
  return best;
}

struct StopAt {
  std::size_t trials;
  bool on_measured(const tunekit::TuningState& s, const tunekit::Trial&) const { return s.history.size() == trials; }
};

}  // namespace transfer_tuner_test

TEST_CASE("AutoTvm<TransferMargin>: the first round picked by the base model, and an exact resume") {
  using namespace transfer_tuner_test;
  using tunekit::test::datasets;
  tunekit::test::TempDir dir;
  auto kernel = tunekit::ReplayKernel::from_csv(datasets + "/gemm_RTX_3090.csv");
  const tunekit::TransferSource source(
      kernel.space(), {tunekit::source_from_recorded_space(datasets + "/gemm_RTX_2080_Ti.csv", {}, nullptr)});
  const tunekit::TunerOptions options{.budget = {.trials = 80}, .plan_size = 32, .task = "gemm"};

  // The uninterrupted run, and AutoTVM's tuner without transfer, same seed.
  TransferTuner reference(kernel.space(), options, {.surrogate = Transfer(source)});
  tunekit::Rng rng0(7);
  REQUIRE(reference.tune(kernel, rng0).trials == 80);
  tunekit::AutoTvmTuner cold(kernel.space(), options);
  tunekit::Rng rng1(7);
  REQUIRE(cold.tune(kernel, rng1).trials == 80);
  // The first 32 configs: the cold tuner's are random, the transferring tuner's mostly the base
  // model's best. Measured (seed 7): the best of them 5.7335 ms with transfer, 7.4764 ms without
  // (the optimum 5.6578 ms).
  const double with_transfer = best_ms_of_first(kernel, reference.history(), 32);
  const double without = best_ms_of_first(kernel, cold.history(), 32);
  std::printf("gemm 3090, first 32 configs: best %.4f ms with transfer from the 2080 Ti, %.4f ms without "
              "(optimum %.4f ms)\n",
              with_transfer, without, kernel.optimum_ms());
  CHECK(with_transfer < without);
  CHECK(kernel.optimum_ms() / with_transfer > 0.95);

  // The same run stopped after 50 measurements, logged, then resumed exactly by a fresh tuner
  // made from the same sources.
  const auto log = dir.path / "transfer.jsonl";
  {
    TransferTuner first(kernel.space(), options, {.surrogate = Transfer(source)});
    tunekit::Rng rng(7);
    first.tune(kernel, rng, tunekit::LogToFile(log), StopAt{50});
    REQUIRE(first.history().size() == 50);
  }
  const tunekit::TransferSource again(
      kernel.space(), {tunekit::source_from_recorded_space(datasets + "/gemm_RTX_2080_Ti.csv", {}, nullptr)});
  CHECK(tunekit::sources_to_json(again) == tunekit::sources_to_json(source));
  TransferTuner resumed(kernel.space(), options, {.surrogate = Transfer(again)});
  std::ostringstream warn;
  CHECK(tunekit::resume_exact(resumed, log, "gemm", &warn) == 50);
  tunekit::Rng rng(7);
  CHECK(resumed.tune(kernel, rng, tunekit::LogToFile(log, &warn)).trials == 80);
  CHECK(warn.str().empty());
  tunekit::test::check_same_trials(reference.history(), resumed.history());
}

TEST_CASE("AdaTune<TransferMargin<RandomForest>>: AdaTune's pipeline transfers too") {
  using tunekit::test::datasets;
  auto kernel = tunekit::ReplayKernel::from_csv(datasets + "/gemm_RTX_3090.csv");
  const tunekit::TransferSource source(
      kernel.space(), {tunekit::source_from_recorded_space(datasets + "/gemm_RTX_2080_Ti.csv", {}, nullptr)});
  using Model = tunekit::TransferMargin<tunekit::RandomForest>;
  tunekit::AdaTune<Model> tuner(kernel.space(), {.budget = {.trials = 24}, .plan_size = 8, .task = "gemm"},
                                {.surrogate = Model(source)});
  tunekit::Rng rng(3);
  CHECK(tuner.tune(kernel, rng).trials == 24);
  CHECK(tuner.surrogate().has_base());
  CHECK(tuner.surrogate().weight() == tunekit::transfer_weight(16));  // fitted last on 16 trials
}
