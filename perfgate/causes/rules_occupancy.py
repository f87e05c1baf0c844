"""Diagnosis rules of registers, local memory and occupancy: register pressure or shared
memory per block cutting occupancy, another occupancy limiter, spills that appeared or
went away. Each rule is a pure function from a KernelDelta to a RootCause or None."""

from __future__ import annotations

import math

from perfgate.causes.facts import faster, fmt, label, num, single
from perfgate.causes.model import CauseKind, KernelDelta, RootCause
from perfgate.causes.rootcause import root_cause
from perfgate.judge.comparison import State

_OCC = ("theoretical_occupancy", "occupancy_limiter", "achieved_occupancy")


def _limited_by(delta: KernelDelta, resource: str) -> bool | None:
    lim = label(delta.current, "occupancy_limiter")
    return None if lim is None else resource in lim.split("+")


def _occupancy_fell(delta: KernelDelta) -> tuple[float, float] | None:
    b, a = num(delta.baseline, "theoretical_occupancy"), num(delta.current, "theoretical_occupancy")
    if b is not None and a is not None:
        return (b, a) if a < b - 0.5 else None
    lb = label(delta.baseline, "occupancy_limiter")
    la = label(delta.current, "occupancy_limiter")
    # Without theoretical occupancy, a limiter that changed is the only sign left.
    return (math.nan, math.nan) if lb is not None and la is not None and lb != la else None


def _single_occupancy(delta: KernelDelta, resource: str, metric: str) -> RootCause | None:
    """Seed 000 section 9: low occupancy (< 60%) with this resource as the limiter."""
    theo = num(delta.current, "theoretical_occupancy")
    if not _limited_by(delta, resource) or (theo is not None and theo >= 100):
        return None
    ach = num(delta.current, "achieved_occupancy")
    what = "registers per thread" if resource == "registers" else "bytes of shared memory per block"
    mechanism = "occupancy-registers" if resource == "registers" else "occupancy-shared-memory"
    title = f"Occupancy limited by {'registers' if resource == 'registers' else 'shared memory'}"
    detail = (
        f"{fmt(num(delta.current, metric))} {what} bound the blocks per SM"
        + (f"; theoretical occupancy {theo:.0f}%" if theo is not None else "")
        + (f", achieved {ach:.0f}%" if ach is not None else "")
    )
    low = ach is not None and ach < 60
    return root_cause(
        mechanism, CauseKind.REGRESSION, title, detail, delta, (metric, *_OCC), 70 if low else 55
    )


def _local_fell(delta: KernelDelta) -> bool:
    b, a = num(delta.baseline, "local_memory_sectors"), num(delta.current, "local_memory_sectors")
    return b is not None and a is not None and b > 0 and a <= b * 0.5


def occupancy_registers(delta: KernelDelta) -> RootCause | None:
    """More registers per thread, fewer resident blocks: theoretical occupancy falls with
    registers as the limiter. Spills that went away are spills-removed's case."""
    if single(delta):
        return _single_occupancy(delta, "registers", "registers_per_thread")
    rb, ra = num(delta.baseline, "registers_per_thread"), num(delta.current, "registers_per_thread")
    fell = _occupancy_fell(delta)
    if (
        rb is None
        or ra is None
        or ra <= rb
        or fell is None
        or _limited_by(delta, "registers") is False
    ):
        return None
    if _local_fell(delta):
        return None
    b, a = fell
    detail = f"registers per thread {rb:.0f} -> {ra:.0f}" + (
        f"; theoretical occupancy {b:.0f}% -> {a:.0f}% (registers now the limiter)"
        if not math.isnan(b)
        else "; registers now limit occupancy"
    )
    score = 80 + (min(10.0, (b - a) / 5) if not math.isnan(b) else 0)
    return root_cause(
        "occupancy-registers",
        CauseKind.REGRESSION,
        "Register pressure cut occupancy",
        detail,
        delta,
        ("registers_per_thread", *_OCC),
        score,
    )


def occupancy_shared_memory(delta: KernelDelta) -> RootCause | None:
    if single(delta):
        return _single_occupancy(delta, "shared_mem", "shared_memory_per_block")
    sb = num(delta.baseline, "shared_memory_per_block")
    sa = num(delta.current, "shared_memory_per_block")
    fell = _occupancy_fell(delta)
    if sb is None or sa is None or sa <= sb or fell is None:
        return None
    if _limited_by(delta, "shared_mem") is False:
        return None
    b, a = fell
    detail = f"shared memory per block {fmt(sb)} -> {fmt(sa)} bytes" + (
        f"; theoretical occupancy {b:.0f}% -> {a:.0f}% (shared memory now the limiter)"
        if not math.isnan(b)
        else "; shared memory now limits occupancy"
    )
    score = 80 + (min(10.0, (b - a) / 5) if not math.isnan(b) else 0)
    return root_cause(
        "occupancy-shared-memory",
        CauseKind.REGRESSION,
        "Shared memory per block cut occupancy",
        detail,
        delta,
        ("shared_memory_per_block", *_OCC),
        score,
    )


def occupancy_limiter(delta: KernelDelta) -> RootCause | None:
    """The limiter changed for another reason (warps, blocks, barriers), or changed without
    costing occupancy (then only a change to note, so the categorical gate is explained)."""
    lb, la = label(delta.baseline, "occupancy_limiter"), label(delta.current, "occupancy_limiter")
    if lb is None or la is None or lb == la:
        return None
    fell = _occupancy_fell(delta)
    theo_known = num(delta.current, "theoretical_occupancy") is not None
    cites = ("occupancy_limiter", "theoretical_occupancy", "achieved_occupancy")
    if fell is not None and theo_known:
        if set(la.split("+")) & {"registers", "shared_mem"}:
            return None  # occupancy-registers / occupancy-shared-memory say it better
        return root_cause(
            "occupancy-limiter",
            CauseKind.REGRESSION,
            f"Occupancy now limited by {la}",
            f"the limiter changed from {lb} to {la} and theoretical occupancy fell "
            f"{fell[0]:.0f}% -> {fell[1]:.0f}%",
            delta,
            cites,
            70,
        )
    return root_cause(
        "occupancy-limiter",
        CauseKind.CHANGE,
        "Occupancy limiter changed",
        f"the limiter changed from {lb} to {la} without lowering theoretical occupancy",
        delta,
        cites,
        10,
    )


def local_memory(delta: KernelDelta) -> RootCause | None:
    """Local-memory sectors appeared: registers spill (registers fell or sit at a cap), or an
    array is indexed at run time. Both show as long_scoreboard and lg_throttle:
    local memory goes through the LSU."""
    a = num(delta.current, "local_memory_sectors")
    cites = (
        "local_memory_sectors",
        "registers_per_thread",
        "instructions_executed",
        "dram_bytes",
        "l2_hit_rate",
        "stall.long_scoreboard",
        "stall.lg_throttle",
        "stall_cpi.long_scoreboard",
    )
    if a is None:
        return None
    if single(delta):
        if a <= 0:
            return None
        return root_cause(
            "local-memory",
            CauseKind.REGRESSION,
            "Local-memory traffic",
            f"{fmt(a)} local-memory sectors: registers spill, or an array is indexed at run time",
            delta,
            cites,
            75,
        )
    b = num(delta.baseline, "local_memory_sectors")
    if b is None or not (a > b * 1.5 and a - b > 1024):
        return None
    rb, ra = num(delta.baseline, "registers_per_thread"), num(delta.current, "registers_per_thread")
    spills = rb is not None and ra is not None and ra < rb
    title = "Registers now spill to local memory" if spills else "Local-memory traffic appeared"
    why = (
        f"registers per thread {rb:.0f} -> {ra:.0f}: the compiler spills"
        if spills
        else "registers unchanged: an array indexed at run time, or new spills"
    )
    return root_cause(
        "local-memory",
        CauseKind.REGRESSION,
        title,
        f"local-memory sectors {fmt(b)} -> {fmt(a)}; {why}",
        delta,
        cites,
        92,
    )


def spills_removed(delta: KernelDelta) -> RootCause | None:
    """Local memory gone, more registers: the compiler stopped spilling. Occupancy may fall
    and registers_per_thread regress, but the kernel is the better for it when it got faster:
    an improvement or a trade-off, never a reason to cut registers again."""
    if single(delta) or not _local_fell(delta):
        return None
    rb, ra = num(delta.baseline, "registers_per_thread"), num(delta.current, "registers_per_thread")
    if rb is None or ra is None or ra <= rb:
        return None
    b, a = num(delta.baseline, "local_memory_sectors"), num(delta.current, "local_memory_sectors")
    gated = any(c.state is State.REGRESSED for c in delta.comparisons)
    kind = CauseKind.TRADE_OFF if gated or not faster(delta) else CauseKind.IMPROVEMENT
    return root_cause(
        "spills-removed",
        kind,
        "Register spills removed",
        f"local-memory sectors {fmt(b)} -> {fmt(a)} with registers per thread "
        f"{rb:.0f} -> {ra:.0f}" + ("; the kernel got faster" if faster(delta) else ""),
        delta,
        (
            "local_memory_sectors",
            "registers_per_thread",
            *_OCC,
            "instructions_executed",
            "dram_bytes",
        ),
        96,
    )
