// Tunes tunekit's CUDA SGEMM (NVRTC-compiled) on a GPU, or on W GPUs with --workers W (one
// worker process each, docs/farm.md), then compares the best configuration with cuBLAS's SGEMM
// on the same matrices in this process.

#include <tunekit/kernels/cuda/gemm.hpp>
#include <tunekit/tunekit.hpp>

#include "cli.hpp"
#include "tuning.hpp"

#include <cstdio>
#include <string>

namespace {

const std::string usage = R"(usage: tune_gemm_cuda [options]

Tunes tunekit's CUDA SGEMM (C = A * B, row-major fp32; each configuration compiled at run time
with NVRTC) on a GPU with a tuner preset, verifying every configuration against cuBLAS, then
times the best one against cuBLAS's cublasSgemm (fp32, no TF32) on the same matrices.

options:
  --size N          M = N = K                                              [2048]
  --m M --n N --k K the three sizes separately
  --device D        CUDA device ordinal (without --workers)                [0]
)";

}  // namespace

int main(int argc, char** argv) {
  const examples::MpiRun mpi(argc, argv);  // under mpirun: rank 0 tunes, the others measure
  const examples::TuningSetup& defaults = examples::cuda_tuning_defaults;
  const std::string text = usage + examples::tuning_usage("tune_gemm_cuda", defaults, "matrices", "compilation included");
  tunekit::cli::CommandLine cl(argc, argv, "tune_gemm_cuda", text);
  const std::size_t size = cl.count("--size", 2048);
  const auto m = static_cast<std::int64_t>(cl.count("--m", size)), n = static_cast<std::int64_t>(cl.count("--n", size)),
             k = static_cast<std::int64_t>(cl.count("--k", size));
  const int device = static_cast<int>(cl.natural("--device", 0));
  examples::TuningSetup setup = examples::read_setup(cl, "tune_gemm_cuda", defaults);
  cl.reject_unknown();
  if (setup.workers > 0 && cl.given("--device"))
    cl.fail("--device and --workers: the workers measure on GPUs 0..W-1, or on the first W of "
            "CUDA_VISIBLE_DEVICES");

  try {
    // Neither the kernel nor the GPU count opens a device in this process (they are read in a
    // child process): the workers, forked when the tuning starts, open their own.
    if (setup.workers > 0) setup.gpus = examples::cuda_worker_gpus(cl, setup.workers, tunekit::cuda::device_count());
    tunekit::cuda::GemmKernel kernel(m, n, k, {.device = device, .seed = setup.seed});
    std::printf("tune_gemm_cuda: SGEMM %lldx%lldx%lld on %s (%s)\n", static_cast<long long>(m),
                static_cast<long long>(n), static_cast<long long>(k), kernel.device_info().name.c_str(),
                kernel.device_info().arch().c_str());
    examples::print_space(kernel.space());
    const auto result = examples::tune(kernel, setup).result;
    if (examples::MpiRun::measures_only()) return 0;  // it measured for rank 0
    if (!result.best) {
      std::fprintf(stderr, "tune_gemm_cuda: no configuration succeeded\n");
      return 1;
    }

    // Side by side on the same matrices: the best configuration and cuBLAS, on device `device`
    // of this process (opened here when workers measured).
    kernel.open();
    const tunekit::Config best = result.best->config;
    tunekit::Rng rng(setup.seed);
    auto one = [](tunekit::RunResult r) {
      if (r.status != tunekit::Status::ok) throw std::runtime_error(r.error);
      return r.seconds.at(0);
    };
    const auto [t_tunekit, t_cublas] = examples::interleaved_medians(
        25, 5, [&] { return one(kernel.run(best, 1, rng)); }, [&] { return one(kernel.run_cublas(1)); });
    const double flop = kernel.flop(), g_tunekit = flop / t_tunekit / 1e9, g_cublas = flop / t_cublas / 1e9;
    std::printf("\nbest configuration: %s\n\n", kernel.space().describe(best).c_str());
    std::printf("%-34s %10s %12s\n", "SGEMM (median of 25, in turns)", "GFLOPS", "vs cuBLAS");
    std::printf("%-34s %10.1f %12.2f\n", "tunekit CUDA, tuned", g_tunekit, g_tunekit / g_cublas);
    std::printf("%-34s %10.1f %12.2f\n", "cuBLAS cublasSgemm", g_cublas, 1.0);
  } catch (const tunekit::cuda::DriverError& e) {
    std::fprintf(stderr, "tune_gemm_cuda: no usable CUDA device: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tune_gemm_cuda: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
