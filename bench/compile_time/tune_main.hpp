// What a user's program does: include the whole library, load a recorded space, tune it with one
// preset and print the best config. Each preset_*.cpp instantiates it for one preset, so the
// compile time of a TU per preset can be measured (bench/compile_time.sh).
#pragma once
#include <tunekit/tunekit.hpp>

#include <cstdio>
#include <cstdlib>

template <class TunerT>
int tune_main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DATASET.csv [TRIALS]\n", argv[0]);
    return 2;
  }
  auto kernel = tunekit::ReplayKernel::from_csv(argv[1]);
  const std::size_t trials = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 100;
  TunerT tuner(kernel.space(), {.budget = {.trials = trials}});
  tunekit::Rng rng(1);
  const auto result = tuner.tune(kernel, rng);
  if (!result.best) return 1;
  std::printf("%s %.4f ms\n", kernel.space().describe(result.best->config).c_str(),
              result.best->measurement.mean * 1e3);
  return 0;
}
