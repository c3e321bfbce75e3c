// Tunes tunekit's OpenMP conv2d on one ResNet-18 layer on this machine, then compares the best
// configuration with oneDNN's convolution on the same shape and data in this process.

#include <tunekit/kernels/cpu/conv2d.hpp>
#include <tunekit/kernels/cpu/resnet18.hpp>
#include <tunekit/tunekit.hpp>

#include "cli.hpp"
#include "tuning.hpp"

#include <dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace {

const std::string usage = R"(usage: tune_conv2d [options]

Tunes tunekit's OpenMP conv2d (NCHW fp32) on one ResNet-18 layer with a tuner preset (tunekit's
own search, tpe, by default), verifying every configuration against a
double-precision reference, then times the best one against oneDNN's convolution on the same
shape and data.

options:
  --layer I         ResNet-18 layer, 1 to 12 (TVM's list; --list shows it)   [6]
  --threads P       OpenMP threads (oneDNN gets as many)                   [all cores]
  --runs R          timed runs of the final comparison (median)            [21]
  --list            print the layers and exit
)";


std::string shape_tuple(const tunekit::cpu::Conv2dShape& s) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "(%zu,%zu,%zu,%zu,%zu,%zu,%zu,%zu,%zu,%zu,%zu)", s.batch, s.height, s.width,
                s.in_channels, s.out_channels, s.kernel_h, s.kernel_w, s.pad_h, s.pad_w, s.stride_h, s.stride_w);
  return buf;
}

// oneDNN's forward-inference convolution of the kernel's shape and data, in the layouts it
// prefers (format_tag::any); the reorders from and to NCHW / OIHW happen outside `run()`.
class OneDnnConv {
 public:
  explicit OneDnnConv(const tunekit::cpu::Conv2dKernel& k) : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {
    using dnnl::memory;
    using tag = memory::format_tag;
    const auto& s = k.shape();
    auto d = [](std::size_t v) { return static_cast<memory::dim>(v); };
    const memory::dims src_dims{d(s.batch), d(s.in_channels), d(s.height), d(s.width)};
    const memory::dims wei_dims{d(s.out_channels), d(s.in_channels), d(s.kernel_h), d(s.kernel_w)};
    const memory::dims dst_dims{d(s.batch), d(s.out_channels), d(s.out_height()), d(s.out_width())};
    const memory::dims strides{d(s.stride_h), d(s.stride_w)}, padding{d(s.pad_h), d(s.pad_w)};
    const auto f32 = memory::data_type::f32;
    const dnnl::convolution_forward::desc desc(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, {src_dims, f32, tag::any},
        {wei_dims, f32, tag::any}, {dst_dims, f32, tag::any}, strides, padding, padding);
    const dnnl::convolution_forward::primitive_desc pd(desc, engine_);
    impl_ = pd.impl_info_str();
    conv_ = dnnl::convolution_forward(pd);
    src_ = memory(pd.src_desc(), engine_);
    wei_ = memory(pd.weights_desc(), engine_);
    dst_ = memory(pd.dst_desc(), engine_);
    user_dst_ = memory({dst_dims, f32, tag::nchw}, engine_);
    user_src_ = memory({src_dims, f32, tag::nchw}, engine_, const_cast<float*>(k.input()));
    memory user_wei({wei_dims, f32, tag::oihw}, engine_, const_cast<float*>(k.weights()));
    src_reorder_ = dnnl::reorder(user_src_, src_);
    dst_reorder_ = dnnl::reorder(dst_, user_dst_);
    src_reorder_.execute(stream_, user_src_, src_);
    dnnl::reorder(user_wei, wei_).execute(stream_, user_wei, wei_);
    stream_.wait();
  }

  const std::string& implementation() const noexcept { return impl_; }

  // One convolution in oneDNN's layouts; returns its seconds.
  double run() {
    return tunekit::cpu::seconds_of([&] {
      conv_.execute(stream_, {{DNNL_ARG_SRC, src_}, {DNNL_ARG_WEIGHTS, wei_}, {DNNL_ARG_DST, dst_}});
      stream_.wait();
    });
  }

  // One NCHW-to-NCHW convolution: the input reordered into oneDNN's layout, the convolution,
  // the output reordered back (the weights stay pre-reordered); returns its seconds.
  double run_nchw() {
    return tunekit::cpu::seconds_of([&] {
      src_reorder_.execute(stream_, user_src_, src_);
      conv_.execute(stream_, {{DNNL_ARG_SRC, src_}, {DNNL_ARG_WEIGHTS, wei_}, {DNNL_ARG_DST, dst_}});
      dst_reorder_.execute(stream_, dst_, user_dst_);
      stream_.wait();
    });
  }

  // The last output reordered to NCHW.
  const float* output_nchw() {
    dst_reorder_.execute(stream_, dst_, user_dst_);
    stream_.wait();
    return static_cast<const float*>(user_dst_.get_data_handle());
  }

 private:
  dnnl::engine engine_;
  dnnl::stream stream_;
  dnnl::convolution_forward conv_;
  dnnl::memory src_, wei_, dst_, user_src_, user_dst_;
  dnnl::reorder src_reorder_, dst_reorder_;
  std::string impl_;
};

}  // namespace

int main(int argc, char** argv) {
  const examples::MpiRun mpi(argc, argv);  // under mpirun: rank 0 tunes, the others measure
  // A sample is at least 1 ms of runs; a configuration whose measurement takes over 5 s is
  // abandoned (timeout).
  const examples::TuningSetup defaults{
      .budget = 2000,
      .seconds = 90,
      .evaluator = {.warmup = 1, .repeat = 5, .min_repeat_ms = 1.0, .timeout_seconds = 5.0},
      .adaptive = {.max_runs = 100, .batch = 5, .timeout_seconds = 5.0}};
  const std::string text = usage + examples::tuning_usage("tune_conv2d", defaults, "data", "measurement + search");
  tunekit::cli::CommandLine cl(argc, argv, "tune_conv2d", text);
  const std::size_t layer = cl.count("--layer", 6);
  const int threads = static_cast<int>(cl.count("--threads", static_cast<std::size_t>(omp_get_num_procs())));
  const std::size_t runs = cl.count("--runs", 21);
  const bool list = cl.flag("--list");
  const examples::TuningSetup setup = examples::read_setup(cl, "tune_conv2d", defaults);
  cl.reject_unknown();
  const auto& tasks = tunekit::cpu::resnet18_conv2d_tasks;
  if (list) {
    std::printf("%-6s %-14s %-44s %10s\n", "layer", "name", "(batch,H,W,IC,OC,KH,KW,pad_h,pad_w,stride_h,stride_w)", "MFLOP");
    for (std::size_t i = 0; i < tasks.size(); ++i)
      std::printf("%-6zu %-14s %-44s %10.1f\n", i + 1, std::string(tasks[i].name).c_str(),
                  shape_tuple(tasks[i].shape).c_str(), tasks[i].flop() / 1e6);
    return 0;
  }
  if (layer < 1 || layer > tasks.size()) cl.fail("--layer must be 1 to " + std::to_string(tasks.size()));
  const auto& task = tasks[layer - 1];
  const std::string name(task.name);

  try {
    std::printf("tune_conv2d: %s %s, %.1f MFLOP, %d threads, %s vectors (%d lanes); computing the reference...\n",
                name.c_str(), shape_tuple(task.shape).c_str(), task.flop() / 1e6, threads,
                tunekit::cpu::simd_name(), tunekit::cpu::simd_width);
    std::fflush(stdout);
    tunekit::cpu::Conv2dKernel kernel(task.shape, {.threads = threads, .seed = setup.seed, .name = name});
    examples::print_space(kernel.space());

    const auto result = examples::tune(kernel, setup).result;
    if (examples::MpiRun::measures_only()) return 0;  // it measured for rank 0
    if (!result.best) {
      std::fprintf(stderr, "tune_conv2d: no configuration succeeded\n");
      return 1;
    }

    // Side by side on the same data, timed the same way: each run timed on its own with
    // steady_clock, the three in turns of 5 runs after an untimed one (interleaved_medians).
    const auto& best = result.best->config;
    tunekit::Rng rng(setup.seed);  // the CPU kernel ignores it
    auto ready = kernel.prepare(best);  // sets the best up again, runs it once and verifies it
    if (ready.status == tunekit::Status::ok) ready = kernel.run(best, 1, rng);
    if (ready.status == tunekit::Status::ok) ready = kernel.verify(best);
    if (ready.status != tunekit::Status::ok) {
      std::fprintf(stderr, "tune_conv2d: the best configuration failed again: %s\n", ready.error.c_str());
      return 1;
    }
    omp_set_num_threads(threads);  // oneDNN's OpenMP runtime uses omp_get_max_threads()
    OneDnnConv onednn(kernel);
    const auto [t_tunekit, t_onednn, t_onednn_nchw] = examples::interleaved_medians(
        runs, 5,
        [&] {
          const auto r = kernel.run(best, 1, rng);
          return r.status == tunekit::Status::ok ? r.seconds.front() : HUGE_VAL;
        },
        [&] { return onednn.run(); }, [&] { return onednn.run_nchw(); });
    // oneDNN's result against the same reference and tolerance as tunekit's.
    const float* y = onednn.output_nchw();
    double worst_ratio = 0.0;
    for (std::size_t i = 0; i < task.shape.output_size(); ++i)
      worst_ratio = std::max(worst_ratio, std::abs(static_cast<double>(y[i]) - kernel.reference()[i]) /
                                              kernel.tolerance()[i]);

    const dnnl_version_t* v = dnnl_version();
    const std::string onednn_name = "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) +
                                    " " + onednn.implementation();
    const double g_tunekit = task.flop() / t_tunekit / 1e9, g_onednn = task.flop() / t_onednn / 1e9,
                 g_onednn_nchw = task.flop() / t_onednn_nchw / 1e9;
    std::printf("\nbest configuration: %s\n", kernel.space().describe(best).c_str());
    std::printf("  (tuner's measurement %.1f GFLOPS)\n\n", result.best->measurement.throughput(kernel.flop()) / 1e9);
    std::printf("%s %s, median of %zu runs (in turns of 5, each after an untimed run), %d threads\n", name.c_str(),
                shape_tuple(task.shape).c_str(), (runs + 4) / 5 * 5, threads);
    std::printf("%-42s %10s %10s %10s\n", "", "ms", "GFLOPS", "vs oneDNN");
    std::printf("%-42s %10.3f %10.1f %10.2f\n", "tunekit conv2d, tuned", t_tunekit * 1e3, g_tunekit, g_tunekit / g_onednn);
    std::printf("%-42s %10.3f %10.1f %10.2f\n", onednn_name.c_str(), t_onednn * 1e3, g_onednn, 1.0);
    std::printf("%-42s %10.3f %10.1f %10.2f\n", "  the same, NCHW in/out (reorders timed)", t_onednn_nchw * 1e3,
                g_onednn_nchw, g_onednn_nchw / g_onednn);
    std::printf("\ntunekit: NCHW input to NCHW output; input packing (if chosen) inside the timed run, weights\n"
                "  packed beforehand.\n"
                "oneDNN: its preferred blocked layouts (format_tag::any); the reorders of input, weights and\n"
                "  output are outside the timed loop (the last row times the input and output reorders too,\n"
                "  weights stay pre-reordered). Its output is %s tunekit's tolerance (worst error\n"
                "  %.3g x the tolerance).\n"
                "tunekit vs oneDNN NCHW in/out: %.2f\n",
                worst_ratio <= 1.0 ? "within" : "OUTSIDE", worst_ratio, g_tunekit / g_onednn_nchw);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tune_conv2d: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
