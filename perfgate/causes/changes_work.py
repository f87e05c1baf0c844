"""Change rules of the kernels still there that regressed: the problem grew (many kernels'
work scaled by one factor) or the forward runs again in the backward (recomputation). A
kernel's work ratios are ChangeKernel.work (perfgate.causes.changes_model.work_ratios)."""

from __future__ import annotations

import re

from perfgate.causes.changes_model import ChangeKernel, Claim, Kernels
from perfgate.identity.families import FAMILIES

# Causes that say only "it does more": the finding of the whole program explains them.
_WORK_ONLY = frozenset({"more-work", "launch-count"})


_MOVED = 1.15  # a work measure moved: beyond any ratio two starts of one build showed
_SAME = 0.06  # within this of the common factor
_FEW = 3  # kernels at one factor before it is the program's


def _moved(k: ChangeKernel) -> list[float]:
    return [r for _, r in k.work if r >= _MOVED or r <= 1 / _MOVED]


def _grew(k: ChangeKernel) -> float | None:
    """A regressed kernel whose only change is more of the same work: its largest work ratio;
    None for a kernel with another mechanism, or whose work fell anywhere."""
    moved = _moved(k)
    if not moved or min(moved) < 1 or not set(k.mechanisms) <= _WORK_ONLY:
        return None
    return max(moved)


def _common_factor(kernels: Kernels) -> tuple[float, list[ChangeKernel]] | None:
    """The factor most of the kernels' work grew by (each kernel's largest work ratio within
    _SAME of it), and those kernels; None under _FEW."""
    grown = [(k, g) for k in kernels if (g := _grew(k)) is not None]
    best: list[ChangeKernel] = []
    for _, center in grown:
        at = [k for k, g in grown if abs(g / center - 1) <= _SAME]
        if len(at) > len(best):
            best = at
    if len(best) < _FEW or 2 * len(best) < len(grown):
        return None
    factors = sorted(g for k, g in grown if k in best)
    return factors[len(factors) // 2], best


def _relaunched(missing: Kernels, new: Kernels, still: Kernels) -> list[ChangeKernel]:
    """The kernels of a name that is gone at its recorded grids and launched again, at other
    grids (new) or more often (still there, its work grown), with no fewer thread blocks in
    all: a kernel launched once per MoE expert at a grid sized by that expert's tokens is
    recorded as one class per grid, and top-k 2 -> 4 relaunches it at other grids (4 experts
    of 235-282 blocks each -> 4 of 512) or more often at its one grid (index_add_ 1 -> 4
    launches). Only while many kernels' work scaled by one factor (the caller's rule)."""
    gone: dict[str, list[ChangeKernel]] = {}
    for k in missing:
        gone.setdefault(k.name, []).append(k)
    out: list[ChangeKernel] = []
    for name, before in gone.items():
        came = [k for k in new if k.name == name]
        grew = [k for k in still if k.name == name and _grew(k) is not None]
        if not (came or grew):
            continue
        # Where both sides' grids are known, the work must not have shrunk.
        if came and not grew and sum(k.blocks for k in came) < sum(k.blocks for k in before):
            continue
        out += [*before, *came, *grew]
    return out


def scaled_work_rule(missing: Kernels, new: Kernels, still: Kernels = ()) -> Claim | None:
    """The problem grew: the work of many kernels (launches, instructions, sectors) scaled by
    one factor together. Per kernel it reads as a dozen "More work" and "Launched more often"
    findings; it is one change at the caller's level (batch, sequence length, MoE top-k)."""
    common = _common_factor(still)
    if common is None:
        return None
    factor, at = common
    # Kernels whose work grew by less with it (a compaction's launches 3 -> 5): the same cause.
    less = [k for k in still if k not in at and (g := _grew(k)) is not None and g < factor]
    regridded = [k for k in _relaunched(missing, new, still) if k not in at and k not in less]
    relaunched = len({k.name for k in regridded})
    title = (
        f"More work: x{factor:.2f} across {len(at)} kernels: launches, instructions and sectors "
        "scaled together"
        + (f" ({len(less)} more grew less)" if less else "")
        + (
            f"; {relaunched} more relaunched at other grids or more often with it"
            if relaunched
            else ""
        )
    )
    lever = (
        "the problem size grew (batch, sequence length, MoE top-k / tokens per expert): if "
        "intended, re-record the baseline (perfgate baseline record, or baseline accept)"
    )
    return "scaled-work", title, lever, at + less + regridded


_LIBRARIES = frozenset(f.name for f in FAMILIES if f.library)
_GEMM = re.compile(r"gemm|matmul|\bdot\b|_dot_|dot_general|nvjet_|xmma|cutlass|\bmm_", re.I)


def _repeated_gemm(k: ChangeKernel) -> bool:
    """A GEMM launched a whole number of times as often at the same work a launch."""
    ratios = dict(k.work)
    times = ratios.get("launches")
    if times is None or times < 1.5 or abs(times - round(times)) > 0.05:
        return False
    per_launch = [r for m, r in k.work if m != "launches"]
    return (
        bool(_GEMM.search(k.name))
        and set(k.mechanisms) <= _WORK_ONLY
        and all(abs(r - 1) <= _SAME for r in per_launch)
    )


def recomputation_rule(missing: Kernels, new: Kernels, still: Kernels = ()) -> Claim | None:
    """The forward runs again in the backward (rematerialization, activation checkpointing):
    some GEMMs launch twice at the same shape while elementwise fusions do more work, and the
    compiler's graph changed (XLA renumbers its fusions). A larger problem scales every
    kernel, the scaled-work rule's; here most kernels are unchanged."""
    repeated = [k for k in still if _repeated_gemm(k)]
    more = [k for k in still if k not in repeated and _grew(k) is not None]
    if not repeated or not (more or new):
        return None
    # The program's own kernels gone and new, the compiler's fusions of the changed graph
    # among them (a generated family such as XLA's or Inductor's is no library).
    graph = [k for k in list(missing) + list(new) if k.family is None or k.family not in _LIBRARIES]
    # The GEMMs launched again and the fusions doing more are listed under it ("in ...").
    title = (
        "recomputation: forward work runs again in the backward (rematerialization / "
        "activation checkpointing)"
    )
    lever = (
        "the remat/checkpoint policy: jax.checkpoint(f, policy=jax.checkpoint_policies."
        "dots_saveable) or torch.utils.checkpoint only where activation memory needs it; "
        "recomputing trades GPU time for memory: if intended, re-record the baseline"
    )
    return "recomputation", title, lever, repeated + more + graph
