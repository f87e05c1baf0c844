// perfgate regression zoo: one kernel per regression class, each built in a good and a regressed
// variant with the SAME kernel name (-DPERFGATE_REGRESSED selects the regressed one), so that a
// baseline recorded from the good build can be checked against a capture of the regressed build.
//
// Build: nvcc -O3 -arch=sm_90 -o zoo_good zoo.cu
//        nvcc -O3 -arch=sm_90 -DPERFGATE_REGRESSED -o zoo_bad zoo.cu
// Run:   ./zoo_good [--launches N] [--fail]
//        --fail makes the program exit with code 3 after its kernels ran (to capture ncu's
//        "application returned an error code" text for real).
//
// Kernel (what the regressed build changes -> the counter that must catch it):
//   zoo_coalescing   lane-contiguous loads -> transposed gather   -> sectors per request 4 -> 32
//   zoo_atomics      warp-shuffle reduction -> one atomic/thread   -> L2 red requests x32, stall drain/lg_throttle
//   zoo_registers    __launch_bounds__(256,8) removed: 32 -> 40 registers -> occupancy limiter registers
//   zoo_bank_conflicts  padded smem tile [32][33] -> [32][32]      -> shared-memory bank conflicts
//   zoo_divergence   branch per warp -> branch per lane            -> warp execution efficiency 100% -> ~50%
//   zoo_local_memory constant-indexed array -> run-time index      -> local-memory sectors 0 -> many
//   zoo_tensor_cores WMMA tensor-core tiles -> scalar FMA loop     -> tensor-pipe instructions -> 0
//   zoo_shared_occupancy 8 KiB dynamic smem -> 96 KiB              -> occupancy limiter shared_mem
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_fp16.h>
#include <mma.h>

#ifdef PERFGATE_REGRESSED
#define REGRESSED 1
#else
#define REGRESSED 0
#endif

#define CHECK(call)                                                                      \
  do {                                                                                   \
    cudaError_t err_ = (call);                                                           \
    if (err_ != cudaSuccess) {                                                           \
      fprintf(stderr, "CUDA error %s at %s:%d\n", cudaGetErrorString(err_), __FILE__,    \
              __LINE__);                                                                 \
      exit(1);                                                                           \
    }                                                                                    \
  } while (0)

static const int N = 1 << 22;          // 4M floats, 16 MiB per buffer
static const int MAT = 1024;           // tensor-core problem: MAT x MAT x MAT
static const int TRANSPOSE_DIM = 2048; // bank-conflict problem: DIM x DIM floats

// ---------------------------------------------------------------- init (not part of the zoo)
__global__ void init_random(float* p, int n, unsigned seed) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    unsigned x = (unsigned)i * 2654435761u + seed;
    x ^= x >> 13; x *= 0x5bd1e995u; x ^= x >> 15;
    p[i] = (float)(x & 0xffff) / 65536.0f - 0.5f;
  }
}

__global__ void init_half(__half* p, int n, unsigned seed) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    unsigned x = (unsigned)i * 2246822519u + seed;
    x ^= x >> 13; x *= 0x5bd1e995u; x ^= x >> 15;
    p[i] = __float2half((float)(x & 0xff) / 256.0f - 0.5f);
  }
}

// ---------------------------------------------------------------- 1. coalescing
__global__ void zoo_coalescing(const float* __restrict__ in, float* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
#if REGRESSED
  // Transposed gather: consecutive lanes read addresses n/32 floats apart, one sector each.
  int j = (i & 31) * (n >> 5) + (i >> 5);
#else
  int j = i;
#endif
  out[i] = in[j] * 2.0f + 1.0f;
}

// ---------------------------------------------------------------- 2. atomic contention
__global__ void zoo_atomics(const float* __restrict__ in, float* __restrict__ sum, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? in[i] : 0.0f;
#if REGRESSED
  atomicAdd(sum, v);
#else
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  if ((threadIdx.x & 31) == 0) atomicAdd(sum, v);
#endif
}

// ---------------------------------------------------------------- 3. register pressure
#if REGRESSED
#define ZOO_REG_BOUNDS
#else
#define ZOO_REG_BOUNDS __launch_bounds__(256, 8)
#endif
#define ZOO_REG_ACC 24
__global__ void ZOO_REG_BOUNDS zoo_registers(const float* __restrict__ in, float* __restrict__ out,
                                             int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float acc[ZOO_REG_ACC];
  float x = in[i];
#pragma unroll
  for (int k = 0; k < ZOO_REG_ACC; ++k) acc[k] = in[(i + k * 977) & (n - 1)];
#pragma unroll 1
  for (int it = 0; it < 16; ++it) {
#pragma unroll
    for (int k = 0; k < ZOO_REG_ACC; ++k) acc[k] = fmaf(acc[k], x, acc[(k + 7) % ZOO_REG_ACC]);
  }
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < ZOO_REG_ACC; ++k) s += acc[k] * (float)(k + 1);
  out[i] = s;
}

// ---------------------------------------------------------------- 4. shared-memory bank conflicts
#if REGRESSED
#define ZOO_TILE_PAD 0
#else
#define ZOO_TILE_PAD 1
#endif
__global__ void zoo_bank_conflicts(const float* __restrict__ in, float* __restrict__ out, int dim) {
  __shared__ float tile[32][32 + ZOO_TILE_PAD];
  int x = blockIdx.x * 32 + threadIdx.x;
  int y = blockIdx.y * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * dim + x];
  __syncthreads();
  x = blockIdx.y * 32 + threadIdx.x;
  y = blockIdx.x * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8) out[(y + j) * dim + x] = tile[threadIdx.x][threadIdx.y + j];
}

// ---------------------------------------------------------------- 5. warp divergence
__global__ void zoo_divergence(const float* __restrict__ in, float* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = in[i];
#if REGRESSED
  bool odd = threadIdx.x & 1;          // lanes of one warp take both paths
#else
  bool odd = (threadIdx.x >> 5) & 1;   // whole warps take one path
#endif
  if (odd) {
    for (int k = 0; k < 64; ++k) x = fmaf(x, 0.999f, 0.001f * k);
  } else {
    for (int k = 0; k < 64; ++k) x = fmaf(x, 1.001f, -0.001f * k);
  }
  out[i] = x;
}

// ---------------------------------------------------------------- 6. local memory
__global__ void zoo_local_memory(const float* __restrict__ in, float* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float buf[32];
#pragma unroll
  for (int k = 0; k < 32; ++k) buf[k] = in[(i + k * 131) & (n - 1)];
  float s = 0.0f;
#if REGRESSED
  // A data-dependent index forces the array into local memory (128-byte stack frame).
  int idx = __float_as_int(buf[0]) & 31;
#pragma unroll 1
  for (int k = 0; k < 32; ++k) { s += buf[idx]; idx = (idx * 5 + 3 + __float_as_int(s)) & 31; }
#else
#pragma unroll
  for (int k = 0; k < 32; ++k) s += buf[(k * 5 + 3) & 31];
#endif
  out[i] = s;
}

// ---------------------------------------------------------------- 7. tensor cores lost
// C[MAT x MAT] = A[MAT x MAT] * B[MAT x MAT], one warp per 16x16 output tile.
__global__ void zoo_tensor_cores(const __half* __restrict__ a, const __half* __restrict__ b,
                                 float* __restrict__ c, int m) {
  int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  int tiles = m / 16;
  if (warp >= tiles * tiles) return;
  int tr = warp / tiles, tc = warp % tiles;
#if REGRESSED
  int lane = threadIdx.x & 31;
  // Scalar FMA: each lane computes 8 of the tile's 256 outputs.
  for (int e = lane; e < 256; e += 32) {
    int r = tr * 16 + e / 16, col = tc * 16 + e % 16;
    float acc = 0.0f;
    for (int k = 0; k < m; ++k) acc = fmaf(__half2float(a[r * m + k]), __half2float(b[k * m + col]), acc);
    c[r * m + col] = acc;
  }
#else
  using namespace nvcuda;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::fill_fragment(fc, 0.0f);
  for (int k = 0; k < m; k += 16) {
    wmma::load_matrix_sync(fa, a + tr * 16 * m + k, m);
    wmma::load_matrix_sync(fb, b + k * m + tc * 16, m);
    wmma::mma_sync(fc, fa, fb, fc);
  }
  wmma::store_matrix_sync(c + tr * 16 * m + tc * 16, fc, m, wmma::mem_row_major);
#endif
}

// ---------------------------------------------------------------- 8. shared-memory-limited occupancy
#if REGRESSED
#define ZOO_SMEM_BYTES (96 * 1024)
#else
#define ZOO_SMEM_BYTES (8 * 1024)
#endif
__global__ void zoo_shared_occupancy(const float* __restrict__ in, float* __restrict__ out, int n) {
  extern __shared__ float stage[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int slots = ZOO_SMEM_BYTES / sizeof(float) / blockDim.x;
  float v = i < n ? in[i] : 0.0f;
  for (int s = 0; s < slots; ++s) stage[s * blockDim.x + threadIdx.x] = v * (float)(s + 1);
  __syncthreads();
  float acc = 0.0f;
  for (int s = 0; s < slots; ++s) acc += stage[s * blockDim.x + (threadIdx.x ^ 1)];
  if (i < n) out[i] = acc;
}

// ---------------------------------------------------------------- driver
static double checksum(const float* d, int n) {
  float* h = (float*)malloc(sizeof(float) * n);
  CHECK(cudaMemcpy(h, d, sizeof(float) * n, cudaMemcpyDeviceToHost));
  double s = 0.0;
  for (int i = 0; i < n; ++i) s += h[i];
  free(h);
  return s;
}

int main(int argc, char** argv) {
  int launches = 3;
  bool fail = false;
  for (int a = 1; a < argc; ++a) {
    if (!strcmp(argv[a], "--launches") && a + 1 < argc) launches = atoi(argv[++a]);
    else if (!strcmp(argv[a], "--fail")) fail = true;
  }
  float *in, *out, *sum;
  __half *ha, *hb;
  float* hc;
  CHECK(cudaMalloc(&in, sizeof(float) * N));
  CHECK(cudaMalloc(&out, sizeof(float) * N));
  CHECK(cudaMalloc(&sum, sizeof(float)));
  CHECK(cudaMalloc(&ha, sizeof(__half) * MAT * MAT));
  CHECK(cudaMalloc(&hb, sizeof(__half) * MAT * MAT));
  CHECK(cudaMalloc(&hc, sizeof(float) * MAT * MAT));
  init_random<<<N / 256, 256>>>(in, N, 1234u);
  init_half<<<MAT * MAT / 256, 256>>>(ha, MAT * MAT, 1u);
  init_half<<<MAT * MAT / 256, 256>>>(hb, MAT * MAT, 2u);
  CHECK(cudaGetLastError());
  CHECK(cudaFuncSetAttribute(zoo_shared_occupancy, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             ZOO_SMEM_BYTES));

  printf("perfgate zoo (%s build), %d launches per kernel\n", REGRESSED ? "regressed" : "good",
         launches);
  for (int l = 0; l < launches; ++l) {
    zoo_coalescing<<<N / 256, 256>>>(in, out, N);
    CHECK(cudaMemset(sum, 0, sizeof(float)));
    zoo_atomics<<<N / 256, 256>>>(in, sum, N);
    zoo_registers<<<N / 256, 256>>>(in, out, N);
    zoo_bank_conflicts<<<dim3(TRANSPOSE_DIM / 32, TRANSPOSE_DIM / 32), dim3(32, 8)>>>(in, out,
                                                                                     TRANSPOSE_DIM);
    zoo_divergence<<<N / 256, 256>>>(in, out, N);
    zoo_local_memory<<<N / 256, 256>>>(in, out, N);
    zoo_tensor_cores<<<(MAT / 16) * (MAT / 16) * 32 / 128, 128>>>(ha, hb, hc, MAT);
    zoo_shared_occupancy<<<N / 256, 256, ZOO_SMEM_BYTES>>>(in, out, N);
    CHECK(cudaGetLastError());
  }
  CHECK(cudaDeviceSynchronize());
  printf("checksum out=%.6e sum=%.6e c=%.6e\n", checksum(out, N), checksum(sum, 1),
         checksum(hc, MAT * MAT));
  cudaFree(in); cudaFree(out); cudaFree(sum); cudaFree(ha); cudaFree(hb); cudaFree(hc);
  if (fail) {
    printf("exiting with code 3 as asked (--fail)\n");
    return 3;
  }
  return 0;
}
