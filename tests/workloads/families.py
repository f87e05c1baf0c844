"""Seven more kinds of GPU code (issue 33): what kernel engineers outside this project bring.

  moe            transformers' Mixtral sparse MoE block (4 experts, top-2), bf16, 512 tokens
  train-step     an MLP training step: bf16 autocast, forward, backward, fused AdamW
  cub            CUB/Thrust through ATen: radix sort (int32 keys), topk, unique, nonzero
  nvrtc          hand-written CUDA compiled at run time by NVRTC (CuPy RawKernel): a tiled
                 transpose (padded shared tile), a copy, a register-heavy polynomial
  vit            a timm ViT-Tiny/16 (2 blocks), fp16, batch 16 at 224 px, inference
  jax-train      a JAX jit-compiled MLP training step (value_and_grad + SGD), bf16
  triton-sizes   one Triton softmax kernel at N=1000 and N=3000 (same name, same grid),
                 autotuned over num_warps 2/4/8/16, and a Triton LayerNorm

Real changes (a workload name with a suffix), each one edit a user would make:
  moe-topk4                top-k 2 -> 4 (twice the tokens per expert)
  moe-init                 the MoE block with its weights initialised (N(0, 0.02)): every
                           expert gets tokens, the same ones in every process
  moe-init-topk4           moe-init with top-k 2 -> 4
  train-step-forloop       AdamW fused=True -> foreach=False (one kernel chain per parameter)
  train-step-logging       host-only logging each step (benign)
  cub-int64                radix sort on int64 keys instead of int32
  nvrtc-bank-conflicts     the transpose's shared tile loses its padding column
  nvrtc-uncoalesced        the copy reads with a 32-way stride
  nvrtc-spills             the polynomial built with --maxrregcount=32
  nvrtc-reordered          the same three kernels launched in another order (benign)
  vit-fp32                 the model and input in fp32 instead of fp16
  jax-remat                jax.checkpoint on each hidden layer (recomputed in the backward)
  triton-sizes-fp32-out    the softmax writes fp32 instead of bf16

The measured range is a process-wide NVTX start/end range named "perfgate" (ncu:
`--nvtx --nvtx-include perfgate`, no trailing slash): autograd's backward kernels and JAX's
dispatch run on other threads than the one that opens the range, and a push/pop range belongs
to its thread. PERFGATE_RANGE=pushpop uses a push/pop range instead (`--nvtx-include perfgate/`),
to show what that misses. Set-up, compilation, autotuning and warm-up run before the range.

Run:     python3 families.py WORKLOAD
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

os.environ.setdefault("XLA_FLAGS", "--xla_gpu_autotune_level=0")  # XLA's GEMM autotuner crashes under ncu
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

PUSHPOP = os.environ.get("PERFGATE_RANGE") == "pushpop"


def _measured(step: Callable[[], object], sync: Callable[[object], None], warmup: int = 3) -> None:
    """Warm up outside the range, then run `step` once inside the range "perfgate"."""
    import torch

    out = None
    for _ in range(warmup):
        out = step()
    sync(out)
    if PUSHPOP:
        torch.cuda.nvtx.range_push("perfgate")
    else:
        rid = torch.cuda.nvtx.range_start("perfgate")
    out = step()
    sync(out)
    if PUSHPOP:
        torch.cuda.nvtx.range_pop()
    else:
        torch.cuda.nvtx.range_end(rid)


def _torch_sync(_: object) -> None:
    import torch

    torch.cuda.synchronize()


def moe(top_k: int = 2, init: bool = False) -> None:
    """`init`: the block's weights drawn from N(0, 0.02) after the seed. A MixtralSparseMoeBlock
    built on its own (not through from_pretrained or a PreTrainedModel's post_init) keeps
    parameters made with torch.empty: what the memory held decides the router's logits, so
    which experts run (and so which kernels launch) can change from one process to the next."""
    import torch

    torch.manual_seed(0)
    from transformers import MixtralConfig
    from transformers.models.mixtral.modeling_mixtral import MixtralSparseMoeBlock

    cfg = MixtralConfig(hidden_size=512, intermediate_size=1024, num_local_experts=4,
                        num_experts_per_tok=top_k)
    block = MixtralSparseMoeBlock(cfg).to("cuda", torch.bfloat16).eval()
    if init:
        with torch.no_grad():
            for p in block.parameters():
                torch.nn.init.normal_(p, std=0.02)
    if os.environ.get("PERFGATE_PROBE"):
        for name, p in block.named_parameters():
            print("param", name, tuple(p.shape), "abs mean", float(p.float().abs().mean()),
                  "nonzero", int((p != 0).sum()), "finite", bool(torch.isfinite(p).all()))
    x = torch.randn(4, 128, 512, device="cuda", dtype=torch.bfloat16)

    def step() -> object:
        with torch.inference_mode():
            return block(x)

    _measured(step, _torch_sync)
    print("moe top_k", top_k, type(block).__name__)


def train_step(optimizer: str = "fused", logging_: bool = False) -> None:
    import logging

    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    log = logging.getLogger("train")
    logging.basicConfig(stream=sys.stderr, level=logging.INFO)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(),
                                torch.nn.Linear(4096, 1024)).cuda()
    kw = {"fused": True} if optimizer == "fused" else {"foreach": False, "fused": False}
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, **kw)
    x = torch.randn(512, 1024, device="cuda")
    y = torch.randn(512, 1024, device="cuda")
    steps = [0]

    def step() -> object:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.mse_loss(model(x).float(), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        steps[0] += 1
        if logging_:
            log.info("step %d done", steps[0])  # host only: no .item(), no sync
        return loss

    _measured(step, _torch_sync)
    print("train-step optimizer", optimizer)


def cub(key_dtype: str = "int32") -> None:
    import torch

    g = torch.Generator(device="cuda").manual_seed(0)
    dt = {"int32": torch.int32, "int64": torch.int64}[key_dtype]
    keys = torch.randint(0, 1 << 30, (1 << 22,), device="cuda", dtype=dt, generator=g)
    scores = torch.rand(1 << 22, device="cuda", generator=g)
    small = torch.randint(0, 1 << 16, (1 << 22,), device="cuda", dtype=torch.int32, generator=g)
    mask = torch.rand(1 << 22, device="cuda", generator=g) > 0.7

    def step() -> object:
        torch.sort(keys)
        torch.topk(scores, 64)
        torch.unique(small)
        return torch.nonzero(mask)

    _measured(step, _torch_sync)
    print("cub keys", key_dtype)


NVRTC_SRC = r"""
#define PAD @PAD@
#define STRIDED @STRIDED@
extern "C" __global__ void transpose_tiled(const float* in, float* out, int n) {
  __shared__ float tile[32][32 + PAD];
  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * n + x];
  __syncthreads();
  x = blockIdx.y * 32 + threadIdx.x; y = blockIdx.x * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8) out[(y + j) * n + x] = tile[threadIdx.x][threadIdx.y + j];
}
extern "C" __global__ void copy_vec(const float* in, float* out, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  long long j = STRIDED ? (i % 32) * (n / 32) + i / 32 : i;
  out[i] = in[j];
}
extern "C" __global__ void poly_eval(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i], acc[48];
#pragma unroll
  for (int k = 0; k < 48; k++) acc[k] = v * (k + 1) + k;
#pragma unroll
  for (int r = 0; r < 6; r++) {
#pragma unroll
    for (int k = 0; k < 48; k++) acc[k] = acc[k] * acc[(k + 7) % 48] * 0.5f + 0.25f;
  }
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < 48; k++) s += acc[k];
  y[i] = s;
}
"""


def nvrtc(pad: int = 1, strided: int = 0, maxreg: int = 0, reordered: bool = False) -> None:
    import cupy as cp

    src = NVRTC_SRC.replace("@PAD@", str(pad)).replace("@STRIDED@", str(strided))
    opts = (f"--maxrregcount={maxreg}",) if maxreg else ()
    mod = cp.RawModule(code=src, options=opts)
    transpose, copy, poly = (mod.get_function(n) for n in ("transpose_tiled", "copy_vec", "poly_eval"))
    n = 4096
    a = cp.random.rand(n, n, dtype=cp.float32)
    t = cp.empty_like(a)
    m = 1 << 24
    src_v = cp.random.rand(m, dtype=cp.float32)
    dst_v = cp.empty_like(src_v)
    px = cp.random.rand(1 << 22, dtype=cp.float32)
    py = cp.empty_like(px)
    calls = [
        lambda: transpose((n // 32, n // 32), (32, 8), (a, t, cp.int32(n))),
        lambda: copy(((m + 255) // 256,), (256,), (src_v, dst_v, cp.int64(m))),
        lambda: poly(((1 << 22) // 256,), (256,), (px, py, cp.int32(1 << 22))),
    ]
    if reordered:
        calls.reverse()

    def step() -> object:
        for c in calls:
            c()
        return None

    _measured(step, lambda _: cp.cuda.runtime.deviceSynchronize())
    ok = bool(cp.allclose(t, a.T)) and bool(cp.allclose(dst_v.sum(), src_v.sum(), rtol=1e-3))
    print("nvrtc pad", pad, "strided", strided, "maxreg", maxreg, "reordered", reordered, "ok", ok)


def vit(dtype: str = "fp16") -> None:
    import timm
    import torch

    torch.manual_seed(0)
    dt = {"fp16": torch.float16, "fp32": torch.float32}[dtype]
    model = timm.create_model("vit_tiny_patch16_224", pretrained=False, depth=2, num_classes=100)
    model = model.to("cuda", dt).eval()
    x = torch.randn(16, 3, 224, 224, device="cuda", dtype=dt)

    def step() -> object:
        with torch.inference_mode():
            return model(x)

    _measured(step, _torch_sync)
    print("vit", dtype)


def jax_train(remat: bool = False) -> None:
    import jax
    import jax.numpy as jnp

    sizes = (1024, 2048, 2048, 1024)
    keys = jax.random.split(jax.random.PRNGKey(0), len(sizes) + 1)
    params = [(jax.random.normal(k, (a, b), jnp.bfloat16) * 0.02, jnp.zeros((b,), jnp.bfloat16))
              for k, a, b in zip(keys, sizes[:-1], sizes[1:])]
    x = jax.random.normal(keys[-2], (512, sizes[0]), jnp.bfloat16)
    y = jax.random.normal(keys[-1], (512, sizes[-1]), jnp.bfloat16)

    def layer(h, wb):
        w, b = wb
        return jax.nn.gelu(h @ w + b)

    hidden = jax.checkpoint(layer) if remat else layer

    def loss(ps, x, y):
        h = x
        for wb in ps[:-1]:
            h = hidden(h, wb)
        w, b = ps[-1]
        return jnp.mean(((h @ w + b).astype(jnp.float32) - y.astype(jnp.float32)) ** 2)

    @jax.jit
    def train_step(ps, x, y):
        val, grads = jax.value_and_grad(loss)(ps, x, y)
        return jax.tree.map(lambda p, g: p - 1e-3 * g.astype(p.dtype), ps, grads), val

    state = [params]

    def step() -> object:
        state[0], val = train_step(state[0], x, y)
        return val

    _measured(step, lambda out: jax.block_until_ready(out))
    print("jax-train remat", remat, jax.__version__)


def triton_sizes(out_fp32: bool = False) -> None:
    from triton_families import main as triton_main  # Triton needs its own module (jit source)

    triton_main(_measured, out_fp32)


WORKLOADS: dict[str, Callable[[], None]] = {
    "moe": moe,
    "moe-topk4": lambda: moe(top_k=4),
    "moe-init": lambda: moe(init=True),
    "moe-init-topk4": lambda: moe(top_k=4, init=True),
    "train-step": train_step,
    "train-step-forloop": lambda: train_step(optimizer="forloop"),
    "train-step-logging": lambda: train_step(logging_=True),
    "cub": cub,
    "cub-int64": lambda: cub("int64"),
    "nvrtc": nvrtc,
    "nvrtc-bank-conflicts": lambda: nvrtc(pad=0),
    "nvrtc-uncoalesced": lambda: nvrtc(strided=1),
    "nvrtc-spills": lambda: nvrtc(maxreg=32),
    "nvrtc-reordered": lambda: nvrtc(reordered=True),
    "vit": vit,
    "vit-fp32": lambda: vit("fp32"),
    "jax-train": jax_train,
    "jax-remat": lambda: jax_train(remat=True),
    "triton-sizes": triton_sizes,
    "triton-sizes-fp32-out": lambda: triton_sizes(out_fp32=True),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workload", choices=sorted(WORKLOADS))
    WORKLOADS[ap.parse_args().workload]()


if __name__ == "__main__":
    main()
