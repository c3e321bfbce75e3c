#pragma once
/// \file
/// A tunable CUDA conv2d (NCHW input, KCRS filter, NKPQ output, fp32), compiled at run time with
/// NVRTC, verified against a double-precision CPU reference.
///
/// Two algorithms, a categorical knob ALGO:
/// - direct: a BX x BY block of threads computes BX x BY output pixels of one image for KPT
///   output channels (KPT accumulators per thread), walking the input channels and the filter
///   window; DSMEM = 1 stages each input channel's KPT x R x S filter slice in shared memory.
/// - implicit GEMM: the product Y (K x N*P*Q) = W (K x C*R*S) * im2col(X) (C*R*S x N*P*Q) with
///   the tiled product of tiled_gemm.hpp (BM, BN, BK, TM, TN, DBUF), im2col computed in the
///   loads (never stored).
/// The knobs of the algorithm not chosen are inactive (SearchSpace::add_inactive): held at one
/// value that is valid for their own algorithm, so the space has no duplicate configs and one
/// step of ALGO moves between the algorithms.

#include "tunekit/concepts/kernel.hpp"
#include "tunekit/core/status.hpp"
#include "tunekit/kernels/cuda/driver.hpp"
#include "tunekit/kernels/cuda/gemm.hpp"
#include "tunekit/kernels/cuda/launcher.hpp"
#include "tunekit/kernels/cuda/nvrtc.hpp"
#include "tunekit/kernels/cuda/tiled_gemm.hpp"
#include "tunekit/space/search_space.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tunekit::cuda {

/// The shape of a 2-D convolution (the fields in the order of tunekit::cpu::Conv2dShape).
struct Conv2dShape {
  std::int64_t batch = 1;
  std::int64_t height = 1;
  std::int64_t width = 1;
  std::int64_t in_channels = 1;
  std::int64_t out_channels = 1;
  std::int64_t kernel_h = 1;
  std::int64_t kernel_w = 1;
  std::int64_t pad_h = 0;
  std::int64_t pad_w = 0;
  std::int64_t stride_h = 1;
  std::int64_t stride_w = 1;

  std::int64_t out_h() const noexcept { return (height + 2 * pad_h - kernel_h) / stride_h + 1; }
  std::int64_t out_w() const noexcept { return (width + 2 * pad_w - kernel_w) / stride_w + 1; }
  /// FLOP per run: 2 N K P Q C R S.
  double flop() const noexcept {
    return 2.0 * double(batch) * double(out_channels) * double(out_h()) * double(out_w()) *
           double(in_channels) * double(kernel_h) * double(kernel_w);
  }
  void validate() const {
    if (batch < 1 || height < 1 || width < 1 || in_channels < 1 || out_channels < 1 || kernel_h < 1 ||
        kernel_w < 1 || pad_h < 0 || pad_w < 0 || stride_h < 1 || stride_w < 1)
      throw std::invalid_argument("Conv2dShape: sizes and strides must be positive, pads >= 0");
    if (height + 2 * pad_h < kernel_h || width + 2 * pad_w < kernel_w)
      throw std::invalid_argument("Conv2dShape: the filter is larger than the padded input");
  }
};

namespace detail {

inline constexpr const char* conv2d_prologue = R"CUDA(
#define CONV_P ((CONV_H + 2 * CONV_PH - CONV_R) / CONV_SH + 1)
#define CONV_Q ((CONV_W + 2 * CONV_PW - CONV_S) / CONV_SW + 1)
#define CONV_RS (CONV_R * CONV_S)
)CUDA";

inline constexpr const char* conv2d_direct = R"CUDA(
#if ALGO == 0
extern "C" __global__ void __launch_bounds__(BX * BY)
tk_kernel(const float* __restrict__ Wt, const float* __restrict__ X, float* __restrict__ Y) {
  const int q = blockIdx.x * BX + threadIdx.x;
  const int p = blockIdx.y * BY + threadIdx.y;
  const int kblocks = (CONV_K + KPT - 1) / KPT;
  const int n = blockIdx.z / kblocks;
  const int k0 = (blockIdx.z % kblocks) * KPT;
  const bool inside = p < CONV_P && q < CONV_Q;
  float acc[KPT];
#pragma unroll
  for (int kk = 0; kk < KPT; ++kk) acc[kk] = 0.0f;
#if DSMEM
  __shared__ float ws[KPT][CONV_RS];
  const int tid = threadIdx.y * BX + threadIdx.x;
#endif
  for (int c = 0; c < CONV_C; ++c) {
#if DSMEM
    for (int e = tid; e < KPT * CONV_RS; e += BX * BY) {
      const int kk = e / CONV_RS, rs = e % CONV_RS;
      ws[kk][rs] = k0 + kk < CONV_K ? Wt[((size_t)(k0 + kk) * CONV_C + c) * CONV_RS + rs] : 0.0f;
    }
    __syncthreads();
#endif
    const float* xc = X + ((size_t)n * CONV_C + c) * CONV_H * CONV_W;
#pragma unroll
    for (int r = 0; r < CONV_R; ++r) {
      const int h = p * CONV_SH - CONV_PH + r;
#pragma unroll
      for (int s = 0; s < CONV_S; ++s) {
        const int w = q * CONV_SW - CONV_PW + s;
        const float x = (inside && h >= 0 && h < CONV_H && w >= 0 && w < CONV_W) ? xc[h * CONV_W + w] : 0.0f;
#pragma unroll
        for (int kk = 0; kk < KPT; ++kk) {
#if DSMEM
          const float wv = ws[kk][r * CONV_S + s];
#else
          const float wv = k0 + kk < CONV_K ? Wt[((size_t)(k0 + kk) * CONV_C + c) * CONV_RS + r * CONV_S + s] : 0.0f;
#endif
          acc[kk] = fmaf(x, wv, acc[kk]);
        }
      }
    }
#if DSMEM
    __syncthreads();
#endif
  }
  if (inside) {
#pragma unroll
    for (int kk = 0; kk < KPT; ++kk)
      if (k0 + kk < CONV_K) Y[(((size_t)n * CONV_K + k0 + kk) * CONV_P + p) * CONV_Q + q] = acc[kk];
  }
}
#else
)CUDA";

inline constexpr const char* conv2d_implicit_hooks = R"CUDA(
#define TK_M CONV_K
#define TK_N (CONV_N * CONV_P * CONV_Q)
#define TK_K (CONV_C * CONV_RS)
#define VEC 0
#define KSPLIT 1
__device__ __forceinline__ float tk_a(const float* __restrict__ Wt, int row, int k, int kend) {
  return (row < TK_M && k < kend) ? Wt[(size_t)row * TK_K + k] : 0.0f;
}
__device__ __forceinline__ float tk_b(const float* __restrict__ X, int k, int col, int kend) {
  if (k >= kend || col >= TK_N) return 0.0f;
  const int c = k / CONV_RS, rs = k % CONV_RS, r = rs / CONV_S, s = rs % CONV_S;
  const int n = col / (CONV_P * CONV_Q), pq = col % (CONV_P * CONV_Q);
  const int h = (pq / CONV_Q) * CONV_SH - CONV_PH + r, w = (pq % CONV_Q) * CONV_SW - CONV_PW + s;
  if (h < 0 || h >= CONV_H || w < 0 || w >= CONV_W) return 0.0f;
  return X[(((size_t)n * CONV_C + c) * CONV_H + h) * CONV_W + w];
}
__device__ __forceinline__ void tk_store(float* __restrict__ Y, int row, int col, float v) {
  if (row < TK_M && col < TK_N) {
    const int n = col / (CONV_P * CONV_Q), pq = col % (CONV_P * CONV_Q);
    Y[((size_t)n * CONV_K + row) * (CONV_P * CONV_Q) + pq] = v;
  }
}
)CUDA";

}  // namespace detail

/// The CUDA source of the conv2d (entry point `tk_kernel(W, X, Y)`).
inline std::string conv2d_source() {
  return std::string(detail::conv2d_prologue) + detail::conv2d_direct + detail::conv2d_implicit_hooks +
         detail::tiled_gemm_core + "#endif\n";
}

/// The search space of the conv2d of a shape: ALGO (direct, implicit_gemm); for direct BX
/// (4..32), BY (1..16), KPT (1..16) and DSMEM; for implicit GEMM the tiled product's BM, BN, BK,
/// TM, TN, DBUF. Constraints: threads per block within [32, limits.max_threads], shared memory
/// within limits.max_shared, the tiles divide evenly among the threads, KPT <= out_channels; the
/// other algorithm's knobs inactive (direct: BM = BN = 64, BK = 8, TM = TN = 4, DBUF 0;
/// implicit GEMM: BX = 32, BY = 1, KPT = 1, DSMEM 0).
inline SearchSpace conv2d_space(const Conv2dShape& shape, const SpaceLimits& limits = {}) {
  shape.validate();
  limits.validate();
  SearchSpace s;
  s.add_constant("CONV_N", shape.batch).add_constant("CONV_C", shape.in_channels);
  s.add_constant("CONV_H", shape.height).add_constant("CONV_W", shape.width);
  s.add_constant("CONV_K", shape.out_channels).add_constant("CONV_R", shape.kernel_h);
  s.add_constant("CONV_S", shape.kernel_w).add_constant("CONV_PH", shape.pad_h);
  s.add_constant("CONV_PW", shape.pad_w).add_constant("CONV_SH", shape.stride_h);
  s.add_constant("CONV_SW", shape.stride_w);
  s.add_constant("MAX_THREADS", limits.max_threads).add_constant("MAX_SHARED", limits.max_shared);
  s.add(Knob::categorical("ALGO", {"direct", "implicit_gemm"}));
  s.add(Knob::power_of_two("BX", 4, 32)).add(Knob::power_of_two("BY", 1, 16));
  s.add(Knob::power_of_two("KPT", 1, 16)).add(Knob::boolean("DSMEM"));
  auto direct = [](const ConfigView& c) { return c["ALGO"] == 0; };
  detail::add_tiled_gemm_knobs(s, false, [direct](const ConfigView& c) { return !direct(c); });
  s.add_constraint("direct: 32 <= BX * BY <= MAX_THREADS", [direct](const ConfigView& c) {
    return !direct(c) || (c["BX"] * c["BY"] >= 32 && c["BX"] * c["BY"] <= c["MAX_THREADS"]);
  });
  s.add_constraint("direct: KPT <= CONV_K", [direct](const ConfigView& c) { return !direct(c) || c["KPT"] <= c["CONV_K"]; });
  s.add_constraint("direct: DSMEM needs KPT * R * S * 4 <= MAX_SHARED", [direct](const ConfigView& c) {
    return !direct(c) || !c["DSMEM"] || c["KPT"] * c["CONV_R"] * c["CONV_S"] * 4 <= c["MAX_SHARED"];
  });
  // The other algorithm's knobs are inactive (SearchSpace::add_inactive), held at values that
  // are valid for their own algorithm, so that one step of ALGO crosses either way: a direct
  // config holds the 64 x 64 x 8 tile of 4 x 4 per thread (256 threads), an implicit-GEMM
  // config the 32 x 1 block of one output channel per thread without DSMEM.
  for (const auto& [knob, value] : {std::pair{"BM", "64"}, {"BN", "64"}, {"BK", "8"}, {"TM", "4"}, {"TN", "4"}, {"DBUF", "0"}})
    s.add_inactive(knob, value, "ALGO == direct", direct);
  for (const auto& [knob, value] : {std::pair{"BX", "32"}, {"BY", "1"}, {"KPT", "1"}, {"DSMEM", "0"}})
    s.add_inactive(knob, value, "ALGO == implicit_gemm", [direct](const ConfigView& c) { return !direct(c); });
  return s;
}

/// The macro definitions of a config of conv2d_space() (-DALGO=.. -DCONV_K=..).
inline std::vector<Define> conv2d_defines(const SearchSpace& s, const Config& c) { return detail::defines_of(s, c); }

/// Grid and block of a config of conv2d_space().
inline LaunchGeometry conv2d_geometry(const SearchSpace& s, const Config& c) {
  const ConfigView v = s.view(c);
  Conv2dShape sh{v["CONV_N"], v["CONV_H"], v["CONV_W"], v["CONV_C"], v["CONV_K"], v["CONV_R"],
                 v["CONV_S"], v["CONV_PH"], v["CONV_PW"], v["CONV_SH"], v["CONV_SW"]};
  if (v["ALGO"] != 0) return detail::tiled_gemm_geometry(v, sh.out_channels, sh.batch * sh.out_h() * sh.out_w(), 1);
  LaunchGeometry g;
  g.block = {static_cast<unsigned>(v["BX"]), static_cast<unsigned>(v["BY"]), 1};
  g.grid = {static_cast<unsigned>((sh.out_w() + v["BX"] - 1) / v["BX"]),
            static_cast<unsigned>((sh.out_h() + v["BY"] - 1) / v["BY"]),
            static_cast<unsigned>(sh.batch * ((sh.out_channels + v["KPT"] - 1) / v["KPT"]))};
  return g;
}

/// The direct convolution in double, and the rounding-error bound of any fp32 evaluation order
/// per output, gamma_{CRS} sum |w x| + 1e-30 (Higham eq. 3.5).
inline void conv2d_reference(const Conv2dShape& s, const float* w, const float* x, std::vector<double>& y,
                             std::vector<double>& bound) {
  const std::int64_t P = s.out_h(), Q = s.out_w(), C = s.in_channels, R = s.kernel_h, S = s.kernel_w;
  y.assign(static_cast<std::size_t>(s.batch * s.out_channels * P * Q), 0.0);
  bound.assign(y.size(), 0.0);
  const double u = std::ldexp(1.0, -24), ku = double(C * R * S) * u, gamma = ku / (1.0 - ku);
  for (std::int64_t n = 0; n < s.batch; ++n)
    for (std::int64_t k = 0; k < s.out_channels; ++k)
      for (std::int64_t p = 0; p < P; ++p)
        for (std::int64_t q = 0; q < Q; ++q) {
          double acc = 0.0, mag = 0.0;
          for (std::int64_t c = 0; c < C; ++c)
            for (std::int64_t r = 0; r < R; ++r) {
              const std::int64_t h = p * s.stride_h - s.pad_h + r;
              if (h < 0 || h >= s.height) continue;
              for (std::int64_t t = 0; t < S; ++t) {
                const std::int64_t ww = q * s.stride_w - s.pad_w + t;
                if (ww < 0 || ww >= s.width) continue;
                const double prod = double(w[((k * C + c) * R + r) * S + t]) * x[((n * C + c) * s.height + h) * s.width + ww];
                acc += prod;
                mag += std::abs(prod);
              }
            }
          const auto i = static_cast<std::size_t>(((n * s.out_channels + k) * P + p) * Q + q);
          y[i] = acc;
          bound[i] = gamma * mag + 1e-30;
        }
}


/// The conv2d of a shape on a CUDA device, as a tunable kernel on random inputs.
///
/// Making it reads the device's limits for the space (query_device, in a child process, unless
/// the options give them) and computes the reference on the host; it creates no CUDA context:
/// the device is opened at the first prepare, run or prefetch (or `open()`), in the process that
/// measures (a LocalFarm's worker, forked after the kernel was made).
///
/// `prepare` compiles the config with NVRTC for the device (cached per config), loads it and
/// fills the output with NaN. `run` times each launch with CUDA events. `verify` checks every
/// element of the output of the last run against conv2d_reference (double precision on the
/// host, computed once at construction) within its rounding-error bound; outside it is
/// `wrong_result`. The evaluators call it after the first run request (a VerifiableKernel). A
/// device that cannot be opened makes every prepare and run a `runtime_error` that says why.
/// Throws DriverError from the constructor when the device's limits cannot be read (no driver,
/// no such device).
class Conv2dKernel {
 public:
  explicit Conv2dKernel(const Conv2dShape& shape, KernelOptions options = {})
      : shape_((shape.validate(), shape)), options_((options.validate(), options)),
        device_(options_, conv2d_source(), "tk_kernel", [this] { setup_device(); }),
        space_(conv2d_space(shape, device_.limits())) {
    w_host_ = detail::random_floats(static_cast<std::size_t>(shape.out_channels * shape.in_channels *
                                                             shape.kernel_h * shape.kernel_w), options_.seed);
    x_host_ = detail::random_floats(static_cast<std::size_t>(shape.batch * shape.in_channels * shape.height *
                                                             shape.width), options_.seed + 1);
    conv2d_reference(shape_, w_host_.data(), x_host_.data(), reference_, bound_);
    y_host_.resize(reference_.size());
  }
  Conv2dKernel(const Conv2dKernel&) = delete;
  Conv2dKernel& operator=(const Conv2dKernel&) = delete;

  const SearchSpace& space() const noexcept { return space_; }
  double flop() const noexcept { return shape_.flop(); }
  const Conv2dShape& shape() const noexcept { return shape_; }
  std::string name() const {
    const auto& s = shape_;
    return "cuda_conv2d_n" + std::to_string(s.batch) + "_c" + std::to_string(s.in_channels) + "_h" +
           std::to_string(s.height) + "_w" + std::to_string(s.width) + "_k" + std::to_string(s.out_channels) +
           "_r" + std::to_string(s.kernel_h) + "_s" + std::to_string(s.kernel_w) + "_stride" +
           std::to_string(s.stride_h);
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
  /// Device buffers of the filter, input and output (for a reference library in the same run;
  /// 0 until the device is open).
  CUdeviceptr weights() const noexcept { return w_.get(); }
  CUdeviceptr input() const noexcept { return x_.get(); }
  CUdeviceptr output() const noexcept { return y_.get(); }

  /// Starts compiling configs on other threads (ahead of their measurement).
  void prefetch(const std::vector<Config>& configs) {
    std::vector<std::vector<Define>> defines;
    for (const Config& c : configs) defines.push_back(conv2d_defines(space_, c));
    device_.prefetch(defines);
  }

  /// Compiles and loads the config and fills the output with NaN.
  RunResult prepare(const Config& c) {
    return device_.with_open([&](Launcher& l) {
      return prepare_output(l, conv2d_defines(space_, c), y_, [&](RunResult r) { return after(std::move(r)); });
    });
  }

  RunResult run(const Config& c, std::size_t runs, Rng&) {
    return device_.with_open([&](Launcher&) { return launch(c, runs); });
  }

  /// Checks the output of the last run (of `c`) against the reference: ok, or wrong_result naming
  /// the worst element.
  RunResult verify(const Config& /*c*/) {
    if (!device_.is_open()) return {Status::runtime_error, {}, "verify: nothing was run on the device", -1.0};
    return verify_output(
        y_, y_host_, [&](std::size_t i) { return reference_[i]; }, [&](std::size_t i) { return bound_[i]; },
        [&](std::size_t i) {
          return "Y[" + std::to_string(i) + "] = " + std::to_string(y_host_[i]) + ", reference " +
                 std::to_string(reference_[i]) + " (error bound " + std::to_string(bound_[i]) + ")";
        },
        [&](RunResult r) { return after(std::move(r)); });
  }

 private:
  RunResult launch(const Config& c, std::size_t runs) {
    CUdeviceptr w = w_.get(), x = x_.get(), y = y_.get();
    void* args[] = {&w, &x, &y};
    return after(device_.open().time(conv2d_defines(space_, c), conv2d_geometry(space_, c), args, runs));
  }

  // After a fault the context is gone: reset it and re-create the buffers.
  RunResult after(RunResult r) {
    return device_.open().recover(
        std::move(r),
        [&] {
          w_.abandon();
          x_.abandon();
          y_.abandon();
        },
        [&] { setup_device(); });
  }

  // The device was just opened (or reset): the buffers, the inputs uploaded.
  void setup_device() {
    device_.open().device().make_current();
    w_ = DeviceBuffer(w_host_.size());
    x_ = DeviceBuffer(x_host_.size());
    y_ = DeviceBuffer(y_host_.size());
    w_.upload(w_host_.data());
    x_.upload(x_host_.data());
  }

  Conv2dShape shape_;
  KernelOptions options_;
  DeviceLauncher device_;  // before the buffers: the device outlives them
  SearchSpace space_;
  std::vector<float> w_host_, x_host_, y_host_;
  std::vector<double> reference_, bound_;
  DeviceBuffer w_, x_, y_;
};

static_assert(PreparableKernel<Conv2dKernel> && VerifiableKernel<Conv2dKernel> && PrefetchingKernel<Conv2dKernel>);

}  // namespace tunekit::cuda
