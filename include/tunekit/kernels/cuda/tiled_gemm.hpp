#pragma once
/// \file
/// The CUDA source of a tiled matrix product, shared by the SGEMM and the implicit-GEMM conv2d.
///
/// C (TK_M x TK_N) = A (TK_M x TK_K) * B (TK_K x TK_N). A block computes a BM x BN tile of C
/// with (BN / TN) x (BM / TM) threads; each thread holds a TM x TN register tile (rows
/// ty + i * BM/TM, columns tx + j * BN/TN: conflict-free shared-memory reads, coalesced stores).
/// K is walked in BK-deep slices staged in shared memory (A transposed); DBUF = 1 double-buffers
/// them (the next slice is loaded while the current one is used, one barrier per slice);
/// VEC = 1 loads A and B as float4; KSPLIT > 1 splits K over gridDim.z, each part adding its
/// partial tile into C with atomicAdd (C cleared beforehand).
///
/// The including source defines the problem (TK_M, TK_N, TK_K) and the hooks
/// `tk_a(A, row, k, kend)`, `tk_b(B, k, col, kend)` (0 outside the operand), with VEC also
/// `tk_a4` and `tk_b4`, and `tk_store(C, row, col, value)`.

namespace tunekit::cuda::detail {

inline constexpr const char* tiled_gemm_core = R"CUDA(
#define TK_TX (BN / TN)
#define TK_TY (BM / TM)
#define TK_THREADS (TK_TX * TK_TY)
#define TK_NBUF (DBUF ? 2 : 1)

__device__ __forceinline__ void tk_load_tile(const float* __restrict__ A, const float* __restrict__ B,
                                             float (*As)[BM], float (*Bs)[BN], int bm, int bn, int k0,
                                             int kend, int tid) {
#if VEC
#pragma unroll
  for (int l = 0; l < BM * BK / (4 * TK_THREADS); ++l) {
    const int e = tid + l * TK_THREADS;
    const int r = e / (BK / 4), kk = (e % (BK / 4)) * 4;
    const float4 v = tk_a4(A, bm + r, k0 + kk, kend);
    As[kk][r] = v.x;
    As[kk + 1][r] = v.y;
    As[kk + 2][r] = v.z;
    As[kk + 3][r] = v.w;
  }
#pragma unroll
  for (int l = 0; l < BK * BN / (4 * TK_THREADS); ++l) {
    const int e = tid + l * TK_THREADS;
    const int kk = e / (BN / 4), c = (e % (BN / 4)) * 4;
    *reinterpret_cast<float4*>(&Bs[kk][c]) = tk_b4(B, k0 + kk, bn + c, kend);
  }
#else
#pragma unroll
  for (int l = 0; l < BM * BK / TK_THREADS; ++l) {
    const int e = tid + l * TK_THREADS;
    const int r = e / BK, kk = e % BK;
    As[kk][r] = tk_a(A, bm + r, k0 + kk, kend);
  }
#pragma unroll
  for (int l = 0; l < BK * BN / TK_THREADS; ++l) {
    const int e = tid + l * TK_THREADS;
    const int kk = e / BN, c = e % BN;
    Bs[kk][c] = tk_b(B, k0 + kk, bn + c, kend);
  }
#endif
}

__device__ __forceinline__ void tk_compute(const float (*As)[BM], const float (*Bs)[BN],
                                           float (&acc)[TM][TN], int tx, int ty) {
#pragma unroll
  for (int k = 0; k < BK; ++k) {
    float a[TM], b[TN];
#pragma unroll
    for (int i = 0; i < TM; ++i) a[i] = As[k][ty + i * TK_TY];
#pragma unroll
    for (int j = 0; j < TN; ++j) b[j] = Bs[k][tx + j * TK_TX];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
  }
}

extern "C" __global__ void __launch_bounds__(TK_THREADS)
tk_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
  __shared__ __align__(16) float As[TK_NBUF][BK][BM];
  __shared__ __align__(16) float Bs[TK_NBUF][BK][BN];
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * TK_TX + tx;
  const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
  const int chunk = ((TK_K + KSPLIT - 1) / KSPLIT + BK - 1) / BK * BK;
  const int kbeg = blockIdx.z * chunk;
  const int kend = min(TK_K, kbeg + chunk);
  const int tiles = kend > kbeg ? (kend - kbeg + BK - 1) / BK : 0;

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

#if DBUF
  if (tiles > 0) tk_load_tile(A, B, As[0], Bs[0], bm, bn, kbeg, kend, tid);
  __syncthreads();
  for (int t = 0; t < tiles; ++t) {
    if (t + 1 < tiles) tk_load_tile(A, B, As[(t + 1) & 1], Bs[(t + 1) & 1], bm, bn, kbeg + (t + 1) * BK, kend, tid);
    tk_compute(As[t & 1], Bs[t & 1], acc, tx, ty);
    __syncthreads();
  }
#else
  for (int t = 0; t < tiles; ++t) {
    tk_load_tile(A, B, As[0], Bs[0], bm, bn, kbeg + t * BK, kend, tid);
    __syncthreads();
    tk_compute(As[0], Bs[0], acc, tx, ty);
    __syncthreads();
  }
#endif

#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) tk_store(C, bm + ty + i * TK_TY, bn + tx + j * TK_TX, acc[i][j]);
}
)CUDA";

}  // namespace tunekit::cuda::detail
