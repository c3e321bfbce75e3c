// Records a bundled kernel's tuning space on this machine (a CPU kernel, or with TUNEKIT_CUDA a
// CUDA kernel on a GPU): every selected valid configuration measured, written as a replay dataset
// (shared/datasets' format) for tunekit-replay.

#include <tunekit/kernels/cpu/conv2d.hpp>
#include <tunekit/kernels/cpu/gemm.hpp>
#include <tunekit/kernels/cpu/resnet18.hpp>
#include <tunekit/replay/record_dataset.hpp>

#include "cli.hpp"

#ifdef TUNEKIT_EXAMPLES_CUDA
#include <tunekit/kernels/cuda/gemm.hpp>

#include "cuda_conv2d_shape.hpp"
#endif

#include <omp.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace {

const char* const usage = R"(usage: record_space --kernel gemm|conv2d|cuda-gemm|cuda-conv2d --out FILE.csv [options]

Measures every valid configuration of a bundled kernel's space (or of the part that --only
selects) on this machine, verifying each against a double-precision reference (the CUDA SGEMM:
against cuBLAS), and writes the
recorded space in the format of shared/datasets: replay it with
tunekit-replay --dataset FILE.csv. Rows are written as they are measured (in a random order, so
that a slow spell of the machine does not fall on a run of neighbouring configurations); a killed
recording resumes from FILE.csv when started again with the same options.

options:
  --kernel NAME          gemm (the OpenMP SGEMM) or conv2d (a ResNet-18 layer);    (required)
                         cuda-gemm and cuda-conv2d, the CUDA kernels on a GPU (only
                         in a build with TUNEKIT_CUDA; each config compiled by NVRTC,
                         the next ones on other threads while one is measured)
  --out FILE.csv         the dataset                                               (required)
  --size N               gemm: M = N = K                                             [512]
  --m M --n N --k K      gemm: the three sizes separately
  --layer I              conv2d: ResNet-18 layer, 1 to 12 (tune_conv2d --list)       [9]
  --batch N              cuda-conv2d: images per run                                   [1]
  --device D             cuda-*: CUDA device ordinal                                   [0]
  --threads P            OpenMP threads (CPU kernels)                        [all cores]
  --only KNOB=V1,V2,...  record only configurations whose KNOB is one of these values,
                         written as the space writes them (e.g. parallel=jc,ic);
                         may be given once per knob
  --samples N            timed runs per configuration (the dataset's samples)         [8]
  --timeout S            a configuration whose measurement takes over S s is
                         recorded as failed (inf)                                     [5]
  --max-configs N        refuse to start when more configurations are selected    [20000]
  --seed X               seed of the input data and of the measurement order          [1]
  --dry-run              print the knobs and how many configurations are selected, and exit
  --help                 this text
)";

using Keep = std::function<bool(const tunekit::SearchSpace&, const tunekit::Config&)>;

/// The --only restrictions as a selection: per knob position, the value indices allowed.
Keep parse_only(const tunekit::SearchSpace& s, const std::vector<std::string>& only, tunekit::cli::CommandLine& cl) {
  std::map<std::size_t, std::set<std::uint32_t>> allowed;
  for (const std::string& item : only) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) cl.fail("--only needs KNOB=V1,V2,..., got '" + item + "'");
    const std::string name = item.substr(0, eq);
    std::size_t k = 0;
    try {
      k = s.knob_index(name);
    } catch (const std::out_of_range&) {
      cl.fail("--only: the space has no knob '" + name + "'");
    }
    if (allowed.contains(k)) cl.fail("--only: knob '" + name + "' given twice");
    auto& values = allowed[k];
    std::string rest = item.substr(eq + 1);
    while (!rest.empty()) {
      const auto comma = rest.find(',');
      const std::string v = rest.substr(0, comma);
      rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
      std::uint32_t i = 0;
      while (i < s.knob(k).size() && s.knob(k).to_string(i) != v) ++i;
      if (i == s.knob(k).size()) {
        std::string have;
        for (std::size_t j = 0; j < s.knob(k).size(); ++j) {
          if (j) have += ',';
          have += s.knob(k).to_string(j);
        }
        cl.fail("--only: knob '" + name + "' has no value '" + v + "' (its values: " + have + ")");
      }
      values.insert(i);
    }
  }
  return [allowed](const tunekit::SearchSpace&, const tunekit::Config& c) {
    for (const auto& [k, values] : allowed)
      if (!values.contains(c[k])) return false;
    return true;
  };
}

template <class K>
int record(K& kernel, tunekit::cli::CommandLine& cl, const std::vector<std::string>& only, const std::string& out,
           const tunekit::RecordOptions& base, std::size_t max_configs, bool dry_run) {
  tunekit::RecordOptions options = base;
  if (!only.empty()) options.keep = parse_only(kernel.space(), only, cl);
  const std::size_t selected = tunekit::record_selection(kernel.space(), options).size();
  std::printf("space: %llu valid configurations; %zu selected\n",
              static_cast<unsigned long long>(kernel.space().count_valid()), selected);
  for (const auto& k : kernel.space().knobs()) {
    std::printf("  %-12s", k.name().c_str());
    for (std::size_t i = 0; i < k.size(); ++i) std::printf(" %s", k.to_string(i).c_str());
    std::printf("\n");
  }
  if (dry_run) return 0;
  if (selected == 0) cl.fail("no valid configuration is selected");
  if (selected > max_configs)
    cl.fail(std::to_string(selected) + " configurations are selected, more than --max-configs " +
            std::to_string(max_configs) + ": restrict them with --only or raise the limit");
  const auto start = std::chrono::steady_clock::now();
  std::size_t failed = 0, last_percent = 0, first_done = 0;
  bool first = true;
  options.progress = [&](std::size_t done, std::size_t total, const tunekit::Measurement& m) {
    if (first) first_done = done - 1, first = false;
    if (!m.ok()) {  // the dataset keeps only `inf`: say why here
      ++failed;
      std::printf("\nfailed (%s): %s\n", std::string(tunekit::to_string(m.status)).c_str(), m.error.c_str());
    }
    const std::size_t percent = done * 100 / total;
    if (percent != last_percent || done == total) {
      last_percent = percent;
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const double left = s / static_cast<double>(done - first_done) * static_cast<double>(total - done);
      std::printf("\r%zu / %zu configurations (%zu failed this run), %.0f s, about %.0f s left   ", done, total, failed, s,
                  left);
      std::fflush(stdout);
    }
  };
  const std::size_t rows = tunekit::record_dataset(kernel, out, options);
  std::printf("\nwrote %zu rows to %s\n", rows, out.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  tunekit::cli::CommandLine cl(argc, argv, "record_space", usage);
  const std::string kernel_name = cl.text("--kernel", "");
  const std::string out = cl.text("--out", "");
  const std::size_t size = cl.count("--size", 512);
  const std::size_t m = cl.count("--m", size), n = cl.count("--n", size), k = cl.count("--k", size);
  const std::size_t layer = cl.count("--layer", 9);
  const std::size_t batch = cl.count("--batch", 1);
  [[maybe_unused]] const int device = static_cast<int>(cl.natural("--device", 0));  // cuda-* only
  const int threads = static_cast<int>(cl.count("--threads", static_cast<std::size_t>(omp_get_num_procs())));
  const std::vector<std::string> only = cl.texts("--only");
  const std::size_t samples = cl.count("--samples", 8);
  const double timeout = cl.real("--timeout", 5.0);
  const std::size_t max_configs = cl.count("--max-configs", 20000);
  const std::size_t seed = cl.count("--seed", 1);
  const bool dry_run = cl.flag("--dry-run");
  cl.reject_unknown();
  const bool cuda = kernel_name == "cuda-gemm" || kernel_name == "cuda-conv2d";
  if (kernel_name != "gemm" && kernel_name != "conv2d" && !cuda)
    cl.fail("--kernel must be gemm, conv2d, cuda-gemm or cuda-conv2d");
#ifndef TUNEKIT_EXAMPLES_CUDA
  if (cuda) cl.fail("--kernel " + kernel_name + ": this record_space was built without CUDA (TUNEKIT_CUDA)");
#endif
  if (batch == 0) cl.fail("--batch must be at least 1");
  const auto& tasks = tunekit::cpu::resnet18_conv2d_tasks;
  if (layer < 1 || layer > tasks.size()) cl.fail("--layer must be 1 to " + std::to_string(tasks.size()));
  if (out.empty() && !dry_run) cl.fail("--out FILE.csv is required");

  const tunekit::RecordOptions options{
      .evaluator = {.warmup = 1, .number = 1, .repeat = samples, .min_repeat_ms = 0.0, .timeout_seconds = timeout},
      .seed = seed};
  try {
    if (kernel_name == "gemm") {
      std::printf("record_space: SGEMM %zux%zux%zu, %d threads, %s vectors; computing the reference...\n", m, n, k,
                  threads, tunekit::cpu::simd_name());
      std::fflush(stdout);
      tunekit::cpu::GemmKernel kernel(m, n, k, {.threads = threads, .seed = seed});
      return record(kernel, cl, only, out, options, max_configs, dry_run);
    }
    const auto& task = tasks[layer - 1];
#ifdef TUNEKIT_EXAMPLES_CUDA
    if (kernel_name == "cuda-gemm") {
      const auto i = [](std::size_t v) { return static_cast<std::int64_t>(v); };
      tunekit::cuda::GemmKernel kernel(i(m), i(n), i(k), {.device = device, .seed = seed});
      std::printf("record_space: CUDA SGEMM %zux%zux%zu on %s (%s); each config against cuBLAS\n", m, n, k,
                  kernel.device_info().name.c_str(), kernel.device_info().arch().c_str());
      std::fflush(stdout);
      return record(kernel, cl, only, out, options, max_configs, dry_run);
    }
    if (kernel_name == "cuda-conv2d") {
      tunekit::cuda::Conv2dKernel kernel(examples::cuda_conv2d_shape(task, batch), {.device = device, .seed = seed});
      std::printf("record_space: CUDA conv2d %s (batch %zu) on %s (%s); computing the reference...\n",
                  std::string(task.name).c_str(), batch, kernel.device_info().name.c_str(),
                  kernel.device_info().arch().c_str());
      std::fflush(stdout);
      return record(kernel, cl, only, out, options, max_configs, dry_run);
    }
#endif
    std::printf("record_space: conv2d %s, %d threads, %s vectors; computing the reference...\n",
                std::string(task.name).c_str(), threads, tunekit::cpu::simd_name());
    std::fflush(stdout);
    tunekit::cpu::Conv2dKernel kernel(task.shape, {.threads = threads, .seed = seed, .name = std::string(task.name)});
    return record(kernel, cl, only, out, options, max_configs, dry_run);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "\nrecord_space: error: %s\n", e.what());
    return 1;
  }
}
