#pragma once
/// \file
/// Compiles, loads, launches and times the configurations of one kernel source on one device:
/// the part that the CUDA GEMM and conv2d kernels share.

#include "tunekit/core/status.hpp"
#include "tunekit/kernels/cuda/driver.hpp"
#include "tunekit/kernels/cuda/nvrtc.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tunekit::cuda {

/// Device limits the spaces are built for: configs above them are invalid, not failures.
struct SpaceLimits {
  /// Threads per block.
  int max_threads = 1024;
  /// Static shared memory per block in bytes (48 KiB on every device since Fermi).
  int max_shared = 48 * 1024;

  /// The limits of a device (static shared memory: at most 48 KiB).
  static SpaceLimits of(const DeviceInfo& d) {
    return {.max_threads = d.max_threads_per_block, .max_shared = std::min(48 * 1024, d.max_shared_per_block)};
  }

  void validate() const {
    if (max_threads < 32) throw std::invalid_argument("SpaceLimits: max_threads must be >= 32");
    if (max_shared < 1024) throw std::invalid_argument("SpaceLimits: max_shared must be >= 1024");
  }
};

/// Options of the bundled CUDA kernels (GemmKernel, Conv2dKernel); fill with designated
/// initialisers.
struct KernelOptions {
  /// Device ordinal (as this process sees the devices: a LocalFarm's CUDA worker sees only its
  /// own GPU, as device 0).
  int device = 0;
  /// Seed of the random inputs (uniform in [-1, 1)).
  std::uint64_t seed = 1;
  /// The limits the space is built for. Unset: those of `device`, read by query_device (in a
  /// child process) when the kernel is made. Set: the kernel is made without any driver call,
  /// e.g. in a process without a GPU that only tunes (MPI rank 0 on a node without one).
  std::optional<SpaceLimits> limits{};

  void validate() const {
    if (device < 0) throw std::invalid_argument("cuda::KernelOptions: device must be >= 0");
    if (limits) limits->validate();
  }
};

/// The element whose error |got_i - reference(i)| is the largest multiple of its bound(i) (a NaN
/// or infinite error counts as infinitely many), and that multiple; above 1 the result is wrong.
template <class Reference, class Bound>
std::pair<double, std::size_t> worst_error(const std::vector<float>& got, Reference reference, Bound bound) {
  double worst_ratio = 0.0;
  std::size_t worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = std::abs(static_cast<double>(got[i]) - static_cast<double>(reference(i)));
    const double ratio = std::isfinite(err) ? err / bound(i) : HUGE_VAL;
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      worst = i;
    }
  }
  return {worst_ratio, worst};
}

/// Grid and block of a launch.
struct LaunchGeometry {
  std::array<unsigned, 3> grid{1, 1, 1};
  std::array<unsigned, 3> block{1, 1, 1};
  unsigned threads() const noexcept { return block[0] * block[1] * block[2]; }
};

/// One kernel source on one device: each configuration (its macro definitions) is compiled with
/// NVRTC for the device's architecture (cached, optionally ahead of time), loaded once (cached),
/// launched with the configuration's geometry and timed with CUDA events.
///
/// Statuses: an NVRTC failure is `build_error` with the log in the text; a module that does not
/// load, a launch the device refuses (too many threads or registers, too much shared memory)
/// or a fault while running is `runtime_error`. After a fault the context is unusable; `faulted()`
/// says so, and the owner calls `reset()` and re-creates its buffers.
class Launcher {
 public:
  Launcher(Device& device, std::string source, std::string kernel_name)
      : device_(&device), kernel_(std::move(kernel_name)),
        programs_(std::move(source), kernel_, CompileOptions{.arch = device.info().arch()}) {}

  ProgramCache& programs() noexcept { return programs_; }
  Device& device() noexcept { return *device_; }

  /// Starts compiling a configuration on another thread (see ProgramCache::prefetch).
  void prefetch(const std::vector<Define>& defines) { programs_.prefetch(defines); }

  /// Compiles (cached) and loads (cached) a configuration.
  RunResult load(const std::vector<Define>& defines) {
    const CompileResult& compiled = programs_.get(defines);
    if (!compiled.ok) return to_run_result(compiled);
    const std::string key = join(defines);
    if (modules_.count(key)) return {};
    try {
      device_->make_current();
      modules_.emplace(key, LoadedModule(compiled.image, kernel_.c_str()));
    } catch (const DriverError& e) {
      note(e.code());
      return {Status::runtime_error, {}, e.what(), -1.0};
    }
    return {};
  }

  /// Launches a loaded configuration `runs` times with the kernel arguments `args`, timing each
  /// launch with events. `zero`, when given, is cleared before each launch, inside the timing
  /// (a K-split GEMM accumulates into it).
  RunResult time(const std::vector<Define>& defines, const LaunchGeometry& g, void** args,
                 std::size_t runs, DeviceBuffer* zero = nullptr) {
    if (RunResult r = load(defines); r.status != Status::ok) return r;
    const CUfunction f = modules_.at(join(defines)).function();
    const detail::DriverApi& api = driver();
    int max_threads = 0;
    if (CUresult r = api.func_get_attribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f);
        r == CUDA_SUCCESS && g.threads() > static_cast<unsigned>(max_threads))
      return {Status::runtime_error, {},
              "block of " + std::to_string(g.threads()) + " threads exceeds this kernel's limit of " +
                  std::to_string(max_threads) + " (registers per thread)", -1.0};
    try {
      device_->make_current();
      if (!timer_) timer_.emplace();
    } catch (const DriverError& e) {
      note(e.code());
      return {Status::runtime_error, {}, e.what(), -1.0};
    }
    RunResult out;
    out.seconds.reserve(runs);
    for (std::size_t i = 0; i < runs; ++i) {
      CUresult r = timer_->start();
      if (r == CUDA_SUCCESS && zero) r = api.memset_d32_async(zero->get(), 0u, zero->size(), nullptr);
      if (r == CUDA_SUCCESS)
        r = api.launch_kernel(f, g.grid[0], g.grid[1], g.grid[2], g.block[0], g.block[1], g.block[2],
                              0, nullptr, args, nullptr);
      if (r == CUDA_SUCCESS) r = timer_->stop();
      double s = 0.0;
      if (r == CUDA_SUCCESS) r = timer_->seconds(s);
      if (r != CUDA_SUCCESS) {
        note(r);
        return {Status::runtime_error, {}, "launch of " + kernel_ + " " + join(defines) + ": " + error_text(r), -1.0};
      }
      out.seconds.push_back(s);
    }
    return out;
  }

  /// Whether the last failure left the context unusable (a fault in a kernel).
  bool faulted() const noexcept { return faulted_; }

  /// Resets the device's context after a fault: modules and the timer are dropped (compiled
  /// images stay cached); the owner re-creates its buffers.
  void reset() {
    for (auto& [key, m] : modules_) m.abandon();
    modules_.clear();
    if (timer_) timer_->abandon();
    timer_.reset();
    device_->reset();
    faulted_ = false;
  }

  /// What the owner returns after a failure `r`: when it faulted (the context is gone),
  /// `release()` drops the owner's device buffers and handles, the context is reset, and
  /// `rebuild()` sets the device up again; r's text says how that went. Otherwise r itself.
  template <class Release, class Rebuild>
  RunResult recover(RunResult r, Release&& release, Rebuild&& rebuild) {
    if (!faulted_) return r;
    try {
      std::forward<Release>(release)();
      reset();
      std::forward<Rebuild>(rebuild)();
      r.error += " (context reset after the fault)";
    } catch (const std::exception& e) {
      r.error += std::string(" (context reset failed: ") + e.what() + ")";
    }
    return r;
  }

  /// "-DA=1 -DB=2" for messages and keys.
  static std::string join(const std::vector<Define>& defines) {
    std::string s;
    for (const std::string& o : define_options(defines)) s += (s.empty() ? "" : " ") + o;
    return s;
  }

 private:
  void note(CUresult r) noexcept {
    if (is_sticky(r)) faulted_ = true;
  }

  Device* device_;
  std::string kernel_;
  ProgramCache programs_;
  std::map<std::string, LoadedModule> modules_;
  std::optional<EventTimer> timer_;
  bool faulted_ = false;
};

/// The device of a bundled kernel (GemmKernel, Conv2dKernel) and the Launcher of the kernel's
/// source on it, opened at the first use (`open`: the kernel's first prepare, run or prefetch),
/// never when the kernel is made. A kernel made before a LocalFarm forks its workers thus holds
/// no CUDA context and has not initialised the driver (neither survives fork), and each worker
/// opens its own device when it first measures. Until then the device is known from
/// query_device (read in a child process), or only by the limits the options gave.
class DeviceLauncher {
 public:
  /// `on_open` readies the owner's device state (buffers, library handles, references) once the
  /// device and the launcher exist. Reads the device's limits unless the options give them;
  /// throws DriverError when that fails.
  DeviceLauncher(const KernelOptions& options, std::string source, std::string kernel_name,
                 std::function<void()> on_open)
      : source_(std::move(source)), kernel_(std::move(kernel_name)), on_open_(std::move(on_open)) {
    options.validate();
    info_.ordinal = options.device;
    if (options.limits) {
      limits_ = *options.limits;
    } else {
      info_ = query_device(options.device);
      limits_ = SpaceLimits::of(info_);
    }
  }
  DeviceLauncher(const DeviceLauncher&) = delete;
  DeviceLauncher& operator=(const DeviceLauncher&) = delete;

  /// The limits the kernel's space is built for.
  const SpaceLimits& limits() const noexcept { return limits_; }
  /// The device: the opened one's description, else the one read when the kernel was made (the
  /// ordinal only, name empty, when the options gave the limits).
  const DeviceInfo& info() const noexcept { return info_; }
  bool is_open() const noexcept { return launcher_.has_value(); }
  /// The device for records: "cuda-<name>", or "cuda:<ordinal>" while the name is unknown.
  std::string name() const {
    return info_.name.empty() ? "cuda:" + std::to_string(info_.ordinal) : "cuda-" + info_.name;
  }

  /// The launcher, opening the device (its primary context), making the launcher (NVRTC for the
  /// device's architecture) and calling `on_open` at the first call. Throws DriverError (or
  /// on_open's exception) when that fails; the next call tries again.
  Launcher& open() {
    if (launcher_) return *launcher_;
    if (!device_) {
      device_.emplace(Device::open(info_.ordinal));
      info_ = device_->info();
    }
    launcher_.emplace(*device_, source_, kernel_);
    try {
      on_open_();
    } catch (...) {
      launcher_.reset();
      throw;
    }
    return *launcher_;
  }

  /// `request(launcher)` on the opened device (opening it first), or a runtime_error that says
  /// why the device could not be opened.
  template <class Request>
  RunResult with_open(Request&& request) {
    Launcher* launcher = nullptr;
    try {
      launcher = &open();
    } catch (const std::exception& e) {
      return {Status::runtime_error, {}, "opening CUDA device " + std::to_string(info_.ordinal) + ": " + e.what(),
              -1.0};
    }
    return std::forward<Request>(request)(*launcher);
  }

  /// Starts compiling configurations (their definitions) on other threads, opening the device
  /// first (for its architecture). Does nothing when it cannot be opened: the configurations'
  /// prepare then says why.
  void prefetch(const std::vector<std::vector<Define>>& configs) {
    try {
      Launcher& launcher = open();
      for (const auto& d : configs) launcher.prefetch(d);
    } catch (const std::exception&) {
    }
  }

 private:
  std::string source_, kernel_;
  std::function<void()> on_open_;
  SpaceLimits limits_{};
  DeviceInfo info_{};
  std::optional<Device> device_{};  // before launcher_: it outlives the modules
  std::optional<Launcher> launcher_{};
};

/// The `prepare` of a kernel on a Launcher: compiles and loads `defines` and fills `output` with
/// NaN bits, so that an element the configuration does not write fails the owner's `verify`.
/// `after` is the owner's fault recovery (Launcher::recover).
template <class After>
RunResult prepare_output(Launcher& launcher, const std::vector<Define>& defines, DeviceBuffer& output,
                         After&& after) {
  if (RunResult r = launcher.load(defines); r.status != Status::ok) return after(std::move(r));
  try {
    output.fill_bits(0x7fc00000u);
  } catch (const DriverError& e) {
    return after(RunResult{Status::runtime_error, {}, e.what(), -1.0});
  }
  return {};
}

/// The `verify` of a kernel on a Launcher: downloads `output` (of the last run) into `host` and
/// checks it against `reference(i)` within `bound(i)` (worst_error): ok, or `wrong_result` with
/// `describe(i)` of the worst element as its text.
template <class Reference, class Bound, class Describe, class After>
RunResult verify_output(DeviceBuffer& output, std::vector<float>& host, Reference reference, Bound bound,
                        Describe describe, After&& after) {
  try {
    output.download(host.data());
  } catch (const DriverError& e) {
    return after(RunResult{Status::runtime_error, {}, e.what(), -1.0});
  }
  const auto [worst_ratio, worst] = worst_error(host, reference, bound);
  if (worst_ratio <= 1.0) return {};
  return {Status::wrong_result, {}, describe(worst), -1.0};
}

}  // namespace tunekit::cuda
