#pragma once
/// \file
/// Run-time compilation of a kernel source with NVRTC, each knob a macro definition
/// (-DNAME=value, as Kernel Tuner, KTT and CLTune pass them), and a per-config cache of the
/// compiled images that can compile the next configs ahead, on other threads, while the current
/// one is measured.

#include "tunekit/core/status.hpp"

#include <nvrtc.h>

#include <cstdint>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tunekit::cuda {

/// A macro definition passed to NVRTC as -DNAME=VALUE.
struct Define {
  std::string name{};
  std::int64_t value{};
};

/// What NVRTC made of a source: the image (PTX for a "compute_XY" architecture, a cubin for
/// "sm_XY"), or the failure with NVRTC's log.
struct CompileResult {
  bool ok = false;
  std::string image{};
  /// NVRTC's log (warnings on success, the errors on failure).
  std::string log{};
  /// The failure, log included ("" when ok).
  std::string error{};
};

/// The options of one compilation.
struct CompileOptions {
  /// --gpu-architecture: "compute_XY" gives PTX (no device needed), "sm_XY" a cubin.
  std::string arch = "compute_90";
  /// Further NVRTC options.
  std::vector<std::string> extra = {"--std=c++17", "--use_fast_math"};
};

/// The -D options for a list of definitions, in order.
inline std::vector<std::string> define_options(const std::vector<Define>& defines) {
  std::vector<std::string> out;
  out.reserve(defines.size());
  for (const Define& d : defines) out.push_back("-D" + d.name + "=" + std::to_string(d.value));
  return out;
}

/// Compiles `source` (named `name` in NVRTC's messages) with the definitions. Never throws for a
/// compilation failure: the result says what went wrong. Thread-safe (one program per call).
inline CompileResult compile(std::string_view source, const std::string& name,
                             const std::vector<Define>& defines, const CompileOptions& options = {}) {
  CompileResult out;
  auto fail = [&](const char* step, nvrtcResult r) {
    out.ok = false;
    out.error = std::string(step) + ": " + nvrtcGetErrorString(r);
    if (!out.log.empty()) out.error += "\n" + out.log;
    return out;
  };
  const std::string src(source);
  nvrtcProgram prog = nullptr;
  if (nvrtcResult r = nvrtcCreateProgram(&prog, src.c_str(), name.c_str(), 0, nullptr, nullptr);
      r != NVRTC_SUCCESS)
    return fail("nvrtcCreateProgram", r);
  struct Destroy {
    nvrtcProgram* p{};
    ~Destroy() { nvrtcDestroyProgram(p); }
  } destroy{&prog};

  std::vector<std::string> opts = define_options(defines);
  opts.push_back("--gpu-architecture=" + options.arch);
  opts.insert(opts.end(), options.extra.begin(), options.extra.end());
  std::vector<const char*> argv;
  for (const std::string& o : opts) argv.push_back(o.c_str());

  const nvrtcResult compiled = nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  std::size_t log_size = 0;
  if (nvrtcGetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    out.log.resize(log_size);
    if (nvrtcGetProgramLog(prog, out.log.data()) != NVRTC_SUCCESS) out.log.clear();
    while (!out.log.empty() && (out.log.back() == '\0' || out.log.back() == '\n')) out.log.pop_back();
  }
  if (compiled != NVRTC_SUCCESS) return fail("nvrtcCompileProgram", compiled);

  const bool cubin = options.arch.rfind("sm_", 0) == 0;
  std::size_t size = 0;
  if (nvrtcResult r = cubin ? nvrtcGetCUBINSize(prog, &size) : nvrtcGetPTXSize(prog, &size);
      r != NVRTC_SUCCESS)
    return fail(cubin ? "nvrtcGetCUBINSize" : "nvrtcGetPTXSize", r);
  out.image.resize(size);
  if (nvrtcResult r = cubin ? nvrtcGetCUBIN(prog, out.image.data()) : nvrtcGetPTX(prog, out.image.data());
      r != NVRTC_SUCCESS)
    return fail(cubin ? "nvrtcGetCUBIN" : "nvrtcGetPTX", r);
  out.ok = true;
  return out;
}

/// A compilation as a kernel's preparation result: ok, or `build_error` with NVRTC's error and
/// log in the text.
inline RunResult to_run_result(const CompileResult& c) {
  if (c.ok) return {};
  return {Status::build_error, {}, "NVRTC: " + c.error, -1.0};
}

/// The images of one kernel source per configuration (keyed by its definitions), compiled once.
/// `prefetch` starts compilations on other threads (std::async), so that the host compiles the
/// next configs of a batch while the device measures the current one; `get` waits for a
/// prefetched one or compiles it on the calling thread.
class ProgramCache {
 public:
  ProgramCache(std::string source, std::string name, CompileOptions options)
      : source_(std::move(source)), name_(std::move(name)), options_(std::move(options)) {}
  ProgramCache(const ProgramCache&) = delete;
  ProgramCache& operator=(const ProgramCache&) = delete;
  ~ProgramCache() {
    // Let pending compilations finish before the source they read goes away.
    for (auto& [key, entry] : entries_)
      if (entry.valid()) entry.wait();
  }

  /// The compilation of a configuration (waits for it when it is in flight).
  const CompileResult& get(const std::vector<Define>& defines) {
    std::shared_future<CompileResult> f;
    std::optional<std::promise<CompileResult>> mine;
    {
      std::lock_guard lock(mutex_);
      auto [it, inserted] = entries_.try_emplace(key(defines));
      if (inserted) it->second = mine.emplace().get_future().share();
      f = it->second;
    }
    if (mine) mine->set_value(compile(source_, name_, defines, options_));
    return f.get();
  }

  /// Starts compiling a configuration on another thread unless it is cached or in flight.
  void prefetch(const std::vector<Define>& defines) {
    std::lock_guard lock(mutex_);
    auto [it, inserted] = entries_.try_emplace(key(defines));
    if (!inserted) return;
    it->second = std::async(std::launch::async, [this, defines] {
                   return compile(source_, name_, defines, options_);
                 }).share();
  }

  /// Configurations compiled or in flight.
  std::size_t size() const {
    std::lock_guard lock(mutex_);
    return entries_.size();
  }
  const CompileOptions& options() const noexcept { return options_; }
  const std::string& source() const noexcept { return source_; }

 private:
  static std::string key(const std::vector<Define>& defines) {
    std::string k;
    for (const std::string& o : define_options(defines)) k += o + ' ';
    return k;
  }

  std::string source_, name_;
  CompileOptions options_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_future<CompileResult>> entries_;
};

}  // namespace tunekit::cuda
