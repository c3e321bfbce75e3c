// tunekit's SGEMM with one configuration against OpenBLAS's cblas_sgemm and Eigen's product, side
// by side on the same matrices (1024^3 and 2048^3, 2 threads unless TUNEKIT_THREADS is set).
// The configuration: --config "mr=...;nr=...;..." (as tune_gemm prints it), else a default that
// tuning found on the development machine.
#include <tunekit/kernels/cpu/gemm.hpp>

#include <Eigen/Core>
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <cstdlib>
#include <cstring>
#include <string>

extern "C" void openblas_set_num_threads(int);

namespace {

std::string config_text = "mr=8;nr=32;mc=32;nc=4096;kc=384;pack_a=0;pack_b=1;parallel=ic;schedule=dynamic;unroll=1";

int threads() {
  const char* t = std::getenv("TUNEKIT_THREADS");
  return t ? std::atoi(t) : 2;
}

struct Operands {
  std::size_t n;
  tunekit::cpu::AlignedBuffer a, b, c;
  explicit Operands(std::size_t n_) : n(n_), a(n * n), b(n * n), c(n * n) {
    tunekit::Rng rng(1);
    tunekit::cpu::fill_uniform(a, rng);
    tunekit::cpu::fill_uniform(b, rng);
  }
};

void report(benchmark::State& state, std::size_t n) {
  state.counters["GFLOPS"] = benchmark::Counter(2.0 * static_cast<double>(n * n * n) * static_cast<double>(state.iterations()) / 1e9,
                                                benchmark::Counter::kIsRate);
}

void BM_tunekit(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  Operands o(n);
  const auto space = tunekit::cpu::gemm_space();
  const auto p = tunekit::cpu::gemm_params(space, space.parse(config_text));
  tunekit::cpu::GemmWorkspace ws;
  for (auto _ : state) tunekit::cpu::sgemm(p, n, n, n, o.a.data(), n, o.b.data(), n, o.c.data(), n, ws, threads());
  report(state, n);
}

void BM_openblas(benchmark::State& state) {
  const auto n = static_cast<int>(state.range(0));
  Operands o(static_cast<std::size_t>(n));
  openblas_set_num_threads(threads());
  for (auto _ : state)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, o.a.data(), n, o.b.data(), n, 0.0f,
                o.c.data(), n);
  report(state, static_cast<std::size_t>(n));
}

void BM_eigen(benchmark::State& state) {
  const auto n = static_cast<Eigen::Index>(state.range(0));
  Operands o(static_cast<std::size_t>(n));
  Eigen::setNbThreads(threads());
  using M = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<M> a(o.a.data(), n, n), b(o.b.data(), n, n), c(o.c.data(), n, n);
  for (auto _ : state) c.noalias() = a * b;
  report(state, static_cast<std::size_t>(n));
}

BENCHMARK(BM_tunekit)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_openblas)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_eigen)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--config") == 0) {
      config_text = argv[i + 1];
      for (int j = i; j + 2 <= argc; ++j) argv[j] = argv[j + 2];
      argc -= 2;
      break;
    }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("tunekit config", config_text);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
