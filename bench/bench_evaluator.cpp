// What isolation costs per measurement: Deterministic in process against Isolated<Deterministic>
// (one fork, a thread in the child, the result back through a pipe), on a kernel that returns at
// once, with the parent holding 0, 256 MiB or 2 GiB of touched memory (fork copies page tables).
#include <tunekit/evaluator/deterministic.hpp>
#include <tunekit/evaluator/isolation.hpp>

#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>
#include <vector>

namespace {

struct InstantKernel {
  tunekit::SearchSpace space_ = [] {
    tunekit::SearchSpace s;
    s.add(tunekit::Knob::range("x", 0, 1));
    return s;
  }();
  const tunekit::SearchSpace& space() const { return space_; }
  double flop() const { return 1; }
  tunekit::RunResult run(const tunekit::Config&, std::size_t runs, tunekit::Rng&) {
    return {.status = tunekit::Status::ok, .seconds = std::vector<double>(runs, 1e-6), .error = {},
            .simulated_cost = -1};
  }
};

template <class E>
void measure(benchmark::State& state) {
  // Resident memory in the parent: fork's cost grows with it.
  const auto bytes = static_cast<std::size_t>(state.range(0)) << 20;
  std::unique_ptr<char[]> ballast(bytes ? new char[bytes] : nullptr);
  if (bytes) std::memset(ballast.get(), 1, bytes);
  InstantKernel kernel;
  E evaluator;
  tunekit::Rng rng(1);
  const tunekit::Config c{0};
  for (auto _ : state) benchmark::DoNotOptimize(evaluator.measure(kernel, c, rng));
  benchmark::DoNotOptimize(ballast.get());
}

}  // namespace

BENCHMARK(measure<tunekit::Deterministic>)->Name("in_process")->Arg(0)->Unit(benchmark::kMicrosecond);
BENCHMARK(measure<tunekit::Isolated<tunekit::Deterministic>>)
    ->Name("isolated")
    ->Arg(0)
    ->Arg(256)
    ->Arg(2048)
    ->Unit(benchmark::kMicrosecond);
