"""A torch.compile'd (Inductor) module whose generated Triton kernels perfgate must match by name.

Inductor names its kernels triton_<poi|red|per>_fused_<ops>_<index>, the index counting the
kernels of the graph in the order they are generated. Variants:
  a     the module.
  b     adds one small reduction (the mean of cos() of a side input of another shape) whose result
        nudges the bias. The bias feeds the first kernel, so the new kernel must run, and is
        numbered, first: every unchanged kernel keeps its name but gets an index one higher
        (a renumbering, not a performance change).
  tail  adds one independent pointwise op (cos * 3 on the side input, returned). Seen on an H200
        with torch 2.11: Inductor schedules it last (after reorder_for_locality), so it is simply
        a new kernel with the next index and nothing is renumbered.

Compilation and warm-up run before the NVTX range "perfgate"; inside it the module runs twice.
TORCHINDUCTOR_COMPILE_THREADS=1 and a cache under /tmp are set before torch is imported.

Run: python3 compiled_module.py --variant a|b|tail
Capture: ncu --nvtx --nvtx-include "perfgate/" ... python3 compiled_module.py --variant a
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", "/tmp/perfgate-inductor-cache")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

ROWS, COLS = 8192, 1024


class Block(torch.nn.Module):
    def __init__(self, variant: str) -> None:
        super().__init__()
        self.variant = variant
        g = torch.Generator().manual_seed(0)
        self.w = torch.nn.Parameter(torch.randn(COLS, generator=g) * 0.5 + 1.0)
        self.b = torch.nn.Parameter(torch.randn(COLS, generator=g) * 0.1)

    def forward(self, x: torch.Tensor, side: torch.Tensor):
        extra = None
        bias = self.b
        if self.variant == "b":
            extra = torch.cos(side).mean()  # a new reduction kernel that the first kernel needs
            bias = self.b + 1e-3 * extra
        elif self.variant == "tail":
            extra = torch.cos(side) * 3.0  # independent of everything below
        h = torch.relu(x * self.w + bias)
        p = torch.softmax(h, dim=-1)  # row reduction
        col = p.mean(dim=0)  # column reduction: a kernel of its own
        z = p * torch.sigmoid(col) + x
        n = F.layer_norm(z, (COLS,))  # another row reduction
        out = torch.tanh(n) * 2.0 + h
        return out, col, extra


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--variant", choices=("a", "b", "tail"), default="a")
    ap.add_argument("--iters", type=int, default=2)
    args = ap.parse_args()
    dev = "cuda"
    g = torch.Generator(device=dev).manual_seed(1)
    x = torch.randn(ROWS, COLS, device=dev, generator=g)
    side = torch.randn(3000, 7, device=dev, generator=g)
    mod = Block(args.variant).to(dev)
    fn = torch.compile(mod, dynamic=False)
    with torch.no_grad():
        for _ in range(3):  # compile, autotune, warm-up
            out = fn(x, side)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push("perfgate")
        for _ in range(args.iters):
            out = fn(x, side)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
    o, col, extra = out
    print("torch", torch.__version__, "variant", args.variant, "inductor cache",
          os.environ["TORCHINDUCTOR_CACHE_DIR"])
    print("checksum out=%.6e col=%.6e extra=%s" % (float(o.sum()), float(col.sum()),
                                                  "none" if extra is None else "%.6e" % float(extra.sum())))


if __name__ == "__main__":
    main()
