// Many small launches of a few kernels, to make a large real .ncu-rep for benchmarks/scale.py.
// nvcc -O3 -arch=sm_90 -o many_launches benchmarks/many_launches.cu && ./many_launches 1000
#include <cstdio>
#include <cstdlib>

__global__ void bench_scale(float* x, int n, float s) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * s + 1.0f;
}
__global__ void bench_sum(const float* x, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? x[i] : 0.0f;
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  if ((threadIdx.x & 31) == 0) atomicAdd(out, v);
}
__global__ void bench_copy(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i];
}
__global__ void bench_gather(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[(i * 33) % n];
}

int main(int argc, char** argv) {
  int launches = argc > 1 ? atoi(argv[1]) : 1000;
  const int n = 1 << 16;
  float *x, *y, *out;
  cudaMalloc(&x, n * sizeof(float));
  cudaMalloc(&y, n * sizeof(float));
  cudaMalloc(&out, sizeof(float));
  cudaMemset(x, 0, n * sizeof(float));
  for (int l = 0; l < launches; ++l) {
    switch (l % 4) {
      case 0: bench_scale<<<n / 256, 256>>>(x, n, 0.5f); break;
      case 1: bench_sum<<<n / 256, 256>>>(x, out, n); break;
      case 2: bench_copy<<<n / 256, 256>>>(x, y, n); break;
      default: bench_gather<<<n / 256, 256>>>(x, y, n); break;
    }
  }
  cudaError_t err = cudaDeviceSynchronize();
  printf("%d launches: %s\n", launches, cudaGetErrorString(err));
  return err == cudaSuccess ? 0 : 1;
}
