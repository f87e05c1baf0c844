"""Workloads built from packages nobody on this project wrote: the field corpus (docs/noise.md).

Each workload is what a kernel engineer would bring to a gate: a transformers model built from a
config (random weights), a torchvision CNN in several precisions, torch.compile in its default
mode and in max-autotune, Triton kernels with @triton.autotune, a CUDA-graph replay, cuBLAS GEMMs
of several shapes and dtypes, reductions and scatters with atomics. Every one keeps its measured
range (the NVTX range "perfgate") to a few dozen launches, so that a capture with perfgate's whole
metric list stays cheap.

Set-up, compilation, autotuning and warm-up run before the range; inside it the workload runs
once (twice where it is a handful of launches). Nothing is pinned that a user would not pin:
Triton's autotuner and Inductor's max-autotune choose afresh in each process (Inductor's choice is
cached on disk within a machine start, as on a CI runner that keeps its cache).

Run:     python3 field.py WORKLOAD
Capture: ncu --nvtx --nvtx-include "perfgate/" ... python3 field.py WORKLOAD
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", "/tmp/perfgate-inductor-cache")

import torch  # noqa: E402

DEV = "cuda"


def _measured(step: Callable[[], object], times: int = 1, warmup: int = 3) -> None:
    """Warm up outside the range, then run `step` `times` times inside NVTX range "perfgate"."""
    with torch.inference_mode():
        for _ in range(warmup):
            step()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push("perfgate")
        for _ in range(times):
            step()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()


def hf_decoder(
    dtype: torch.dtype = torch.bfloat16, attn: str = "sdpa", backend: str = "", layers: int = 1
) -> None:
    """A Llama decoder layer (transformers, random weights), bf16, SDPA attention. The change
    variants: `dtype` (the whole model), `attn` (transformers' attn_implementation) and
    `backend` (one SDPA backend forced with torch.nn.attention.sdpa_kernel)."""
    from contextlib import nullcontext

    from torch.nn.attention import SDPBackend, sdpa_kernel
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        vocab_size=2048, hidden_size=512, intermediate_size=1408, num_hidden_layers=layers,
        num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=512,
        attn_implementation=attn,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg).to(DEV, dtype).eval()
    ids = torch.randint(0, cfg.vocab_size, (4, 256), device=DEV)
    def step() -> None:
        with sdpa_kernel(getattr(SDPBackend, backend)) if backend else nullcontext():
            model(input_ids=ids, use_cache=False)

    print("attention:", model.config._attn_implementation, backend or "default backend")
    _measured(step)


def hf_encoder() -> None:
    """A BERT encoder (transformers, random weights), fp16, SDPA attention."""
    from transformers import BertConfig, BertModel

    cfg = BertConfig(
        vocab_size=4096, hidden_size=384, num_hidden_layers=1, num_attention_heads=6,
    )
    torch.manual_seed(0)
    model = BertModel(cfg).to(DEV, torch.float16).eval()
    ids = torch.randint(0, cfg.vocab_size, (8, 256), device=DEV)
    mask = torch.ones_like(ids)
    _measured(lambda: model(input_ids=ids, attention_mask=mask))


def _cnn(precision: str, channels_last: bool = True) -> None:
    """The stem and first stage of torchvision's ResNet-18 (random weights), batch 16 at 112 px."""
    import torchvision

    torch.backends.cudnn.allow_tf32 = precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.manual_seed(0)
    net = torchvision.models.resnet18()
    model = torch.nn.Sequential(net.conv1, net.bn1, net.relu, net.maxpool, net.layer1, net.layer2)
    model = model.to(DEV).eval()
    x = torch.randn(16, 3, 112, 112, device=DEV)
    if precision == "bf16-cl":
        layout = torch.channels_last if channels_last else torch.contiguous_format
        model = model.to(torch.bfloat16, memory_format=layout)
        x = x.to(torch.bfloat16, memory_format=layout)
    _measured(lambda: model(x))


class _Mlp(torch.nn.Module):
    def __init__(self, width: int = 1024) -> None:
        super().__init__()
        self.norm = torch.nn.LayerNorm(width)
        self.up = torch.nn.Linear(width, 4 * width)
        self.down = torch.nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


def _compiled(mode: str) -> None:
    """An MLP block (LayerNorm, Linear, GELU, Linear, residual) under torch.compile, bf16."""
    torch.manual_seed(0)
    block = _Mlp().to(DEV, torch.bfloat16).eval()
    fn = torch.compile(block, mode=mode, dynamic=False)
    x = torch.randn(2048, 1024, device=DEV, dtype=torch.bfloat16)
    _measured(lambda: fn(x), times=2)


def cuda_graph() -> None:
    """The same MLP block in eager mode, captured once in a CUDA graph and replayed twice."""
    torch.manual_seed(0)
    block = _Mlp().to(DEV, torch.bfloat16).eval()
    x = torch.randn(2048, 1024, device=DEV, dtype=torch.bfloat16)
    with torch.inference_mode():
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                block(x)
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            block(x)
    _measured(graph.replay, times=2)


def gemms(tf32: bool = True) -> None:
    """cuBLAS through torch.matmul: square, tall-skinny, GEMV-like and batched, four dtypes."""
    torch.manual_seed(0)
    shapes = [(1024, 1024, 1024), (4096, 256, 1024), (16, 4096, 4096)]
    cases: list[tuple[torch.Tensor, torch.Tensor]] = []
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        for m, n, k in shapes:
            cases.append((torch.randn(m, k, device=DEV, dtype=dtype),
                          torch.randn(k, n, device=DEV, dtype=dtype)))
    batched = (torch.randn(32, 256, 64, device=DEV, dtype=torch.float16),
               torch.randn(32, 64, 256, device=DEV, dtype=torch.float16))
    square = (torch.randn(2048, 2048, device=DEV), torch.randn(2048, 2048, device=DEV))

    def step() -> None:
        torch.backends.cuda.matmul.allow_tf32 = False
        for a, b in cases:
            a @ b
        torch.bmm(*batched)
        torch.backends.cuda.matmul.allow_tf32 = tf32
        square[0] @ square[1]
        torch.backends.cuda.matmul.allow_tf32 = False

    _measured(step)


def reductions() -> None:
    """ATen reductions, a scan, softmax and scatters with atomics (index_add, scatter_add, bincount)."""
    torch.manual_seed(0)
    x = torch.randn(4096, 2048, device=DEV)
    idx = torch.randint(0, 512, (4096,), device=DEV)
    flat_idx = torch.randint(0, 4096, (1 << 20,), device=DEV)
    src = torch.randn(1 << 20, device=DEV)
    out_rows = torch.zeros(512, 2048, device=DEV)
    out_flat = torch.zeros(4096, device=DEV)

    def step() -> None:
        x.sum(dim=1)
        x.sum(dim=0)
        x.amax(dim=1)
        torch.cumsum(x, dim=1)
        torch.softmax(x, dim=1)
        x.norm(dim=0)
        out_rows.index_add_(0, idx, x)
        out_flat.scatter_add_(0, flat_idx, src)
        torch.bincount(flat_idx, minlength=4096)

    _measured(step)


WORKLOADS: dict[str, Callable[[], None]] = {
    "hf-decoder": hf_decoder,
    "hf-encoder": hf_encoder,
    "cnn-fp32": lambda: _cnn("fp32"),
    "cnn-tf32": lambda: _cnn("tf32"),
    "cnn-bf16-cl": lambda: _cnn("bf16-cl"),
    "compile-default": lambda: _compiled("default"),
    "compile-max-autotune": lambda: _compiled("max-autotune"),
    "cuda-graph": cuda_graph,
    "gemms": gemms,
    "reductions": reductions,
    # Real changes (issue 22): each a one-line change a user makes, against the workload above.
    "gemms-tf32-off": lambda: gemms(tf32=False),  # cuBLAS TF32 off for the 2048^2 fp32 GEMM
    "cnn-bf16": lambda: _cnn("bf16-cl", channels_last=False),  # channels_last removed
    "hf-decoder-fp32": lambda: hf_decoder(dtype=torch.float32),  # the whole model bf16 -> fp32
    # Capture cost (issue 24): the decoder at 5 layers, about 280 launches in the range.
    "hf-decoder-5l": lambda: hf_decoder(layers=5),
    "hf-decoder-10l": lambda: hf_decoder(layers=10),
    "hf-decoder-eager": lambda: hf_decoder(attn="eager"),  # SDPA -> eager attention
    "hf-decoder-sdpa-flash": lambda: hf_decoder(backend="FLASH_ATTENTION"),
    "hf-decoder-sdpa-efficient": lambda: hf_decoder(backend="EFFICIENT_ATTENTION"),
    "hf-decoder-sdpa-math": lambda: hf_decoder(backend="MATH"),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workload", choices=sorted(WORKLOADS) + ["triton-autotune"])
    name = ap.parse_args().workload
    if name == "triton-autotune":
        from triton_autotune import main as triton_main  # Triton needs its own module (jit source)

        triton_main()
    else:
        WORKLOADS[name]()
    print(f"field workload {name}: done")


if __name__ == "__main__":
    main()
