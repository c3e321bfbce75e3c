// Per-round overhead of the model-based pipelines: one `ask(64)` (fit the surrogate on the whole
// history, search the space with the acquisition, select the batch; for ppo and chameleon also
// the agent's PPO updates during the search) after n measured configs of
// a recorded space (gemm_RTX_3090, replayed). Random search is the reference: its round costs
// only the sampling.
//
//   build/bench/bench_pipeline [--benchmark_filter=...]
//
// Set OMP_NUM_THREADS to compare thread counts.

#include <tunekit/tunekit.hpp>

#include <benchmark/benchmark.h>

#include <string>

namespace {

const std::string dataset = std::string(TUNEKIT_DATASETS) + "/gemm_RTX_3090.csv";

tunekit::ReplayKernel& kernel() {
  static auto k = tunekit::ReplayKernel::from_csv(dataset);
  return k;
}

template <class TunerT>
void round_overhead(benchmark::State& state) {
  auto& k = kernel();
  const auto n = static_cast<std::size_t>(state.range(0));
  TunerT tuner(k.space(), {.budget = {.trials = n + 64}});
  tunekit::Rng rng(1);
  // n random configs measured (the history every round refits on).
  tunekit::RandomSearchTuner warmup(k.space(), {.budget = {.trials = n}});
  warmup.tune(k, rng);
  for (const auto& t : warmup.history()) tuner.tell(t.config, t.measurement);
  for (auto _ : state) {
    auto batch = tuner.ask(64, rng);
    benchmark::DoNotOptimize(batch.data());
    tuner.forget_pending();
  }
  state.counters["history"] = static_cast<double>(n);
}

}  // namespace

// tunekit's own search: its Parzen densities are refitted on the history every round (asked for
// 64, it proposes 1 + n / 100 configs).
BENCHMARK(round_overhead<tunekit::TpeLocalTuner>)->Name("tpe-local")->Arg(100)->Arg(500)->Arg(1000)->Arg(2000)->Unit(benchmark::kMillisecond);
// tpe-gp-rf: below 40 measured configs a round is one pick by the random forest (an even n, here
// 20) or the Gaussian process (an odd n, 39); from 40 on it is tpe-local's round.
BENCHMARK(round_overhead<tunekit::TpeGpRfTuner>)->Name("tpe-gp-rf")->Arg(20)->Arg(39)->Arg(100)->Arg(1000)->Unit(benchmark::kMillisecond);
// The default, tpe-gp-rf-restarts: its model start runs to 60 configs, the Gaussian process with a
// length scale per knob (n = 59, its costliest round); from 60 on its phase's rounds are TPE's, and
// a phase that starts over (after 100 trials without improvement) begins with a model start again.
BENCHMARK(round_overhead<tunekit::TpeGpRfRestartsTuner>)->Name("tpe-gp-rf-restarts")->Arg(20)->Arg(59)->Arg(100)->Arg(1000)->Unit(benchmark::kMillisecond);
BENCHMARK(round_overhead<tunekit::RandomSearchTuner>)->Name("random")->Arg(100)->Arg(500)->Arg(2000)->Unit(benchmark::kMillisecond);
BENCHMARK(round_overhead<tunekit::AutoTvmTuner>)->Name("autotvm")->Arg(100)->Arg(500)->Arg(2000)->Unit(benchmark::kMillisecond);
BENCHMARK(round_overhead<tunekit::RfEiSaTuner>)->Name("rfei-sa")->Arg(100)->Arg(500)->Arg(2000)->Unit(benchmark::kMillisecond);
BENCHMARK(round_overhead<tunekit::AdaTuneTuner>)->Name("adatune")->Arg(100)->Arg(500)->Arg(2000)->Unit(benchmark::kMillisecond);
// Chameleon's pipelines: the PPO agent (its weights persist from one iteration to the next, as
// between rounds) and the k-means sampler, which hands out fewer than 64 configs.
BENCHMARK(round_overhead<tunekit::SaAsTuner>)->Name("sa-as")->Arg(100)->Arg(500)->Arg(2000)->Unit(benchmark::kMillisecond);
BENCHMARK(round_overhead<tunekit::PpoTuner>)->Name("ppo")->Arg(100)->Arg(500)->Arg(2000)->Unit(benchmark::kMillisecond);
BENCHMARK(round_overhead<tunekit::ChameleonTuner>)->Name("chameleon")->Arg(100)->Arg(500)->Arg(2000)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
