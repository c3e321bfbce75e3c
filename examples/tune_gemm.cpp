// The main job: tune tunekit's OpenMP SGEMM at 1024^3 on this machine, then compare the best
// configuration with OpenBLAS's sgemm and Eigen's product on the same matrices in this process.

#include <tunekit/kernels/cpu/gemm.hpp>
#include <tunekit/tunekit.hpp>

#include "cli.hpp"
#include "tuning.hpp"

#include <Eigen/Core>
#include <cblas.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

extern "C" void openblas_set_num_threads(int);
extern "C" char* openblas_get_corename();

namespace {

const std::string usage = R"(usage: tune_gemm [options]

Tunes tunekit's OpenMP SGEMM (C = A * B, row-major fp32) on this machine with a tuner preset
(tunekit's own search, tpe, by default), verifying every configuration against a
double-precision reference, then times the best one against OpenBLAS's cblas_sgemm and Eigen's
product on the same matrices.

options:
  --size N          M = N = K                                              [1024]
  --m M --n N --k K the three sizes separately
  --threads P       OpenMP threads (OpenBLAS and Eigen get as many)        [all cores]
)";

}  // namespace

int main(int argc, char** argv) {
  const examples::MpiRun mpi(argc, argv);  // under mpirun: rank 0 tunes, the others measure
  const examples::TuningSetup defaults{
      .budget = 500,
      .seconds = 150,
      // Over 5 s for a measurement: a timeout.
      .evaluator = {.warmup = 1, .repeat = 5, .timeout_seconds = 5.0},
      // One run (milliseconds here) per micro-batch.
      .adaptive = {.max_runs = 10, .batch = 1, .timeout_seconds = 5.0}};
  const std::string text = usage + examples::tuning_usage("tune_gemm", defaults, "matrices", "measurement + search");
  tunekit::cli::CommandLine cl(argc, argv, "tune_gemm", text);
  const std::size_t size = cl.count("--size", 1024);
  const std::size_t m = cl.count("--m", size), n = cl.count("--n", size), k = cl.count("--k", size);
  const int threads = static_cast<int>(cl.count("--threads", static_cast<std::size_t>(omp_get_num_procs())));
  const examples::TuningSetup setup = examples::read_setup(cl, "tune_gemm", defaults);
  cl.reject_unknown();

  try {
    std::printf("tune_gemm: SGEMM %zux%zux%zu, %d threads, %s vectors; computing the reference...\n", m, n,
                k, threads, tunekit::cpu::simd_name());
    std::fflush(stdout);
    tunekit::cpu::GemmKernel kernel(m, n, k, {.threads = threads, .seed = setup.seed});
    examples::print_space(kernel.space());

    const auto result = examples::tune(kernel, setup).result;
    if (examples::MpiRun::measures_only()) return 0;  // it measured for rank 0
    if (!result.best) {
      std::fprintf(stderr, "tune_gemm: no configuration succeeded\n");
      return 1;
    }

    // Side by side on the same matrices: the best configuration, OpenBLAS, Eigen.
    constexpr std::size_t runs = 15;
    const double flop = kernel.flop();
    const auto p = tunekit::cpu::gemm_params(kernel.space(), result.best->config);
    tunekit::cpu::GemmWorkspace ws;
    tunekit::cpu::AlignedBuffer c(m * n);
    auto timed = [](auto&& f) { return [f] { return tunekit::cpu::seconds_of(f); }; };
    openblas_set_num_threads(threads);
    Eigen::setNbThreads(threads);
    const auto mi = static_cast<int>(m), ni = static_cast<int>(n), ki = static_cast<int>(k);
    using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    Eigen::Map<const RowMajor> ea(kernel.a(), mi, ki), eb(kernel.b(), ki, ni);
    Eigen::Map<RowMajor> ec(c.data(), mi, ni);
    const auto [t_tunekit, t_openblas, t_eigen] = examples::interleaved_medians(
        runs, 5,
        timed([&] { tunekit::cpu::sgemm(p, m, n, k, kernel.a(), k, kernel.b(), n, c.data(), n, ws, threads); }),
        timed([&] {
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, mi, ni, ki, 1.0f, kernel.a(), ki, kernel.b(), ni,
                      0.0f, c.data(), ni);
        }),
        timed([&] { ec.noalias() = ea * eb; }));

    const double g_tunekit = flop / t_tunekit / 1e9, g_openblas = flop / t_openblas / 1e9,
                 g_eigen = flop / t_eigen / 1e9;
    std::printf("\nbest configuration: %s\n\n", kernel.space().describe(result.best->config).c_str());
    std::printf("%-34s %10s %12s\n", "SGEMM (median of 15, in turns)", "GFLOPS", "vs OpenBLAS");
    std::printf("%-34s %10.1f %12.2f\n", "tunekit, tuned", g_tunekit, g_tunekit / g_openblas);
    const std::string ob = std::string("OpenBLAS ") + openblas_get_corename();
    std::printf("%-34s %10.1f %12.2f\n", ob.c_str(), g_openblas, 1.0);
    std::printf("%-34s %10.1f %12.2f\n", "Eigen 3.4", g_eigen, g_eigen / g_openblas);
    if (const char* core = std::getenv("OPENBLAS_CORETYPE"))
      std::printf("(OpenBLAS's kernels were chosen by OPENBLAS_CORETYPE=%s, not detected)\n", core);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tune_gemm: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
