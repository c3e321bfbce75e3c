// The conv2d's register tiles on one core, against the core's own peak measured side by side:
// every direct-plan tile (conv2d/tile.hpp) and every gemm1x1 micro-kernel (conv2d/gemm1x1.hpp)
// that conv2d_space offers on this build's target, each on data that stays in the core's caches,
// as GFLOPS and as a fraction (of_peak) of the core's peak: independent multiply-adds on
// registers only, the most this core does, measured just before each benchmark's timed loop (and
// on its own as BM_peak). A
// tile far below the others points at its code, not at memory: e.g. a tile whose weights g++
// reads from memory once per multiply-add instead of holding them in registers
// (load_to_register, simd.hpp). Run it on a quiet machine, one thread; on a shared host, read
// the GFLOPS of the "_max" rows of repetitions:
//
//   taskset -c 0 build/bench/bench_conv2d_tiles --benchmark_min_time=0.05 --benchmark_repetitions=20
//       --benchmark_report_aggregates_only=true
#include <tunekit/kernels/cpu/conv2d.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace {

using namespace tunekit::cpu;

using Clock = std::chrono::steady_clock;

// GFLOPS of the timed loop that began at t0, and its fraction of `peak` GFLOPS.
void report(benchmark::State& state, double flop_per_iteration, Clock::time_point t0, double peak) {
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  const double gflops = flop_per_iteration * static_cast<double>(state.iterations()) / seconds / 1e9;
  state.counters["GFLOPS"] = gflops;
  state.counters["of_peak"] = gflops / peak;
}

// Ten independent chains of vector multiply-adds on registers: enough to cover a multiply-add's
// latency on two units (4 cycles x 2 on Zen 3 and on Intel's AVX-512 cores).
struct PeakChains {
  vfloat a[10];
  PeakChains() {
    for (int i = 0; i < 10; ++i) a[i] = vfloat{} + 1.0f + 1e-3f * static_cast<float>(i);
  }
  // `steps` multiply-adds on each chain; returns their FLOP.
  double run(int steps) {
    const vfloat m = vfloat{} + 0.9999f, c = vfloat{} + 1e-4f;
    for (int s = 0; s < steps; ++s) {
#pragma GCC unroll 10
      for (int i = 0; i < 10; ++i) a[i] = a[i] * m + c;
    }
    benchmark::DoNotOptimize(a);
    return 2.0 * 10 * steps * simd_width;
  }
};

// The peak of this core just before a benchmark's timed loop, for its ratio: the fastest of 10
// spells of 5 ms.
double measure_peak() {
  PeakChains chains;
  double best = 0.0;
  for (int spell = 0; spell < 10; ++spell) {
    const auto t0 = Clock::now();
    double flop = 0.0;
    std::chrono::duration<double> t{};
    while ((t = Clock::now() - t0).count() < 0.005) flop += chains.run(1000);
    best = std::max(best, flop / t.count() / 1e9);
  }
  return best;
}

void BM_peak(benchmark::State& state) {
  const double peak = measure_peak();
  PeakChains chains;
  double flop = 0.0;
  const auto t0 = Clock::now();
  for (auto _ : state) flop = chains.run(1000);
  report(state, flop, t0, peak);
}

// The direct tile of P positions x V vectors over the 576 taps of a 3x3 kernel on a chunk of 64
// input channels, as the nchwc layout reads them (16 channels per block, kh_kw_ic order): the
// weights of one output-channel tile (576 x V vectors) and a window of input that fit L2.
void BM_direct(benchmark::State& state, int P, int V) {
  constexpr std::size_t taps = 576, cb = 16;
  const auto tile = detail::find_conv2d_tile(P, V);
  std::vector<float> input(4 * 3 * 64 * cb, 0.5f), acc(static_cast<std::size_t>(P * V * simd_width));
  AlignedBuffer weights(taps * static_cast<std::size_t>(V * simd_width));
  for (std::size_t i = 0; i < weights.size(); ++i) weights.data()[i] = 1e-3f * static_cast<float>(i % 7);
  std::vector<std::int32_t> offset(taps);
  for (std::size_t t = 0; t < taps; ++t)  // (kh, kw, channel) -> [block][row][column][channel]
    offset[t] = static_cast<std::int32_t>(((t % 64) / cb * 3 * 64 + t / 192 * 64 + t / 64 % 3) * cb + t % cb);
  bool accumulate = false;
  const double peak = measure_peak();
  const auto t0 = Clock::now();
  for (auto _ : state) {
    tile(input.data(), offset.data(), weights.data(), taps, static_cast<std::ptrdiff_t>(cb), acc.data(), accumulate);
    accumulate = true;
    benchmark::ClobberMemory();
  }
  report(state, 2.0 * P * V * simd_width * static_cast<double>(taps), t0, peak);
}

// The gemm1x1 micro-kernel of R output channels x V vectors of positions over 256 input channels
// of an input plane of 56 x 56 positions (rows of the [ic][position] input 3136 floats apart), the
// weights packed as the plan packs them.
void BM_gemm1x1(benchmark::State& state, int R, int V) {
  constexpr std::size_t kc = 256, plane = 56 * 56;
  const auto kernel = detail::conv2d_gemm_kernels(R, V)[static_cast<std::size_t>(V - 1)];
  AlignedBuffer a(kc * static_cast<std::size_t>(R)), b(kc * plane), c(static_cast<std::size_t>(R) * plane);
  for (std::size_t i = 0; i < a.size(); ++i) a.data()[i] = 1e-3f * static_cast<float>(i % 5);
  for (std::size_t i = 0; i < b.size(); ++i) b.data()[i] = 0.5f;
  const double peak = measure_peak();
  const auto t0 = Clock::now();
  for (auto _ : state) {
    kernel(kc, a.data(), 0, b.data(), plane, c.data(), plane, false);
    benchmark::ClobberMemory();
  }
  report(state, 2.0 * R * V * simd_width * static_cast<double>(kc), t0, peak);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("simd", simd_name());
  benchmark::AddCustomContext("vector registers", std::to_string(vector_registers));
  // With --benchmark_repetitions, a "max" row besides mean and median: on a shared host, the
  // fastest repetition is the closest to what the code does (its GFLOPS column; its time column
  // is the slowest).
  auto with_max = [](benchmark::internal::Benchmark* b) {
    b->ComputeStatistics("max", [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); });
  };
  with_max(benchmark::RegisterBenchmark("BM_peak", BM_peak));
  for (int P : conv2d_tile_widths)
    for (int V = 1; V <= conv2d_max_oc_vectors; ++V)
      if (is_conv2d_tile(P, V) && conv2d_tile_registers(P, V) <= vector_registers)
        with_max(benchmark::RegisterBenchmark(("BM_direct/" + std::to_string(P) + "x" + std::to_string(V)).c_str(),
                                              [P, V](benchmark::State& s) { BM_direct(s, P, V); }));
  for (int R : conv2d_gemm_rows)
    for (int V = 1; V <= conv2d_max_oc_vectors; ++V)
      if (is_conv2d_gemm_tile(R, V))
        with_max(benchmark::RegisterBenchmark(("BM_gemm1x1/" + std::to_string(R) + "x" + std::to_string(V)).c_str(),
                                              [R, V](benchmark::State& s) { BM_gemm1x1(s, R, V); }));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
