#pragma once
/// \file
/// The CUDA driver API, loaded at run time, and the few RAII handles the CUDA kernels use.
///
/// libcuda.so.1 ships with the GPU driver, not with the toolkit: a program linked against the
/// toolkit's stub would not even start on a machine without a driver. So the driver is opened
/// with dlopen on first use, and a machine without it (or without a device) is a clean
/// `DriverError` from `Device::open`, which tests turn into a skip.
///
/// Neither a CUDA context nor the driver's initialisation (cuInit) survives `fork`: a process
/// that forks measurement workers (LocalFarm) must not touch the driver before. `query_device`
/// reads a device's description in a short-lived child process for such a process.

#include "tunekit/core/child_process.hpp"

#include <cuda.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace tunekit::cuda {

/// A failed driver call: the call, the CUresult and the driver's text for it.
class DriverError : public std::runtime_error {
 public:
  DriverError(const std::string& what, CUresult code) : std::runtime_error(what), code_(code) {}
  CUresult code() const noexcept { return code_; }

 private:
  CUresult code_;
};

namespace detail {

/// The driver entry points tunekit calls, resolved by name from libcuda.so.1 (the names are the
/// versioned ones that cuda.h maps the plain names to).
struct DriverApi {
  void* library = nullptr;
  std::string load_error{};

  decltype(&::cuInit) init = nullptr;
  decltype(&::cuGetErrorString) get_error_string = nullptr;
  decltype(&::cuGetErrorName) get_error_name = nullptr;
  decltype(&::cuDeviceGetCount) device_get_count = nullptr;
  decltype(&::cuDeviceGet) device_get = nullptr;
  decltype(&::cuDeviceGetName) device_get_name = nullptr;
  decltype(&::cuDeviceGetAttribute) device_get_attribute = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) primary_ctx_retain = nullptr;
  decltype(&::cuDevicePrimaryCtxRelease_v2) primary_ctx_release = nullptr;
  decltype(&::cuDevicePrimaryCtxReset_v2) primary_ctx_reset = nullptr;
  decltype(&::cuCtxSetCurrent) ctx_set_current = nullptr;
  decltype(&::cuCtxSynchronize) ctx_synchronize = nullptr;
  decltype(&::cuMemAlloc_v2) mem_alloc = nullptr;
  decltype(&::cuMemFree_v2) mem_free = nullptr;
  decltype(&::cuMemcpyHtoD_v2) memcpy_htod = nullptr;
  decltype(&::cuMemcpyDtoH_v2) memcpy_dtoh = nullptr;
  decltype(&::cuMemsetD32_v2) memset_d32 = nullptr;
  decltype(&::cuMemsetD32Async) memset_d32_async = nullptr;
  decltype(&::cuModuleLoadData) module_load_data = nullptr;
  decltype(&::cuModuleUnload) module_unload = nullptr;
  decltype(&::cuModuleGetFunction) module_get_function = nullptr;
  decltype(&::cuFuncGetAttribute) func_get_attribute = nullptr;
  decltype(&::cuLaunchKernel) launch_kernel = nullptr;
  decltype(&::cuEventCreate) event_create = nullptr;
  decltype(&::cuEventDestroy_v2) event_destroy = nullptr;
  decltype(&::cuEventRecord) event_record = nullptr;
  decltype(&::cuEventSynchronize) event_synchronize = nullptr;
  decltype(&::cuEventElapsedTime_v2) event_elapsed_time = nullptr;

  DriverApi() {
    library = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
      const char* e = ::dlerror();
      load_error = std::string("cannot load the CUDA driver (libcuda.so.1): ") + (e ? e : "unknown");
      return;
    }
    const bool all =
        sym(init, "cuInit") && sym(get_error_string, "cuGetErrorString") &&
        sym(get_error_name, "cuGetErrorName") && sym(device_get_count, "cuDeviceGetCount") &&
        sym(device_get, "cuDeviceGet") && sym(device_get_name, "cuDeviceGetName") &&
        sym(device_get_attribute, "cuDeviceGetAttribute") &&
        sym(primary_ctx_retain, "cuDevicePrimaryCtxRetain") &&
        sym(primary_ctx_release, "cuDevicePrimaryCtxRelease_v2") &&
        sym(primary_ctx_reset, "cuDevicePrimaryCtxReset_v2") &&
        sym(ctx_set_current, "cuCtxSetCurrent") && sym(ctx_synchronize, "cuCtxSynchronize") &&
        sym(mem_alloc, "cuMemAlloc_v2") && sym(mem_free, "cuMemFree_v2") &&
        sym(memcpy_htod, "cuMemcpyHtoD_v2") && sym(memcpy_dtoh, "cuMemcpyDtoH_v2") &&
        sym(memset_d32, "cuMemsetD32_v2") && sym(memset_d32_async, "cuMemsetD32Async") &&
        sym(module_load_data, "cuModuleLoadData") && sym(module_unload, "cuModuleUnload") &&
        sym(module_get_function, "cuModuleGetFunction") &&
        sym(func_get_attribute, "cuFuncGetAttribute") && sym(launch_kernel, "cuLaunchKernel") &&
        sym(event_create, "cuEventCreate") && sym(event_destroy, "cuEventDestroy_v2") &&
        sym(event_record, "cuEventRecord") && sym(event_synchronize, "cuEventSynchronize") &&
        sym(event_elapsed_time, "cuEventElapsedTime_v2");
    if (!all) {
      ::dlclose(library);
      library = nullptr;
    }
  }
  DriverApi(const DriverApi&) = delete;
  DriverApi& operator=(const DriverApi&) = delete;

  bool loaded() const noexcept { return library != nullptr; }

 private:
  template <class F>
  bool sym(F& f, const char* name) {
    f = reinterpret_cast<F>(::dlsym(library, name));
    if (!f) load_error = std::string("the CUDA driver has no entry point ") + name + " (driver too old?)";
    return f != nullptr;
  }
};

/// The process's driver table (opened once, on first use; never closed).
inline const DriverApi& driver_api() {
  static const DriverApi api;
  return api;
}

/// The process that initialised the driver (cuInit succeeded in Device::open, query_device or
/// device_count), or 0. A fork inherits the value but not the initialisation.
inline std::atomic<pid_t>& driver_initialised_by() {
  static std::atomic<pid_t> pid{0};
  return pid;
}

/// Whether this process initialised the driver: a child forked from here could no longer use it.
inline bool driver_initialised() {
  const pid_t by = driver_initialised_by();
  return by != 0 && by == ::getpid();
}

/// Records that this process initialised the driver.
inline void note_driver_initialised() { driver_initialised_by() = ::getpid(); }

/// Throws DriverError when this process is a fork of one that had initialised the driver: CUDA
/// cannot be used here (cuInit would fail or hang), whatever the driver answers.
inline void check_not_forked_after_init() {
  const pid_t by = driver_initialised_by();
  if (by != 0 && by != ::getpid())
    throw DriverError("CUDA cannot be used in this process: it is a fork of process " + std::to_string(by) +
                          ", which had initialised the CUDA driver before it forked (neither cuInit nor a context "
                          "survives fork); start the measurement workers (a LocalFarm) before anything in the "
                          "tuning process opens a device",
                      CUDA_ERROR_NOT_INITIALIZED);
}

}  // namespace detail

/// The loaded driver; throws DriverError when libcuda.so.1 cannot be opened.
inline const detail::DriverApi& driver() {
  const detail::DriverApi& api = detail::driver_api();
  if (!api.loaded()) throw DriverError(api.load_error, CUDA_ERROR_NOT_INITIALIZED);
  return api;
}

/// "NAME: description" for a CUresult.
inline std::string error_text(CUresult r) {
  const detail::DriverApi& api = detail::driver_api();
  const char* name = nullptr;
  const char* text = nullptr;
  if (api.loaded()) {
    api.get_error_name(r, &name);
    api.get_error_string(r, &text);
  }
  return std::string(name ? name : "CUDA error " + std::to_string(static_cast<int>(r))) + ": " +
         (text ? text : "(no description)");
}

/// Throws DriverError("<what>: <error text>") unless r is CUDA_SUCCESS.
inline void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) throw DriverError(std::string(what) + ": " + error_text(r), r);
}

/// Whether an error leaves the context unusable (a fault in a kernel): every later call fails
/// the same way until the context is reset.
inline bool is_sticky(CUresult r) noexcept {
  switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_TIMEOUT: return true;
    default: return false;
  }
}

/// What the kernels need to know about a device.
struct DeviceInfo {
  int ordinal = 0;
  std::string name{};
  int cc_major = 0, cc_minor = 0;
  int max_threads_per_block = 1024;
  /// Static shared memory per block (48 KiB on every device since Fermi).
  int max_shared_per_block = 48 * 1024;
  int multiprocessors = 0;

  /// NVRTC's architecture for this device, e.g. "sm_90" (a cubin, no JIT by the driver).
  std::string arch() const { return "sm_" + std::to_string(cc_major) + std::to_string(cc_minor); }
};

namespace detail {

/// Initialises the driver and describes device `ordinal`, in this process (no context is made).
/// Throws DriverError.
inline CUdevice init_and_describe(int ordinal, DeviceInfo& info) {
  check_not_forked_after_init();
  const DriverApi& api = driver();
  check(api.init(0), "cuInit");
  note_driver_initialised();
  int count = 0;
  check(api.device_get_count(&count), "cuDeviceGetCount");
  if (ordinal < 0 || ordinal >= count)
    throw DriverError("no CUDA device " + std::to_string(ordinal) + " (" + std::to_string(count) + " found)",
                      CUDA_ERROR_INVALID_DEVICE);
  CUdevice device = 0;
  check(api.device_get(&device, ordinal), "cuDeviceGet");
  char name[256] = {};
  check(api.device_get_name(name, sizeof name, device), "cuDeviceGetName");
  info.ordinal = ordinal;
  info.name = name;
  auto attr = [&](CUdevice_attribute a) {
    int v = 0;
    check(api.device_get_attribute(&v, a, device), "cuDeviceGetAttribute");
    return v;
  };
  info.cc_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  info.cc_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  info.max_threads_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  info.max_shared_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  info.multiprocessors = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  return device;
}

/// Runs `read` in a short-lived child process (fork) and returns its answer: `read` may
/// initialise the driver, this process does not. The child writes "ok", a newline and what
/// `read` returned, or, when `read` throws, "error", the DriverError's code and its text; this
/// side throws that DriverError again, or one that says the child (`what` it did) died, gave no
/// answer, or took longer than `timeout_seconds` (it is then killed).
inline std::string answer_from_child(const std::function<std::string()>& read, const std::string& what,
                                     double timeout_seconds) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(timeout_seconds));
  const tunekit::detail::ChildOutcome child = tunekit::detail::run_in_child(
      [&](int fd) {
        std::string reply;
        try {
          reply = "ok\n" + read();
        } catch (const DriverError& e) {
          reply = "error\n" + std::to_string(static_cast<int>(e.code())) + "\n" + e.what();
        } catch (const std::exception& e) {
          reply = "error\n" + std::to_string(static_cast<int>(CUDA_ERROR_UNKNOWN)) + "\n" + e.what();
        }
        tunekit::detail::write_all(fd, reply);
        return 0;
      },
      deadline);
  if (!child.error.empty()) throw DriverError(what + ": " + child.error, CUDA_ERROR_OPERATING_SYSTEM);
  if (child.timed_out)
    throw DriverError(what + " took longer than " + std::to_string(timeout_seconds) +
                          " s (the process doing it was killed)",
                      CUDA_ERROR_UNKNOWN);
  const std::string& reply = child.answer;
  if (reply.rfind("ok\n", 0) == 0) return reply.substr(3);
  if (reply.rfind("error\n", 0) == 0) {
    std::istringstream in(reply.substr(6));
    int code = 0;
    std::string text;
    in >> code;
    in.ignore(1);
    std::getline(in, text, '\0');
    throw DriverError(text, static_cast<CUresult>(code));
  }
  throw DriverError(what + ": the process doing it gave no answer (" + child.how_it_ended() + ")",
                    CUDA_ERROR_UNKNOWN);
}

}  // namespace detail

/// The description of device `ordinal` (name, architecture, limits) without initialising the
/// driver in this process: a child process initialises it, reads the device and answers through
/// a pipe (detail::answer_from_child), so this process can still fork measurement workers that
/// use CUDA (a LocalFarm's; neither cuInit nor a context survives fork). No context is created
/// anywhere. When this process initialised the driver already, it is read here. Throws
/// DriverError with the child's error (no driver, no such device), or when the child dies or
/// takes longer than `timeout_seconds`.
inline DeviceInfo query_device(int ordinal = 0, double timeout_seconds = 60.0) {
  DeviceInfo info;
  if (detail::driver_initialised()) {
    detail::init_and_describe(ordinal, info);
    return info;
  }
  const std::string answer = detail::answer_from_child(
      [ordinal] {
        DeviceInfo d;
        detail::init_and_describe(ordinal, d);
        std::ostringstream out;
        out << d.cc_major << ' ' << d.cc_minor << ' ' << d.max_threads_per_block << ' ' << d.max_shared_per_block << ' '
            << d.multiprocessors << '\n'
            << d.name;
        return out.str();
      },
      "reading CUDA device " + std::to_string(ordinal), timeout_seconds);
  std::istringstream in(answer);
  if (!(in >> info.cc_major >> info.cc_minor >> info.max_threads_per_block >> info.max_shared_per_block >>
        info.multiprocessors))
    throw DriverError("reading CUDA device " + std::to_string(ordinal) + ": a malformed answer", CUDA_ERROR_UNKNOWN);
  in.ignore(1);
  std::getline(in, info.name, '\0');
  info.ordinal = ordinal;
  return info;
}

/// The number of CUDA devices this process sees (CUDA_VISIBLE_DEVICES applies), counted as
/// query_device reads a device: in a child process unless this process initialised the driver.
/// Throws DriverError (no driver, or no device at all: cuInit's error).
inline int device_count(double timeout_seconds = 60.0) {
  auto count = [] {
    detail::check_not_forked_after_init();
    check(driver().init(0), "cuInit");
    detail::note_driver_initialised();
    int n = 0;
    check(driver().device_get_count(&n), "cuDeviceGetCount");
    return n;
  };
  if (detail::driver_initialised()) return count();
  return std::stoi(detail::answer_from_child([&] { return std::to_string(count()); }, "counting the CUDA devices",
                                             timeout_seconds));
}

/// One device and its primary context (shared with the CUDA runtime, so cuBLAS and cuDNN run
/// in the same context). Movable, not copyable; releases the context on destruction.
class Device {
 public:
  /// Initialises the driver and retains device `ordinal`'s primary context. Throws DriverError
  /// when there is no driver, no device, or the device cannot be used.
  static Device open(int ordinal = 0) {
    Device d;
    d.device_ = detail::init_and_describe(ordinal, d.info_);
    d.retain();
    return d;
  }

  Device(Device&& o) noexcept
      : device_(o.device_), context_(std::exchange(o.context_, nullptr)), info_(std::move(o.info_)) {}
  Device& operator=(Device&& o) noexcept {
    if (this != &o) {
      release();
      device_ = o.device_;
      context_ = std::exchange(o.context_, nullptr);
      info_ = std::move(o.info_);
    }
    return *this;
  }
  ~Device() { release(); }

  const DeviceInfo& info() const noexcept { return info_; }
  CUdevice handle() const noexcept { return device_; }

  /// Makes the primary context current on the calling thread.
  void make_current() const { check(driver().ctx_set_current(context_), "cuCtxSetCurrent"); }

  /// Destroys the primary context's state after a fault and retains a fresh one; every module,
  /// buffer and event made before is gone.
  void reset() {
    release();
    check(driver().primary_ctx_reset(device_), "cuDevicePrimaryCtxReset");
    retain();
  }

 private:
  Device() = default;
  void retain() {
    check(driver().primary_ctx_retain(&context_, device_), "cuDevicePrimaryCtxRetain");
    make_current();
  }
  void release() noexcept {
    if (context_) driver().primary_ctx_release(device_);
    context_ = nullptr;
  }

  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  DeviceInfo info_;
};

/// A device allocation of n floats (in the current context).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t n) : size_(n) {
    if (n > 0) check(driver().mem_alloc(&ptr_, n * sizeof(float)), "cuMemAlloc");
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, 0)), size_(std::exchange(o.size_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      free();
      ptr_ = std::exchange(o.ptr_, 0);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  ~DeviceBuffer() { free(); }

  CUdeviceptr get() const noexcept { return ptr_; }
  std::size_t size() const noexcept { return size_; }
  void upload(const float* host) { check(driver().memcpy_htod(ptr_, host, size_ * sizeof(float)), "cuMemcpyHtoD"); }
  void download(float* host) const { check(driver().memcpy_dtoh(host, ptr_, size_ * sizeof(float)), "cuMemcpyDtoH"); }
  /// Sets every float to the bit pattern `bits` (0: zeros, 0x7fc00000: quiet NaNs).
  void fill_bits(unsigned bits) { check(driver().memset_d32(ptr_, bits, size_), "cuMemsetD32"); }
  /// Forgets the allocation without freeing it (after a context reset freed it already).
  void abandon() noexcept { ptr_ = 0; size_ = 0; }

 private:
  void free() noexcept {
    if (ptr_) driver().mem_free(ptr_);
    ptr_ = 0;
  }
  CUdeviceptr ptr_ = 0;
  std::size_t size_ = 0;
};

/// A loaded module (an NVRTC image) and one of its kernels.
class LoadedModule {
 public:
  LoadedModule() = default;
  /// Loads a PTX or cubin image and looks up `kernel`. Throws DriverError.
  LoadedModule(const std::string& image, const char* kernel) {
    check(driver().module_load_data(&module_, image.data()), "cuModuleLoadData");
    const CUresult r = driver().module_get_function(&function_, module_, kernel);
    if (r != CUDA_SUCCESS) {
      driver().module_unload(module_);
      module_ = nullptr;
      check(r, "cuModuleGetFunction");
    }
  }
  LoadedModule(LoadedModule&& o) noexcept
      : module_(std::exchange(o.module_, nullptr)), function_(std::exchange(o.function_, nullptr)) {}
  LoadedModule& operator=(LoadedModule&& o) noexcept {
    if (this != &o) {
      unload();
      module_ = std::exchange(o.module_, nullptr);
      function_ = std::exchange(o.function_, nullptr);
    }
    return *this;
  }
  ~LoadedModule() { unload(); }

  CUfunction function() const noexcept { return function_; }
  explicit operator bool() const noexcept { return function_ != nullptr; }
  /// Forgets the module without unloading it (after a context reset unloaded it already).
  void abandon() noexcept { module_ = nullptr; function_ = nullptr; }

 private:
  void unload() noexcept {
    if (module_) driver().module_unload(module_);
    module_ = nullptr;
  }
  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
};

/// A pair of events that times what is enqueued between `start` and `stop` on the null stream.
class EventTimer {
 public:
  EventTimer() {
    check(driver().event_create(&start_, CU_EVENT_DEFAULT), "cuEventCreate");
    const CUresult r = driver().event_create(&stop_, CU_EVENT_DEFAULT);
    if (r != CUDA_SUCCESS) {
      driver().event_destroy(start_);
      check(r, "cuEventCreate");
    }
  }
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  ~EventTimer() {
    if (start_) driver().event_destroy(start_);
    if (stop_) driver().event_destroy(stop_);
  }
  CUresult start() noexcept { return driver().event_record(start_, nullptr); }
  CUresult stop() noexcept { return driver().event_record(stop_, nullptr); }
  /// Waits for the stop event; the seconds between the events, or the error.
  CUresult seconds(double& s) noexcept {
    if (CUresult r = driver().event_synchronize(stop_); r != CUDA_SUCCESS) return r;
    float ms = 0.0f;
    const CUresult r = driver().event_elapsed_time(&ms, start_, stop_);
    s = static_cast<double>(ms) * 1e-3;
    return r;
  }
  /// Forgets the events without destroying them (after a context reset destroyed them).
  void abandon() noexcept { start_ = nullptr; stop_ = nullptr; }

 private:
  CUevent start_ = nullptr, stop_ = nullptr;
};

}  // namespace tunekit::cuda
