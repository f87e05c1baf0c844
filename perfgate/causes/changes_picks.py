"""Change rules of another kernel for the same work: a library's heuristic picked another
tile or engine, or the program's own kernel was replaced by another of its code (the
registry: perfgate.causes.changes.RULES)."""

from __future__ import annotations

from perfgate.causes.changes_model import Claim, Kernels


def heuristic_rule(missing: Kernels, new: Kernels, still: Kernels = ()) -> Claim | None:
    """A library picked another kernel for the same work (another tile, another engine) at the
    same math mode: its heuristic, fed by shapes, alignment and workspace."""
    families = [
        f
        for f in ("cuBLAS", "cuDNN", "CUTLASS", "FlashAttention", "NCCL")
        if any(k.family == f for k in missing) and any(k.family == f for k in new)
    ]
    if not families:
        return None
    family = families[0]
    claimed = [k for k in list(missing) + list(new) if k.family == family]
    title = f"library heuristic: {family} picked other kernels for the same work"
    lever = {
        "cuDNN": "the convolution's shapes and layout, torch.backends.cudnn.benchmark (picks by "
        "timing); or accept the new engines",
        "cuBLAS": "the GEMM's shapes and alignment (multiples of 8/16), the cuBLAS workspace; "
        "or accept the new kernels",
    }.get(family, f"the shapes and options of the {family} call; or accept the new kernels")
    return "heuristic", title, lever, claimed


def user_code_rule(missing: Kernels, new: Kernels, still: Kernels = ()) -> Claim | None:
    """A kernel of the program's own code gone and another of its own in its place."""
    gone = [k for k in missing if k.family is None]
    came = [k for k in new if k.family is None]
    if not gone or not came:
        return None
    title = "a user kernel's code changed: its kernels were replaced by others of the program"
    lever = "the kernels' source: the diff of the code that launches them"
    return "user-code", title, lever, gone + came
