// perfgate "changes" workload: five kernels, each with the SAME name in a base and a changed
// build (-DCHANGED selects the changed one). Some changes are benign (faster, fewer bytes), some
// are regressions; one kernel is identical in both builds (control). Used to check that perfgate
// tells a benign change from a regression and keeps the control quiet.
//
// Build: nvcc -O3 -arch=sm_90 -o changes_base    changes.cu
//        nvcc -O3 -arch=sm_90 -DCHANGED -o changes_changed changes.cu
//        (add -Xptxas -v to see that chg_spills spills in base only)
// Run:   ./changes_base [--launches N]      (default 3 launches of each kernel)
// Capture: ncu --nvtx --nvtx-include "perfgate/" ... ./changes_base
//        One warm-up launch of every kernel runs before the NVTX range "perfgate".
//
// Kernel (what the changed build does -> what the counters should show):
//   chg_vector_loads  scalar 4-byte loads -> float4 16-byte loads: 1/4 of the load requests,
//                     same sectors (4 -> 16 sectors per request), shorter duration (benign)
//   chg_fewer_bytes   reads fp32 input -> reads the same values stored as fp16: half the DRAM
//                     bytes read, shorter duration (benign)
//   chg_spills        __launch_bounds__(256, 5) caps registers at 48 and spills to local memory
//                     -> cap removed: 64 registers, no local memory traffic (benign, faster)
//   chg_redundant     launched once per iteration -> twice per iteration (redundant launch)
//   chg_stable        identical in both builds (control)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_fp16.h>

#if defined(__has_include)
#if __has_include(<nvtx3/nvToolsExt.h>)
#include <nvtx3/nvToolsExt.h>
#define HAVE_NVTX 1
#endif
#endif
#ifndef HAVE_NVTX
#define HAVE_NVTX 0
static inline void nvtxRangePushA(const char*) {}
static inline void nvtxRangePop() {}
#endif

#ifdef CHANGED
#define IS_CHANGED 1
#else
#define IS_CHANGED 0
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

static const int N = 1 << 24;       // 16M elements: 64 MiB per fp32 buffer (L2 is 50 MiB)
static const int N_SPILL = 1 << 22; // 4M threads for the register-pressure kernel
static const int N_RED = 1 << 23;   // 8M elements for the redundant / stable kernels

// ---------------------------------------------------------------- init (outside the range)
__global__ void init_random(float* p, int n, unsigned seed) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    unsigned x = (unsigned)i * 2654435761u + seed;
    x ^= x >> 13; x *= 0x5bd1e995u; x ^= x >> 15;
    p[i] = (float)(x & 0xffff) / 65536.0f - 0.5f;
  }
}

__global__ void to_half(const float* __restrict__ in, __half* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __float2half(in[i]);
}

// ---------------------------------------------------------------- 1. vector loads (benign)
__global__ void chg_vector_loads(const float* __restrict__ in, float* __restrict__ out, int n,
                                 float a) {
#if IS_CHANGED
  int i = blockIdx.x * blockDim.x + threadIdx.x;  // one float4 per thread
  if (4 * i + 3 < n) {
    float4 v = reinterpret_cast<const float4*>(in)[i];
    v.x *= a; v.y *= a; v.z *= a; v.w *= a;
    reinterpret_cast<float4*>(out)[i] = v;
  }
#else
  int i = blockIdx.x * blockDim.x + threadIdx.x;  // one float per thread
  if (i < n) out[i] = in[i] * a;
#endif
}

// ---------------------------------------------------------------- 2. fewer bytes (benign)
#if IS_CHANGED
typedef __half fb_t;
__device__ __forceinline__ float fb_load(const __half* p, int i) { return __half2float(p[i]); }
#else
typedef float fb_t;
__device__ __forceinline__ float fb_load(const float* p, int i) { return p[i]; }
#endif
#define FB_PER 8  // elements per thread, loaded before use: enough bytes in flight for DRAM
// The input is passed as const void* so that the signature, and so the demangled name that ncu
// prints, is the same in both builds.
__global__ void chg_fewer_bytes(const void* __restrict__ in_raw, float* __restrict__ out, int n) {
  // Each thread sums FB_PER coalesced elements and writes one float: the reads dominate.
  const fb_t* __restrict__ in = static_cast<const fb_t*>(in_raw);
  int base = blockIdx.x * blockDim.x * FB_PER + threadIdx.x;
  float v[FB_PER];
#pragma unroll
  for (int k = 0; k < FB_PER; ++k) v[k] = fb_load(in, base + k * blockDim.x);
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < FB_PER; ++k) s += v[k] * 1.5f + 0.25f;
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

// ---------------------------------------------------------------- 3. register spills (benign fix)
#if IS_CHANGED
#define SPILL_BOUNDS __launch_bounds__(256)
#else
#define SPILL_BOUNDS __launch_bounds__(256, 5)  // 65536 / (256 * 5) -> 48 registers: spills
#endif
#define SPILL_ACC 48
__global__ void SPILL_BOUNDS chg_spills(const float* __restrict__ in, float* __restrict__ out,
                                        int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float acc[SPILL_ACC];
  float x = in[i];
#pragma unroll
  for (int k = 0; k < SPILL_ACC; ++k) acc[k] = in[(i + k * 977) & (n - 1)];
#pragma unroll 1
  for (int it = 0; it < 8; ++it) {
#pragma unroll
    for (int k = 0; k < SPILL_ACC; ++k) acc[k] = fmaf(acc[k], x, acc[(k + 7) % SPILL_ACC]);
  }
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < SPILL_ACC; ++k) s += acc[k] * (float)(k + 1);
  out[i] = s;
}

// ---------------------------------------------------------------- 4. redundant launch
__global__ void chg_redundant(const float* __restrict__ in, float* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * 0.5f + 1.0f;
}

// ---------------------------------------------------------------- 5. control (identical)
__global__ void chg_stable(const float* __restrict__ in, float* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = in[i];
#pragma unroll 4
  for (int k = 0; k < 16; ++k) x = __sinf(x) * 0.75f + __cosf(x * 1.25f) * 0.25f;
  out[i] = x;
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

struct Bufs {
  float *in, *out_vec, *out_fb, *out_spill, *out_red, *out_stable;
  __half* in_half;
};

static const int FB_BLOCKS = N / 256 / FB_PER;

static void one_iteration(const Bufs& b) {
#if IS_CHANGED
  chg_vector_loads<<<N / 4 / 256, 256>>>(b.in, b.out_vec, N, 2.0f);
  chg_fewer_bytes<<<FB_BLOCKS, 256>>>(b.in_half, b.out_fb, N);
#else
  chg_vector_loads<<<N / 256, 256>>>(b.in, b.out_vec, N, 2.0f);
  chg_fewer_bytes<<<FB_BLOCKS, 256>>>(b.in, b.out_fb, N);
#endif
  chg_spills<<<N_SPILL / 256, 256>>>(b.in, b.out_spill, N_SPILL);
  chg_redundant<<<N_RED / 256, 256>>>(b.in, b.out_red, N_RED);
#if IS_CHANGED
  chg_redundant<<<N_RED / 256, 256>>>(b.in, b.out_red, N_RED);  // the redundant second launch
#endif
  chg_stable<<<N_RED / 256, 256>>>(b.in, b.out_stable, N_RED);
  CHECK(cudaGetLastError());
}

int main(int argc, char** argv) {
  int launches = 3;
  for (int a = 1; a < argc; ++a)
    if (!strcmp(argv[a], "--launches") && a + 1 < argc) launches = atoi(argv[++a]);
  Bufs b;
  CHECK(cudaMalloc(&b.in, sizeof(float) * N));
  CHECK(cudaMalloc(&b.in_half, sizeof(__half) * N));
  CHECK(cudaMalloc(&b.out_vec, sizeof(float) * N));
  CHECK(cudaMalloc(&b.out_fb, sizeof(float) * FB_BLOCKS * 256));
  CHECK(cudaMalloc(&b.out_spill, sizeof(float) * N_SPILL));
  CHECK(cudaMalloc(&b.out_red, sizeof(float) * N_RED));
  CHECK(cudaMalloc(&b.out_stable, sizeof(float) * N_RED));
  init_random<<<N / 256, 256>>>(b.in, N, 1234u);
  to_half<<<N / 256, 256>>>(b.in, b.in_half, N);
  CHECK(cudaGetLastError());

  printf("perfgate changes (%s build, nvtx %s), %d launches per kernel\n",
         IS_CHANGED ? "changed" : "base", HAVE_NVTX ? "on" : "off", launches);
  one_iteration(b);  // warm-up, outside the NVTX range
  CHECK(cudaDeviceSynchronize());
  nvtxRangePushA("perfgate");
  for (int l = 0; l < launches; ++l) one_iteration(b);
  CHECK(cudaDeviceSynchronize());
  nvtxRangePop();
  printf("checksum vec=%.6e fb=%.6e spill=%.6e red=%.6e stable=%.6e\n",
         checksum(b.out_vec, N), checksum(b.out_fb, FB_BLOCKS * 256), checksum(b.out_spill, N_SPILL),
         checksum(b.out_red, N_RED), checksum(b.out_stable, N_RED));
  cudaFree(b.in); cudaFree(b.in_half); cudaFree(b.out_vec); cudaFree(b.out_fb);
  cudaFree(b.out_spill); cudaFree(b.out_red); cudaFree(b.out_stable);
  return 0;
}
