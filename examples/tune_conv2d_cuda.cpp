// Tunes tunekit's CUDA conv2d (NVRTC-compiled) on a ResNet-18 layer on a GPU, or on W GPUs with
// --workers W (one worker process each, docs/farm.md), then compares the best configuration with
// cuDNN's fastest fp32 forward convolution on the same tensors in this process.

#include <tunekit/kernels/cpu/resnet18.hpp>
#include <tunekit/kernels/cuda/conv2d.hpp>
#include <tunekit/tunekit.hpp>

#include "cli.hpp"
#include "cuda_conv2d_shape.hpp"
#include "tuning.hpp"

#include <cudnn.h>

#include <cstdio>
#include <stdexcept>
#include <string>

namespace {

const std::string usage = R"(usage: tune_conv2d_cuda [options]

Tunes tunekit's CUDA conv2d (NCHW, fp32; direct or implicit GEMM, each configuration compiled at
run time with NVRTC) on a ResNet-18 layer with a tuner preset, verifying every configuration
against a double-precision CPU reference, then times the best one against cuDNN's fastest
forward algorithm (cudnnFindConvolutionForwardAlgorithm, FMA math: fp32, no TF32).

options:
  --layer NAME      resnet18.C1 ... resnet18.C12                           [resnet18.C6]
  --batch N         images per run                                         [1]
  --device D        CUDA device ordinal (without --workers)                [0]
)";

void check_cudnn(cudnnStatus_t s, const char* what) {
  if (s != CUDNN_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + ": " + cudnnGetErrorString(s));
}

// cuDNN's fastest fp32 forward convolution of the kernel's tensors.
class CudnnConvolution {
 public:
  explicit CudnnConvolution(tunekit::cuda::Conv2dKernel& k) : k_(k) {
    const auto& s = k.shape();
    auto i = [](std::int64_t v) { return static_cast<int>(v); };
    check_cudnn(cudnnCreate(&handle_), "cudnnCreate");
    check_cudnn(cudnnCreateTensorDescriptor(&x_), "cudnnCreateTensorDescriptor");
    check_cudnn(cudnnCreateTensorDescriptor(&y_), "cudnnCreateTensorDescriptor");
    check_cudnn(cudnnCreateFilterDescriptor(&w_), "cudnnCreateFilterDescriptor");
    check_cudnn(cudnnCreateConvolutionDescriptor(&conv_), "cudnnCreateConvolutionDescriptor");
    check_cudnn(cudnnSetTensor4dDescriptor(x_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, i(s.batch), i(s.in_channels),
                                           i(s.height), i(s.width)), "cudnnSetTensor4dDescriptor");
    check_cudnn(cudnnSetTensor4dDescriptor(y_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, i(s.batch), i(s.out_channels),
                                           i(s.out_h()), i(s.out_w())), "cudnnSetTensor4dDescriptor");
    check_cudnn(cudnnSetFilter4dDescriptor(w_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, i(s.out_channels),
                                           i(s.in_channels), i(s.kernel_h), i(s.kernel_w)), "cudnnSetFilter4dDescriptor");
    check_cudnn(cudnnSetConvolution2dDescriptor(conv_, i(s.pad_h), i(s.pad_w), i(s.stride_h), i(s.stride_w), 1, 1,
                                                CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                "cudnnSetConvolution2dDescriptor");
    check_cudnn(cudnnSetConvolutionMathType(conv_, CUDNN_FMA_MATH), "cudnnSetConvolutionMathType");
    cudnnConvolutionFwdAlgoPerf_t perf[8];
    int found = 0;
    check_cudnn(cudnnFindConvolutionForwardAlgorithm(handle_, x_, w_, conv_, y_, 8, &found, perf),
                "cudnnFindConvolutionForwardAlgorithm");
    for (int a = 0; a < found && algo_ < 0; ++a)
      if (perf[a].status == CUDNN_STATUS_SUCCESS && perf[a].mathType == CUDNN_FMA_MATH) {
        algo_ = perf[a].algo;
        workspace_bytes_ = perf[a].memory;
      }
    if (algo_ < 0) throw std::runtime_error("cuDNN has no fp32 (FMA) algorithm for this convolution");
    workspace_ = tunekit::cuda::DeviceBuffer((workspace_bytes_ + 3) / 4);
  }
  CudnnConvolution(const CudnnConvolution&) = delete;
  CudnnConvolution& operator=(const CudnnConvolution&) = delete;
  ~CudnnConvolution() {
    cudnnDestroyConvolutionDescriptor(conv_);
    cudnnDestroyFilterDescriptor(w_);
    cudnnDestroyTensorDescriptor(y_);
    cudnnDestroyTensorDescriptor(x_);
    cudnnDestroy(handle_);
  }

  int algorithm() const noexcept { return algo_; }

  /// The seconds of one forward convolution (CUDA events).
  double time_one() {
    tunekit::cuda::EventTimer timer;
    const float one = 1.0f, zero = 0.0f;
    tunekit::cuda::check(timer.start(), "cuEventRecord");
    check_cudnn(cudnnConvolutionForward(handle_, &one, x_, reinterpret_cast<const void*>(k_.input()), w_,
                                        reinterpret_cast<const void*>(k_.weights()), conv_,
                                        static_cast<cudnnConvolutionFwdAlgo_t>(algo_),
                                        reinterpret_cast<void*>(workspace_.get()), workspace_bytes_, &zero, y_,
                                        reinterpret_cast<void*>(k_.output())),
                "cudnnConvolutionForward");
    tunekit::cuda::check(timer.stop(), "cuEventRecord");
    double s = 0.0;
    tunekit::cuda::check(timer.seconds(s), "cuEventSynchronize");
    return s;
  }

 private:
  tunekit::cuda::Conv2dKernel& k_;
  cudnnHandle_t handle_ = nullptr;
  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr;
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  int algo_ = -1;
  std::size_t workspace_bytes_ = 0;
  tunekit::cuda::DeviceBuffer workspace_;
};

}  // namespace

int main(int argc, char** argv) {
  const examples::MpiRun mpi(argc, argv);  // under mpirun: rank 0 tunes, the others measure
  const examples::TuningSetup& defaults = examples::cuda_tuning_defaults;
  const std::string text = usage + examples::tuning_usage("tune_conv2d_cuda", defaults, "tensors", "compilation included");
  tunekit::cli::CommandLine cl(argc, argv, "tune_conv2d_cuda", text);
  const std::string layer = cl.text("--layer", "resnet18.C6");
  const std::size_t batch = cl.count("--batch", 1);
  const int device = static_cast<int>(cl.natural("--device", 0));
  examples::TuningSetup setup = examples::read_setup(cl, "tune_conv2d_cuda", defaults);
  cl.reject_unknown();
  if (setup.workers > 0 && cl.given("--device"))
    cl.fail("--device and --workers: the workers measure on GPUs 0..W-1, or on the first W of "
            "CUDA_VISIBLE_DEVICES");
  if (batch == 0) cl.fail("--batch must be at least 1");

  try {
    const tunekit::cuda::Conv2dShape shape =
        examples::cuda_conv2d_shape(tunekit::cpu::resnet18_conv2d_task(layer), batch);
    // Neither the kernel nor the GPU count opens a device in this process (they are read in a
    // child process): the workers, forked when the tuning starts, open their own.
    if (setup.workers > 0) setup.gpus = examples::cuda_worker_gpus(cl, setup.workers, tunekit::cuda::device_count());
    tunekit::cuda::Conv2dKernel kernel(shape, {.device = device, .seed = setup.seed});
    std::printf("tune_conv2d_cuda: %s (batch %zu) on %s (%s)\n", layer.c_str(), batch,
                kernel.device_info().name.c_str(), kernel.device_info().arch().c_str());
    examples::print_space(kernel.space());
    const auto result = examples::tune(kernel, setup).result;
    if (examples::MpiRun::measures_only()) return 0;  // it measured for rank 0
    if (!result.best) {
      std::fprintf(stderr, "tune_conv2d_cuda: no configuration succeeded\n");
      return 1;
    }

    // cuDNN and the best configuration on device `device` of this process (opened here when
    // workers measured).
    kernel.open();
    const tunekit::Config best = result.best->config;
    CudnnConvolution cudnn(kernel);
    tunekit::Rng rng(setup.seed);
    auto one = [](tunekit::RunResult r) {
      if (r.status != tunekit::Status::ok) throw std::runtime_error(r.error);
      return r.seconds.at(0);
    };
    const auto [t_tunekit, t_cudnn] = examples::interleaved_medians(
        25, 5, [&] { return one(kernel.run(best, 1, rng)); }, [&] { return cudnn.time_one(); });
    const double flop = kernel.flop(), g_tunekit = flop / t_tunekit / 1e9, g_cudnn = flop / t_cudnn / 1e9;
    std::printf("\nbest configuration: %s\n\n", kernel.space().describe(best).c_str());
    std::printf("%-34s %10s %12s\n", "conv2d (median of 25, in turns)", "GFLOPS", "vs cuDNN");
    std::printf("%-34s %10.1f %12.2f\n", "tunekit CUDA, tuned", g_tunekit, g_tunekit / g_cudnn);
    const std::string name = "cuDNN " + std::to_string(cudnnGetVersion()) + " algo " + std::to_string(cudnn.algorithm());
    std::printf("%-34s %10.1f %12.2f\n", name.c_str(), g_cudnn, 1.0);

    // Verification against cuDNN: its output and the best configuration's, each checked against
    // the same double-precision reference and error bound (so they agree with each other). cuDNN
    // writes the kernel's output buffer, which verify checks whoever wrote it.
    cudnn.time_one();
    if (const auto r = kernel.verify(best); r.status != tunekit::Status::ok)
      throw std::runtime_error("cuDNN's output is not within the reference's error bound: " + r.error);
    one(kernel.run(best, 1, rng));
    if (const auto r = kernel.verify(best); r.status != tunekit::Status::ok)
      throw std::runtime_error("the best configuration's output is not within the reference's error bound: " + r.error);
    std::printf("\noutputs of cuDNN and of the best configuration: both within the error bound of the "
                "double-precision reference\n");
  } catch (const tunekit::cuda::DriverError& e) {
    std::fprintf(stderr, "tune_conv2d_cuda: no usable CUDA device: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tune_conv2d_cuda: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
