#pragma once
/// \file
/// A tunable CUDA SGEMM (C = A * B, row-major fp32, any M, N, K), compiled at run time with
/// NVRTC, verified against cuBLAS.
///
/// The kernel is the tiled product of tunekit/kernels/cuda/tiled_gemm.hpp: shared-memory tiles
/// BM x BK and BK x BN, a TM x TN register tile per thread, float4 loads (VEC), double-buffered
/// slices (DBUF) and a K split over the grid's z dimension (KSPLIT). Each knob is a macro
/// definition (-DBM=64 ...); the problem size is compiled in too (TK_M, TK_N, TK_K).

#include "tunekit/concepts/kernel.hpp"
#include "tunekit/core/status.hpp"
#include "tunekit/kernels/cuda/driver.hpp"
#include "tunekit/kernels/cuda/launcher.hpp"
#include "tunekit/kernels/cuda/nvrtc.hpp"
#include "tunekit/kernels/cuda/tiled_gemm.hpp"
#include "tunekit/core/random.hpp"
#include "tunekit/space/search_space.hpp"

#include <boost/random/uniform_real_distribution.hpp>
#include <cublas_v2.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tunekit::cuda {

namespace detail {

/// The hooks of the tiled product for a row-major SGEMM.
inline constexpr const char* gemm_hooks = R"CUDA(
#define KSPLIT_ATOMIC (KSPLIT > 1)
__device__ __forceinline__ float tk_a(const float* __restrict__ A, int row, int k, int kend) {
  return (row < TK_M && k < kend) ? A[(size_t)row * TK_K + k] : 0.0f;
}
__device__ __forceinline__ float tk_b(const float* __restrict__ B, int k, int col, int kend) {
  return (k < kend && col < TK_N) ? B[(size_t)k * TK_N + col] : 0.0f;
}
#if VEC
// With VEC, TK_K and TK_N are multiples of 4 (a constraint), so a float4 is all in or all out.
__device__ __forceinline__ float4 tk_a4(const float* __restrict__ A, int row, int k, int kend) {
  if (row < TK_M && k < kend) return *reinterpret_cast<const float4*>(A + (size_t)row * TK_K + k);
  return make_float4(0.0f, 0.0f, 0.0f, 0.0f);
}
__device__ __forceinline__ float4 tk_b4(const float* __restrict__ B, int k, int col, int kend) {
  if (k < kend && col < TK_N) return *reinterpret_cast<const float4*>(B + (size_t)k * TK_N + col);
  return make_float4(0.0f, 0.0f, 0.0f, 0.0f);
}
#endif
__device__ __forceinline__ void tk_store(float* __restrict__ C, int row, int col, float v) {
  if (row < TK_M && col < TK_N) {
#if KSPLIT_ATOMIC
    atomicAdd(C + (size_t)row * TK_N + col, v);
#else
    C[(size_t)row * TK_N + col] = v;
#endif
  }
}
)CUDA";

/// The knobs of the tiled product and the constraints every use of it needs; the constraints
/// hold only where `active(config)` (a kernel with other algorithms fixes these knobs instead).
template <class Active>
void add_tiled_gemm_knobs(SearchSpace& s, bool vec_and_ksplit, Active active) {
  s.add(Knob::power_of_two("BM", 16, 128)).add(Knob::power_of_two("BN", 16, 128));
  s.add(Knob::power_of_two("BK", 8, 32));
  s.add(Knob::power_of_two("TM", 1, 8)).add(Knob::power_of_two("TN", 1, 8));
  if (vec_and_ksplit) s.add(Knob::boolean("VEC"));
  s.add(Knob::boolean("DBUF"));
  if (vec_and_ksplit) s.add(Knob::power_of_two("KSPLIT", 1, 8));
  auto threads = [](const ConfigView& c) { return (c["BM"] / c["TM"]) * (c["BN"] / c["TN"]); };
  auto vec = [vec_and_ksplit](const ConfigView& c) -> std::int64_t { return vec_and_ksplit && c["VEC"] ? 4 : 1; };
  s.add_constraint("32 <= threads per block <= MAX_THREADS", [=](const ConfigView& c) {
    return !active(c) || (threads(c) >= 32 && threads(c) <= c["MAX_THREADS"]);
  });
  s.add_constraint("(BM + BN) * BK * 4 * (DBUF ? 2 : 1) <= MAX_SHARED", [=](const ConfigView& c) {
    return !active(c) || (c["BM"] + c["BN"]) * c["BK"] * 4 * (c["DBUF"] ? 2 : 1) <= c["MAX_SHARED"];
  });
  s.add_constraint("BM * BK % (threads * vector width) == 0", [=](const ConfigView& c) {
    return !active(c) || c["BM"] * c["BK"] % (threads(c) * vec(c)) == 0;
  });
  s.add_constraint("BK * BN % (threads * vector width) == 0", [=](const ConfigView& c) {
    return !active(c) || c["BK"] * c["BN"] % (threads(c) * vec(c)) == 0;
  });
  s.add_constraint("TM * TN <= 64 (registers)", [=](const ConfigView& c) { return !active(c) || c["TM"] * c["TN"] <= 64; });
}

/// The macro definitions of a config: every knob and every constant named TK_* or CONV_*.
inline std::vector<Define> defines_of(const SearchSpace& s, const Config& c) {
  const ConfigView v = s.view(c);
  std::vector<Define> d;
  for (const Knob& k : s.knobs()) d.push_back({k.name(), v[k.name()]});
  for (const auto& k : s.constants())
    if (k.name.rfind("TK_", 0) == 0 || k.name.rfind("CONV_", 0) == 0) d.push_back({k.name, k.value});
  return d;
}

/// Grid and block of the tiled product for a config.
inline LaunchGeometry tiled_gemm_geometry(const ConfigView& v, std::int64_t m, std::int64_t n, std::int64_t ksplit) {
  LaunchGeometry g;
  g.block = {static_cast<unsigned>(v["BN"] / v["TN"]), static_cast<unsigned>(v["BM"] / v["TM"]), 1};
  g.grid = {static_cast<unsigned>((n + v["BN"] - 1) / v["BN"]), static_cast<unsigned>((m + v["BM"] - 1) / v["BM"]),
            static_cast<unsigned>(ksplit)};
  return g;
}

/// Uniform random floats in [-1, 1).
inline std::vector<float> random_floats(std::size_t n, std::uint64_t seed) {
  Rng rng(seed);
  boost::random::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

inline void check_cublas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(what) + ": " + cublasGetStatusString(s));
}

}  // namespace detail

/// The CUDA source of the SGEMM (entry point `tk_kernel(A, B, C)`).
inline std::string gemm_source() { return std::string(detail::gemm_hooks) + detail::tiled_gemm_core; }

/// The search space of the SGEMM of an m x k by k x n product: BM, BN (16..128), BK (8..32),
/// TM, TN (1..8), VEC, DBUF, KSPLIT (1..8), all powers of two. Constraints: 32 <= threads per
/// block <= limits.max_threads, shared memory <= limits.max_shared, the tiles divide evenly
/// among the threads (in float4 with VEC), at most 64 accumulators per thread, VEC only when k
/// and n are multiples of 4, KSPLIT * BK <= k.
inline SearchSpace gemm_space(std::int64_t m, std::int64_t n, std::int64_t k, const SpaceLimits& limits = {}) {
  limits.validate();
  if (m <= 0 || n <= 0 || k <= 0) throw std::invalid_argument("gemm_space: m, n and k must be positive");
  SearchSpace s;
  s.add_constant("TK_M", m).add_constant("TK_N", n).add_constant("TK_K", k);
  s.add_constant("MAX_THREADS", limits.max_threads).add_constant("MAX_SHARED", limits.max_shared);
  detail::add_tiled_gemm_knobs(s, true, [](const ConfigView&) { return true; });
  s.add_constraint("VEC needs TK_K % 4 == 0 and TK_N % 4 == 0", [](const ConfigView& c) {
    return !c["VEC"] || (c["TK_K"] % 4 == 0 && c["TK_N"] % 4 == 0);
  });
  s.add_constraint("KSPLIT == 1 || KSPLIT * BK <= TK_K", [](const ConfigView& c) {
    return c["KSPLIT"] == 1 || c["KSPLIT"] * c["BK"] <= c["TK_K"];
  });
  return s;
}

/// The macro definitions of a config of gemm_space() (-DBM=.. -DTK_M=..).
inline std::vector<Define> gemm_defines(const SearchSpace& s, const Config& c) { return detail::defines_of(s, c); }

/// Grid and block of a config of gemm_space().
inline LaunchGeometry gemm_geometry(const SearchSpace& s, const Config& c) {
  const ConfigView v = s.view(c);
  return detail::tiled_gemm_geometry(v, v["TK_M"], v["TK_N"], v["KSPLIT"]);
}


/// The SGEMM C = A * B (m x k times k x n, row-major fp32) on a CUDA device, as a tunable kernel
/// on random inputs.
///
/// Making it reads the device's limits for the space (query_device, in a child process, unless
/// the options give them) and creates no CUDA context: the device is opened at the first
/// prepare, run or prefetch (or `open()`), in the process that measures (a LocalFarm's worker,
/// forked after the kernel was made). Opening it uploads the inputs and computes cuBLAS's
/// product, the reference.
///
/// `prepare` compiles the config with NVRTC for the device (cached per config), loads it and
/// fills C with NaN. `run` times each launch with CUDA events. `verify` checks every element of
/// the C of the last run against cuBLAS's product within 2 gamma_k ||a_i|| ||b_j|| + 1e-6, a
/// bound on the difference of any two fp32 evaluation orders (Higham eq. 3.5 with
/// Cauchy-Schwarz); outside it is `wrong_result`. The evaluators call it after the first run
/// request (a VerifiableKernel). A device that cannot be opened makes every prepare and run a
/// `runtime_error` that says why. Throws DriverError from the constructor when the device's
/// limits cannot be read (no driver, no such device).
class GemmKernel {
 public:
  GemmKernel(std::int64_t m, std::int64_t n, std::int64_t k, KernelOptions options = {})
      : m_(m), n_(n), k_(k), options_((options.validate(), options)),
        device_(options_, gemm_source(), "tk_kernel", [this] { on_open(); }),
        space_(gemm_space(m, n, k, device_.limits())) {
    a_host_ = detail::random_floats(static_cast<std::size_t>(m * k), options_.seed);
    b_host_ = detail::random_floats(static_cast<std::size_t>(k * n), options_.seed + 1);
    const double u = std::ldexp(1.0, -24), ku = static_cast<double>(k) * u;
    gamma_ = 2.0 * ku / (1.0 - ku);
    row_norm_.assign(static_cast<std::size_t>(m), 0.0);
    col_norm_.assign(static_cast<std::size_t>(n), 0.0);
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t p = 0; p < k; ++p) row_norm_[i] += double(a_host_[i * k + p]) * a_host_[i * k + p];
    for (std::int64_t p = 0; p < k; ++p)
      for (std::int64_t j = 0; j < n; ++j) col_norm_[j] += double(b_host_[p * n + j]) * b_host_[p * n + j];
    for (double& x : row_norm_) x = std::sqrt(x);
    for (double& x : col_norm_) x = std::sqrt(x);
    c_host_.resize(static_cast<std::size_t>(m * n));
  }
  GemmKernel(const GemmKernel&) = delete;
  GemmKernel& operator=(const GemmKernel&) = delete;
  ~GemmKernel() {
    if (cublas_) cublasDestroy(cublas_);
  }

  const SearchSpace& space() const noexcept { return space_; }
  double flop() const noexcept { return 2.0 * double(m_) * double(n_) * double(k_); }
  std::string name() const {
    return "cuda_sgemm_" + std::to_string(m_) + "x" + std::to_string(n_) + "x" + std::to_string(k_);
  }
  /// "cuda-<device name>", or "cuda:<ordinal>" while the name is unknown (limits given, device
  /// not opened).
  std::string device() const { return device_.name(); }
  /// The device (see DeviceLauncher::info).
  const DeviceInfo& device_info() const noexcept { return device_.info(); }
  /// Whether the device is open (this process holds its context).
  bool is_open() const noexcept { return device_.is_open(); }
  /// Opens the device now (its first prepare, run or prefetch does otherwise); throws
  /// DriverError when it cannot be opened.
  void open() { device_.open(); }
  /// The launcher on the opened device (opening it; throws DriverError when it cannot).
  Launcher& launcher() { return device_.open(); }

  /// Starts compiling configs on other threads (ahead of their measurement).
  void prefetch(const std::vector<Config>& configs) {
    std::vector<std::vector<Define>> defines;
    for (const Config& c : configs) defines.push_back(gemm_defines(space_, c));
    device_.prefetch(defines);
  }

  /// Compiles and loads the config and fills C with NaN.
  RunResult prepare(const Config& c) {
    return device_.with_open([&](Launcher& l) {
      return prepare_output(l, gemm_defines(space_, c), c_, [&](RunResult r) { return after(std::move(r)); });
    });
  }

  RunResult run(const Config& c, std::size_t runs, Rng&) {
    return device_.with_open([&](Launcher&) { return launch(c, runs); });
  }

  /// Checks the C of the last run (of `c`) against cuBLAS's: ok, or wrong_result naming the worst
  /// element.
  RunResult verify(const Config& /*c*/) {
    if (!device_.is_open()) return {Status::runtime_error, {}, "verify: nothing was run on the device", -1.0};
    return verify_output(
        c_, c_host_, [&](std::size_t i) { return reference_[i]; },
        [&](std::size_t i) { return gamma_ * row_norm_[i / n_] * col_norm_[i % n_] + 1e-6; },
        [&](std::size_t i) {
          return "C[" + std::to_string(i / n_) + "][" + std::to_string(i % n_) + "] = " + std::to_string(c_host_[i]) +
                 ", cuBLAS " + std::to_string(reference_[i]);
        },
        [&](RunResult r) { return after(std::move(r)); });
  }

  /// Times cuBLAS's SGEMM on the same operands, `runs` launches (for comparisons).
  RunResult run_cublas(std::size_t runs) {
    return device_.with_open([&](Launcher&) -> RunResult {
      RunResult r;
      try {
        EventTimer timer;
        for (std::size_t i = 0; i < runs; ++i) {
          check(timer.start(), "cuEventRecord");
          call_cublas();
          check(timer.stop(), "cuEventRecord");
          double s = 0.0;
          check(timer.seconds(s), "cuEventSynchronize");
          r.seconds.push_back(s);
        }
      } catch (const std::exception& e) {
        return {Status::runtime_error, {}, e.what(), -1.0};
      }
      return r;
    });
  }

  /// The C of the last run (after verify) and cuBLAS's (empty until the device is open).
  const std::vector<float>& result() const noexcept { return c_host_; }
  const std::vector<float>& reference() const noexcept { return reference_; }

 private:
  RunResult launch(const Config& c, std::size_t runs) {
    const std::vector<Define> d = gemm_defines(space_, c);
    const LaunchGeometry g = gemm_geometry(space_, c);
    CUdeviceptr a = a_.get(), b = b_.get(), cc = c_.get();
    void* args[] = {&a, &b, &cc};
    const bool split = space_.view(c)["KSPLIT"] > 1;
    return after(device_.open().time(d, g, args, runs, split ? &c_ : nullptr));
  }

  // After a fault the context is gone: reset it and re-create the buffers and cuBLAS.
  RunResult after(RunResult r) {
    return device_.open().recover(
        std::move(r),
        [&] {
          if (cublas_) cublasDestroy(cublas_);
          cublas_ = nullptr;
          a_.abandon();
          b_.abandon();
          c_.abandon();
        },
        [&] { setup_device(); });
  }

  // The device was just opened: the buffers, cuBLAS, and (once) cuBLAS's product as reference.
  void on_open() {
    setup_device();
    if (!reference_.empty()) return;
    std::vector<float> reference(static_cast<std::size_t>(m_ * n_));
    c_.fill_bits(0x7fc00000u);
    call_cublas();
    check(driver().ctx_synchronize(), "cuBLAS reference");
    c_.download(reference.data());
    reference_ = std::move(reference);
  }

  void setup_device() {
    device_.open().device().make_current();
    a_ = DeviceBuffer(a_host_.size());
    b_ = DeviceBuffer(b_host_.size());
    c_ = DeviceBuffer(static_cast<std::size_t>(m_ * n_));
    a_.upload(a_host_.data());
    b_.upload(b_host_.data());
    if (cublas_) cublasDestroy(cublas_);
    cublas_ = nullptr;
    detail::check_cublas(cublasCreate(&cublas_), "cublasCreate");
    detail::check_cublas(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  }

  // Row-major C = A B is column-major C^T = B^T A^T.
  void call_cublas() {
    const float one = 1.0f, zero = 0.0f;
    detail::check_cublas(
        cublasSgemm(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n_), static_cast<int>(m_),
                    static_cast<int>(k_), &one, reinterpret_cast<const float*>(b_.get()), static_cast<int>(n_),
                    reinterpret_cast<const float*>(a_.get()), static_cast<int>(k_), &zero,
                    reinterpret_cast<float*>(c_.get()), static_cast<int>(n_)),
        "cublasSgemm");
  }

  std::int64_t m_, n_, k_;
  KernelOptions options_;
  DeviceLauncher device_;  // before the buffers: the device outlives them
  SearchSpace space_;
  std::vector<float> a_host_, b_host_, c_host_, reference_;
  std::vector<double> row_norm_, col_norm_;
  double gamma_ = 0.0;
  DeviceBuffer a_, b_, c_;
  cublasHandle_t cublas_ = nullptr;
};

static_assert(PreparableKernel<GemmKernel> && VerifiableKernel<GemmKernel> && PrefetchingKernel<GemmKernel>);

}  // namespace tunekit::cuda
