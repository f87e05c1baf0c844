"""Diagnosis rules of the work a kernel does and how it is launched: more or less work at the
same efficiency, launched more or less often, another grid or block. Each rule is a pure
function from a KernelDelta to a RootCause or None."""

from __future__ import annotations

from perfgate.causes.facts import faster, launches, num, single, slower, times, within
from perfgate.causes.levers import IMPROVED_LEVERS
from perfgate.causes.model import CauseKind, KernelDelta, RootCause
from perfgate.causes.rootcause import root_cause, with_lever
from perfgate.causes.rules_memory import stored_wider
from perfgate.judge.comparison import State

_WORK = (
    "instructions_executed",
    "dram_bytes",
    "global_load_sectors",
    "global_store_sectors",
    "l2_sectors",
)


def _efficiency_held(delta: KernelDelta) -> bool:
    return (
        within(delta.ratio("warp_execution_efficiency"), 0.97, 10.0)
        and within(delta.ratio("global_load_efficiency"), 0.95, 10.0)
        and within(delta.ratio("global_store_efficiency"), 0.95, 10.0)
        and within(delta.ratio("sectors_per_request_ld"), 0.0, 1.1)
        and within(delta.ratio("l2_atomic_requests"), 0.0, 1.5)
        and within(delta.ratio("tensor_instructions"), 0.5, 100.0)
        and (num(delta.current, "local_memory_sectors") or 0)
        <= 1.5 * (num(delta.baseline, "local_memory_sectors") or 0) + 1024
    )


def _work_moved(delta: KernelDelta, up: bool) -> list[tuple[str, float]]:
    """Work counters that moved by a fifth, or by less where the gate itself judged the move
    beyond the counter's noise (a +1.5% instruction regression needs its cause named too)."""
    judged = State.REGRESSED if up else State.IMPROVED
    moved = []
    for m in _WORK:
        r = delta.ratio(m)
        if r is None:
            continue
        beyond = any(c.metric == m and c.state is judged for c in delta.comparisons)
        if (r >= 1.2 if up else r <= 0.8) or (beyond and (r > 1 if up else r < 1)):
            moved.append((m, r))
    return moved


def _work_cause(
    delta: KernelDelta, up: bool, key: str, kind: CauseKind, title: str, tail: str, score: float
) -> RootCause | None:
    moved = _work_moved(delta, up=up)
    if not moved:
        return None
    what = ", ".join(f"{m} {times(r)}" for m, r in moved)
    return root_cause(key, kind, title, f"{what}{tail}", delta, tuple(m for m, _ in moved), score)


def more_work(delta: KernelDelta) -> RootCause | None:
    """More instructions or bytes at the same efficiency: the kernel does more, not worse."""
    if single(delta) or not _efficiency_held(delta) or stored_wider(delta) is not None:
        return None  # the same elements written in a wider type are not more of them
    return _work_cause(
        delta, True, "more-work", CauseKind.REGRESSION, "More work",
        " at the same access and warp efficiency", 60,
    )  # fmt: skip


def less_work(delta: KernelDelta) -> RootCause | None:
    """Fewer bytes or instructions and faster: a rate such as DRAM % may fall with it."""
    if single(delta) or not faster(delta):
        return None
    return _work_cause(
        delta, False, "less-work", CauseKind.IMPROVEMENT, "Less work",
        "; the kernel got faster", 40,
    )  # fmt: skip


def launch_count(delta: KernelDelta) -> RootCause | None:
    b, a = launches(delta.baseline), launches(delta.current)
    if single(delta) or b is None or a is None or a == b:
        return None
    more = a > b
    cause = root_cause(
        "launch-count",
        CauseKind.REGRESSION if more else CauseKind.IMPROVEMENT,
        "Launched more often" if more else "Launched less often",
        f"{b:g} -> {a:g} launches per captured run"
        + (": a redundant launch, total time grows with it" if more else ""),
        delta,
        ("launches", "total_time"),
        75 if more else 30,
    )
    return cause if more else with_lever(cause, IMPROVED_LEVERS["launch-count"])


def launch_shape(delta: KernelDelta) -> RootCause | None:
    b, a = delta.baseline, delta.current
    if single(delta) or None in (b.grid, a.grid, b.block, a.block):
        return None
    if b.grid == a.grid and b.block == a.block:
        return None
    parts = [
        f"{w} {'x'.join(map(str, x))} -> {'x'.join(map(str, y))}"
        for w, x, y in (("grid", b.grid, a.grid), ("block", b.block, a.block))
        if x != y and x is not None and y is not None
    ]
    return root_cause(
        "launch-shape",
        CauseKind.CHANGE,
        "Launch configuration changed",
        "; ".join(parts),
        delta,
        ("theoretical_occupancy", "instructions_executed"),
        72 if slower(delta) else 25,
    )
