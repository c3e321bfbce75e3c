// The README's example: tune the recorded RTX 3090 SGEMM space with random search.
#include <tunekit/tunekit.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  const char* csv = argc > 1 ? argv[1] : "../shared/datasets/gemm_RTX_3090.csv";
  auto kernel = tunekit::ReplayKernel::from_csv(csv, {.flop = 137472507904.0});
  tunekit::RandomSearchTuner tuner(kernel.space(), {.budget = {.trials = 200}});
  tunekit::resume_exact(tuner, "gemm.jsonl", kernel.name());  // continue a killed run, if any
  tunekit::Rng rng(42);
  auto result = tuner.tune(kernel, rng, tunekit::ProgressBar(), tunekit::LogToFile("gemm.jsonl"));
  std::printf("best %s: %.0f GFLOPS\n", kernel.space().describe(result.best->config).c_str(),
              result.best->measurement.throughput(kernel.flop()) / 1e9);
}
