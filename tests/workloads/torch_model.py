"""A small PyTorch model step for perfgate's real captures, in several "builds".

Per step, each block in its own nested NVTX range inside "perfgate":
  conv      cuDNN conv2d, fp16, N=16 C=64 H=W=56, 3x3, padding 1
  norm      layer norm + GELU on a 4096x1024 fp16 activation
  attn      scaled_dot_product_attention, fp16, B=2 H=16 S=1024 D=64, causal
  attn/proj cuBLAS matmul 4096x1024 @ 1024x1024
  mlp       cuBLAS matmul 4096x1024 @ 1024x4096 (a different shape: persistent nvjet kernels
            often share one name and grid across shapes)
  residual  one elementwise fp32 add launched at three sizes (1M, 4M, 16M elements): one kernel
            name at several shapes

Builds (flags):
  --attention flash|math              SDPBackend.FLASH_ATTENTION (default) or SDPBackend.MATH
  --memory-format contiguous|channels_last   layout of the conv input and weights
  --redundant-add                     one extra launch of the 16M add per step (a redundant launch)

Only the launches inside the NVTX range "perfgate" are meant to be profiled:
  ncu --nvtx --nvtx-include "perfgate/" ... python3 torch_model.py [flags]
Warm-up (cuDNN/cuBLAS heuristics, handles) runs before the range.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

ADD_SIZES = (1 << 20, 1 << 22, 1 << 24)  # 1M, 4M, 16M fp32 elements


def make_inputs(args, dev="cuda"):
    g = torch.Generator(device=dev).manual_seed(0)

    def rnd(*shape, dtype=torch.float16, scale=1.0):
        return torch.randn(*shape, device=dev, dtype=dtype, generator=g) * scale

    t = {}
    t["img"] = rnd(16, 64, 56, 56)
    t["conv_w"] = rnd(64, 64, 3, 3, scale=0.05)
    if args.memory_format == "channels_last":
        t["img"] = t["img"].contiguous(memory_format=torch.channels_last)
        t["conv_w"] = t["conv_w"].contiguous(memory_format=torch.channels_last)
    t["x"] = rnd(4096, 1024)
    t["ln_w"] = torch.ones(1024, device=dev, dtype=torch.float16)
    t["ln_b"] = torch.zeros(1024, device=dev, dtype=torch.float16)
    t["q"], t["k"], t["v"] = (rnd(2, 16, 1024, 64) for _ in range(3))
    t["w_proj"] = rnd(1024, 1024, scale=0.03)
    t["w_up"] = rnd(1024, 4096, scale=0.03)
    t["adds"] = [(rnd(n, dtype=torch.float32), rnd(n, dtype=torch.float32)) for n in ADD_SIZES]
    return t


def step(args, t):
    nvtx = torch.cuda.nvtx
    backend = SDPBackend.FLASH_ATTENTION if args.attention == "flash" else SDPBackend.MATH
    with nvtx.range("conv"):
        c = F.conv2d(t["img"], t["conv_w"], padding=1)
    with nvtx.range("norm"):
        h = F.gelu(F.layer_norm(t["x"], (1024,), t["ln_w"], t["ln_b"]))
    with nvtx.range("attn"):
        with sdpa_kernel(backend):
            a = F.scaled_dot_product_attention(t["q"], t["k"], t["v"], is_causal=True)
        with nvtx.range("proj"):
            p = h @ t["w_proj"]  # 4096x1024 @ 1024x1024
    with nvtx.range("mlp"):
        u = h @ t["w_up"]  # 4096x1024 @ 1024x4096
    sums = []
    with nvtx.range("residual"):
        for x, y in t["adds"]:
            sums.append(x + y)
        if args.redundant_add:
            x, y = t["adds"][-1]
            sums[-1] = x + y  # the same 16M add again: a redundant launch
    return c, h, a, p, u, sums


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--attention", choices=("flash", "math"), default="flash")
    ap.add_argument("--memory-format", choices=("contiguous", "channels_last"), default="contiguous")
    ap.add_argument("--redundant-add", action="store_true")
    args = ap.parse_args()
    torch.backends.cudnn.benchmark = False
    t = make_inputs(args)
    for _ in range(3):  # warm-up: handles, heuristics, lazy init
        step(args, t)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push("perfgate")
    for _ in range(args.steps):
        out = step(args, t)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
    c, h, a, p, u, sums = out
    print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version(), "build:",
          f"attention={args.attention} memory_format={args.memory_format} "
          f"redundant_add={args.redundant_add} steps={args.steps}")
    print("checksum", [round(float(o.float().sum()), 3) for o in (c, h, a, p, u, *sums)])


if __name__ == "__main__":
    main()
