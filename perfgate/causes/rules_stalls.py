"""The fallback diagnosis rules, which name a symptom rather than a mechanism: a stall reason
that gained share, a kernel bound by DRAM bandwidth. Ranked last."""

from __future__ import annotations

from perfgate.causes.facts import label, num, share, share_rise, single, slower
from perfgate.causes.levers import STALLS
from perfgate.causes.model import CauseKind, KernelDelta, RootCause
from perfgate.causes.rootcause import root_cause, with_lever


def stall_shift(delta: KernelDelta) -> RootCause | None:
    """A stall reason gained share with no counter naming the mechanism: say what the
    reason means (ncu's own description of it) and its lever. Ranked last: it is a symptom."""
    if single(delta):
        top = label(delta.current, "dominant_stall")
        if top is None or top in ("not_selected", "selected"):
            return None
        pct = share(delta.current, top) or 0.0
        meaning, lever = STALLS.get(top, ("", ""))
        cause = root_cause(
            f"stall-{top}",
            CauseKind.REGRESSION,
            f"Dominant stall: {top}",
            f"{pct:.0f}% of stalls" + (f": {meaning}" if meaning else ""),
            delta,
            ("dominant_stall", f"stall.{top}"),
            50 if pct >= 20 else 20,
        )
        return with_lever(cause, lever)
    reasons = set(delta.current.shares or {}) | {
        k.removeprefix("stall.") for k in delta.current.values if k.startswith("stall.")
    }
    rises = {r: share_rise(delta, r) for r in reasons if r not in ("not_selected", "selected")}
    if not rises or not slower(delta):
        return None
    top = max(rises, key=lambda r: rises[r])
    if rises[top] < 10:
        return None
    meaning, lever = STALLS.get(top, ("", ""))
    cause = root_cause(
        f"stall-{top}",
        CauseKind.REGRESSION,
        f"More {top} stalls",
        f"{top} gained {rises[top]:.0f} points of the stalls" + (f": {meaning}" if meaning else ""),
        delta,
        ("dominant_stall", f"stall.{top}", f"stall_cpi.{top}"),
        20,
    )
    return with_lever(cause, lever)


def dram_bound(delta: KernelDelta) -> RootCause | None:
    """Seed 003's memory-bound quadrant: long_scoreboard leads and DRAM is near its peak."""
    if not single(delta):
        return None
    dram = num(delta.current, "dram_throughput")
    if label(delta.current, "dominant_stall") != "long_scoreboard" or dram is None or dram <= 80:
        return None
    cause = root_cause(
        "dram-bound",
        CauseKind.REGRESSION,
        "Bound by DRAM bandwidth",
        f"DRAM throughput {dram:.0f}% of peak while long_scoreboard dominates",
        delta,
        ("dram_throughput", "dominant_stall"),
        55,
    )
    return with_lever(cause, "move fewer bytes: fuse kernels, smaller data types, L2 reuse")
