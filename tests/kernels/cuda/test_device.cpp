// The CUDA kernels open their device lazily: reading a device (query_device, device_count) runs
// in a child process, a kernel made with or without its limits creates no context here, each
// LocalFarm worker opens its own device when it first measures, and a device that cannot be
// opened is a runtime_error that says why. Checked without a GPU (and, under ctest's
// cuda.stub_driver, with the toolkit's stub as libcuda.so.1, whose cuInit fails); on a machine
// with a GPU the same tests check that the device does open where it should.
#include <tunekit/farm/local.hpp>
#include <tunekit/kernels/cuda/conv2d.hpp>
#include <tunekit/kernels/cuda/gemm.hpp>
#include <tunekit/presets.hpp>

#include <doctest/doctest.h>

#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace cu = tunekit::cuda;

// Whether libcuda.so.1 is loaded in this process (RTLD_NOLOAD loads nothing).
bool driver_loaded_here() {
  void* h = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (h) ::dlclose(h);
  return h != nullptr;
}

// Device 0, read in a child process, or nullopt with the reason in `why`.
std::optional<cu::DeviceInfo> gpu(std::string& why) {
  try {
    return cu::query_device(0);
  } catch (const cu::DriverError& e) {
    why = e.what();
    return std::nullopt;
  }
}

// ctest's cuda.stub_driver runs these tests with the toolkit's stub driver as libcuda.so.1.
bool stub_driver() { return std::getenv("TUNEKIT_TEST_STUB_DRIVER") != nullptr; }

const cu::SpaceLimits small_limits{.max_threads = 256, .max_shared = 16 * 1024};

}  // namespace

TEST_CASE("cuda device: query_device and device_count read the device in a child process, not here") {
  const bool loaded_before = driver_loaded_here();
  const bool initialised_before = cu::detail::driver_initialised();
  try {
    const cu::DeviceInfo info = cu::query_device(0);
    CHECK_FALSE(info.name.empty());
    CHECK(info.ordinal == 0);
    CHECK(info.max_threads_per_block >= 32);
    CHECK(info.cc_major >= 3);
    CHECK(cu::device_count() >= 1);
    CHECK_FALSE(stub_driver());
  } catch (const cu::DriverError& e) {
    MESSAGE("no usable CUDA device: " << std::string(e.what()));
    CHECK_FALSE(std::string(e.what()).empty());
    if (stub_driver()) {
      // The stub loads, and its cuInit fails: in the child, which reports the error.
      CHECK(e.code() == CUDA_ERROR_STUB_LIBRARY);
      CHECK(std::string(e.what()).find("cuInit") != std::string::npos);
    } else if (!loaded_before) {
      CHECK(std::string(e.what()).find("libcuda.so.1") != std::string::npos);
    }
    CHECK_THROWS_AS(cu::device_count(), cu::DriverError);
  }
  if (!loaded_before) CHECK_FALSE(driver_loaded_here());
  if (!initialised_before) CHECK_FALSE(cu::detail::driver_initialised());
}

TEST_CASE("cuda device: a child's error, death or hang reaches the caller as a DriverError that says so") {
  const auto error = [] () -> std::string { throw cu::DriverError("no such thing", CUDA_ERROR_INVALID_DEVICE); };
  CHECK_THROWS_WITH_AS(cu::detail::answer_from_child(error, "reading", 10.0), "no such thing", cu::DriverError);
  try {
    cu::detail::answer_from_child(error, "reading", 10.0);
  } catch (const cu::DriverError& e) {
    CHECK(e.code() == CUDA_ERROR_INVALID_DEVICE);
  }
  CHECK(cu::detail::answer_from_child([] { return std::string("two\nlines"); }, "reading", 10.0) == "two\nlines");
  CHECK_THROWS_WITH_AS(cu::detail::answer_from_child([]() -> std::string { ::_exit(3); }, "counting", 10.0),
                       doctest::Contains("counting: the process doing it gave no answer (exited with code 3)"),
                       cu::DriverError);
  CHECK_THROWS_WITH_AS(cu::detail::answer_from_child([]() -> std::string { ::raise(SIGKILL); return {}; }, "counting", 10.0),
                       doctest::Contains("counting: the process doing it gave no answer (killed by signal 9"),
                       cu::DriverError);
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(cu::detail::answer_from_child(
                           [] {
                             std::this_thread::sleep_for(std::chrono::seconds(30));
                             return std::string();
                           },
                           "reading CUDA device 0", 0.3),
                       doctest::Contains("reading CUDA device 0 took longer than"), cu::DriverError);
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 10.0);
}

TEST_CASE("cuda device: a kernel is made without a context, and without a device its prepare and run say why") {
  const bool loaded_before = driver_loaded_here();
  std::string why;
  const bool has_gpu = gpu(why).has_value();
  cu::GemmKernel gemm(64, 48, 40, {.limits = small_limits});
  cu::Conv2dKernel conv(cu::Conv2dShape{1, 9, 9, 4, 8, 3, 3, 1, 1, 1, 1}, {.limits = small_limits});
  // Made from the given limits: no driver call at all.
  if (!loaded_before) CHECK_FALSE(driver_loaded_here());
  CHECK_FALSE(gemm.is_open());
  CHECK_FALSE(conv.is_open());
  CHECK(gemm.space().difference(cu::gemm_space(64, 48, 40, small_limits)).empty());
  CHECK(conv.space().difference(cu::conv2d_space(conv.shape(), small_limits)).empty());
  CHECK(gemm.device() == "cuda:0");
  CHECK(gemm.device_info().name.empty());
  CHECK(conv.weights() == 0);

  tunekit::Rng rng(3);
  const tunekit::Config c = gemm.space().sample(rng);
  gemm.prefetch({c});  // opens the device, or does nothing when it cannot
  const tunekit::RunResult prepared = gemm.prepare(c);
  const tunekit::Measurement m = tunekit::Deterministic({.warmup = 1, .repeat = 2}).measure(gemm, c, rng);
  const tunekit::Config cc = conv.space().sample(rng);
  const tunekit::RunResult ran = conv.run(cc, 1, rng);
  if (has_gpu) {
    CHECK(gemm.is_open());
    CHECK_FALSE(gemm.device_info().name.empty());
    CHECK(prepared.status == tunekit::Status::ok);
    CHECK(m.status == tunekit::Status::ok);
    CHECK(conv.is_open());
    return;
  }
  MESSAGE("no usable CUDA device: " << why);
  CHECK_FALSE(gemm.is_open());
  CHECK_FALSE(conv.is_open());
  CHECK(prepared.status == tunekit::Status::runtime_error);
  CHECK(prepared.error.find("opening CUDA device 0: ") == 0);
  CHECK(m.status == tunekit::Status::runtime_error);
  CHECK(m.error.find("opening CUDA device 0: ") != std::string::npos);
  CHECK(ran.status == tunekit::Status::runtime_error);
  CHECK(ran.error.find("opening CUDA device 0: ") == 0);
  CHECK(gemm.verify(c).status == tunekit::Status::runtime_error);
  CHECK(gemm.run_cublas(1).status == tunekit::Status::runtime_error);
  CHECK_THROWS_AS(gemm.open(), cu::DriverError);
  if (stub_driver()) CHECK(prepared.error.find("cuInit") != std::string::npos);
}

TEST_CASE("cuda device: the options are checked, and made without limits a kernel reads them or throws") {
  CHECK_THROWS_WITH_AS(cu::KernelOptions{.device = -1}.validate(), doctest::Contains("device"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(cu::KernelOptions{.limits = cu::SpaceLimits{.max_threads = 16}}.validate(),
                       doctest::Contains("max_threads"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(cu::GemmKernel(8, 8, 8, {.limits = cu::SpaceLimits{.max_shared = 100}}),
                       doctest::Contains("max_shared"), std::invalid_argument);
  const bool loaded_before = driver_loaded_here();
  std::string why;
  if (const auto info = gpu(why)) {
    cu::GemmKernel kernel(64, 64, 64);
    CHECK(kernel.device_info().name == info->name);
    CHECK(kernel.device() == "cuda-" + info->name);
    CHECK(kernel.space().difference(cu::gemm_space(64, 64, 64, cu::SpaceLimits::of(*info))).empty());
    CHECK_FALSE(kernel.is_open());
  } else {
    MESSAGE("no usable CUDA device: " << why);
    CHECK_THROWS_AS(cu::GemmKernel(64, 64, 64), cu::DriverError);
    CHECK_THROWS_AS(cu::Conv2dKernel(cu::Conv2dShape{}), cu::DriverError);
  }
  if (!loaded_before) CHECK_FALSE(driver_loaded_here());
}

// A process that initialised the driver cannot lend it to its forks (LocalFarm's workers): a fork
// that tries says so instead of calling cuInit. Simulated without a GPU by recording another
// process as the one that initialised the driver.
TEST_CASE("cuda device: a fork of a process that initialised the driver refuses to use it, saying why") {
  const bool loaded_before = driver_loaded_here();
  auto& by = cu::detail::driver_initialised_by();
  const pid_t saved = by;
  by = ::getppid();  // as in a worker forked after its parent initialised the driver
  CHECK_FALSE(cu::detail::driver_initialised());
  const std::string expected = "it is a fork of process " + std::to_string(::getppid());
  CHECK_THROWS_WITH_AS(cu::Device::open(0), doctest::Contains(expected.c_str()), cu::DriverError);
  CHECK_THROWS_WITH_AS(cu::device_count(), doctest::Contains(expected.c_str()), cu::DriverError);
  // query_device reads in a child, which is a fork of a "fork" too: the child's refusal comes back.
  CHECK_THROWS_WITH_AS(cu::query_device(0), doctest::Contains("which had initialised the CUDA driver"), cu::DriverError);
  // A kernel made from its limits opens the device at its first prepare, in a worker that can't.
  cu::GemmKernel kernel(64, 64, 64, {.limits = small_limits});
  tunekit::Rng rng(3);
  const auto r = kernel.prepare(kernel.space().sample(rng));
  CHECK(r.status == tunekit::Status::runtime_error);
  CHECK(r.error.find(expected) != std::string::npos);
  by = saved;
  if (!loaded_before) CHECK_FALSE(driver_loaded_here());
}

TEST_CASE("cuda device: CUDA workers of a LocalFarm open their devices, the tuning process never does") {
  const bool loaded_before = driver_loaded_here();
  // On a GPU, earlier test cases of this process may have opened a device here; then the workers
  // (forks) cannot use CUDA and must say so. ctest runs every case in a process of its own.
  const bool initialised_before = cu::detail::driver_initialised();
  std::string why;
  const bool has_gpu = gpu(why).has_value();
  cu::GemmKernel kernel(64, 64, 64, {.limits = small_limits});
  tunekit::LocalFarm farm({.devices = tunekit::cuda_workers({0, 0})});
  tunekit::RandomSearchTuner tuner(kernel.space(), {.budget = {.trials = 6}, .plan_size = 3});
  tunekit::Rng rng(1);
  const auto result = tuner.tune(kernel, farm, rng);
  CHECK(result.trials == 6);
  CHECK_FALSE(kernel.is_open());
  if (!loaded_before) CHECK_FALSE(driver_loaded_here());
  for (const auto& t : tuner.history()) {
    CHECK(t.measurement.device == "cuda:0");
    if (!has_gpu) {
      CHECK(t.measurement.status == tunekit::Status::runtime_error);
      CHECK(t.measurement.error.find("opening CUDA device 0: ") != std::string::npos);
    } else if (initialised_before) {
      CHECK(t.measurement.status == tunekit::Status::runtime_error);
      CHECK(t.measurement.error.find("which had initialised the CUDA driver before it forked") != std::string::npos);
    } else {
      INFO(t.measurement.error);
      CHECK(t.measurement.status == tunekit::Status::ok);
    }
  }
  if (has_gpu && !initialised_before) CHECK(tuner.history().successes() == 6);
}
