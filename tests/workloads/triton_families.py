"""Triton at several problem sizes (families.py triton-sizes): nothing pinned.

  softmax_kernel    row softmax of bf16 rows, one program per row, launched for N=1000 and
                    N=3000 on 16384 rows: one name and one grid, two compilations (BLOCK 1024
                    and 4096); @triton.autotune over num_warps 2/4/8/16, keyed on n_cols, so each
                    size has its own choice, made afresh in every process.
  layernorm_kernel  LayerNorm over 16384 x 2048 bf16 rows, num_warps 4 (no autotuning).

Autotuning runs in the warm-up, before the range. The chosen configs are printed.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

ROWS = 16384


@triton.autotune(configs=[triton.Config({}, num_warps=w) for w in (2, 4, 8, 16)], key=["n_cols"])
@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, stride, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    d = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * stride + cols, (d * rstd * w + b).to(tl.bfloat16), mask=mask)


def softmax(x: torch.Tensor, out: torch.Tensor) -> None:
    softmax_kernel[(x.shape[0],)](x, out, x.stride(0), out.stride(0), x.shape[1],
                                  BLOCK=triton.next_power_of_2(x.shape[1]))


def layernorm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> None:
    layernorm_kernel[(x.shape[0],)](x, w, b, out, x.stride(0), x.shape[1], 1e-5,
                                    BLOCK=triton.next_power_of_2(x.shape[1]), num_warps=4)


def main(measured, out_fp32: bool = False) -> None:
    g = torch.Generator(device="cuda").manual_seed(0)
    out_dtype = torch.float32 if out_fp32 else torch.bfloat16
    xs = [torch.randn(ROWS, n, device="cuda", dtype=torch.bfloat16, generator=g) for n in (1000, 3000)]
    outs = [torch.empty(x.shape, device="cuda", dtype=out_dtype) for x in xs]
    ln_x = torch.randn(ROWS, 2048, device="cuda", dtype=torch.bfloat16, generator=g)
    ln_w = torch.randn(2048, device="cuda", dtype=torch.bfloat16, generator=g)
    ln_b = torch.randn(2048, device="cuda", dtype=torch.bfloat16, generator=g)
    ln_out = torch.empty_like(ln_x)

    def step() -> object:
        for x, o in zip(xs, outs):
            softmax(x, o)
        layernorm(ln_x, ln_w, ln_b, ln_out)
        return None

    measured(step, lambda _: torch.cuda.synchronize())
    print("autotune softmax_kernel chose", {k: str(v) for k, v in softmax_kernel.cache.items()})
    err = max(float((o.float() - torch.softmax(x.float(), dim=1)).abs().max()) for x, o in zip(xs, outs))
    print("out", out_dtype, "max|softmax-ref|=%.2e" % err)
