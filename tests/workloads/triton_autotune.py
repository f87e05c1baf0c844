"""Triton kernels with @triton.autotune, as their users write them: nothing pinned.

  perfgate_rmsnorm_kernel  RMSNorm over rows of a 8192 x 4096 bf16 tensor, one program per row;
                           autotuned over num_warps 1, 2, 4, 8 (the configs are near-equal in time,
                           so the autotuner's choice is timing noise and may differ per process).
  perfgate_autotuned_mm    fp16 C = A @ B, M=N=K=2048, autotuned over four tile/stage configs.

Autotuning runs on the first call, before the NVTX range "perfgate"; inside it each kernel is
launched twice. The chosen configs are printed, so a capture's program output says which won.
PERFGATE_TRITON_PIN=1 pins each kernel to its first config (how a user takes the choice away).

Run: python3 triton_autotune.py   (or: python3 field.py triton-autotune)
"""

from __future__ import annotations

import os

import torch
import triton
import triton.language as tl

PIN = os.environ.get("PERFGATE_TRITON_PIN") == "1"
ROWS, COLS = 8192, 4096
M = N = K = 2048

_NORM_CONFIGS = [triton.Config({}, num_warps=w) for w in (1, 2, 4, 8)]
_MM_CONFIGS = [
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}, num_stages=3, num_warps=8),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 64}, num_stages=4, num_warps=4),
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64}, num_stages=4, num_warps=4),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64}, num_stages=3, num_warps=8),
]


@triton.autotune(configs=_NORM_CONFIGS[:1] if PIN else _NORM_CONFIGS, key=["n_cols"])
@triton.jit
def perfgate_rmsnorm_kernel(x_ptr, w_ptr, out_ptr, row_stride, n_cols, eps,
                            BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rms = tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(out_ptr + row * row_stride + cols, (x / rms * w).to(tl.bfloat16), mask=mask)


@triton.autotune(configs=_MM_CONFIGS[:1] if PIN else _MM_CONFIGS, key=["M", "N", "K"])
@triton.jit
def perfgate_autotuned_mm(a_ptr, b_ptr, c_ptr, M, N, K,
                          stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BLOCK_K)):  # K is a multiple of every BLOCK_K: no masks
        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(tl.float16))


def rmsnorm(x: torch.Tensor, w: torch.Tensor, out: torch.Tensor) -> None:
    perfgate_rmsnorm_kernel[(x.shape[0],)](x, w, out, x.stride(0), x.shape[1], 1e-6,
                                           BLOCK=triton.next_power_of_2(x.shape[1]))


def mm(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> None:
    def grid(meta: dict) -> tuple[int]:
        return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)

    perfgate_autotuned_mm[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0),
                                b.stride(1), c.stride(0), c.stride(1))


def main() -> None:
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(ROWS, COLS, device="cuda", dtype=torch.bfloat16, generator=g)
    w = torch.randn(COLS, device="cuda", dtype=torch.bfloat16, generator=g)
    y = torch.empty_like(x)
    a = torch.randn(M, K, device="cuda", dtype=torch.float16, generator=g)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16, generator=g)
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    rmsnorm(x, w, y)  # autotunes
    mm(a, b, c)  # autotunes
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push("perfgate")
    for _ in range(2):
        rmsnorm(x, w, y)
        mm(a, b, c)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
    for kernel in (perfgate_rmsnorm_kernel, perfgate_autotuned_mm):
        print("autotune", kernel.fn.__name__, "chose", kernel.best_config, "pinned" if PIN else "")
    ref = (x.float() * torch.rsqrt((x.float() ** 2).mean(dim=1, keepdim=True) + 1e-6)) * w.float()
    print("max|rmsnorm-ref|=%.2e max|mm-ref|=%.2e" % (
        float((y.float() - ref).abs().max()), float((c.float() - a.float() @ b.float()).abs().max())))


if __name__ == "__main__":
    main()
