// Compile-time benchmark: a program that tunes its own kernel (the quickstart's made-up one) with
// the default preset, tunekit::TpeTuner, a progress bar and a log: what a user's first
// tuning program costs to compile.
#include <tunekit/tunekit.hpp>

#include <cmath>
#include <cstdio>

struct Saxpy {  // a space, a FLOP count, and timed runs
  tunekit::SearchSpace space_ = tunekit::SearchSpace()
      .add(tunekit::Knob::power_of_two("block", 32, 1024))
      .add(tunekit::Knob::range("unroll", 1, 8));
  const tunekit::SearchSpace& space() const { return space_; }
  double flop() const { return 2e6; }
  tunekit::RunResult run(const tunekit::Config& c, std::size_t runs, tunekit::Rng&) {
    const auto v = space_.view(c);  // a made-up cost: best at block=256, unroll=4
    const double t = 1e-4 * (1 + std::abs(std::log2(v["block"] / 256.0)) + std::abs(v["unroll"] - 4) / 4.0);
    return {tunekit::Status::ok, std::vector<double>(runs, t), {}, -1.0};
  }
};

int main() {
  Saxpy kernel;
  tunekit::Rng rng(42);
  tunekit::TpeTuner tuner(kernel.space(), {.budget = {.trials = 40}});
  auto result = tuner.tune(kernel, rng, tunekit::ProgressBar(), tunekit::LogToFile("saxpy.jsonl"));
  std::printf("best: %s, %.2f GFLOPS\n", kernel.space().describe(result.best->config).c_str(),
              result.best->measurement.throughput(kernel.flop()) / 1e9);
}
