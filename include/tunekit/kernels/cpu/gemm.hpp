#pragma once
/// \file
/// A tunable OpenMP SGEMM (C = A * B, row-major fp32, any M, N, K) and the kernel that tunes it.
///
/// The algorithm is Goto's (BLIS's five loops): the N dimension in blocks of nc, K in blocks of
/// kc, M in blocks of mc; B's kc x nc block and A's mc x kc block are packed into micro-panels
/// (or read in place), and a register-blocked micro-kernel computes mr x nr tiles of C as kc
/// rank-1 updates held in vector registers. The micro-kernel's shape and k-loop unroll are
/// template parameters, instantiated for the shapes in `gemm_shapes`; its vectors are the
/// host's widest (tunekit/kernels/cpu/simd.hpp), so nr is a multiple of `simd_width`.

#include "tunekit/concepts/kernel.hpp"
#include "tunekit/core/status.hpp"
#include "tunekit/kernels/cpu/buffer.hpp"
#include "tunekit/kernels/cpu/simd.hpp"
#include "tunekit/space/search_space.hpp"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tunekit::cpu {

/// Which loop of the five is shared among the OpenMP threads.
enum class GemmLoop {
  jc,  ///< the nc blocks of N: each thread packs its own A and B blocks
  ic,  ///< the mc blocks of M: B's block packed together, each thread its own A block
  jr   ///< the nr micro-panels of N: A's and B's blocks packed together
};

/// One configuration of the SGEMM.
struct GemmParams {
  int mr = 8;                  ///< micro-tile rows (a shape of gemm_shapes)
  int nr = 2 * simd_width;     ///< micro-tile columns, a multiple of simd_width
  std::size_t mc = 128;        ///< rows of A's block; a multiple of mr
  std::size_t nc = 1024;       ///< columns of B's block; a multiple of nr
  std::size_t kc = 256;        ///< depth of the blocks
  bool pack_a = true;          ///< pack A's block into mr-row micro-panels
  bool pack_b = true;          ///< pack B's block into nr-column micro-panels
  GemmLoop parallel = GemmLoop::ic;
  omp_sched_t schedule = omp_sched_static;  ///< OpenMP schedule of the parallel loop
  int unroll = 4;              ///< k-loop unroll of the micro-kernel: 1, 2, 4 or 8

  void validate() const;
};

/// The micro-kernel shapes that are instantiated: (mr, nr / simd_width). With 16 lanes the
/// columns are 16, 32, 48 or 64 wide; the largest shapes need most of AVX-512's 32 registers.
inline constexpr std::array<std::pair<int, int>, 12> gemm_shapes{{
    {4, 1}, {8, 1}, {16, 1}, {4, 2}, {6, 2}, {8, 2}, {12, 2}, {14, 2}, {4, 3}, {8, 3}, {4, 4}, {6, 4}}};

inline bool is_gemm_shape(int mr, int nr) {
  if (nr % simd_width != 0) return false;
  for (auto [m, v] : gemm_shapes)
    if (m == mr && v * simd_width == nr) return true;
  return false;
}

inline void GemmParams::validate() const {
  if (!is_gemm_shape(mr, nr))
    throw std::invalid_argument("GemmParams: no micro-kernel of shape " + std::to_string(mr) + "x" +
                                std::to_string(nr));
  if (mc == 0 || mc % static_cast<std::size_t>(mr) != 0)
    throw std::invalid_argument("GemmParams: mc must be a positive multiple of mr");
  if (nc == 0 || nc % static_cast<std::size_t>(nr) != 0)
    throw std::invalid_argument("GemmParams: nc must be a positive multiple of nr");
  if (kc == 0) throw std::invalid_argument("GemmParams: kc must be positive");
  if (unroll != 1 && unroll != 2 && unroll != 4 && unroll != 8)
    throw std::invalid_argument("GemmParams: unroll must be 1, 2, 4 or 8");
}

/// Buffers the SGEMM packs into, kept between calls so that a timed run allocates nothing.
class GemmWorkspace {
 public:
  /// Sizes the buffers for a configuration and a thread count (grows only).
  void reserve(const GemmParams& p, int threads) {
    const std::size_t nc_pad = p.nc;  // multiple of nr by validate()
    const std::size_t per_thread_b = p.parallel == GemmLoop::jc ? p.kc * nc_pad : 0;
    const std::size_t per_thread = p.mc * p.kc + per_thread_b + static_cast<std::size_t>(p.mr) * p.kc +
                                   p.kc * static_cast<std::size_t>(p.nr) +
                                   static_cast<std::size_t>(p.mr * p.nr) + 64;
    const std::size_t shared = p.kc * nc_pad + p.mc * p.kc + 64;
    if (threads_ < threads || per_thread_ < per_thread) {
      threads_ = std::max(threads_, threads);
      per_thread_ = std::max(per_thread_, round_up(per_thread));
      thread_buffers_ = AlignedBuffer(per_thread_ * static_cast<std::size_t>(threads_));
    }
    if (shared_.size() < shared) shared_ = AlignedBuffer(round_up(shared));
  }
  float* thread_buffer(int t) noexcept { return thread_buffers_.data() + per_thread_ * static_cast<std::size_t>(t); }
  float* shared_buffer() noexcept { return shared_.data(); }

 private:
  static std::size_t round_up(std::size_t n) { return (n + 15) / 16 * 16; }
  AlignedBuffer thread_buffers_, shared_;
  std::size_t per_thread_ = 0;
  int threads_ = 0;
};

namespace detail {

/// Whether micro_kernel<mr, nv, unroll> holds its row of B in registers (load_to_register) rather
/// than letting the compiler read it once per multiply-add: with more than one row of A, and with
/// the k loop unrolled at most twice, except where the tile's accumulators, its nv vectors of B
/// and one broadcast take every vector register and the loop is unrolled (4 x 3 with AVX2): g++ 12
/// then spills accumulators inside the loop, which is worse than the loads. Unrolled 4 or 8
/// times, g++ 12 spills held rows of B too (6 x 2 with AVX2); those unrolls keep the plain load.
/// tests/kernels/register_tiles.sh checks the kernels that hold it (their multiply-adds read no
/// memory operand), listed by this function (tests/kernels/register_tile_names.cpp).
constexpr bool micro_kernel_holds_b(int mr, int nv, int unroll) noexcept {
  return mr > 1 && unroll <= 2 && !(unroll > 1 && nv > 1 && register_tile_registers(mr, nv) >= vector_registers);
}

/// The body of the register-blocked micro-kernels: a MR x (NV * simd_width) tile of C from kc
/// rank-1 updates. A is a packed micro-panel (a(i, k) = a[k * MR + i]) when PackedA, else read in
/// place (a(i, k) = a[i * a_rs + k]); row k of B starts at b_row(k). The tile is written to c
/// (row stride ldc), added to what is there when `accumulate`.
template <int MR, int NV, int U, bool PackedA, class BRow>
[[gnu::always_inline]] inline void micro_kernel_body(std::size_t kc, const float* a, std::size_t a_rs, BRow b_row,
                                                      float* c, std::size_t ldc, bool accumulate) {
  constexpr int W = simd_width;
  vfloat acc[MR][NV];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v] = vfloat{};

  auto step = [&](std::size_t k) __attribute__((always_inline)) {
    vfloat bv[NV];
    const float* bk = b_row(k);
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = micro_kernel_holds_b(MR, NV, U) ? load_to_register(bk + v * W) : load(bk + v * W);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const float ai = PackedA ? a[k * MR + static_cast<std::size_t>(i)]
                               : a[static_cast<std::size_t>(i) * a_rs + k];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][v] += ai * bv[v];
    }
  };
  std::size_t k = 0;
  for (; k + U <= kc; k += U) {
#pragma GCC unroll 8
    for (int u = 0; u < U; ++u) step(k + static_cast<std::size_t>(u));
  }
  for (; k < kc; ++k) step(k);

#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      float* p = c + static_cast<std::size_t>(i) * ldc + static_cast<std::size_t>(v * W);
      store(p, accumulate ? load(p) + acc[i][v] : acc[i][v]);
    }
}

/// The register-blocked micro-kernel of the GEMM (micro_kernel_body): b(k, j) = b[k * b_rs + j].
template <int MR, int NV, int U, bool PackedA>
void micro_kernel(std::size_t kc, const float* a, std::size_t a_rs, const float* b, std::size_t b_rs,
                  float* c, std::size_t ldc, bool accumulate) {
  micro_kernel_body<MR, NV, U, PackedA>(
      kc, a, a_rs, [b, b_rs](std::size_t k) __attribute__((always_inline)) { return b + k * b_rs; }, c, ldc,
      accumulate);
}

using MicroKernel = void (*)(std::size_t, const float*, std::size_t, const float*, std::size_t,
                             float*, std::size_t, bool);

template <int MR, int NV, bool PackedA>
MicroKernel micro_kernel_for(int unroll) {
  switch (unroll) {
    case 1: return &micro_kernel<MR, NV, 1, PackedA>;
    case 2: return &micro_kernel<MR, NV, 2, PackedA>;
    case 4: return &micro_kernel<MR, NV, 4, PackedA>;
    default: return &micro_kernel<MR, NV, 8, PackedA>;
  }
}

/// The operands of one call.
struct GemmOperands {
  std::size_t m, n, k;
  const float* a;
  std::size_t lda;
  const float* b;
  std::size_t ldb;
  float* c;
  std::size_t ldc;
};

/// Packs rows [i0, i0 + rows) x columns [p0, p0 + depth) of A into mr-row micro-panels, each
/// column-major (a(i, k) at panel[k * mr + i]); rows past the block are zero.
inline void pack_a(const GemmOperands& o, std::size_t i0, std::size_t rows, std::size_t p0,
                   std::size_t depth, int mr, float* dst) {
  const auto MR = static_cast<std::size_t>(mr);
  for (std::size_t ip = 0; ip < rows; ip += MR) {
    float* panel = dst + (ip / MR) * depth * MR;
    const std::size_t valid = std::min(MR, rows - ip);
    for (std::size_t i = 0; i < MR; ++i) {
      if (i < valid) {
        const float* src = o.a + (i0 + ip + i) * o.lda + p0;
        for (std::size_t k = 0; k < depth; ++k) panel[k * MR + i] = src[k];
      } else {
        for (std::size_t k = 0; k < depth; ++k) panel[k * MR + i] = 0.0f;
      }
    }
  }
}

/// Packs rows [p0, p0 + depth) x columns [j0, j0 + cols) of B into nr-column micro-panels, each
/// row-major (b(k, j) at panel[k * nr + j]); columns past the block are zero.
inline void pack_b_panel(const GemmOperands& o, std::size_t p0, std::size_t depth, std::size_t j0,
                         std::size_t cols, int nr, float* panel) {
  const auto NR = static_cast<std::size_t>(nr);
  for (std::size_t k = 0; k < depth; ++k) {
    const float* src = o.b + (p0 + k) * o.ldb + j0;
    float* d = panel + k * NR;
    std::size_t j = 0;
    for (; j < cols; ++j) d[j] = src[j];
    for (; j < NR; ++j) d[j] = 0.0f;
  }
}

/// Per-thread scratch: packed A block, (jc loop) packed B block, edge panels, an edge tile.
struct ThreadScratch {
  float* a_block;
  float* b_block;
  float* edge_a;
  float* edge_b;
  float* tile;
};

template <int MR, int NV>
class GemmDriver {
  static constexpr int NR = NV * simd_width;

 public:
  GemmDriver(const GemmParams& p, const GemmOperands& o, GemmWorkspace& ws, int threads)
      : p_(p), o_(o), ws_(ws), threads_(threads),
        packed_(micro_kernel_for<MR, NV, true>(p.unroll)),
        in_place_(micro_kernel_for<MR, NV, false>(p.unroll)) {}

  void operator()() {
    omp_set_schedule(p_.schedule, 0);
#pragma omp parallel num_threads(threads_)
    {
      const ThreadScratch s = scratch(omp_get_thread_num());
      switch (p_.parallel) {
        case GemmLoop::jc: loop_jc(s); break;
        case GemmLoop::ic: loop_ic_or_jr(s, false); break;
        case GemmLoop::jr: loop_ic_or_jr(s, true); break;
      }
    }
  }

 private:
  ThreadScratch scratch(int t) const {
    float* base = ws_.thread_buffer(t);
    ThreadScratch s;
    s.a_block = base;
    base += p_.mc * p_.kc;
    s.b_block = nullptr;
    if (p_.parallel == GemmLoop::jc) {
      s.b_block = base;
      base += p_.kc * p_.nc;
    }
    s.edge_a = base;
    base += static_cast<std::size_t>(MR) * p_.kc;
    s.edge_b = base;
    base += p_.kc * static_cast<std::size_t>(NR);
    s.tile = base;
    return s;
  }

  // Each thread takes whole nc blocks of N, packing its own blocks.
  void loop_jc(const ThreadScratch& s) {
    const std::size_t blocks = (o_.n + p_.nc - 1) / p_.nc;
#pragma omp for schedule(runtime)
    for (std::size_t jb = 0; jb < blocks; ++jb) {
      const std::size_t jc = jb * p_.nc, ncur = std::min(p_.nc, o_.n - jc);
      for (std::size_t pc = 0; pc < o_.k; pc += p_.kc) {
        const std::size_t kcur = std::min(p_.kc, o_.k - pc);
        if (p_.pack_b)
          for (std::size_t jr = 0; jr < ncur; jr += NR)
            pack_b_panel(o_, pc, kcur, jc + jr, std::min<std::size_t>(NR, ncur - jr), NR,
                         s.b_block + jr * kcur);
        for (std::size_t ic = 0; ic < o_.m; ic += p_.mc) {
          const std::size_t mcur = std::min(p_.mc, o_.m - ic);
          if (p_.pack_a) pack_a(o_, ic, mcur, pc, kcur, MR, s.a_block);
          for (std::size_t jr = 0; jr < ncur; jr += NR)
            macro_column(s, s.b_block, ic, mcur, jc, jr, ncur, pc, kcur);
        }
      }
    }
  }

  // B's block is packed by all threads together; then the mc blocks (ic) or the nr panels (jr)
  // are shared out.
  void loop_ic_or_jr(const ThreadScratch& s, bool share_jr) {
    float* b_shared = ws_.shared_buffer();
    float* a_shared = b_shared + p_.kc * p_.nc;
    for (std::size_t jc = 0; jc < o_.n; jc += p_.nc) {
      const std::size_t ncur = std::min(p_.nc, o_.n - jc);
      const std::size_t panels = (ncur + NR - 1) / NR;
      for (std::size_t pc = 0; pc < o_.k; pc += p_.kc) {
        const std::size_t kcur = std::min(p_.kc, o_.k - pc);
        if (p_.pack_b) {
#pragma omp for schedule(static)
          for (std::size_t jp = 0; jp < panels; ++jp)
            pack_b_panel(o_, pc, kcur, jc + jp * NR, std::min<std::size_t>(NR, ncur - jp * NR), NR,
                         b_shared + jp * NR * kcur);
        }
        if (!share_jr) {
          const std::size_t blocks = (o_.m + p_.mc - 1) / p_.mc;
#pragma omp for schedule(runtime)
          for (std::size_t ib = 0; ib < blocks; ++ib) {
            const std::size_t ic = ib * p_.mc, mcur = std::min(p_.mc, o_.m - ic);
            if (p_.pack_a) pack_a(o_, ic, mcur, pc, kcur, MR, s.a_block);
            for (std::size_t jr = 0; jr < ncur; jr += NR)
              macro_column(s, b_shared, ic, mcur, jc, jr, ncur, pc, kcur);
          }
        } else {
          for (std::size_t ic = 0; ic < o_.m; ic += p_.mc) {
            const std::size_t mcur = std::min(p_.mc, o_.m - ic);
            if (p_.pack_a) {
              const std::size_t a_panels = (mcur + MR - 1) / MR;
#pragma omp for schedule(static)
              for (std::size_t ip = 0; ip < a_panels; ++ip)
                pack_a(o_, ic + ip * MR, std::min<std::size_t>(MR, mcur - ip * MR), pc, kcur, MR,
                       a_shared + ip * MR * kcur);
            }
            ThreadScratch shared_a = s;
            shared_a.a_block = a_shared;
#pragma omp for schedule(runtime)
            for (std::size_t jp = 0; jp < panels; ++jp)
              macro_column(shared_a, b_shared, ic, mcur, jc, jp * NR, ncur, pc, kcur);
          }
        }
      }
    }
  }

  // One nr-wide column of the mc x nc block: every mr x nr tile in it.
  void macro_column(const ThreadScratch& s, const float* b_block, std::size_t ic, std::size_t mcur,
                    std::size_t jc, std::size_t jr, std::size_t ncur, std::size_t pc, std::size_t kcur) {
    const std::size_t ncols = std::min<std::size_t>(NR, ncur - jr);
    const float* b;
    std::size_t b_rs;
    if (p_.pack_b) {
      b = b_block + jr * kcur;
      b_rs = NR;
    } else if (ncols == NR) {
      b = o_.b + pc * o_.ldb + jc + jr;
      b_rs = o_.ldb;
    } else {  // the last columns of B: pack so the micro-kernel never reads past them
      pack_b_panel(o_, pc, kcur, jc + jr, ncols, NR, s.edge_b);
      b = s.edge_b;
      b_rs = NR;
    }
    const bool accumulate = pc > 0;
    for (std::size_t ir = 0; ir < mcur; ir += MR) {
      const std::size_t nrows = std::min<std::size_t>(MR, mcur - ir);
      const float* a = s.a_block + (ir / MR) * MR * kcur;
      MicroKernel uk = packed_;
      if (!p_.pack_a && nrows == MR) {
        a = o_.a + (ic + ir) * o_.lda + pc;
        uk = in_place_;
      } else if (!p_.pack_a) {  // the last rows of A: pack so the micro-kernel never reads past them
        pack_a(o_, ic + ir, nrows, pc, kcur, MR, s.edge_a);
        a = s.edge_a;
      }
      float* c = o_.c + (ic + ir) * o_.ldc + jc + jr;
      if (nrows == MR && ncols == NR) {
        uk(kcur, a, o_.lda, b, b_rs, c, o_.ldc, accumulate);
      } else {  // an edge tile: compute the whole tile aside, keep its valid part
        uk(kcur, a, o_.lda, b, b_rs, s.tile, NR, false);
        for (std::size_t i = 0; i < nrows; ++i)
          for (std::size_t j = 0; j < ncols; ++j)
            c[i * o_.ldc + j] = (accumulate ? c[i * o_.ldc + j] : 0.0f) + s.tile[i * NR + j];
      }
    }
  }

  const GemmParams& p_;
  const GemmOperands& o_;
  GemmWorkspace& ws_;
  int threads_;
  MicroKernel packed_;    // for packed A micro-panels
  MicroKernel in_place_;  // for A read in place
};

template <std::size_t I = 0>
void dispatch_gemm(const GemmParams& p, const GemmOperands& o, GemmWorkspace& ws, int threads) {
  if constexpr (I < gemm_shapes.size()) {
    constexpr int MR = gemm_shapes[I].first, NV = gemm_shapes[I].second;
    if (p.mr == MR && p.nr == NV * simd_width) {
      GemmDriver<MR, NV>(p, o, ws, threads)();
      return;
    }
    dispatch_gemm<I + 1>(p, o, ws, threads);
  } else {
    throw std::invalid_argument("no micro-kernel of shape " + std::to_string(p.mr) + "x" +
                                std::to_string(p.nr));
  }
}

}  // namespace detail

/// C = A * B for row-major A (m x k, row stride lda), B (k x n, ldb) and C (m x n, ldc), with
/// the configuration `p`, on `threads` OpenMP threads. `ws` is grown as needed.
inline void sgemm(const GemmParams& p, std::size_t m, std::size_t n, std::size_t k, const float* a,
                  std::size_t lda, const float* b, std::size_t ldb, float* c, std::size_t ldc,
                  GemmWorkspace& ws, int threads) {
  p.validate();
  if (threads < 1) throw std::invalid_argument("sgemm: threads must be at least 1");
  if (lda < k || ldb < n || ldc < n) throw std::invalid_argument("sgemm: a leading dimension is too small");
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (std::size_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    return;
  }
  ws.reserve(p, threads);
  const detail::GemmOperands o{m, n, k, a, lda, b, ldb, c, ldc};
  detail::dispatch_gemm(p, o, ws, threads);
}

/// The straightforward reference: C = A * B accumulated in double, and the bound on the
/// rounding error of any fp32 evaluation order, gamma_k * sum_p |a_ip| |b_pj| with
/// gamma_k = k u / (1 - k u), u = 2^-24 (Higham, Accuracy and Stability, eq. 3.5), plus 1e-30.
inline void sgemm_reference(std::size_t m, std::size_t n, std::size_t k, const float* a, const float* b,
                            std::vector<double>& c, std::vector<double>& bound) {
  c.assign(m * n, 0.0);
  bound.assign(m * n, 0.0);
  const double u = std::ldexp(1.0, -24), ku = static_cast<double>(k) * u;
  const double gamma = ku / (1.0 - ku);
  std::vector<double> brow(n), babs(n);
  for (std::size_t i = 0; i < m; ++i) {
    double* ci = c.data() + i * n;
    double* bi = bound.data() + i * n;
    for (std::size_t p = 0; p < k; ++p) {
      const double aip = a[i * k + p];
      const float* bp = b + p * n;
      for (std::size_t j = 0; j < n; ++j) {
        ci[j] += aip * bp[j];
        bi[j] += std::abs(aip * bp[j]);
      }
    }
    for (std::size_t j = 0; j < n; ++j) bi[j] = gamma * bi[j] + 1e-30;
  }
}

/// Options of the GEMM kernel.
struct GemmKernelOptions {
  /// OpenMP threads per run; 0: omp_get_max_threads().
  int threads = 0;
  /// Seed of the random inputs (uniform in [-1, 1)).
  std::uint64_t seed = 1;

  void validate() const {
    if (threads < 0) throw std::invalid_argument("GemmKernelOptions: threads must be >= 0");
  }
};

/// The search space of the SGEMM on this host: mr, nr (an instantiated shape), mc, nc, kc
/// (multiples of mr, nr), packing of A and B, the parallel loop and its OpenMP schedule, and
/// the k-loop unroll. Constraints keep the packed blocks within sensible cache sizes: A's
/// block (mc x kc) at most 2 MiB, B's (kc x nc) at most 16 MiB.
inline SearchSpace gemm_space() {
  SearchSpace s;
  std::vector<std::int64_t> mrs, nrs;
  for (auto [m, v] : gemm_shapes) {
    if (std::find(mrs.begin(), mrs.end(), m) == mrs.end()) mrs.push_back(m);
    if (std::find(nrs.begin(), nrs.end(), v * simd_width) == nrs.end()) nrs.push_back(v * simd_width);
  }
  std::sort(mrs.begin(), mrs.end());
  std::sort(nrs.begin(), nrs.end());
  s.add(Knob::ordinal("mr", mrs)).add(Knob::ordinal("nr", nrs));
  s.add(Knob::ordinal("mc", {16, 24, 32, 48, 56, 64, 96, 112, 128, 168, 192, 224, 256, 336, 384, 448, 512}));
  s.add(Knob::ordinal("nc", {64, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096}));
  s.add(Knob::ordinal("kc", {32, 64, 96, 128, 192, 256, 384, 512, 768, 1024}));
  s.add(Knob::boolean("pack_a")).add(Knob::boolean("pack_b"));
  s.add(Knob::categorical("parallel", {"jc", "ic", "jr"}));
  s.add(Knob::categorical("schedule", {"static", "dynamic", "guided"}));
  s.add(Knob::power_of_two("unroll", 1, 8));
  s.add_constraint("(mr, nr) is an instantiated micro-kernel", [](const ConfigView& c) {
    return is_gemm_shape(static_cast<int>(c["mr"]), static_cast<int>(c["nr"]));
  });
  s.add_constraint("mc % mr == 0", [](const ConfigView& c) { return c["mc"] % c["mr"] == 0; });
  s.add_constraint("nc % nr == 0", [](const ConfigView& c) { return c["nc"] % c["nr"] == 0; });
  s.add_constraint("mc * kc * 4 <= 2 MiB", [](const ConfigView& c) { return c["mc"] * c["kc"] * 4 <= (2 << 20); });
  s.add_constraint("kc * nc * 4 <= 16 MiB", [](const ConfigView& c) { return c["kc"] * c["nc"] * 4 <= (16 << 20); });
  return s;
}

/// The GemmParams of a config of gemm_space().
inline GemmParams gemm_params(const SearchSpace& s, const Config& c) {
  const ConfigView v = s.view(c);
  static constexpr omp_sched_t schedules[] = {omp_sched_static, omp_sched_dynamic, omp_sched_guided};
  GemmParams p;
  p.mr = static_cast<int>(v["mr"]);
  p.nr = static_cast<int>(v["nr"]);
  p.mc = static_cast<std::size_t>(v["mc"]);
  p.nc = static_cast<std::size_t>(v["nc"]);
  p.kc = static_cast<std::size_t>(v["kc"]);
  p.pack_a = v["pack_a"] != 0;
  p.pack_b = v["pack_b"] != 0;
  p.parallel = static_cast<GemmLoop>(v["parallel"]);
  p.schedule = schedules[v["schedule"]];
  p.unroll = static_cast<int>(v["unroll"]);
  return p;
}

/// The SGEMM C = A * B (m x k times k x n, row-major fp32) as a tunable kernel on random inputs.
///
/// `prepare` allocates a configuration's packing buffers and fills C with NaN, so that an
/// element a configuration does not write fails the check. `run` times each run separately
/// (wall clock around one sgemm call). `verify` checks every element of the C of the last run
/// against the double precision reference (computed once, at construction) within the
/// rounding-error bound of sgemm_reference; a configuration outside it is `wrong_result`. The
/// evaluators call it after the first run request (a VerifiableKernel).
class GemmKernel {
 public:
  GemmKernel(std::size_t m, std::size_t n, std::size_t k, GemmKernelOptions options = {})
      : m_(m), n_(n), k_(k), options_(options), space_(gemm_space()) {
    options_.validate();
    if (m == 0 || n == 0 || k == 0) throw std::invalid_argument("GemmKernel: m, n and k must be positive");
    if (options_.threads == 0) options_.threads = omp_get_max_threads();
    Rng rng(options_.seed);
    a_ = AlignedBuffer(m * k);
    b_ = AlignedBuffer(k * n);
    c_ = AlignedBuffer(m * n);
    fill_uniform(a_, rng);
    fill_uniform(b_, rng);
    sgemm_reference(m, n, k, a_.data(), b_.data(), reference_, bound_);
  }

  const SearchSpace& space() const noexcept { return space_; }
  double flop() const noexcept { return 2.0 * static_cast<double>(m_) * static_cast<double>(n_) * static_cast<double>(k_); }
  std::string name() const {
    return "sgemm_" + std::to_string(m_) + "x" + std::to_string(n_) + "x" + std::to_string(k_);
  }
  std::string device() const { return std::string("cpu-") + simd_name() + "-" + std::to_string(options_.threads) + "t"; }
  int threads() const noexcept { return options_.threads; }

  /// Allocates the packing buffers of the configuration and fills C with NaN.
  RunResult prepare(const Config& c) {
    const GemmParams p = gemm_params(space_, c);
    p.validate();
    ws_.reserve(p, options_.threads);
    std::fill(c_.data(), c_.data() + m_ * n_, std::nanf(""));
    return {};
  }

  RunResult run(const Config& c, std::size_t runs, Rng&) {
    const GemmParams p = gemm_params(space_, c);
    RunResult r;
    r.seconds.reserve(runs);
    for (std::size_t i = 0; i < runs; ++i) r.seconds.push_back(seconds_of([&] { call(p); }));
    return r;
  }

  /// Checks the C of the last run (of `c`) against the reference: ok, or wrong_result naming the
  /// worst element.
  RunResult verify(const Config& /*c*/) const {
    double worst_ratio = 0.0;
    std::size_t worst = 0;
    for (std::size_t i = 0; i < m_ * n_; ++i) {
      const double err = std::abs(static_cast<double>(c_[i]) - reference_[i]);
      const double ratio = std::isfinite(err) ? err / bound_[i] : HUGE_VAL;
      if (ratio > worst_ratio) {
        worst_ratio = ratio;
        worst = i;
      }
    }
    if (worst_ratio <= 1.0) return {};
    return {Status::wrong_result, {},
            "C[" + std::to_string(worst / n_) + "][" + std::to_string(worst % n_) + "] = " +
                std::to_string(c_[worst]) + ", reference " + std::to_string(reference_[worst]) +
                " (error bound " + std::to_string(bound_[worst]) + ")",
            -1.0};
  }

  const float* a() const noexcept { return a_.data(); }
  const float* b() const noexcept { return b_.data(); }
  float* c() noexcept { return c_.data(); }

 private:
  void call(const GemmParams& p) {
    sgemm(p, m_, n_, k_, a_.data(), k_, b_.data(), n_, c_.data(), n_, ws_, options_.threads);
  }

  std::size_t m_, n_, k_;
  GemmKernelOptions options_;
  SearchSpace space_;
  AlignedBuffer a_, b_, c_;
  std::vector<double> reference_, bound_;
  GemmWorkspace ws_;
};

static_assert(PreparableKernel<GemmKernel> && VerifiableKernel<GemmKernel>);

}  // namespace tunekit::cpu
